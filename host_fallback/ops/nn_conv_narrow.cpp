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
// output channels, R output rows and 16 output columns, R x MB vectors of
// accumulators take every tap: one load serves MB multiply-adds and one
// weight broadcast R of them (8 x 3 with AVX-512's 32 registers, 4 x 1
// elsewhere).
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
constexpr int64_t kBandRows = 6;  // output rows a task

thread_local ScratchBuffer tl_rows, tl_out, tl_wide;  // tl_wide: fp16 weights widened (caller thread)

// R output rows of one block of MB channels: out[r * ow + j * ostride + ox]
// for ox < ow. tap[t] is where tap t (c, ky, kx order) reads output row 0's
// column 0: a padded row of phase kx % s, kx / s on; row r reads r * rstep
// further. Each input load serves MB multiply-adds and each weight
// broadcast R of them: AVX-512 takes MB = 8, R = 3 (24 accumulators, 11
// loads for 24 multiply-adds, where 16 x 1 took 17 for 16 and ran at 71%
// of the FMA peak, bound by its broadcasts; 7x7 -> 64 1.16 -> 0.98 ms).
template <int MB, int R>
__attribute__((always_inline)) inline void NarrowRowBody(const float* const* tap, int64_t rstep, const float* wt,
                                                         const float* bias, int64_t taps, int64_t ow, bool clamp,
                                                         float lo, float hi, float* out, int64_t ostride) {
  const V16 vlo = V16{} + lo, vhi = V16{} + hi;
  for (int64_t ox0 = 0; ox0 < ow; ox0 += kLanes) {
    // A row's last 16 columns end at its end, overlapping the block before
    // (the same sums written twice), where the row has 16.
    const int64_t ox = ow >= kLanes ? std::min(ox0, ow - kLanes) : ox0;
    V16 acc[R][MB];
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < MB; ++j) acc[r][j] = V16{} + bias[j];
    const float* w = wt;
    for (int64_t t = 0; t < taps; ++t, w += MB) {
      V16 v[R];
      for (int r = 0; r < R; ++r) v[r] = *reinterpret_cast<const V16u*>(tap[t] + r * rstep + ox);
      for (int j = 0; j < MB; ++j) {
        const float wj = w[j];
        for (int r = 0; r < R; ++r) acc[r][j] += v[r] * wj;
      }
    }
    const int64_t n = std::min<int64_t>(kLanes, ow - ox);
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < MB; ++j) {
        V16 a = acc[r][j];
        if (clamp) {  // NaN to lo, as the other kernels
          const V16 below = a < vhi ? a : vhi;
          a = a > vlo ? below : vlo;
        }
        float* o = out + r * ow + j * ostride + ox;
        if (n == kLanes)
          *reinterpret_cast<V16u*>(o) = a;
        else
          for (int64_t l = 0; l < n; ++l) o[l] = a[l];
      }
  }
}

// The bodies built for the ISA whose registers hold their accumulators:
// AVX-512 (32 zmm: 8 channels x 3 rows, or x 2 or x 1 for a band's last
// rows), AVX2 (16 ymm: a V16 is two, so 4 x 1), and the baseline (NEON's 32
// q registers, or SSE: 4 x 1).
#define KILN_NARROW_ARGS                                                                                     \
  const float *const *tap, int64_t rstep, const float *wt, const float *bias, int64_t taps, int64_t ow, bool clamp, \
      float lo, float hi, float *out, int64_t ostride
#define KILN_NARROW_PASS tap, rstep, wt, bias, taps, ow, clamp, lo, hi, out, ostride
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) void NarrowRows8x2(KILN_NARROW_ARGS) { NarrowRowBody<8, 2>(KILN_NARROW_PASS); }
__attribute__((target("avx512f"))) void NarrowRows8x3(KILN_NARROW_ARGS) { NarrowRowBody<8, 3>(KILN_NARROW_PASS); }
__attribute__((target("avx512f"))) void NarrowRows8x1(KILN_NARROW_ARGS) { NarrowRowBody<8, 1>(KILN_NARROW_PASS); }
__attribute__((target("avx2,fma"))) void NarrowRow4Avx2(KILN_NARROW_ARGS) { NarrowRowBody<4, 1>(KILN_NARROW_PASS); }
#endif
void NarrowRow4(KILN_NARROW_ARGS) { NarrowRowBody<4, 1>(KILN_NARROW_PASS); }

using NarrowRowFn = void (*)(KILN_NARROW_ARGS);
#undef KILN_NARROW_ARGS
#undef KILN_NARROW_PASS

// The row kernels for this CPU: rows[r - 1] computes r output rows at once
// (null past the ISA's most); *mb: their channel block.
void PickRows(int* mb, NarrowRowFn rows[3]) {
  rows[1] = rows[2] = nullptr;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f")) {
    *mb = 8;
    rows[0] = &NarrowRows8x1;
    rows[1] = &NarrowRows8x2;
    rows[2] = &NarrowRows8x3;
    return;
  }
  *mb = 4;
  rows[0] = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? &NarrowRow4Avx2 : &NarrowRow4;
#else
  *mb = 4;
  rows[0] = &NarrowRow4;
#endif
}

}  // namespace

bool NarrowConv::Suits(int64_t c, int64_t m, const IntVec& kernel, const IntVec& strides, const IntVec& dilations,
                       int64_t group) {
  if (group != 1 || c < 1 || c > 4 || kernel.size() != 2 || strides.size() != 2) return false;
  if (kernel[0] < 1 || kernel[0] > 7 || kernel[1] < 1 || kernel[1] > 7) return false;
  // Where it beats the implicit GEMM (3 channels on 224x224, Zen 5, with
  // the 8 x 3 AVX-512 body; 1 / 2 threads): 7x7 -> 64 1.14 / 0.63 -> 0.98 /
  // 0.51 ms, 3x3 -> 32 0.152 / 0.130 -> 0.134 / 0.076, 3x3 -> 64 unpadded
  // (squeezenet) 0.250 / 0.180 -> 0.239 / 0.136. Wider layers of small
  // kernels stay GEMMs (unmeasured; the input copy is repeated per block).
  if (kernel[0] * kernel[1] < 25 && m > 64) return false;
  if (kernel[0] * kernel[1] < 4) return false;  // 1x1 and the like: a GEMM reads its input as is
  for (size_t i = 0; i < 2; ++i)
    if (strides[i] < 1 || strides[i] > 2 || dilations[i] != 1) return false;
  return true;
}

void NarrowConv::prepare(const float* w, int64_t m, int64_t c, int64_t kh, int64_t kw, bool half) {
  m_ = m, c_ = c, kh_ = kh, kw_ = kw;
  NarrowRowFn rows[3];
  PickRows(&mb_, rows);
  for (int r = 0; r < 3; ++r) rows_[r] = reinterpret_cast<void (*)()>(rows[r]);
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
    float* tail = tl_out.get(static_cast<size_t>(mb_ * 3 * a.ow));  // the last block's rows past M
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
      const int max_rows = rows_[2] ? 3 : rows_[1] ? 2 : 1;
      const int64_t rstep = sh * s * rq;  // one output row down in the band's input rows
      for (int64_t oy = oy0; oy < oy1;) {
        const int nr = static_cast<int>(std::min<int64_t>(max_rows, oy1 - oy));
        const int64_t r0 = (oy - oy0) * sh;
        for (int64_t c = 0; c < c_; ++c)
          for (int64_t ky = 0; ky < kh_; ++ky)
            for (int64_t kx = 0; kx < kw_; ++kx)
              tap[static_cast<size_t>((c * kh_ + ky) * kw_ + kx)] =
                  buf + ((c * band_in + r0 + ky) * s + kx % s) * rq + kx / s;
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t m0 = b * mb_, valid = std::min<int64_t>(mb_, m_ - m0);
          float* out = y + (n * m_ + m0) * out_plane + oy * a.ow;
          // A partial last block writes its rows to scratch ([channel][row][ow]),
          // then copies the valid ones.
          float* dst = valid == mb_ ? out : tail;
          const int64_t ostride = valid == mb_ ? out_plane : nr * a.ow;
          const float* wb = weights + b * taps * mb_;
          reinterpret_cast<NarrowRowFn>(rows_[nr - 1])(tap.data(), rstep, wb, bias_pad.data() + m0, taps, a.ow,
                                                       a.clamp, a.lo, a.hi, dst, ostride);
          for (int64_t j = 0; j < valid; ++j)
            for (int r = 0; r < nr; ++r) {
              float* row = out + j * out_plane + r * a.ow;
              if (dst == tail)
                std::memcpy(row, tail + (j * nr + r) * a.ow, static_cast<size_t>(a.ow) * sizeof(float));
              if (a.row_act) a.row_act(a.act_ctx, row, a.ow);
            }
        }
        oy += nr;
      }
    }
  });
  return !failed.load(std::memory_order_relaxed);
}

}  // namespace kiln::conv
