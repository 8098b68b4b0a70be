// A direct 2-D convolution for few input channels (nn_conv.h, NarrowConv):
// the first layer of nearly every image model (3 channels, 3x3 to 7x7,
// stride 2). As a GEMM its K is only C * kh * kw (27 for 3x3), so packing
// the unfolded input (a strided gather) costs about as much as the
// multiply-adds; here the input is read where it lies instead.
//
// A thread takes a band of output rows. It copies the input rows the band
// reads into zero-padded rows, split by column parity at stride 2 (so tap
// kx of output column ox is element ox + kx / 2 of phase kx % 2: every tap
// is a contiguous load of 16 outputs' inputs). Then for each block of MB
// output channels and each 16 output columns, MB vectors of accumulators
// take every tap: one load serves MB multiply-adds with the weights
// broadcast (MB = 16 with AVX-512's 32 registers, 4 elsewhere).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "gemm.h"
#include "half.h"
#include "ops/nn_conv.h"
#include "scratch.h"
#include "simd_clones.h"
#include "thread_pool.h"
#include "vec_shuffle.h"

namespace kiln::conv {

namespace {

typedef float V16 __attribute__((vector_size(64)));
typedef float V16u __attribute__((vector_size(64), aligned(4)));

constexpr int64_t kLanes = 16;
constexpr int64_t kBandRows = 4;  // output rows a task

thread_local ScratchBuffer tl_rows, tl_out, tl_wide;  // tl_wide: fp16 weights widened (caller thread)

// One output row of one block of MB channels: out[j * ostride + ox] for
// ox < ow. tap[t] is where tap t (c, ky, kx order) reads output column 0's
// input: a padded row of phase kx % s, kx / s on.
template <int MB>
__attribute__((always_inline)) inline void NarrowRowBody(const float* const* tap, const float* wt, const float* bias,
                                                         int64_t taps, int64_t ow, bool clamp, float lo, float hi,
                                                         float* out, int64_t ostride) {
  const V16 vlo = V16{} + lo, vhi = V16{} + hi;
  for (int64_t ox = 0; ox < ow; ox += kLanes) {
    V16 acc[MB];
    for (int j = 0; j < MB; ++j) acc[j] = V16{} + bias[j];
    const float* w = wt;
    for (int64_t t = 0; t < taps; ++t, w += MB) {
      const V16 v = *reinterpret_cast<const V16u*>(tap[t] + ox);
      for (int j = 0; j < MB; ++j) acc[j] += v * w[j];
    }
    const int64_t n = std::min<int64_t>(kLanes, ow - ox);
    for (int j = 0; j < MB; ++j) {
      V16 r = acc[j];
      if (clamp) {  // NaN to lo, as the other kernels
        const V16 below = r < vhi ? r : vhi;
        r = r > vlo ? below : vlo;
      }
      if (n == kLanes)
        *reinterpret_cast<V16u*>(out + j * ostride + ox) = r;
      else
        for (int64_t l = 0; l < n; ++l) out[j * ostride + ox + l] = r[l];
    }
  }
}

// The body built for the ISA whose registers hold MB accumulator vectors:
// AVX-512 (32 zmm: 16 of them), AVX2 (16 ymm: a V16 is two, so 4), and the
// baseline (NEON's 32 q registers, or SSE).
#define KILN_NARROW_ARGS                                                                                   \
  const float *const *tap, const float *wt, const float *bias, int64_t taps, int64_t ow, bool clamp, float lo, \
      float hi, float *out, int64_t ostride
#define KILN_NARROW_PASS tap, wt, bias, taps, ow, clamp, lo, hi, out, ostride
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) void NarrowRow16(KILN_NARROW_ARGS) { NarrowRowBody<16>(KILN_NARROW_PASS); }
__attribute__((target("avx2,fma"))) void NarrowRow4Avx2(KILN_NARROW_ARGS) { NarrowRowBody<4>(KILN_NARROW_PASS); }
#endif
void NarrowRow4(KILN_NARROW_ARGS) { NarrowRowBody<4>(KILN_NARROW_PASS); }

using NarrowRowFn = void (*)(KILN_NARROW_ARGS);
#undef KILN_NARROW_ARGS
#undef KILN_NARROW_PASS

// The row kernel for this CPU and its channel block.
NarrowRowFn PickRow(int* mb) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f")) {
    *mb = 16;
    return &NarrowRow16;
  }
  *mb = 4;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &NarrowRow4Avx2;
  return &NarrowRow4;
#else
  *mb = 4;
  return &NarrowRow4;
#endif
}

}  // namespace

bool NarrowConv::Suits(int64_t c, int64_t m, const IntVec& kernel, const IntVec& strides, const IntVec& dilations,
                       int64_t group) {
  if (group != 1 || c < 1 || c > 4 || kernel.size() != 2 || strides.size() != 2) return false;
  if (kernel[0] < 1 || kernel[0] > 7 || kernel[1] < 1 || kernel[1] > 7) return false;
  // Where it beats the implicit GEMM (3 channels on 224x224, Zen 5, one
  // thread): 7x7 -> 64 1.35 -> 1.21 ms, 3x3 -> 16 0.108 -> 0.093 ms; 3x3 ->
  // 32 alone is even (0.153 -> 0.145-0.150), but inside mobilenet_v2 0.20-0.22
  // -> 0.18 ms (2 threads 0.112 -> 0.088-0.097: the GEMM split its phase
  // planes over the 3 channels); 3x3 -> 64 is slower (0.25 -> 0.31 ms), so
  // it stays a GEMM.
  if (kernel[0] * kernel[1] < 25 && m > 32) return false;
  if (kernel[0] * kernel[1] < 4) return false;  // 1x1 and the like: a GEMM reads its input as is
  for (size_t i = 0; i < 2; ++i)
    if (strides[i] < 1 || strides[i] > 2 || dilations[i] != 1) return false;
  return true;
}

void NarrowConv::prepare(const float* w, int64_t m, int64_t c, int64_t kh, int64_t kw, bool half) {
  m_ = m, c_ = c, kh_ = kh, kw_ = kw;
  row_ = reinterpret_cast<void (*)()>(PickRow(&mb_));
  const int64_t blocks = (m + mb_ - 1) / mb_, taps = c * kh * kw;
  const size_t n = static_cast<size_t>(blocks * taps * mb_);
  std::vector<float> wt(n, 0.f);
  for (int64_t o = 0; o < m; ++o)
    for (int64_t t = 0; t < taps; ++t) wt[static_cast<size_t>(((o / mb_) * taps + t) * mb_ + o % mb_)] = w[o * taps + t];
  wt_.clear();
  wt_half_.clear();
  if (half) {  // precision low: stored as fp16, widened for each run
    wt_half_.resize(n);
    for (size_t i = 0; i < n; ++i) wt_half_[i] = FloatToHalf(wt[i]);
  } else {
    wt_ = std::move(wt);
  }
}

// d[j] = x0[2 j] for j in [j0, j1): 16 at a time by a constant
// two-source shuffle of two loads (vpermt2ps under AVX-512) where both
// loads stay below x0[limit] (the row's end), then one by one. The
// compiler's loop moved one float at a time.
KILN_SIMD_CLONES void EveryOther(const float* __restrict x0, int64_t j0, int64_t j1, int64_t limit,
                                 float* __restrict d) {
  int64_t j = j0;
  for (; j + 16 <= j1 && 2 * j + 32 <= limit; j += 16) {
    VecF16 a, b;
    __builtin_memcpy(&a, x0 + 2 * j, sizeof(a));
    __builtin_memcpy(&b, x0 + 2 * j + 16, sizeof(b));
    const VecF16 e = KILN_SHUFFLE16(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    __builtin_memcpy(d + j, &e, sizeof(e));
  }
  for (; j < j1; ++j) d[j] = x0[j * 2];
}

bool NarrowConv::run(ThreadPool& pool, const NarrowConvArgs& a, const float* x, const float* bias, float* y) const {
  const int64_t s = a.sw, sh = a.sh;
  // Padded row geometry: phase p holds padded columns p, p + s, ...; loads
  // reach 16 past the last output and kw / s past that.
  const int64_t ow16 = (a.ow + kLanes - 1) / kLanes * kLanes;
  const int64_t rq = ow16 + kw_ / s + kLanes;
  const int64_t band_in = (kBandRows - 1) * sh + kh_;
  const size_t row_floats = static_cast<size_t>(c_ * band_in * s * rq);
  const int64_t bands = (a.oh + kBandRows - 1) / kBandRows, blocks = (m_ + mb_ - 1) / mb_;
  const int64_t taps = c_ * kh_ * kw_, out_plane = a.oh * a.ow, in_plane = a.h * a.w;
  const float* weights = wt_.data();
  if (!wt_half_.empty()) {
    float* wide = tl_wide.get(wt_half_.size());
    if (!wide) return false;
    WidenHalf(wt_half_.data(), wide, static_cast<int64_t>(wt_half_.size()));
    weights = wide;
  }
  std::vector<float> bias_pad(static_cast<size_t>(blocks * mb_), 0.f);
  if (bias) std::copy(bias, bias + m_, bias_pad.begin());
  std::atomic<bool> failed{false};
  pool.parallelFor(a.n * bands, [&](int64_t begin, int64_t end) {
    float* buf = tl_rows.get(row_floats);
    float* tail = tl_out.get(static_cast<size_t>(mb_ * a.ow));  // the last block's rows past M
    if (!buf || !tail) {
      failed.store(true, std::memory_order_relaxed);
      return;
    }
    std::vector<const float*> tap(static_cast<size_t>(taps));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n = task / bands, oy0 = task % bands * kBandRows, oy1 = std::min(a.oh, oy0 + kBandRows);
      const int64_t iy0 = oy0 * sh - a.pt, nrows = (oy1 - oy0 - 1) * sh + kh_;
      // Input rows [iy0, iy0 + nrows) of every channel, padded and split by phase.
      for (int64_t c = 0; c < c_; ++c)
        for (int64_t r = 0; r < nrows; ++r) {
          float* dst = buf + (c * band_in + r) * s * rq;
          std::memset(dst, 0, static_cast<size_t>(s * rq) * sizeof(float));
          const int64_t iy = iy0 + r;
          if (iy < 0 || iy >= a.h) continue;
          const float* src = x + (n * c_ + c) * in_plane + iy * a.w;
          // Padded column q = ix + pl goes to phase q % s, element q / s:
          // phase p takes input columns p + j * s - pl.
          for (int64_t p = 0; p < s; ++p) {
            const int64_t j0 = std::max<int64_t>(0, (a.pl - p + s - 1) / s);
            const int64_t j1 = std::min(rq, (a.w + a.pl - p + s - 1) / s);
            float* __restrict d = dst + p * rq;
            const float* __restrict x0 = src + p - a.pl;
            if (s == 1)
              std::memcpy(d + j0, x0 + j0, static_cast<size_t>(std::max<int64_t>(0, j1 - j0)) * sizeof(float));
            else
              EveryOther(x0, j0, j1, a.w - (p - a.pl), d);
          }
        }
      for (int64_t oy = oy0; oy < oy1; ++oy) {
        const int64_t r0 = (oy - oy0) * sh;
        for (int64_t c = 0; c < c_; ++c)
          for (int64_t ky = 0; ky < kh_; ++ky)
            for (int64_t kx = 0; kx < kw_; ++kx)
              tap[static_cast<size_t>((c * kh_ + ky) * kw_ + kx)] =
                  buf + ((c * band_in + r0 + ky) * s + kx % s) * rq + kx / s;
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t m0 = b * mb_, valid = std::min<int64_t>(mb_, m_ - m0);
          float* out = y + (n * m_ + m0) * out_plane + oy * a.ow;
          // A partial last block writes its rows to scratch, then copies the valid ones.
          float* dst = valid == mb_ ? out : tail;
          const int64_t ostride = valid == mb_ ? out_plane : a.ow;
          const float* wb = weights + b * taps * mb_;
          reinterpret_cast<NarrowRowFn>(row_)(tap.data(), wb, bias_pad.data() + m0, taps, a.ow, a.clamp, a.lo, a.hi,
                                              dst, ostride);
          for (int64_t j = 0; j < valid; ++j) {
            if (dst == tail) std::memcpy(out + j * out_plane, tail + j * a.ow, static_cast<size_t>(a.ow) * sizeof(float));
            if (a.row_act) a.row_act(a.act_ctx, out + j * out_plane, a.ow);
          }
        }
      }
    }
  });
  return !failed.load(std::memory_order_relaxed);
}

}  // namespace kiln::conv
