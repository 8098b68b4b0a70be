// Depthwise 2-D convolution on small planes (nn_depthwise.cpp): each input
// plane is copied into a zero-padded per-thread scratch (split into stride x
// stride phase planes when a stride is 2), so that every kernel tap is one
// contiguous pass over all output positions of the plane at once; the valid
// columns are then copied out with the clamp. RunDirectConv
// (nn_conv_direct.cpp) calls it for the shapes where it beats the row-wise
// DepthwisePlane.
#pragma once

#include <cstdint>
#include <vector>

#include "thread_pool.h"

namespace kiln::nn {

// 8-bit input and output (QLinearConv, quant_conv.cpp): x holds uint8
// (int8 when x_signed), each value read as x - x_zero; the weights and bias
// hold the centered integer weights and the int32 bias as floats, so every
// sum is an exact integer below 2^24; y(m) = clamp(round_half_even(acc *
// y_mult[m]) + y_zero, q_lo, q_hi) in f32 (QGemm's requantization), as a byte ([q_lo, q_hi] lies in
// the output type's range).
struct DepthwiseQuant {
  int32_t x_zero = 0;
  bool x_signed = false;
  const float* y_mult = nullptr;
  int32_t y_zero = 0, q_lo = 0, q_hi = 255;
};

struct DepthwiseArgs {
  int64_t n = 1, c = 1, m = 1;        // batch, input channels, output channels (m = c * multiplier)
  int64_t h = 1, w = 1, oh = 1, ow = 1;  // input and output plane
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  bool clamp = false;
  float lo = 0, hi = 0;
  // Then, on each output plane as it is copied out (still in L1), an
  // activation that is no clamp (Silu, Sigmoid, HardSwish, ...), or null.
  void (*plane_act)(const void* ctx, float* y, int64_t n) = nullptr;
  const void* plane_ctx = nullptr;
  // Set: x and y are 8-bit (DepthwiseFlat2D only; clamp and plane_act unused).
  const DepthwiseQuant* quant = nullptr;
};

// True when DepthwiseFlat2D handles this shape (strides 1 or 2) and is
// expected to be faster than the row-wise kernel.
bool DepthwiseFlatSuits(const DepthwiseArgs& a);

// Output planes of up to 8x8 with a 3x3 kernel, or up to 14x14 with a 5x5
// one, one output channel an input channel, on AVX-512: 16 channels a
// vector (DepthwiseChannels16, nn_depthwise_c16.cpp), so no lane computes
// a junk column. The flat kernel's rows of a 7x7 plane padded for a 5x5
// kernel are 11 wide: it computed 80 outputs for 49 (1152 channels: 0.108
// -> 0.064 ms; 960 with 3x3: 0.043 -> 0.032; 672 with 5x5 on 14x14: 0.142
// -> 0.131). With 3x3 on 14x14 the two transposes cost more than the junk
// columns (0.054 against 0.046).
bool DepthwiseChannels16Suits(const DepthwiseArgs& a);
bool DepthwiseChannels16(ThreadPool& pool, const DepthwiseArgs& a, const float* x, const float* w, const float* bias,
                         float* y);
// The same on 8-bit x and y (a.quant): w and bias as DepthwiseFlat2DQuant
// takes them, the sums exact in float where |bias| stays below 2^23 (the
// caller's check; 25 taps of 255 x 255 add under 2^21).
bool DepthwiseChannels16Quant(ThreadPool& pool, const DepthwiseArgs& a, const void* x, const float* w,
                              const float* bias, void* y);

// y[n, m] = bias[m] + the taps of w[m] (kh x kw) over x[n, m / multiplier],
// clamped to [lo, hi] when a.clamp (a NaN becomes lo), then a.plane_act.
// bias may be null.
// False when a thread's scratch (a few KiB to a few MiB) cannot be allocated.
bool DepthwiseFlat2D(ThreadPool& pool, const DepthwiseArgs& a, const float* x, const float* w, const float* bias,
                     float* y);
// The same on 8-bit planes (a.quant set): x and y as bytes.
bool DepthwiseFlat2DQuant(ThreadPool& pool, const DepthwiseArgs& a, const void* x, const float* w, const float* bias,
                          void* y);

// 8-bit depthwise convolution in integers (nn_depthwise_q8.cpp): AVX-512
// VNNI sums of u8 x s8 products, built by VBMI byte permutes from padded
// input rows; one output channel an input channel, strides 1 or 2 (the same
// both ways), no dilation, kernels up to 8 x 8. `w`: the weights as
// PackDepthwiseQ8 made them (once, at resize); `bias`: int32 [m] or null;
// a.quant set. Results bit-identical to DepthwiseFlat2DQuant's. False when
// the CPU lacks the instructions, the shape does not suit (or is not the
// weights'), or the scratch cannot be allocated.
struct DepthwiseQ8Weights {
  int64_t m = 0, kh = 0, kw = 0;
  std::vector<int32_t> dwords;  // [m][kh][ceil(kw / 4)]: four taps a dword, zero past kw
  std::vector<int32_t> sums;    // [m]: each channel's weight sum (the input zero point's correction)
};
// From the centered int8 weights [m][kh * kw].
DepthwiseQ8Weights PackDepthwiseQ8(const int8_t* w, int64_t m, int64_t kh, int64_t kw);
bool DepthwiseQ8DotSupported();
bool DepthwiseQ8DotSuits(const DepthwiseArgs& a);
bool DepthwiseQ8Dot(ThreadPool& pool, const DepthwiseArgs& a, const DepthwiseQ8Weights& w, const int32_t* bias,
                    const void* x, void* y);

}  // namespace kiln::nn
