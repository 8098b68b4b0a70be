// The AVX-512 micro-kernel of Sgemm (gemm.h): 8 x 32 (16 zmm accumulators).
// Built with -mavx512f -mfma on x86-64 only; called only when the CPU has it.
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

namespace kiln::gemm_detail {
namespace {

// _mm512_max_ps / _mm512_min_ps with all lanes: GCC 12's plain forms warn
// inside its header (an "undefined" source vector).
inline __m512 Max(__m512 a, __m512 b) { return _mm512_maskz_max_ps(static_cast<__mmask16>(0xFFFF), a, b); }
inline __m512 Min(__m512 a, __m512 b) { return _mm512_maskz_min_ps(static_cast<__mmask16>(0xFFFF), a, b); }

// The tile epilogue (TileEpilogue) on row i's two vectors: max first, so a
// NaN becomes lo (vmaxps returns its second operand when either is NaN).
struct Finish512 {
  __m512 cb0, cb1, lo, hi;
  const float* rb;
  bool clamp;
  // wide: the tile is 32 columns (else 16: v1 and cb1 unused).
  Finish512(const TileEpilogue& e, bool wide)
      : cb0(e.col_bias ? _mm512_loadu_ps(e.col_bias) : _mm512_setzero_ps()),
        cb1(e.col_bias && wide ? _mm512_loadu_ps(e.col_bias + 16) : _mm512_setzero_ps()),
        lo(_mm512_set1_ps(e.lo)), hi(_mm512_set1_ps(e.hi)), rb(e.row_bias), clamp(e.clamp) {}
  void operator()(int i, __m512& v0, __m512& v1) const {
    const __m512 r = rb ? _mm512_set1_ps(rb[i]) : _mm512_setzero_ps();
    v0 = _mm512_add_ps(v0, _mm512_add_ps(r, cb0));
    v1 = _mm512_add_ps(v1, _mm512_add_ps(r, cb1));
    if (clamp) {
      v0 = Min(Max(v0, lo), hi);
      v1 = Min(Max(v1, lo), hi);
    }
  }
};

// The 8 x 32 tile; with kPrefetch it also asks for `lines` cache lines
// from pf on (SpreadPrefetch): the next panel of weights that stream from
// memory, fetched while this tile computes (GemmKernel::micro_pf).
// A's 8 values of step k lie at a + k * as: 8 in packed panels, or the
// row stride of an A read where it lies (micro_a).
template <bool kPrefetch>
__attribute__((always_inline)) inline void Micro8x32(int64_t kc, const float* a, int64_t as, const float* b,
                                                      int64_t ldb, float* c, int64_t ldc, bool load_c,
                                                      const TileEpilogue* ep, const char* pf, int64_t lines) {
#define KILN_ROW(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
  KILN_ROW(0) KILN_ROW(1) KILN_ROW(2) KILN_ROW(3) KILN_ROW(4) KILN_ROW(5) KILN_ROW(6) KILN_ROW(7)
#undef KILN_ROW
  SpreadPrefetch fetch(pf, kPrefetch ? lines : 0, kc);
  for (int64_t k = 0; k < kc; ++k) {
    if (kPrefetch) fetch.step();
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#define KILN_FMA(i)                               \
  {                                               \
    const __m512 av = _mm512_set1_ps(a[i]);       \
    c##i##0 = _mm512_fmadd_ps(av, b0, c##i##0);   \
    c##i##1 = _mm512_fmadd_ps(av, b1, c##i##1);   \
  }
    KILN_FMA(0) KILN_FMA(1) KILN_FMA(2) KILN_FMA(3) KILN_FMA(4) KILN_FMA(5) KILN_FMA(6) KILN_FMA(7)
#undef KILN_FMA
    a += as;
    b += ldb;
  }
  if (kPrefetch) fetch.finish();
#define KILN_STORE(i)                                                                   \
  {                                                                                     \
    float* ci = c + (i) * ldc;                                                          \
    if (load_c) {                                                                       \
      c##i##0 = _mm512_add_ps(c##i##0, _mm512_loadu_ps(ci));                            \
      c##i##1 = _mm512_add_ps(c##i##1, _mm512_loadu_ps(ci + 16));                       \
    }                                                                                   \
    if (ep) finish(i, c##i##0, c##i##1);                                                \
    _mm512_storeu_ps(ci, c##i##0);                                                      \
    _mm512_storeu_ps(ci + 16, c##i##1);                                                 \
  }
  const Finish512 finish(ep ? *ep : TileEpilogue{}, true);
  KILN_STORE(0) KILN_STORE(1) KILN_STORE(2) KILN_STORE(3) KILN_STORE(4) KILN_STORE(5) KILN_STORE(6) KILN_STORE(7)
#undef KILN_STORE
}

void MicroAvx512(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool load_c,
                 const TileEpilogue* ep) {
  Micro8x32<false>(kc, a, 8, b, ldb, c, ldc, load_c, ep, nullptr, 0);
}

void MicroAvx512Pf(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool load_c,
                   const TileEpilogue* ep, const char* pf, int64_t lines) {
  Micro8x32<true>(kc, a, 8, b, ldb, c, ldc, load_c, ep, pf, lines);
}

// The 8 x 16 tile (GemmKernel::micro_half) on 32-wide panels (ldb 32):
// the last panel of a plane such as 13x13 or 14x14.
void MicroAvx512Half(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool load_c,
                     const TileEpilogue* ep) {
#define KILN_ROW(i) __m512 c##i = _mm512_setzero_ps();
  KILN_ROW(0) KILN_ROW(1) KILN_ROW(2) KILN_ROW(3) KILN_ROW(4) KILN_ROW(5) KILN_ROW(6) KILN_ROW(7)
#undef KILN_ROW
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b);
#define KILN_FMA(i) c##i = _mm512_fmadd_ps(_mm512_set1_ps(a[i]), b0, c##i);
    KILN_FMA(0) KILN_FMA(1) KILN_FMA(2) KILN_FMA(3) KILN_FMA(4) KILN_FMA(5) KILN_FMA(6) KILN_FMA(7)
#undef KILN_FMA
    a += 8;
    b += ldb;
  }
  const Finish512 finish(ep ? *ep : TileEpilogue{}, false);
  __m512 unused = _mm512_setzero_ps();
#define KILN_STORE(i)                                                 \
  {                                                                   \
    float* ci = c + (i) * ldc;                                        \
    if (load_c) c##i = _mm512_add_ps(c##i, _mm512_loadu_ps(ci));      \
    if (ep) finish(i, c##i, unused);                                  \
    _mm512_storeu_ps(ci, c##i);                                       \
  }
  KILN_STORE(0) KILN_STORE(1) KILN_STORE(2) KILN_STORE(3) KILN_STORE(4) KILN_STORE(5) KILN_STORE(6) KILN_STORE(7)
#undef KILN_STORE
}

// The 8 x 32 tile's first R rows (R < 8) on the same 8-row panels of A: a
// last row of tiles whose M is not a multiple of 8 (the pixels of a 7x7
// plane, y^T = x^T w^T: 49 = 6 x 8 + 1, where a whole tile for the last
// pixel cost 8/7 of the conv).
template <int R>
__attribute__((always_inline)) inline void MicroRows32(int64_t kc, const float* a, int64_t as, const float* b,
                                                       int64_t ldb, float* c, int64_t ldc, bool load_c,
                                                       const TileEpilogue* ep) {
  // Fewer than 4 rows keep S sets of sums over alternating k, so that at
  // least 8 FMA chains cover the FMA latency (one row's 2 chains waited 4
  // cycles a k).
  constexpr int S = R >= 4 ? 1 : R >= 2 ? 2 : 4;
  __m512 c0[S][R], c1[S][R];
#pragma GCC unroll 8
  for (int s = 0; s < S; ++s)
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) c0[s][i] = c1[s][i] = _mm512_setzero_ps();
  auto step = [&](int s) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m512 av = _mm512_set1_ps(a[i]);
      c0[s][i] = _mm512_fmadd_ps(av, b0, c0[s][i]);
      c1[s][i] = _mm512_fmadd_ps(av, b1, c1[s][i]);
    }
    a += as;
    b += ldb;
  };
  int64_t k = 0;
  for (; k + S <= kc; k += S)
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) step(s);
  for (; k < kc; ++k) step(0);
#pragma GCC unroll 4
  for (int s = 1; s < S; ++s)
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      c0[0][i] = _mm512_add_ps(c0[0][i], c0[s][i]);
      c1[0][i] = _mm512_add_ps(c1[0][i], c1[s][i]);
    }
  const Finish512 finish(ep ? *ep : TileEpilogue{}, true);
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    float* ci = c + i * ldc;
    if (load_c) {
      c0[0][i] = _mm512_add_ps(c0[0][i], _mm512_loadu_ps(ci));
      c1[0][i] = _mm512_add_ps(c1[0][i], _mm512_loadu_ps(ci + 16));
    }
    if (ep) finish(i, c0[0][i], c1[0][i]);
    _mm512_storeu_ps(ci, c0[0][i]);
    _mm512_storeu_ps(ci + 16, c1[0][i]);
  }
}

// GemmKernel::micro_a: the first `rows` rows of an 8 x 32 tile, A's step k
// at a + k * as, with micro_pf's spread prefetch on whole tiles.
void MicroAvx512A(int rows, int64_t kc, const float* a, int64_t as, const float* b, int64_t ldb, float* c,
                  int64_t ldc, bool load_c, const TileEpilogue* ep, const char* pf, int64_t lines) {
  if (rows < 8 && pf) PrefetchLines(pf, lines);
  switch (rows) {
    case 1: return MicroRows32<1>(kc, a, as, b, ldb, c, ldc, load_c, ep);
    case 2: return MicroRows32<2>(kc, a, as, b, ldb, c, ldc, load_c, ep);
    case 3: return MicroRows32<3>(kc, a, as, b, ldb, c, ldc, load_c, ep);
    case 4: return MicroRows32<4>(kc, a, as, b, ldb, c, ldc, load_c, ep);
    case 5: return MicroRows32<5>(kc, a, as, b, ldb, c, ldc, load_c, ep);
    case 6: return MicroRows32<6>(kc, a, as, b, ldb, c, ldc, load_c, ep);
    case 7: return MicroRows32<7>(kc, a, as, b, ldb, c, ldc, load_c, ep);
    default:
      if (pf) return Micro8x32<true>(kc, a, as, b, ldb, c, ldc, load_c, ep, pf, lines);
      return Micro8x32<false>(kc, a, as, b, ldb, c, ldc, load_c, ep, nullptr, 0);
  }
}

// 12 independent chains: enough to cover FMA latency x issue width on the
// cores we know (4 cycles x 2 ports, plus slack). Each chain starts from a
// different value: identical chains are one value to the compiler, which then
// computes it once and the probe reports 12x the FMAs it ran.
float FmaLoopAvx512(int64_t iters) {
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  __m512 a0 = _mm512_set1_ps(1.f), a1 = _mm512_set1_ps(1.01f), a2 = _mm512_set1_ps(1.02f),
         a3 = _mm512_set1_ps(1.03f), a4 = _mm512_set1_ps(1.04f), a5 = _mm512_set1_ps(1.05f),
         a6 = _mm512_set1_ps(1.06f), a7 = _mm512_set1_ps(1.07f), a8 = _mm512_set1_ps(1.08f),
         a9 = _mm512_set1_ps(1.09f), a10 = _mm512_set1_ps(1.1f), a11 = _mm512_set1_ps(1.11f);
  for (int64_t i = 0; i < iters; ++i) {
    a0 = _mm512_fmadd_ps(a0, x, y); a1 = _mm512_fmadd_ps(a1, x, y); a2 = _mm512_fmadd_ps(a2, x, y);
    a3 = _mm512_fmadd_ps(a3, x, y); a4 = _mm512_fmadd_ps(a4, x, y); a5 = _mm512_fmadd_ps(a5, x, y);
    a6 = _mm512_fmadd_ps(a6, x, y); a7 = _mm512_fmadd_ps(a7, x, y); a8 = _mm512_fmadd_ps(a8, x, y);
    a9 = _mm512_fmadd_ps(a9, x, y); a10 = _mm512_fmadd_ps(a10, x, y); a11 = _mm512_fmadd_ps(a11, x, y);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)), _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  alignas(64) float lanes[16];  // not _mm512_reduce_add_ps: GCC 12's header warns inside it
  _mm512_store_ps(lanes, s);
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

// _mm512_maskz_cvtph_ps with all lanes: GCC 12's _mm512_cvtph_ps warns
// inside its header (an "undefined" source vector).
inline __m512 CvtPh(__m256i h) { return _mm512_maskz_cvtph_ps(static_cast<__mmask16>(0xFFFF), h); }

void WidenAvx512(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, CvtPh(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  if (i < n) {  // the tail through a zeroed block (masked 16-bit loads need AVX-512 BW)
    alignas(32) uint16_t tail[16] = {};
    for (int64_t j = i; j < n; ++j) tail[j - i] = src[j];
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(dst + i, m, CvtPh(_mm256_load_si256(reinterpret_cast<const __m256i*>(tail))));
  }
}

// M == 1 over PackedB panels (gemm.h), four panels (128 columns) at a time:
// each k is four 128-byte runs of B against one broadcast of a[k], eight
// independent FMA chains, four sequential streams for the prefetchers.
// P panels of GemvAvx512 from panel p0 (into y): their even and their odd
// k summed apart (two chains a half, for the FMA latency of a lone panel)
// and added at the end. Four panels at a time or one sum alike, so that a
// panel's bits do not depend on which group it falls in and any split of
// the panels over threads gives one thread's bits (the 4-panel groups
// summed in one chain, the last one to three panels in two, and a 1x1 conv
// on a 1x1 plane changed its bits with the thread count).
template <int P>
__attribute__((always_inline)) inline void GemvPanels512(int64_t K, int64_t KC, const float* a, const float* packed,
                                                         int64_t n_pad, int64_t p0, float* y) {
  constexpr int kNr = 32;
  __m512 s[P][2], t[P][2];
  for (int j = 0; j < P; ++j) s[j][0] = s[j][1] = t[j][0] = t[j][1] = _mm512_setzero_ps();
  for (int64_t pc = 0; pc < K; pc += KC) {
    const int64_t kc = K - pc < KC ? K - pc : KC;
    const float* b = packed + pc * n_pad + p0 * kNr * kc;
    const float* ak = a + pc;
    int64_t k = 0;
    for (; k + 2 <= kc; k += 2, b += 2 * kNr) {
      const __m512 x0 = _mm512_set1_ps(ak[k]), x1 = _mm512_set1_ps(ak[k + 1]);
      for (int j = 0; j < P; ++j) {
        const float* bj = b + j * kNr * kc;
        s[j][0] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(bj), s[j][0]);
        s[j][1] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(bj + 16), s[j][1]);
        t[j][0] = _mm512_fmadd_ps(x1, _mm512_loadu_ps(bj + kNr), t[j][0]);
        t[j][1] = _mm512_fmadd_ps(x1, _mm512_loadu_ps(bj + kNr + 16), t[j][1]);
      }
    }
    if (k < kc) {
      const __m512 x0 = _mm512_set1_ps(ak[k]);
      for (int j = 0; j < P; ++j) {
        const float* bj = b + j * kNr * kc;
        s[j][0] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(bj), s[j][0]);
        s[j][1] = _mm512_fmadd_ps(x0, _mm512_loadu_ps(bj + 16), s[j][1]);
      }
    }
  }
  for (int j = 0; j < P; ++j) {
    _mm512_storeu_ps(y + j * kNr, _mm512_add_ps(s[j][0], t[j][0]));
    _mm512_storeu_ps(y + j * kNr + 16, _mm512_add_ps(s[j][1], t[j][1]));
  }
}

void GemvAvx512(int64_t K, int64_t KC, const float* a, const float* packed, int64_t n_pad, int64_t p0,
                int64_t panels, float* y) {
  int64_t p = 0;
  for (; p + 4 <= panels; p += 4) GemvPanels512<4>(K, KC, a, packed, n_pad, p0 + p, y + p * 32);
  for (; p < panels; ++p) GemvPanels512<1>(K, KC, a, packed, n_pad, p0 + p, y + p * 32);
}

// One 8-row panel of A (not transposed) times alpha, 8 x 8 blocks at a time
// transposed in ymm registers (unpack, shuffle, 128-bit permute): eight row
// loads and eight contiguous stores a block instead of 64 scattered stores.
void PackA8(const float* A, int64_t lda, int64_t kc, float alpha, float* d) {
  const __m256 al = _mm256_set1_ps(alpha);
  int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    const float* a = A + k;
    const __m256 r0 = _mm256_mul_ps(al, _mm256_loadu_ps(a)), r1 = _mm256_mul_ps(al, _mm256_loadu_ps(a + lda)),
                 r2 = _mm256_mul_ps(al, _mm256_loadu_ps(a + 2 * lda)),
                 r3 = _mm256_mul_ps(al, _mm256_loadu_ps(a + 3 * lda)),
                 r4 = _mm256_mul_ps(al, _mm256_loadu_ps(a + 4 * lda)),
                 r5 = _mm256_mul_ps(al, _mm256_loadu_ps(a + 5 * lda)),
                 r6 = _mm256_mul_ps(al, _mm256_loadu_ps(a + 6 * lda)),
                 r7 = _mm256_mul_ps(al, _mm256_loadu_ps(a + 7 * lda));
    // t: pairs of rows interleaved; u: four rows' element c in lane c (low)
    // and c + 4 (high); the permutes join rows 0-3 with rows 4-7.
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
                 t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
                 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)),
                 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)),
                 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)),
                 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)),
                 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)),
                 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2)),
                 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)),
                 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    float* o = d + k * 8;
    _mm256_storeu_ps(o, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(o + 16, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(o + 24, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(o + 32, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(o + 40, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(o + 48, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(o + 56, _mm256_permute2f128_ps(u3, u7, 0x31));
  }
  for (; k < kc; ++k)
    for (int r = 0; r < 8; ++r) d[k * 8 + r] = alpha * A[r * lda + k];
}

const GemmKernel kKernel = {8,      32,         128,     256,          2048,        &MicroAvx512, &FmaLoopAvx512,
                            12 * 16 * 2, &GemvAvx512, &PackA8, &WidenAvx512, &MicroAvx512Half,
                            &MicroAvx512Pf, &MicroAvx512A};

}  // namespace

const GemmKernel* Avx512Kernel() { return &kKernel; }

}  // namespace kiln::gemm_detail

#else

namespace kiln::gemm_detail {
const GemmKernel* Avx512Kernel() { return nullptr; }
}  // namespace kiln::gemm_detail

#endif
