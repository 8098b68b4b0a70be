// Depthwise 2-D convolution on a padded, flattened plane (nn_depthwise.h).
//
// Row-wise kernels waste most of a 16-wide vector on the short rows of the
// small planes that dominate mobile CNNs (14x14, 7x7). Here a plane is first
// copied into a zero-padded scratch grid of Hq x Wq; output position (oy, ox)
// is computed at flat index o = oy * Wq + ox of that grid, so tap (ky, kx)
// reads scratch[o + offset(ky, kx)] for every o: one contiguous pass over the
// whole plane, computed in blocks of 64 outputs held in registers while all
// the taps are added. Columns ox >= ow are junk (they read across the row
// end) and are dropped when the valid ones are copied out with the clamp.
//
// A stride of 2 along an axis splits the padded grid by the parity of that
// axis (2 or 4 phase planes, each Hq x Wq), so every tap is still a stride-1
// read: padded row oy * 2 + ky * dh lies in phase (ky * dh) % 2 at row
// oy + (ky * dh) / 2.
#include "ops/nn_depthwise.h"
#include "ops/nn_conv.h"
#include "ops/nn_depthwise_simd.h"
#include "scratch.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "simd_clones.h"


namespace kiln::nn {
namespace {

// 16 floats as one GCC/Clang vector: lowered to one zmm, two ymm or four xmm
// by each KILN_SIMD_CLONES clone. V16u is the unaligned flavour for loads
// and stores at any float boundary.
typedef float V16 __attribute__((vector_size(64)));
typedef float V16u __attribute__((vector_size(64), aligned(4)));

constexpr int64_t kBlock = 64;  // outputs a register block computes (4 x V16)

// The scratch sizes of one convolution (or band of output rows).
struct FlatSizes {
  int64_t hq = 0, wq = 0;      // one phase plane
  int64_t phases = 1;          // sh * sw
  int64_t pstride = 0;         // floats from one phase plane to the next: hq * wq and a 16-float gap
  int64_t in_size = 0;         // floats of the input scratch (phase planes + read-over slack)
  int64_t n_out = 0;           // rows * wq flat outputs
  int64_t out_size = 0;        // n_out rounded up to kBlock
  int64_t hp = 0, wp = 0;      // padded rows and columns actually read
};

FlatSizes SizesFor(const DepthwiseArgs& a, int64_t rows) {
  FlatSizes z;
  z.hp = (rows - 1) * a.sh + (a.kh - 1) * a.dh + 1;
  z.wp = (a.ow - 1) * a.sw + (a.kw - 1) * a.dw + 1;
  z.hq = (z.hp + a.sh - 1) / a.sh;
  z.wq = (z.wp + a.sw - 1) / a.sw;
  z.phases = a.sh * a.sw;
  z.n_out = rows * z.wq;
  z.out_size = (z.n_out + kBlock - 1) / kBlock * kBlock;
  // The last block reads up to kBlock - 1 past n_out from the last tap's
  // offset, which lies at most one row past the last phase plane.
  z.pstride = z.hq * z.wq + 16;
  z.in_size = z.phases * z.pstride + z.wq + kBlock + 32;  // + 16: a run's extra vector (AVX-512)
  return z;
}

// The scratch geometry and the tap tables of one convolution.
struct FlatPlan : FlatSizes {
  std::vector<int64_t> toff;   // per tap (ky * kw + kx): its offset into the scratch
  // The AVX-512 kernel's order of the taps (order[i]: a tap), which puts
  // the taps of a kernel row that share a phase plane next to each other
  // (kx = 0, 2, 4, then 1, 3 at stride 2); shift[i]: 0 where order[i]
  // starts a run of taps at consecutive offsets, else its place in the run
  // (at most kMaxShift).
  std::vector<int64_t> order;
  std::vector<int> shift;
  // 3x3 and 5x5 kernels of stride 1 or 2 along x and no dilation along x
  // (the mobile CNNs' depthwise convs): the kernel's shape, for the AVX-512
  // kernel unrolled for it (BlockFixed); else 0.
  int fixed_k = 0, fixed_sw = 0;
  std::vector<int64_t> run_off;  // fixed_k: per kernel row and column phase, its first tap's offset
};

constexpr int kMaxShift = 4;  // 5-wide kernel rows

FlatPlan MakePlan(const DepthwiseArgs& a) {
  FlatPlan p;
  static_cast<FlatSizes&>(p) = SizesFor(a, a.oh);
  for (int64_t ky = 0; ky < a.kh; ++ky)
    for (int64_t kx = 0; kx < a.kw; ++kx) {
      const int64_t ry = ky * a.dh, rx = kx * a.dw;
      const int64_t phase = (ry % a.sh) * a.sw + rx % a.sw;
      p.toff.push_back(phase * p.pstride + (ry / a.sh) * p.wq + rx / a.sw);
    }
  for (int64_t ky = 0; ky < a.kh; ++ky)
    for (int64_t first = 0; first < std::min(a.sw, a.kw); ++first)
      for (int64_t kx = first; kx < a.kw; kx += a.sw) {
        const int64_t t = ky * a.kw + kx;
        const bool next = !p.order.empty() && kx != first && p.toff[static_cast<size_t>(t)] ==
                          p.toff[static_cast<size_t>(p.order.back())] + 1 && p.shift.back() < kMaxShift;
        p.order.push_back(t);
        p.shift.push_back(next ? p.shift.back() + 1 : 0);
      }
  static const bool fixed_on = conv::PathEnabled("KILN_HOST_DW_FIXED");
  if (fixed_on && a.kh == a.kw && (a.kh == 3 || a.kh == 5) && a.dw == 1) {
    p.fixed_k = static_cast<int>(a.kh), p.fixed_sw = static_cast<int>(a.sw);
    for (int64_t ky = 0; ky < a.kh; ++ky)
      for (int64_t first = 0; first < a.sw; ++first) p.run_off.push_back(p.toff[static_cast<size_t>(ky * a.kw + first)]);
  }
  return p;
}

thread_local ScratchBuffer tl_in, tl_out;

// Where the rows of one input plane go in the scratch (strides 1 or 2).
struct CopyGeom {
  int64_t w = 0, pt = 0, pl = 0;
  int64_t sh_log = 0, sw_log = 0;  // log2 of the strides
  int64_t plane = 0, wq = 0;       // floats from one phase plane to the next; the row length
  int64_t iy_end = 0;              // input rows that are read: [0, iy_end)
  int64_t ix_end = 0;              // input columns that are read: [0, ix_end)
  // Scratch offset of input row iy's first copied column, per column phase.
  int64_t RowBase(int64_t iy) const {
    const int64_t py = iy + pt;
    return (py & ((int64_t{1} << sh_log) - 1)) * (plane << sw_log) + (py >> sh_log) * wq;
  }
};

// Copies plane xp into the phase planes at xs; the padding there is already
// zero and stays so (only interior positions are written).
KILN_SIMD_CLONES
void CopyIn(const float* __restrict xp, const CopyGeom& g, float* __restrict xs) {
  if (g.ix_end <= 0) return;
  if (g.sw_log == 0) {
    for (int64_t iy = 0; iy < g.iy_end; ++iy) {
      const float* __restrict src = xp + iy * g.w;
      float* __restrict dst = xs + g.RowBase(iy) + g.pl;
      for (int64_t j = 0; j < g.ix_end; ++j) dst[j] = src[j];
    }
    return;
  }
  // Even input columns land in column phase pl & 1 from column pl >> 1,
  // odd ones in the other phase from column (pl + 1) >> 1.
  const int64_t ne = (g.ix_end + 1) >> 1, no = g.ix_end >> 1;
  const int64_t de = (g.pl & 1) * g.plane + (g.pl >> 1), dodd = ((g.pl + 1) & 1) * g.plane + ((g.pl + 1) >> 1);
  for (int64_t iy = 0; iy < g.iy_end; ++iy) {
    const float* __restrict src = xp + iy * g.w;
    float* __restrict base = xs + g.RowBase(iy);
    float* __restrict e = base + de;
    float* __restrict o = base + dodd;
    for (int64_t j = 0; j < ne; ++j) e[j] = src[2 * j];
    for (int64_t j = 0; j < no; ++j) o[j] = src[2 * j + 1];
  }
}

#if KILN_DW_AVX512
// AVX-512 copies: a row's tail goes through masked loads and stores
// (TailMask) instead of a scalar loop (or the compiler's call to memcpy for a
// 7-float row).

// Fields are read into locals first: the masked stores may alias anything,
// so members would be reloaded after every store.
__attribute__((target("avx512f"))) void CopyInAvx512(const float* __restrict xp, const CopyGeom& g,
                                                     float* __restrict xs) {
  const int64_t n = g.ix_end, rows = g.iy_end, w = g.w, wq = g.wq, pt = g.pt, pl = g.pl;
  const int64_t sh_log = g.sh_log, phase_row = g.plane << g.sw_log;  // offset of the odd-row phases
  if (n <= 0) return;
  auto row_base = [&](int64_t iy) {
    const int64_t py = iy + pt;
    return sh_log ? (py & 1) * phase_row + (py >> 1) * wq : py * wq;
  };
  if (g.sw_log == 0) {
    if (n <= 16) {  // one masked move a row
      const __mmask16 m = TailMask(n);
      for (int64_t iy = 0; iy < rows; ++iy)
        _mm512_storeu_ps(xs + row_base(iy) + pl, _mm512_maskz_loadu_ps(m, xp + iy * w));
      return;
    }
    for (int64_t iy = 0; iy < rows; ++iy) {
      const float* src = xp + iy * w;
      float* dst = xs + row_base(iy) + pl;
      int64_t j = 0;
      for (; j + 16 <= n; j += 16) _mm512_storeu_ps(dst + j, _mm512_loadu_ps(src + j));
      if (j < n) {
        _mm512_storeu_ps(dst + j, _mm512_maskz_loadu_ps(TailMask(n - j), src + j));
      }
    }
    return;
  }
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  const int64_t de = (pl & 1) * g.plane + (pl >> 1), dodd = ((pl + 1) & 1) * g.plane + ((pl + 1) >> 1);
  for (int64_t iy = 0; iy < rows; ++iy) {
    const float* src = xp + iy * w;
    float* base = xs + row_base(iy);
    for (int64_t j = 0; 2 * j < n; j += 16) {  // input columns [2j, 2j + 32)
      const int64_t r = n - 2 * j;
      const __m512 a = _mm512_maskz_loadu_ps(TailMask(r), src + 2 * j);
      const __m512 b = _mm512_maskz_loadu_ps(r > 16 ? TailMask(r - 16) : 0, src + 2 * j + 16);
      _mm512_storeu_ps(base + de + j, _mm512_permutex2var_ps(a, even, b));
      _mm512_storeu_ps(base + dodd + j, _mm512_permutex2var_ps(a, odd, b));
    }
  }
}

__attribute__((target("avx512f"))) void CopyOutAvx512(const float* __restrict acc, int64_t wq, int64_t oh,
                                                      int64_t ow, bool clamp, float lo, float hi,
                                                      float* __restrict y) {
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const __mmask16 tail = TailMask(ow - (ow - 1) / 16 * 16);  // the last chunk of a row
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float* src = acc + oy * wq;
    float* dst = y + oy * ow;
    for (int64_t i = 0; i < ow; i += 16) {
      const __mmask16 m = i + 16 < ow ? static_cast<__mmask16>(0xFFFF) : tail;
      __m512 v = _mm512_maskz_loadu_ps(m, src + i);
      if (clamp) v = Clamp16(v, vlo, vhi);
      _mm512_mask_storeu_ps(dst + i, m, v);
    }
  }
}
#endif

// NV vectors of outputs at out: bias plus every tap.
template <int NV>
__attribute__((always_inline)) inline void Block(const float* __restrict xs, const int64_t* __restrict toff,
                                                 const float* __restrict wt, int64_t taps, float bias,
                                                 float* __restrict out) {
  V16 acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = V16{} + bias;
  for (int64_t t = 0; t < taps; ++t) {
    const V16 wv = V16{} + wt[t];
    const float* __restrict p = xs + toff[t];
    for (int v = 0; v < NV; ++v) acc[v] += wv * *reinterpret_cast<const V16u*>(p + 16 * v);
  }
  for (int v = 0; v < NV; ++v) *reinterpret_cast<V16u*>(out + 16 * v) = acc[v];
}

// out[o] = bias + sum over taps of wt[t] * xs[o + toff[t]], o in [0, n_out)
// (rounded up to 16; out has room for it).
KILN_SIMD_CLONES
void FlatPlane(const float* __restrict xs, const int64_t* __restrict toff, const float* __restrict wt, int64_t taps,
               float bias, int64_t n_out, float* __restrict out) {
  int64_t o = 0;
  for (; o + kBlock <= n_out; o += kBlock) Block<4>(xs + o, toff, wt, taps, bias, out + o);
  const int64_t rest = n_out - o;
  if (rest > 48)
    Block<4>(xs + o, toff, wt, taps, bias, out + o);
  else if (rest > 32)
    Block<3>(xs + o, toff, wt, taps, bias, out + o);
  else if (rest > 16)
    Block<2>(xs + o, toff, wt, taps, bias, out + o);
  else if (rest > 0)
    Block<1>(xs + o, toff, wt, taps, bias, out + o);
}

#if KILN_DW_AVX512
// Lanes [S, S + 16) of a then b: the vector S floats on from a (valignd).
template <int S>
__attribute__((target("avx512f"), always_inline)) inline __m512 Shifted(__m512 a, __m512 b) {
  // The masked form with all lanes: GCC 12's plain one warns inside its
  // header (an "undefined" source vector).
  return _mm512_castsi512_ps(
      _mm512_maskz_alignr_epi32(static_cast<__mmask16>(0xFFFF), _mm512_castps_si512(b), _mm512_castps_si512(a), S));
}

// Block with the taps in the plan's order: a run's first tap loads NV + 1
// vectors, and the run's next taps take them shifted a lane more each
// instead of loading NV vectors again, each across two cache lines (those
// loads, not the multiply-adds, bounded the generic loop).
template <int NV>
__attribute__((target("avx512f"), always_inline)) inline void BlockAvx512(
    const float* __restrict xs, const int64_t* __restrict toff, const int64_t* __restrict order,
    const int* __restrict shift, const float* __restrict wt, int64_t taps, float bias, float* __restrict out) {
  __m512 acc[NV], run[NV + 1];
  for (int v = 0; v < NV; ++v) acc[v] = _mm512_set1_ps(bias);
  for (int v = 0; v <= NV; ++v) run[v] = _mm512_setzero_ps();
  for (int64_t i = 0; i < taps; ++i) {
    const __m512 wv = _mm512_set1_ps(wt[order[i]]);
    switch (shift[i]) {
      case 0: {
        const float* p = xs + toff[order[i]];
        for (int v = 0; v <= NV; ++v) run[v] = _mm512_loadu_ps(p + 16 * v);
        for (int v = 0; v < NV; ++v) acc[v] = _mm512_fmadd_ps(wv, run[v], acc[v]);
        break;
      }
      case 1: for (int v = 0; v < NV; ++v) acc[v] = _mm512_fmadd_ps(wv, Shifted<1>(run[v], run[v + 1]), acc[v]); break;
      case 2: for (int v = 0; v < NV; ++v) acc[v] = _mm512_fmadd_ps(wv, Shifted<2>(run[v], run[v + 1]), acc[v]); break;
      case 3: for (int v = 0; v < NV; ++v) acc[v] = _mm512_fmadd_ps(wv, Shifted<3>(run[v], run[v + 1]), acc[v]); break;
      default: for (int v = 0; v < NV; ++v) acc[v] = _mm512_fmadd_ps(wv, Shifted<4>(run[v], run[v + 1]), acc[v]); break;
    }
  }
  for (int v = 0; v < NV; ++v) _mm512_storeu_ps(out + 16 * v, acc[v]);
}

__attribute__((target("avx512f"), always_inline)) inline __m512 ShiftedBy(int s, __m512 a, __m512 b) {
  switch (s) {
    case 0: return a;
    case 1: return Shifted<1>(a, b);
    case 2: return Shifted<2>(a, b);
    case 3: return Shifted<3>(a, b);
    default: return Shifted<4>(a, b);
  }
}

// BlockAvx512 for a K x K kernel of column stride SW, unrolled: the taps of
// a kernel row in one column phase (kx = first, first + SW, ...) lie at
// consecutive offsets from run_off[ky * SW + first]. Without the generic
// loop's per-tap table reads and branches (a third of its instructions),
// a 16-channel 3x3 plane of 112x112 runs in about half the time.
template <int K, int SW, int NV>
__attribute__((target("avx512f"), always_inline)) inline void BlockFixed(const float* __restrict xs,
                                                                          const int64_t* __restrict run_off,
                                                                          const __m512* __restrict wv, float bias,
                                                                          float* __restrict out) {
  __m512 acc[NV], run[NV + 1];
  for (int v = 0; v < NV; ++v) acc[v] = _mm512_set1_ps(bias);
#pragma GCC unroll 5
  for (int ky = 0; ky < K; ++ky)
#pragma GCC unroll 2
    for (int first = 0; first < SW; ++first) {
      const float* p = xs + run_off[ky * SW + first];
      for (int v = 0; v <= NV; ++v) run[v] = _mm512_loadu_ps(p + 16 * v);
#pragma GCC unroll 5
      for (int kx = first; kx < K; kx += SW)
        for (int v = 0; v < NV; ++v)
          acc[v] = _mm512_fmadd_ps(wv[ky * K + kx], ShiftedBy(kx / SW, run[v], run[v + 1]), acc[v]);
    }
  for (int v = 0; v < NV; ++v) _mm512_storeu_ps(out + 16 * v, acc[v]);
}

template <int K, int SW>
__attribute__((target("avx512f"))) void FlatPlaneFixed(const float* __restrict xs, const FlatPlan& p,
                                                       const float* __restrict wt, float bias, float* __restrict out) {
  __m512 wv[K * K];
  for (int t = 0; t < K * K; ++t) wv[t] = _mm512_set1_ps(wt[t]);
  const int64_t* run_off = p.run_off.data();
  const int64_t n_out = p.n_out;
  int64_t o = 0;
  for (; o + kBlock <= n_out; o += kBlock) BlockFixed<K, SW, 4>(xs + o, run_off, wv, bias, out + o);
  const int64_t rest = n_out - o;
  if (rest > 48)
    BlockFixed<K, SW, 4>(xs + o, run_off, wv, bias, out + o);
  else if (rest > 32)
    BlockFixed<K, SW, 3>(xs + o, run_off, wv, bias, out + o);
  else if (rest > 16)
    BlockFixed<K, SW, 2>(xs + o, run_off, wv, bias, out + o);
  else if (rest > 0)
    BlockFixed<K, SW, 1>(xs + o, run_off, wv, bias, out + o);
}

// FlatPlane with BlockAvx512, or BlockFixed for the shapes it is made for.
__attribute__((target("avx512f"))) void FlatPlaneAvx512(const float* __restrict xs, const FlatPlan& p,
                                                        const float* __restrict wt, float bias, float* __restrict out) {
  if (p.fixed_k == 3 && p.fixed_sw == 1) return FlatPlaneFixed<3, 1>(xs, p, wt, bias, out);
  if (p.fixed_k == 3 && p.fixed_sw == 2) return FlatPlaneFixed<3, 2>(xs, p, wt, bias, out);
  if (p.fixed_k == 5 && p.fixed_sw == 1) return FlatPlaneFixed<5, 1>(xs, p, wt, bias, out);
  if (p.fixed_k == 5 && p.fixed_sw == 2) return FlatPlaneFixed<5, 2>(xs, p, wt, bias, out);
  const int64_t *toff = p.toff.data(), *order = p.order.data(), taps = static_cast<int64_t>(p.order.size()),
                n_out = p.n_out;
  const int* shift = p.shift.data();
  int64_t o = 0;
  for (; o + kBlock <= n_out; o += kBlock) BlockAvx512<4>(xs + o, toff, order, shift, wt, taps, bias, out + o);
  const int64_t rest = n_out - o;
  if (rest > 48)
    BlockAvx512<4>(xs + o, toff, order, shift, wt, taps, bias, out + o);
  else if (rest > 32)
    BlockAvx512<3>(xs + o, toff, order, shift, wt, taps, bias, out + o);
  else if (rest > 16)
    BlockAvx512<2>(xs + o, toff, order, shift, wt, taps, bias, out + o);
  else if (rest > 0)
    BlockAvx512<1>(xs + o, toff, order, shift, wt, taps, bias, out + o);
}
#endif

// CopyIn from an 8-bit plane (DepthwiseQuant): each value as x - x_zero.
KILN_SIMD_CLONES
void CopyInQuant(const uint8_t* __restrict xp, const CopyGeom& g, uint8_t flip, float zero, float* __restrict xs) {
  if (g.ix_end <= 0) return;
  const int64_t s = int64_t{1} << g.sw_log;
  // Column phase ph takes input columns ph, ph + s, ...: at scratch column
  // (pl + ph) >> sw_log of phase (pl + ph) & (s - 1).
  for (int64_t iy = 0; iy < g.iy_end; ++iy) {
    const uint8_t* __restrict src = xp + iy * g.w;
    float* __restrict base = xs + g.RowBase(iy);
    for (int64_t ph = 0; ph < s; ++ph) {
      const int64_t col = g.pl + ph, n = (g.ix_end - ph + s - 1) / s;
      float* __restrict d = base + (col & (s - 1)) * g.plane + (col >> g.sw_log);
      for (int64_t j = 0; j < n; ++j) d[j] = static_cast<float>(src[j * s + ph] ^ flip) - zero;
    }
  }
}

// CopyOut to an 8-bit plane: requantized (DepthwiseQuant).
KILN_SIMD_CLONES
void CopyOutQuant(const float* __restrict acc, int64_t wq, int64_t oh, int64_t ow, float mult, float zero,
                  float lo, float hi, uint8_t* __restrict y) {
  // [lo, hi] lies in the output type's range: int8 values wrap to their bytes.
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float* __restrict src = acc + oy * wq;
    uint8_t* __restrict dst = y + oy * ow;
    for (int64_t i = 0; i < ow; ++i) {
      const float r = std::nearbyint(src[i] * mult) + zero;
      dst[i] = static_cast<uint8_t>(static_cast<int32_t>(std::min(hi, std::max(lo, r))));
    }
  }
}

#if KILN_DW_AVX512
// The 8-bit copies with AVX-512 (BW and VL for the byte masks): 16 values a
// step, tails through masks (the generic loops did not vectorize the
// strided reads or the rounding: a third of a quantized MobileNetV2's time).
#define KILN_DW_Q_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
// Zero-masked forms with every lane set: GCC 12's plain ones warn inside its
// header (an "undefined" source vector).
constexpr __mmask16 kQAll = 0xFFFF;

KILN_DW_Q_TARGET inline __mmask32 Lanes32(int64_t n) {
  return n >= 32 ? static_cast<__mmask32>(0xFFFFFFFFu) : static_cast<__mmask32>((1u << n) - 1u);
}

KILN_DW_Q_TARGET void CopyInQuantAvx512(const uint8_t* __restrict xp, const CopyGeom& g, uint8_t flip, float zero,
                                        float* __restrict xs) {
  const int64_t n = g.ix_end, w = g.w, pl = g.pl;
  if (n <= 0) return;
  const __m512 vz = _mm512_set1_ps(zero);
  const __m128i f16 = _mm_set1_epi8(static_cast<char>(flip));
  const __m256i f32 = _mm256_set1_epi8(static_cast<char>(flip));
  for (int64_t iy = 0; iy < g.iy_end; ++iy) {
    const uint8_t* src = xp + iy * w;
    float* base = xs + g.RowBase(iy);
    if (g.sw_log == 0) {
      float* d = base + pl;
      for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 m = TailMask(n - j);
        const __m128i b = _mm_xor_si128(_mm_maskz_loadu_epi8(m, src + j), f16);
        _mm512_mask_storeu_ps(d + j, m, _mm512_maskz_sub_ps(kQAll, _mm512_maskz_cvtepi32_ps(kQAll, _mm512_maskz_cvtepu8_epi32(kQAll, b)), vz));
      }
      continue;
    }
    // Stride 2: even input columns to one phase plane, odd ones to the other.
    float* de = base + (pl & 1) * g.plane + (pl >> 1);
    float* dodd = base + ((pl + 1) & 1) * g.plane + ((pl + 1) >> 1);
    const int64_t ne = (n + 1) >> 1, no = n >> 1;
    for (int64_t j = 0; j < ne; j += 16) {
      const __m256i b = _mm256_xor_si256(_mm256_maskz_loadu_epi8(Lanes32(n - 2 * j), src + 2 * j), f32);
      const __m512i pairs = _mm512_maskz_cvtepu16_epi32(kQAll, b);
      const __m512i even = _mm512_maskz_and_epi32(kQAll, pairs, _mm512_set1_epi32(0xff)), odd = _mm512_maskz_srli_epi32(kQAll, pairs, 8);
      _mm512_mask_storeu_ps(de + j, TailMask(ne - j), _mm512_maskz_sub_ps(kQAll, _mm512_maskz_cvtepi32_ps(kQAll, even), vz));
      if (j < no) _mm512_mask_storeu_ps(dodd + j, TailMask(no - j), _mm512_maskz_sub_ps(kQAll, _mm512_maskz_cvtepi32_ps(kQAll, odd), vz));
    }
  }
}

KILN_DW_Q_TARGET void CopyOutQuantAvx512(const float* __restrict acc, int64_t wq, int64_t oh, int64_t ow, float mult,
                                         float zero, float lo, float hi, uint8_t* __restrict y) {
  const __m512 vm = _mm512_set1_ps(mult), vz = _mm512_set1_ps(zero), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float* src = acc + oy * wq;
    uint8_t* dst = y + oy * ow;
    for (int64_t i = 0; i < ow; i += 16) {
      const __mmask16 m = TailMask(ow - i);
      __m512 v = _mm512_maskz_roundscale_ps(kQAll, _mm512_maskz_mul_ps(kQAll, _mm512_maskz_loadu_ps(m, src + i), vm),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      v = _mm512_maskz_min_ps(kQAll, _mm512_maskz_max_ps(kQAll, _mm512_maskz_add_ps(kQAll, v, vz), vlo), vhi);  // max_ps(NaN, lo) is lo
      _mm512_mask_cvtepi32_storeu_epi8(dst + i, m, _mm512_maskz_cvtps_epi32(kQAll, v));
    }
  }
}
#undef KILN_DW_Q_TARGET
#endif

// y (oh x ow) = the valid columns of the flat result, clamped when `clamp`.
KILN_SIMD_CLONES
void CopyOut(const float* __restrict acc, int64_t wq, int64_t oh, int64_t ow, bool clamp, float lo, float hi,
             float* __restrict y) {
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float* __restrict src = acc + oy * wq;
    float* __restrict dst = y + oy * ow;
    if (clamp)
      for (int64_t i = 0; i < ow; ++i) {
        const float v = src[i];
        dst[i] = v > lo ? (v < hi ? v : hi) : lo;
      }
    else
      for (int64_t i = 0; i < ow; ++i) dst[i] = src[i];
  }
}

}  // namespace

bool DepthwiseFlatSuits(const DepthwiseArgs& a) {
  if (a.sh < 1 || a.sh > 2 || a.sw < 1 || a.sw > 2) return false;
  if (a.oh <= 0 || a.ow <= 0 || a.kh <= 0 || a.kw <= 0) return false;
  const int64_t hp = (a.oh - 1) * a.sh + (a.kh - 1) * a.dh + 1;
  const int64_t wp = (a.ow - 1) * a.sw + (a.kw - 1) * a.dw + 1;
  // The scratch of one plane stays within L2 (a 1 MiB cap).
  return hp * wp <= (int64_t{1} << 18);
}

namespace {

// Zero rows [j0, j1) of the padded grid in every column phase (a band's
// rows above or below the input, which another band may have filled).
void ZeroPaddedRows(const FlatPlan& p, int64_t sh, int64_t sw, int64_t j0, int64_t j1, float* xs) {
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t px = 0; px < sw; ++px)
      std::memset(xs + ((j % sh) * sw + px) * p.pstride + j / sh * p.wq, 0, static_cast<size_t>(p.wq) * sizeof(float));
}

// The output rows a band computes: a whole plane when its scratch fits
// kBandFloats, else as many rows as fit it (at least kMinBandRows). A
// 112x112 plane's scratch is 52 KB at stride 2: copied whole it was written
// to and read back from the L2 (16 channels, 3x3 stride 2: 0.095 ms, 58% of
// it the copy); in bands of 8 output rows it stays in the L1.
constexpr int64_t kBandFloats = 4096, kMinBandRows = 4;

int64_t BandRows(const DepthwiseArgs& a) {
  static const bool on = conv::PathEnabled("KILN_HOST_DW_BANDS");
  if (!on || SizesFor(a, a.oh).in_size <= kBandFloats) return a.oh;
  int64_t most = kMinBandRows;  // the most rows that fit
  while (most + 1 < a.oh && SizesFor(a, most + 1).in_size <= kBandFloats) ++most;
  const int64_t bands = (a.oh + most - 1) / most;
  return (a.oh + bands - 1) / bands;  // balanced: the last band computes few junk rows
}

// DepthwiseFlat2D on float planes, or on bytes when a.quant; in bands of
// output rows on large planes (BandRows), each band a plane of its own
// whose first and last rows may lie in the padding.
bool FlatRun(ThreadPool& pool, const DepthwiseArgs& a, const void* xv, const float* w, const float* bias, void* yv) {
  const DepthwiseQuant* qz = a.quant;
  const float* x = static_cast<const float*>(xv);
  float* y = static_cast<float*>(yv);
  const uint8_t* xb = static_cast<const uint8_t*>(xv);
  uint8_t* yb = static_cast<uint8_t*>(yv);
  DepthwiseArgs band_args = a;
  band_args.oh = BandRows(a);
  const int64_t band = band_args.oh, bands = (a.oh + band - 1) / band;
  const FlatPlan p = MakePlan(band_args);
  const int64_t mult = a.m / a.c, in_plane = a.h * a.w, out_plane = a.oh * a.ow, taps = a.kh * a.kw;
  const int64_t work = std::max<int64_t>(1, p.n_out * taps);
#if KILN_DW_AVX512
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx512bw = avx512 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#else
  [[maybe_unused]] constexpr bool avx512 = false, avx512bw = false;
#endif
  // Two input scratches and two result blocks, used in turn: plane k + 1 is
  // copied in and plane k - 1 copied out around plane k's taps, so no load
  // reads a store still in flight (a store-forwarding stall on every row of
  // a small plane otherwise).
  const int64_t in_stride = (p.in_size + 15) / 16 * 16, out_stride = p.out_size;
  std::atomic<bool> failed{false};
  pool.parallelFor(a.n * a.m * bands, [&](int64_t begin, int64_t end) {
    float* xs = tl_in.get(static_cast<size_t>(2 * in_stride));
    float* acc = tl_out.get(static_cast<size_t>(2 * out_stride));
    if (!xs || !acc) {
      failed.store(true, std::memory_order_relaxed);
      return;
    }
    std::memset(xs, 0, static_cast<size_t>(2 * in_stride) * sizeof(float));
    CopyGeom cg;
    cg.w = a.w, cg.pl = a.pl, cg.sh_log = a.sh - 1, cg.sw_log = a.sw - 1;
    cg.plane = p.pstride, cg.wq = p.wq;
    cg.ix_end = std::min(a.w, p.wp - a.pl);
    // Item i on several threads: band i / planes of output plane i %
    // planes, bands outermost, so that threads split the planes by rows, as
    // the convs around them do (GEMM columns), and each reads what it wrote
    // (split by planes, half of every depthwise conv's input came from the
    // other core's cache). On one: band i % bands of plane i / bands, a
    // plane's bands in turn (their shared rows still in L1: 96 channels 3x3
    // stride 2 on 112x112 0.144 ms bands outermost, 0.131 so).
    const int64_t planes = a.n * a.m;
    const bool rows_split = pool.active() > 1;
    auto plane_of = [&](int64_t i) { return rows_split ? i % planes : i / bands; };
    auto band_of = [&](int64_t i) { return rows_split ? i / planes : i % bands; };
    int64_t held[2] = {-1, -1};  // the input band in each scratch (plane * bands + band)
    auto src_of = [&](int64_t nm) { return nm / a.m * a.c + nm % a.m / mult; };
    // The scratch holding item i's input, copied in unless it is there.
    auto load = [&](int64_t i, int prefer) {
      const int64_t src = src_of(plane_of(i)), b = band_of(i), key = src * bands + b;
      if (held[0] == key) return 0;
      if (held[1] == key) return 1;
      // The band's padded rows start at padded row b * band * sh: input
      // row `first` lands at its row cg.pt.
      const int64_t top = b * band * a.sh - a.pt, first = std::max<int64_t>(0, top);
      cg.pt = first - top;
      cg.iy_end = std::max<int64_t>(0, std::min(a.h - first, p.hp - cg.pt));
      float* dst = xs + prefer * in_stride;
      if (bands > 1) {
        ZeroPaddedRows(p, a.sh, a.sw, 0, std::min(cg.pt, p.hp), dst);
        ZeroPaddedRows(p, a.sh, a.sw, std::min(cg.pt + cg.iy_end, p.hp), p.hp, dst);
      }
      const int64_t from = src * in_plane + first * a.w;
      if (qz) {
        const uint8_t flip = qz->x_signed ? 0x80 : 0;
        const float zero = static_cast<float>(qz->x_signed ? qz->x_zero + 128 : qz->x_zero);
#if KILN_DW_AVX512
        if (avx512bw)
          CopyInQuantAvx512(xb + from, cg, flip, zero, dst);
        else
#endif
          CopyInQuant(xb + from, cg, flip, zero, dst);
      } else
#if KILN_DW_AVX512
      if (avx512)
        CopyInAvx512(x + from, cg, dst);
      else
#endif
        CopyIn(x + from, cg, dst);
      held[prefer] = key;
      return prefer;
    };
    auto store = [&](int64_t i, const float* acc_rows) {
      const int64_t nm = plane_of(i), r0 = band_of(i) * band, rows = std::min(band, a.oh - r0);
      const int64_t to = nm * out_plane + r0 * a.ow;
      if (qz) {
        const float mult = qz->y_mult[nm % a.m], zero = static_cast<float>(qz->y_zero);
        const float lo = static_cast<float>(qz->q_lo), hi = static_cast<float>(qz->q_hi);
#if KILN_DW_AVX512
        if (avx512bw)
          CopyOutQuantAvx512(acc_rows, p.wq, rows, a.ow, mult, zero, lo, hi, yb + to);
        else
#endif
          CopyOutQuant(acc_rows, p.wq, rows, a.ow, mult, zero, lo, hi, yb + to);
        return;
      }
#if KILN_DW_AVX512
      if (avx512)
        CopyOutAvx512(acc_rows, p.wq, rows, a.ow, a.clamp, a.lo, a.hi, y + to);
      else
#endif
        CopyOut(acc_rows, p.wq, rows, a.ow, a.clamp, a.lo, a.hi, y + to);
      if (a.plane_act) a.plane_act(a.plane_ctx, y + to, rows * a.ow);
    };
    int cur = load(begin, 0);
    for (int64_t i = begin; i < end; ++i) {
      const int64_t k = i - begin, m = plane_of(i) % a.m;
      const int next = i + 1 < end ? load(i + 1, 1 - cur) : cur;
      float* out = acc + (k & 1) * out_stride;
#if KILN_DW_AVX512
      if (avx512)
        FlatPlaneAvx512(xs + cur * in_stride, p, w + m * taps, bias ? bias[m] : 0.f, out);
      else
#endif
        FlatPlane(xs + cur * in_stride, p.toff.data(), w + m * taps, taps, bias ? bias[m] : 0.f, p.n_out, out);
      if (k > 0) store(i - 1, acc + ((k - 1) & 1) * out_stride);
      cur = next;
    }
    store(end - 1, acc + ((end - 1 - begin) & 1) * out_stride);
  }, std::max<int64_t>(1, 16384 / work));
  return !failed.load(std::memory_order_relaxed);
}

}  // namespace

bool DepthwiseFlat2D(ThreadPool& pool, const DepthwiseArgs& a, const float* x, const float* w, const float* bias,
                     float* y) {
  return FlatRun(pool, a, x, w, bias, y);
}

bool DepthwiseFlat2DQuant(ThreadPool& pool, const DepthwiseArgs& a, const void* x, const float* w, const float* bias,
                          void* y) {
  return a.quant && FlatRun(pool, a, x, w, bias, y);
}

}  // namespace kiln::nn
