// Shared by the GPU nn family (gpu_nn_gemm.cpp, gpu_nn_conv.cpp): the tiled
// GEMM dispatch of shaders/vulkan/gemm.comp, used by MatMul, Gemm and 1x1
// Conv, its tile choice, and the fused activation of Conv/Gemm params.
#pragma once

#include <cmath>

#include "gpu_common.h"

namespace kiln {

// A fused activation as the nn shaders take it (FusedActivation in
// shaders/vulkan/unary_fn.glsl and shaders/opencl/common.cl): its code in
// UnaryFn's numbering as a specialization constant (0: none), its bounds and
// slope as push constants.
struct GpuFusedActivation {
  uint32_t code = 0;
  float lo = -INFINITY, hi = INFINITY, slope = 0.01f;
};

// From ConvParams or GemmParams (the same four fields); defaults when absent.
// Relu6 is Clip [0, 6]; the other fb::Activation values are the unary op of
// the same name, Silu UnaryFn's own code.
template <typename Params>
GpuFusedActivation ReadFusedActivation(const Params* p) {
  GpuFusedActivation a;
  if (!p) return a;
  a.lo = p->activation_min();
  a.hi = p->activation_max();
  a.slope = p->activation_alpha();
  switch (p->activation()) {
    case fb::Activation::None: a.code = 0; break;
    case fb::Activation::Relu: a.code = UnaryCode(fb::OpType::Relu); break;
    case fb::Activation::Relu6: a.code = UnaryCode(fb::OpType::Clip), a.lo = 0.f, a.hi = 6.f; break;
    case fb::Activation::Clip: a.code = UnaryCode(fb::OpType::Clip); break;
    case fb::Activation::LeakyRelu: a.code = UnaryCode(fb::OpType::LeakyRelu); break;
    case fb::Activation::Sigmoid: a.code = UnaryCode(fb::OpType::Sigmoid); break;
    case fb::Activation::HardSwish: a.code = UnaryCode(fb::OpType::HardSwish); break;
    case fb::Activation::Gelu: a.code = UnaryCode(fb::OpType::Gelu); break;
    case fb::Activation::Silu: a.code = kUnarySilu; break;
  }
  return a;
}

// Y = act(alpha * A * B + beta * C) over `batches` products; see gemm.comp
// for the meaning of each stride. Defaults: dense row-major A and B, no
// batch broadcast.
struct GemmArgs {
  uint32_t m = 0, n = 0, k = 0;
  uint32_t a_rs = 0, a_cs = 1, b_rs = 0, b_cs = 1;
  uint32_t c_rs = 0, c_cs = 0;
  float alpha = 1.f, beta = 0.f;
  uint32_t batches = 1;
  uint32_t bdims[4] = {1, 1, 1, 1}, sa[4] = {}, sb[4] = {};  // innermost last
  GpuFusedActivation act;
};

// The work-group size {TN / 4, TM / 4, 1} for a rows x cols output (times
// `batches`): 64 x 64 tiles, a side shrunk to 32 or 16 where the matrix is
// that small, then the larger side halved (not below 32) while there are too
// few work groups to fill a GPU, and halved again while the group exceeds
// the device's `max_invocations` (Vulkan guarantees only 128).
void PickGemmTile(uint64_t rows, uint64_t cols, uint64_t batches, uint32_t max_invocations, uint32_t local[3]);

// An execution that records gemm.comp dispatches.
class GemmExecution : public GpuExecution {
 protected:
  using GpuExecution::GpuExecution;
  // `c` may be null: no C term (beta is then ignored). `b_buffer`, when
  // given, is bound for B instead of `b` (an execution's own copy).
  Status addGemm(const Tensor* a, const Tensor* b, const Tensor* c, const Tensor* y, const GemmArgs& g,
                 const GpuBuffer* b_buffer = nullptr);

 private:
  bool CoopSuits(const GemmArgs& g, const Tensor* y) const;
};

}  // namespace kiln
