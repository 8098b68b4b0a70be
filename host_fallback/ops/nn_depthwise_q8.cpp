// 8-bit depthwise convolution in integers (nn_depthwise.h,
// DepthwiseQ8Dot): AVX-512 VNNI's vpdpbusd sums four u8 x s8 products into
// an int32 lane, and VBMI's vpermb builds the four bytes each lane needs
// from one unaligned 64-byte load of a padded input row: lane l of a stride
// s gets bytes s * l + 4 * g .. s * l + 4 * g + 3 (taps 4g .. 4g + 3 of the
// row), so a row of a 3x3 kernel is one load, one vpermb and one vpdpbusd
// for 16 outputs, with no conversion to float and a scratch of bytes (the
// float kernel's planes are four times larger and spill L1 on 56x56 planes).
//
// Each input plane is copied into a per-thread scratch padded with the input
// zero point, so padded taps read zero point - zero point = 0 after the
// correction: y = clamp(round_half_even(float(sum_taps x * w - zx * sum w +
// bias) * mult) + y_zero, lo, hi), the same integer sum and the same f32
// requantization as the float kernel and QGemm (bit-identical results).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/nn_depthwise.h"
#include "scratch.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KILN_DWQ_X86 1
#else
#define KILN_DWQ_X86 0
#endif

namespace kiln::nn {
namespace {

constexpr int kMaxTaps = 8;  // a row's taps in at most two groups of four

thread_local ScratchBuffer tl_plane;

#if KILN_DWQ_X86
// Scratch geometry: rows of the padded plane the outputs read, each `stride`
// bytes (covering the last 16-output block's 64-byte loads).
struct Q8Plan {
  int64_t rows = 0, stride = 0, groups = 0;
};

Q8Plan MakeQ8Plan(const DepthwiseArgs& a) {
  Q8Plan p;
  p.groups = (a.kw + 3) / 4;
  p.rows = (a.oh - 1) * a.sh + a.kh;
  const int64_t blocks = (a.ow + 15) / 16;
  const int64_t reach = (blocks - 1) * 16 * a.sw + 4 * (p.groups - 1) + 64;  // the last load's end
  p.stride = (std::max(reach, a.w + a.pl) + 63) / 64 * 64;
  return p;
}

// The scratch with every byte the zero point as read: the padding, which
// the plane copies never touch (they write the same interior each time).
void FillScratch(const Q8Plan& p, uint8_t zero, uint8_t* dst) {
  std::memset(dst, zero, static_cast<size_t>(p.rows * p.stride + 64));
}

#define KILN_DWQ_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

constexpr __mmask16 kAll = 0xFFFF;
constexpr __mmask64 kAll64 = ~__mmask64{0};

// vpermb indices for strides 1 and 2: byte 4 * l + t of the result is byte
// S * l + t of the load (+ 4g for tap group g, folded into the address).
struct IndexTables {
  alignas(64) uint8_t t[2][64];
  constexpr IndexTables() : t() {
    for (int s = 0; s < 2; ++s)
      for (int l = 0; l < 16; ++l)
        for (int b = 0; b < 4; ++b) t[s][4 * l + b] = static_cast<uint8_t>((s + 1) * l + b);
  }
};
constexpr IndexTables kIndexTables;
constexpr const uint8_t (&kIndex)[2][64] = kIndexTables.t;

// One output plane from the padded scratch: stride S, KH rows of G tap
// groups, all known at compile time so that the weights stay in registers
// and the tap loops unroll. `wd`: KH x G weight dwords.
template <int S, int KH, int G>
KILN_DWQ_TARGET void PlaneQ8(const uint8_t* xs, int64_t stride, int64_t oh, int64_t ow, const int32_t* wd,
                             int32_t corr, float mult, float zero, float lo, float hi, uint8_t* y) {
  const __m512i vidx = _mm512_load_si512(kIndex[S - 1]);
  const __m512i vcorr = _mm512_set1_epi32(corr);
  const __m512 vm = _mm512_set1_ps(mult), vz = _mm512_set1_ps(zero), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  __m512i w[KH * G];
  for (int t = 0; t < KH * G; ++t) w[t] = _mm512_set1_epi32(wd[t]);
  for (int64_t oy = 0; oy < oh; ++oy) {
    const uint8_t* row0 = xs + oy * S * stride;
    uint8_t* out = y + oy * ow;
    for (int64_t ox = 0; ox < ow; ox += 16) {
      __m512i acc = vcorr;
      const uint8_t* src = row0 + ox * S;
      for (int ky = 0; ky < KH; ++ky)
        for (int g = 0; g < G; ++g) {
          const __m512i v = _mm512_loadu_si512(src + ky * stride + 4 * g);
          acc = _mm512_dpbusd_epi32(acc, _mm512_maskz_permutexvar_epi8(kAll64, vidx, v), w[ky * G + g]);
        }
      // Zero-masked forms with every lane set: GCC 12's plain ones warn
      // inside its headers (an "undefined" source vector).
      __m512 f = _mm512_maskz_roundscale_ps(kAll, _mm512_maskz_mul_ps(kAll, _mm512_maskz_cvtepi32_ps(kAll, acc), vm),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      f = _mm512_maskz_min_ps(kAll, _mm512_maskz_max_ps(kAll, _mm512_maskz_add_ps(kAll, f, vz), vlo), vhi);
      const __mmask16 m = ow - ox >= 16 ? kAll : static_cast<__mmask16>((1u << (ow - ox)) - 1u);
      // vpmovdb into a register, then a masked 16-byte store (the memory
      // form of vpmovdb is microcoded on Zen).
      _mm_mask_storeu_epi8(out + ox, m, _mm512_maskz_cvtepi32_epi8(kAll, _mm512_maskz_cvtps_epi32(kAll, f)));
    }
  }
}

using PlaneFn = void (*)(const uint8_t*, int64_t, int64_t, int64_t, const int32_t*, int32_t, float, float, float,
                         float, uint8_t*);

// PlaneQ8 for (stride, kh, groups): kh 1 to kMaxTaps, groups 1 or 2.
template <int S, int KH>
constexpr PlaneFn PlaneFor(int groups) {
  return groups == 1 ? &PlaneQ8<S, KH, 1> : &PlaneQ8<S, KH, 2>;
}
template <int S>
PlaneFn PlaneFor(int64_t kh, int groups) {
  switch (kh) {
    case 1: return PlaneFor<S, 1>(groups);
    case 2: return PlaneFor<S, 2>(groups);
    case 3: return PlaneFor<S, 3>(groups);
    case 4: return PlaneFor<S, 4>(groups);
    case 5: return PlaneFor<S, 5>(groups);
    case 6: return PlaneFor<S, 6>(groups);
    case 7: return PlaneFor<S, 7>(groups);
    default: return PlaneFor<S, 8>(groups);
  }
}

// Plane `src` (h x w bytes, XOR `flip`) into the scratch's interior at
// (pt, pl), row by row in 64-byte masked moves (rows of a 14x14 plane are
// too short for memcpy calls to pay).
KILN_DWQ_TARGET void CopyInterior(const uint8_t* src, const DepthwiseArgs& a, const Q8Plan& p, uint8_t flip,
                                  uint8_t* dst) {
  const __m512i vf = _mm512_set1_epi8(static_cast<char>(flip));
  const int64_t rows = std::min(a.h, p.rows - a.pt);
  for (int64_t iy = 0; iy < rows; ++iy) {
    const uint8_t* s = src + iy * a.w;
    uint8_t* d = dst + (iy + a.pt) * p.stride + a.pl;
    for (int64_t i = 0; i < a.w; i += 64) {
      const __mmask64 m = a.w - i >= 64 ? kAll64 : (__mmask64{1} << (a.w - i)) - 1;
      _mm512_mask_storeu_epi8(d + i, m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, s + i), vf));
    }
  }
}
#undef KILN_DWQ_TARGET
#endif

}  // namespace

bool DepthwiseQ8DotSupported() {
#if KILN_DWQ_X86
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
                         __builtin_cpu_supports("avx512vbmi");
  return ok;
#else
  return false;
#endif
}

bool DepthwiseQ8DotSuits(const DepthwiseArgs& a) {
  return DepthwiseQ8DotSupported() && a.m == a.c && (a.sh == 1 || a.sh == 2) && a.sw == a.sh &&
         a.dh == 1 && a.dw == 1 && a.kw >= 1 && a.kw <= kMaxTaps && a.kh >= 1 && a.kh <= kMaxTaps && a.oh > 0 &&
         a.ow > 0 && a.pt >= 0 && a.pl >= 0;
}

DepthwiseQ8Weights PackDepthwiseQ8(const int8_t* w, int64_t m, int64_t kh, int64_t kw) {
  DepthwiseQ8Weights p;
  p.m = m, p.kh = kh, p.kw = kw;
  const int64_t groups = (kw + 3) / 4;
  p.dwords.resize(static_cast<size_t>(m * kh * groups));
  p.sums.resize(static_cast<size_t>(m));
  for (int64_t c = 0; c < m; ++c) {
    const int8_t* wm = w + c * kh * kw;
    int32_t sum = 0;
    for (int64_t ky = 0; ky < kh; ++ky)
      for (int64_t g = 0; g < groups; ++g) {
        uint32_t d = 0;
        for (int t = 0; t < 4; ++t) {
          const int64_t kx = 4 * g + t;
          const int8_t v = kx < kw ? wm[ky * kw + kx] : 0;
          sum += v;
          d |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * t);
        }
        p.dwords[static_cast<size_t>((c * kh + ky) * groups + g)] = static_cast<int32_t>(d);
      }
    p.sums[static_cast<size_t>(c)] = sum;
  }
  return p;
}

bool DepthwiseQ8Dot(ThreadPool& pool, const DepthwiseArgs& a, const DepthwiseQ8Weights& w, const int32_t* bias,
                    const void* xv, void* yv) {
#if KILN_DWQ_X86
  if (!a.quant || !DepthwiseQ8DotSuits(a) || w.m != a.m || w.kh != a.kh || w.kw != a.kw) return false;
  const DepthwiseQuant& q = *a.quant;
  const Q8Plan p = MakeQ8Plan(a);
  const uint8_t flip = q.x_signed ? 0x80 : 0;
  const int32_t zx = q.x_signed ? q.x_zero + 128 : q.x_zero;  // the zero point as read (after the flip)
  const auto* x = static_cast<const uint8_t*>(xv);
  auto* y = static_cast<uint8_t*>(yv);
  const int64_t in_plane = a.h * a.w, out_plane = a.oh * a.ow;
  const size_t scratch = static_cast<size_t>(p.rows * p.stride + 64);
  const PlaneFn plane = a.sh == 1 ? PlaneFor<1>(a.kh, static_cast<int>(p.groups))
                                  : PlaneFor<2>(a.kh, static_cast<int>(p.groups));
  std::atomic<bool> failed{false};
  pool.parallelFor(a.n * a.m, [&](int64_t begin, int64_t end) {
    auto* xs = reinterpret_cast<uint8_t*>(tl_plane.get((scratch + 3) / 4));
    if (!xs) {
      failed.store(true, std::memory_order_relaxed);
      return;
    }
    FillScratch(p, static_cast<uint8_t>(zx), xs);
    for (int64_t nm = begin; nm < end; ++nm) {
      const int64_t m = nm % a.m;
      CopyInterior(x + nm * in_plane, a, p, flip, xs);
      // The zero point's correction folded into the bias.
      const int32_t corr = (bias ? bias[m] : 0) - zx * w.sums[static_cast<size_t>(m)];
      plane(xs, p.stride, a.oh, a.ow, w.dwords.data() + m * a.kh * p.groups, corr, q.y_mult[m],
            static_cast<float>(q.y_zero), static_cast<float>(q.q_lo), static_cast<float>(q.q_hi), y + nm * out_plane);
    }
  });
  return !failed.load(std::memory_order_relaxed);
#else
  (void)pool, (void)a, (void)w, (void)bias, (void)xv, (void)yv;
  return false;
#endif
}

}  // namespace kiln::nn
