// Helpers shared by the host nn kernels (nn_*.cpp), defined in nn_common.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gemm.h"
#include "host_backend.h"
#include "ops/op_params.h"

namespace kiln::nn {

// Unsupported unless every given input is f32; names the op and the dtype.
Status NeedF32(const GraphOp& op, const std::vector<Tensor*>& in);

// Applies a Conv/Gemm fused activation to y[0, n) in place.
void ApplyFusedActivation(fb::Activation act, float lo, float hi, float alpha, float* y, int64_t n);

// When `act` is a clamp (None, Relu, Relu6, Clip), its bounds in *lo, *hi
// (infinite for no bound) and true: kernels then fuse it into their stores.
// False for the others, which go through ApplyFusedActivation.
bool ActivationAsClamp(fb::Activation act, float act_min, float act_max, float* lo, float* hi);

// The bounds, on the real value, of a quantized op's fused activation
// (QLinearConv's ConvParams, QLinearAdd's QuantActivationParams): infinite
// for none; Unsupported, naming the op, for an activation that is no clamp.
// The host kernels and the GPU shaders both quantize these bounds.
Status QuantFusedClamp(const GraphOp& op, float* lo, float* hi);

// Constant weights packed for the GEMM once, at resize: op `index`'s form
// `key` from the session's ahead-of-time bundle when it was made for this
// very call (isa, transposition, sizes, precision), else packed now and
// counted as weight bytes. Either way the bundle learns whether it served.
PackedA BundledOrPackA(HostBackend& be, int index, const std::string& key, bool trans_a, int64_t M, int64_t K,
                       const float* A, int64_t lda);
PackedB BundledOrPackB(HostBackend& be, int index, const std::string& key, bool trans_b, int64_t K, int64_t N,
                       const float* B, int64_t ldb);

}  // namespace kiln::nn
