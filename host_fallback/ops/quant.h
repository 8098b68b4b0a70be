// Shared by the host's quantized kernels: quant.cpp (the reference kernels,
// plain loops with exact sums) and quant_conv.cpp (QLinearConv and
// ConvInteger through QGemm and the depthwise kernel).
#pragma once

#include <cstdint>
#include <vector>

#include "host_backend.h"

namespace kiln::quant {

const char* NameOf(const Tensor& t);
// The range of an integer dtype (i8, u8, i16, u16, i32); false for others.
bool QuantRange(fb::DataType t, int64_t* lo, int64_t* hi);
// Scales as floats, each checked positive and finite (errors name `what`).
StatusOr<std::vector<float>> Scales(const GraphOp& op, const Tensor& s, const char* what);
// Zero points as int64 (n zeros when z is null), each inside `type`'s range.
StatusOr<std::vector<int64_t>> ZeroPoints(const GraphOp& op, const Tensor* z, const char* what, fb::DataType type,
                                          int64_t n);
// Narrows [lo, hi] (the output type's range) by a QLinearConv's fused
// activation (ConvParams): Relu, Relu6 and Clip become bounds on the
// quantized output; others are Unsupported.
Status ActivationRange(const GraphOp& op, float y_scale, int64_t y_zero, int64_t* lo, int64_t* hi);

// True when input k of op is absent or a constant of the graph (weights a
// kernel may pack once, at resize).
bool ConstantInput(const GraphOp& op, const Graph& graph, size_t k);

// Values of an 8-bit operand minus its zero point (one, or `per` along
// (element / inner) % per), as int32; errors name the operand.
StatusOr<std::vector<int32_t>> Centered(const GraphOp& op, const Tensor& t, const Tensor* z, const char* what,
                                        int64_t per, int64_t inner);
// Centered's values as int8 (the QGemm operand), in one pass; false when
// Centered would fail (it names the problem) or a value leaves int8's range
// (e.g. uint8 weights with zero point 0).
bool CenteredInt8(const GraphOp& op, const Tensor& t, const Tensor* z, const char* what, int64_t per, int64_t inner,
                  std::vector<int8_t>* out);

// The reference kernels (any rank, group, zero points; exact int64 sums).
Status RunQLinearConvReference(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                               HostBackend& be);
Status RunQLinearMatMulReference(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                                 HostBackend& be);
Status RunConvIntegerReference(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                               HostBackend& be);

}  // namespace kiln::quant
