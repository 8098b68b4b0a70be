// Helpers shared by the host nn kernels (nn_*.cpp), defined in nn_common.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "host_backend.h"

namespace kiln::nn {

// Unsupported unless every given input is f32; names the op and the dtype.
Status NeedF32(const GraphOp& op, const std::vector<Tensor*>& in);

// Applies a Conv/Gemm fused activation to y[0, n) in place.
void ApplyFusedActivation(fb::Activation act, float lo, float hi, float alpha, float* y, int64_t n);

// When `act` is a clamp (None, Relu, Relu6, Clip), its bounds in *lo, *hi
// (infinite for no bound) and true: kernels then fuse it into their stores.
// False for the others, which go through ApplyFusedActivation.
bool ActivationAsClamp(fb::Activation act, float act_min, float act_max, float* lo, float* hi);

// Padding of a sliding window (Conv, pools) whose output sizes `out` are
// already known, as [begins..., ends...]: explicit `pads` (empty = 0) for
// NotSet, 0 for Valid, the ONNX split for SAME_UPPER (the odd element at the
// end) and SAME_LOWER (at the beginning).
std::vector<int64_t> WindowPads(fb::AutoPad auto_pad, const std::vector<int64_t>& pads,
                                const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                                const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                const std::vector<int64_t>& dilations);

// The list as int64, or n copies of dflt when it is absent or empty.
std::vector<int64_t> IntsOr(const flatbuffers::Vector<int32_t>* v, size_t n, int64_t dflt);

}  // namespace kiln::nn
