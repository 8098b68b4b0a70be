// Helpers shared by the GPU layout family (gpu_layout*.cpp).
//
// Dtypes are checked twice: at creation against the graph's declared dtype
// (to decline early, so the op runs on the host), and again at resize
// against the bound tensors, whose dtype shape inference has settled (an
// intermediate's declared dtype may be a placeholder); kernels are chosen
// from the latter.
#pragma once

#include "gpu_common.h"

namespace kiln {

// How a layout kernel moves elements of `dtype` (a storage dtype: pass
// GpuBackend::storageType): in 32-bit words (`shader` is the word kernel,
// `units` words an element) when the element is whole words; 16-bit
// elements one a unit with the word kernel's _u16 variant (16-bit storage);
// else in bytes (`byte_shader`, `units` bytes an element), which needs the
// device's 8-bit storage. Unsupported otherwise.
struct MoveUnits {
  std::string shader;
  uint32_t units = 1;
};
StatusOr<MoveUnits> UnitsFor(fb::DataType dtype, const GpuCaps& caps, const char* word_shader,
                             const char* byte_shader);

// Unsupported unless the device can store single bytes (bool tensors).
Status Require8BitStorage(const GpuCaps& caps, const GraphOp& op);

// The dtype of input `k` of `op` as the graph declares it.
inline fb::DataType DeclaredInputDtype(const GraphOp& op, const Graph& graph, size_t k) {
  return graph.tensors[static_cast<size_t>(op.inputs[k])].dtype;
}

// Unsupported when `t` holds more than INT32_MAX units of `units_per_element`.
Status RequireUnits32(const Tensor& t, uint32_t units_per_element);

}  // namespace kiln
