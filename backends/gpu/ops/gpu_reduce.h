// Shared by the GPU reduce family (gpu_reduce*.cpp): how the row kernels
// (reduce.comp, reduce_arg.comp, softmax.comp, norm_stats.comp) spread their
// rows, a row being the elements behind one result. See
// shaders/vulkan/reduce_rows.glsl for the shader side.
#pragma once

#include <utility>

#include "gpu_common.h"

namespace kiln {

constexpr uint32_t kMaxRowGroup = 256;  // KILN_ROW_GROUP_MAX in reduce_rows.glsl

// The work-group size for `rows` rows of `len` elements: 0 for one
// invocation per row (short rows; strided rows, whose neighbours then read
// neighbouring addresses, unless there are too few rows to fill a GPU), else
// a power of two (about four elements an invocation, at most kMaxRowGroup
// and the device's limits) for one work group per row. `contiguous`: a row's
// elements (its innermost ones, for a multi-axis row) are adjacent.
// Always 0 on CPU drivers (caps.cpu_kernels), whose barriers cost more
// than the shared-memory tree saves: the transformer encoder's Softmaxes
// (4 x 128 rows of 128) 5.7 -> 1.8 ms on lavapipe and 3.3 -> 1.6 ms on
// PoCL, its LayerNorms' statistics (128 rows of 256) about 3 ms less on
// lavapipe.
uint32_t RowGroupSize(const GpuCaps& caps, uint64_t rows, uint64_t len, bool contiguous);

// Unsupported unless `x` (an op's input 0, seen at resize) is f32 with a
// 32-bit element count. The dtype was checked at onCreate already, but only
// as the model declares it; for an intermediate the shape function decides.
Status RequireF32Input(const Tensor& x, const char* op);

// Unsupported unless input 0 is declared f32 (the other inputs may be
// integers read on the host: a reduction's axes, CumSum's axis, TopK's k).
Status RequireF32Declared(const GraphOp& op, const Graph& graph);

class RowExecution : public GpuExecution {
 protected:
  using GpuExecution::GpuExecution;

  // Dispatches `shader` over `rows` rows: one work group of `group`
  // invocations a row (rows folded into y past the group-count limit), or
  // one invocation a row when `group` is 0. ROW_GROUP (constant 3) says
  // which; `spec` continues from constant 4.
  template <typename Push>
  Status addRows(const char* shader, std::vector<GpuBinding> bindings, const Push& push, uint64_t rows,
                 uint32_t group, std::vector<uint32_t> spec) {
    uint32_t groups[3], local[3] = {group ? group : 64, 1, 1};
    Groups1D(rows, group ? 1 : 64, groups);
    spec.insert(spec.begin(), group ? 1 : 0);
    return add(shader, std::move(bindings), push, groups, local, spec);
  }
};

}  // namespace kiln
