// The geometry and attributes Conv and ConvTranspose share (nn_conv.cpp,
// nn_conv_transpose.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "host_backend.h"
#include "ops/op_params.h"

namespace kiln::conv {

using IntVec = std::vector<int64_t>;

inline int64_t Prod(IntVec::const_iterator b, IntVec::const_iterator e) {
  int64_t n = 1;
  for (; b != e; ++b) n *= *b;
  return n;
}

// The tap geometry of a sliding window, shared by Conv and ConvTranspose.
// Positions `a` of the iterated grid A map to b = a * stride - pad + k * dilation
// in grid B (Conv: A = output, B = input; ConvTranspose: A = input, B = output).
// Planes are walked as rows of their last axis.
struct Taps {
  int64_t a_rows = 1, a_w = 1, b_w = 1;  // rows of A; row lengths of A and B
  int64_t k_rows = 1, k_w = 1;           // kernel rows and row length
  int64_t stride_w = 1;                  // stride along the last axis
  IntVec row_off;                        // [k_rows * a_rows]: B element offset of the row, -1 if outside
  IntVec lo, hi, b_start;                // per last-axis tap kx: a in [lo, hi) hits B at b_start + (a - lo) * stride
};

Taps MakeTaps(const IntVec& a, const IntVec& b, const IntVec& kernel, const IntVec& strides, const IntVec& pads,
              const IntVec& dilations);

struct ConvAttrs {
  IntVec kernel, strides, dilations, pads;  // pads: the begins first (MakeTaps reads only those)
  int64_t group = 1;
  fb::Activation act = fb::Activation::None;
  float act_min = 0, act_max = 0, act_alpha = 0;
};

// Kernel, strides, dilations, group and fused activation of a Conv or
// ConvTranspose with weights `w` (pads are the caller's: they depend on
// the shapes).
ConvAttrs ReadConvAttrs(const fb::ConvParams* p, const Tensor& w);

// y[0, n) = bias[m], or 0 without a bias.
void FillBias(float* y, int64_t n, const Tensor* bias, int64_t m);

// The fused activation of ConvAttrs ctx on y[0, n): DepthwiseArgs::plane_act
// for an activation that is no clamp, and the passes after other kernels.
void PlaneActivation(const void* ctx, float* y, int64_t n);

// GemmEpilogue::tile_act likewise, on rows of `cols` at stride ldc: the
// tile is still in cache, where a pass over the whole output afterwards
// read it back from memory (EfficientNet's Silu on 96 x 112 x 112).
void TileActivation(const void* ctx, float* c, int64_t ldc, int64_t rows, int64_t cols);

// A convolution path the environment may turn off (VAR=0), to compare it
// with the general one in kiln-bench: KILN_HOST_WINOGRAD, KILN_HOST_TRANSPOSED,
// KILN_HOST_DW16 (depthwise 16 channels a vector).
bool PathEnabled(const char* var);

}  // namespace kiln::conv
