// Depthwise 2-D convolution, 16 channels a vector (nn_depthwise.h,
// DepthwiseChannels16): for small output planes with many channels on
// AVX-512, where the flat kernel's rows would be mostly junk columns. Each
// block of 16 channels is transposed into pixel-major scratch, every tap is
// one vector multiply-add for 16 channels, and the result is transposed
// back into the channels' planes.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "ops/nn_depthwise.h"
#include "ops/nn_depthwise_simd.h"
#include "scratch.h"

namespace kiln::nn {
namespace {

#if KILN_DW_AVX512
thread_local ScratchBuffer tl_c16_in, tl_c16_out;  // the transposed input and output of a block

// r[i] (row i of a 16 x 16 block) becomes column i: 32-bit, 64-bit and two
// 128-bit interleaves, 64 shuffles for 256 values. The zero-masked forms
// with every lane set: GCC 12's plain ones warn inside its header (an
// "undefined" source vector).
constexpr __mmask16 kAll16 = 0xFFFF;
constexpr __mmask8 kAll8 = 0xFF;
__attribute__((target("avx512f"), always_inline)) inline void Transpose16(__m512 r[16]) {
  __m512 t[16], u[16], v[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_maskz_unpacklo_ps(kAll16, r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_maskz_unpackhi_ps(kAll16, r[2 * i], r[2 * i + 1]);
  }
  for (int b = 0; b < 16; b += 4) {
    const __m512d t0 = _mm512_castps_pd(t[b]), t1 = _mm512_castps_pd(t[b + 1]);
    const __m512d t2 = _mm512_castps_pd(t[b + 2]), t3 = _mm512_castps_pd(t[b + 3]);
    u[b] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, t0, t2));
    u[b + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, t0, t2));
    u[b + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, t1, t3));
    u[b + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, t1, t3));
  }
  for (int b = 0; b < 16; b += 8)
    for (int j = 0; j < 4; ++j) {
      v[b + j] = _mm512_maskz_shuffle_f32x4(kAll16, u[b + j], u[b + 4 + j], 0x88);
      v[b + 4 + j] = _mm512_maskz_shuffle_f32x4(kAll16, u[b + j], u[b + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_maskz_shuffle_f32x4(kAll16, v[j], v[8 + j], 0x88);
    r[8 + j] = _mm512_maskz_shuffle_f32x4(kAll16, v[j], v[8 + j], 0xdd);
  }
}

// The geometry of DepthwiseChannels16: the padded input window hp x wp.
struct C16Plan {
  int64_t hp, wp, in_floats, out_floats;
  explicit C16Plan(const DepthwiseArgs& a)
      : hp((a.oh - 1) * a.sh + (a.kh - 1) * a.dh + 1),
        wp((a.ow - 1) * a.sw + (a.kw - 1) * a.dw + 1),
        // A row's last group of eight pixels reads up to seven past its end.
        in_floats((hp * wp + 7 * a.sw + 1) * 16),
        out_floats((a.oh * a.ow + 16) * 16) {}
};

// One block of 16 channels (nl of them real) of one image: the input planes
// transposed, 16 pixels at a time, into xin [hp][wp][16] (its padding is
// zero and stays so), the weights into wt [taps][16], each output pixel the
// sum over the taps of an input vector times a weight vector (eight pixels
// of a row share each weight load), into out [oh * ow][16], and that
// transposed back into the channels' planes.
// kQuant (a.quant): x and y are bytes; each input byte comes in as x - zero
// (int8 read as x + 128), so the padding's zeros are the zero point and the
// sums are the exact integer sums (the caller keeps them below 2^24), and
// each output is requantized on the way out as CopyOutQuant does.
template <int KH, int KW, bool kQuant>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void Channels16Block(const DepthwiseArgs& a, const C16Plan& p,
                                                                         const void* xv, const float* w,
                                                                         const float* bias, int64_t nl,
                                                                         float* __restrict xin, float* __restrict out,
                                                                         void* yv, int64_t c0) {
  constexpr int kTaps = KH * KW;
  const int64_t plane = a.h * a.w, out_plane = a.oh * a.ow;
  const __mmask16 chans = TailMask(nl);
  const float* x = static_cast<const float*>(xv);
  const uint8_t* xb = static_cast<const uint8_t*>(xv);
  const DepthwiseQuant* qz = a.quant;
  const __m128i flip = _mm_set1_epi8(static_cast<char>(kQuant && qz->x_signed ? 0x80 : 0));
  const __m512 x_zero = _mm512_set1_ps(kQuant ? static_cast<float>(qz->x_signed ? qz->x_zero + 128 : qz->x_zero) : 0.f);
  __m512 r[16];
  // Input: pixels q0 .. q0 + 15 of the plane, each to its padded position.
  for (int64_t q0 = 0; q0 < plane; q0 += 16) {
    const __mmask16 m = TailMask(plane - q0);
    for (int l = 0; l < 16; ++l) {
      if (l >= nl) {
        r[l] = _mm512_setzero_ps();
      } else if (kQuant) {
        const __m128i bytes = _mm_xor_si128(_mm_maskz_loadu_epi8(m, xb + l * plane + q0), flip);
        r[l] = _mm512_maskz_sub_ps(kAll16, _mm512_maskz_cvtepi32_ps(kAll16, _mm512_maskz_cvtepu8_epi32(kAll16, bytes)),
                                   x_zero);
      } else {
        r[l] = _mm512_maskz_loadu_ps(m, x + l * plane + q0);
      }
    }
    Transpose16(r);
    for (int64_t j = 0; j < 16 && q0 + j < plane; ++j) {
      const int64_t py = (q0 + j) / a.w + a.pt, px = (q0 + j) % a.w + a.pl;
      if (py >= 0 && py < p.hp && px >= 0 && px < p.wp) _mm512_storeu_ps(xin + (py * p.wp + px) * 16, r[j]);
    }
  }
  // Weights: w [16][kTaps] as two 16-tap chunks, into wt [kTaps][16].
  alignas(64) float wt[kTaps * 16];
  for (int t0 = 0; t0 < kTaps; t0 += 16) {
    const __mmask16 m = TailMask(kTaps - t0);
    for (int l = 0; l < 16; ++l) r[l] = l < nl ? _mm512_maskz_loadu_ps(m, w + l * kTaps + t0) : _mm512_setzero_ps();
    Transpose16(r);
    for (int t = t0; t < kTaps && t < t0 + 16; ++t) _mm512_store_ps(wt + t * 16, r[t - t0]);
  }
  const __m512 vb = bias ? _mm512_maskz_loadu_ps(chans, bias) : _mm512_setzero_ps();
  const __m512 vlo = _mm512_set1_ps(a.lo), vhi = _mm512_set1_ps(a.hi);
  const int64_t step = a.sw * 16, dx = a.dw * 16;
  constexpr int kG = 8;  // pixels of a row a group: 8 chains cover the FMA latency
  for (int64_t oy = 0; oy < a.oh; ++oy)
    for (int64_t ox = 0; ox < a.ow; ox += kG) {
      __m512 acc[kG];
      for (int j = 0; j < kG; ++j) acc[j] = vb;
      for (int ky = 0; ky < KH; ++ky) {
        const float* row = xin + ((oy * a.sh + ky * a.dh) * p.wp + ox * a.sw) * 16;
        for (int kx = 0; kx < KW; ++kx) {
          const __m512 wv = _mm512_load_ps(wt + (ky * KW + kx) * 16);
          const float* q = row + kx * dx;
          for (int j = 0; j < kG; ++j)  // pixels past the row's end read the slack and are not stored
            acc[j] = _mm512_fmadd_ps(_mm512_loadu_ps(q + j * step), wv, acc[j]);
        }
      }
      for (int64_t j = 0; j < kG && ox + j < a.ow; ++j) {
        _mm512_storeu_ps(out + (oy * a.ow + ox + j) * 16, !kQuant && a.clamp ? Clamp16(acc[j], vlo, vhi) : acc[j]);
      }
    }
  // Output: pixels q0 .. q0 + 15 back into the channels' planes.
  for (int64_t q0 = 0; q0 < out_plane; q0 += 16) {
    const __mmask16 m = TailMask(out_plane - q0);
    for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_ps(out + (q0 + j) * 16);  // past out_plane: slack
    Transpose16(r);
    if (kQuant) {
      // round(sum * mult) + zero, clamped to [q_lo, q_hi] (CopyOutQuant's
      // arithmetic), as bytes: int8 values wrap to theirs.
      const __m512 zero = _mm512_set1_ps(static_cast<float>(qz->y_zero));
      const __m512 qlo = _mm512_set1_ps(static_cast<float>(qz->q_lo)), qhi = _mm512_set1_ps(static_cast<float>(qz->q_hi));
      uint8_t* yb = static_cast<uint8_t*>(yv);
      for (int64_t l = 0; l < nl; ++l) {
        __m512 v = _mm512_maskz_mul_ps(kAll16, r[l], _mm512_set1_ps(qz->y_mult[c0 + l]));
        v = _mm512_maskz_roundscale_ps(kAll16, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        v = _mm512_maskz_min_ps(kAll16, qhi, _mm512_maskz_max_ps(kAll16, qlo, _mm512_maskz_add_ps(kAll16, v, zero)));
        _mm_mask_storeu_epi8(yb + l * out_plane + q0, m,
                             _mm512_maskz_cvtepi32_epi8(kAll16, _mm512_maskz_cvtps_epi32(kAll16, v)));
      }
      continue;
    }
    float* y = static_cast<float*>(yv);
    for (int64_t l = 0; l < nl; ++l) _mm512_mask_storeu_ps(y + l * out_plane + q0, m, r[l]);
  }
  if (kQuant) return;
  float* y = static_cast<float*>(yv);
  if (a.plane_act)
    for (int64_t l = 0; l < nl; ++l) a.plane_act(a.plane_ctx, y + l * out_plane, out_plane);
}
#endif

}  // namespace

bool DepthwiseChannels16Suits(const DepthwiseArgs& a) {
#if KILN_DW_AVX512
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool k33 = a.kh == 3 && a.kw == 3, k55 = a.kh == 5 && a.kw == 5;
  // Up to 8x8 for 3x3 (on 14x14 the flat kernel is faster), up to 14x14 for 5x5.
  static const bool bw = avx512 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return bw && a.m == a.c && a.c >= 16 && (k33 || k55) && a.oh * a.ow <= (k55 ? 196 : 64);
#else
  (void)a;
  return false;
#endif
}

namespace {

// Every block of 16 channels of every image through Channels16Block.
template <bool kQuant>
bool RunChannels16(ThreadPool& pool, const DepthwiseArgs& a, const void* x, const float* w, const float* bias,
                   void* y) {
#if KILN_DW_AVX512
  const C16Plan p(a);
  const int64_t blocks = (a.c + 15) / 16, taps = a.kh * a.kw;
  const int64_t elem = kQuant ? 1 : static_cast<int64_t>(sizeof(float));
  std::atomic<bool> failed{false};
  pool.parallelFor(a.n * blocks, [&](int64_t begin, int64_t end) {
    float* xin = tl_c16_in.get(static_cast<size_t>(p.in_floats));
    float* out = tl_c16_out.get(static_cast<size_t>(p.out_floats));
    if (!xin || !out) {
      failed.store(true, std::memory_order_relaxed);
      return;
    }
    std::memset(xin, 0, static_cast<size_t>(p.in_floats) * sizeof(float));  // the padding, for every block
    for (int64_t nb = begin; nb < end; ++nb) {
      const int64_t n = nb / blocks, c0 = nb % blocks * 16, nl = std::min<int64_t>(16, a.c - c0);
      const void* xb = static_cast<const uint8_t*>(x) + (n * a.c + c0) * a.h * a.w * elem;
      const float* bb = bias ? bias + c0 : nullptr;
      void* yb = static_cast<uint8_t*>(y) + (n * a.m + c0) * a.oh * a.ow * elem;
      if (a.kh == 3)
        Channels16Block<3, 3, kQuant>(a, p, xb, w + c0 * taps, bb, nl, xin, out, yb, c0);
      else
        Channels16Block<5, 5, kQuant>(a, p, xb, w + c0 * taps, bb, nl, xin, out, yb, c0);
    }
  });
  return !failed.load(std::memory_order_relaxed);
#else
  (void)pool, (void)a, (void)x, (void)w, (void)bias, (void)y;
  return false;
#endif
}

}  // namespace

bool DepthwiseChannels16(ThreadPool& pool, const DepthwiseArgs& a, const float* x, const float* w, const float* bias,
                         float* y) {
  return RunChannels16<false>(pool, a, x, w, bias, y);
}

bool DepthwiseChannels16Quant(ThreadPool& pool, const DepthwiseArgs& a, const void* x, const float* w,
                              const float* bias, void* y) {
  return a.quant && RunChannels16<true>(pool, a, x, w, bias, y);
}

}  // namespace kiln::nn
