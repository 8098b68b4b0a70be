// Helpers shared by the host nn kernels (nn_*.cpp), defined in nn_common.cpp.
#pragma once

#include <cstdint>
#include <vector>

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

}  // namespace kiln::nn
