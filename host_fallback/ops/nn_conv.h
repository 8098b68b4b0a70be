// The geometry and attributes Conv and ConvTranspose share (nn_conv.cpp,
// nn_conv_transpose.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "host_backend.h"
#include "thread_pool.h"
#include "ops/op_params.h"

namespace kiln::conv {

using IntVec = std::vector<int64_t>;

// a / b rounded towards minus infinity (b > 0).
inline int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

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

// The fused activation on `planes` output planes of `plane` elements at y,
// split over the pool (the last pass of kernels that cannot fuse it).
void ActivatePlanes(ThreadPool& pool, const ConvAttrs& a, float* y, int64_t planes, int64_t plane);

// GemmEpilogue::tile_act likewise, on rows of `cols` at stride ldc: the
// tile is still in cache, where a pass over the whole output afterwards
// read it back from memory (EfficientNet's Silu on 96 x 112 x 112).
void TileActivation(const void* ctx, float* c, int64_t ldc, int64_t rows, int64_t cols);

// The direct convolution of Conv with one input channel a group
// (nn_conv_direct.cpp): in[0..2] X, W, optional B; channels16: small planes
// may take DepthwiseChannels16; no_activation: the fused activation is left
// to the caller (a residual comes first).
Status RunDirectConv(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                     HostBackend& be, bool channels16, bool no_activation);

// A convolution path the environment may turn off (VAR=0), to compare it
// with the general one in kiln-bench: KILN_HOST_WINOGRAD, KILN_HOST_TRANSPOSED,
// KILN_HOST_DW16 (depthwise 16 channels a vector), KILN_HOST_NARROW,
// KILN_HOST_PHASED, KILN_HOST_DW_BANDS (depthwise planes in bands of rows),
// KILN_HOST_DW_FIXED (unrolled 3x3 / 5x5 depthwise); for int8,
// KILN_HOST_QCONV_WIDE and KILN_HOST_QDW_DOT.
bool PathEnabled(const char* var);

// Strided 2-D convs through phase planes (nn_conv_phased.cpp). The input
// is split once into s_h x s_w phase planes per channel (plane (py, px)
// holds input rows py, py + s_h, ... and columns px, px + s_w, ...,
// zero-padded by the taps' reach), each Hp x Wp. Then every tap of every
// channel reads output row oy as one contiguous run of a plane (Wo floats at
// oy * Wp + the tap's offset): a GEMM B panel row is a copy of one or a few
// such runs, where the implicit packing had to gather at stride s across
// output rows narrower than a panel (28, 14 and 7 wide against 32; a third
// of a stride-2 3x3 conv's time).
struct PhaseGeometry {
  int64_t sh = 1, sw = 1, hp = 0, wp = 0, top = 0, left = 0;  // plane extent; zero rows / columns before
  int64_t plane = 0;                                          // hp * wp
  IntVec tap_off;                                             // [ksize]: plane index * plane + offset in it
  size_t floats(int64_t channels) const { return static_cast<size_t>(channels * sh * sw * plane); }
};

PhaseGeometry MakePhaseGeometry(int64_t h, int64_t w, int64_t ho, int64_t wo, int64_t kh, int64_t kw, int64_t sh,
                                int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl);

// The phase planes of channels [c0, c1) of one image (x: its first
// channel, h x w planes), into dst (sh * sw planes a channel).
void SplitPhases(const PhaseGeometry& g, const float* x, int64_t h, int64_t w, int64_t c0, int64_t c1, float* dst);

// The unfolded input read from phase planes, as a GEMM BPacker's context
// (PackPhasedCol): row k of the unfolded input starts at planes + row_off[k].
struct PhasedCol {
  const int64_t* row_off;  // [Cg * ksize]: where row k's output row 0 starts in the planes
  const float* planes;
  int64_t wo, wp;
};
// The planes' floats at most this many times the input's (a plane of at
// least 256): ResNet's stride-2 3x3 convs take 1.1-1.3x.
constexpr int64_t kPhasedMaxGrowth = 4;
// nr (the GEMM's panel width) at most kPhasedMaxPanel.
constexpr int kPhasedMaxPanel = 32;
void PackPhasedCol(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst);

// The direct convolution for few input channels (nn_conv_narrow.cpp): the
// first layer of image models, whose GEMM would have a K of only C * kh * kw.
struct NarrowConvArgs {
  int64_t n = 1, h = 1, w = 1, oh = 1, ow = 1, sh = 1, sw = 1, pt = 0, pl = 0;
  bool clamp = false;
  float lo = 0, hi = 0;
  // Then, on each output row segment (still in L1), an activation that is
  // no clamp, or null.
  void (*row_act)(const void* ctx, float* y, int64_t n) = nullptr;
  const void* act_ctx = nullptr;
};

class NarrowConv {
 public:
  // 2-D, one group, 1 to 4 input channels, kernels up to 7x7 (at least 4
  // taps), strides 1 or 2, no dilation; 5x5 and up, or up to 64 outputs
  // (where it was measured faster than the GEMM).
  static bool Suits(int64_t c, int64_t m, const IntVec& kernel, const IntVec& strides, const IntVec& dilations,
                    int64_t group);
  // The weights [m, c, kh, kw] in blocks of output channels; `half`: stored
  // as fp16 (precision low), widened at each run.
  void prepare(const float* w, int64_t m, int64_t c, int64_t kh, int64_t kw, bool half);
  bool ready() const { return !wt_.empty() || !wt_half_.empty(); }
  size_t bytes() const { return wt_.size() * sizeof(float) + wt_half_.size() * sizeof(uint16_t); }
  // y = conv(x) + bias (bias null: 0); false when a scratch cannot be had.
  bool run(ThreadPool& pool, const NarrowConvArgs& a, const float* x, const float* bias, float* y) const;

 private:
  int64_t m_ = 0, c_ = 0, kh_ = 0, kw_ = 0;
  int mb_ = 8;                        // output channels a block, for this CPU's registers
  void (*rows_[3])() = {nullptr, nullptr, nullptr};  // this CPU's kernels for 1 and 2 output rows (nn_conv_narrow.cpp)
  std::vector<float> wt_;          // [block][c][kh][kw][mb]
  std::vector<uint16_t> wt_half_;  // or those as fp16 (precision low)
};

}  // namespace kiln::conv
