// The AVX2 + FMA micro-kernel of Sgemm (gemm.h): 6 x 16 (12 ymm accumulators).
// Built with -mavx2 -mfma -mf16c on x86-64 only; called only when the CPU has them.
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace kiln::gemm_detail {
namespace {

// The tile epilogue (TileEpilogue) on row i's two vectors: max first, so a
// NaN becomes lo (vmaxps returns its second operand when either is NaN).
struct Finish256 {
  __m256 cb0, cb1, lo, hi;
  const float* rb;
  bool clamp;
  explicit Finish256(const TileEpilogue& e)
      : cb0(e.col_bias ? _mm256_loadu_ps(e.col_bias) : _mm256_setzero_ps()),
        cb1(e.col_bias ? _mm256_loadu_ps(e.col_bias + 8) : _mm256_setzero_ps()),
        lo(_mm256_set1_ps(e.lo)), hi(_mm256_set1_ps(e.hi)), rb(e.row_bias), clamp(e.clamp) {}
  void operator()(int i, __m256& v0, __m256& v1) const {
    const __m256 r = rb ? _mm256_set1_ps(rb[i]) : _mm256_setzero_ps();
    v0 = _mm256_add_ps(v0, _mm256_add_ps(r, cb0));
    v1 = _mm256_add_ps(v1, _mm256_add_ps(r, cb1));
    if (clamp) {
      v0 = _mm256_min_ps(_mm256_max_ps(v0, lo), hi);
      v1 = _mm256_min_ps(_mm256_max_ps(v1, lo), hi);
    }
  }
};

// The 6 x 16 tile; with kPrefetch, micro_pf's prefetches (SpreadPrefetch).
template <bool kPrefetch>
__attribute__((always_inline)) inline void Micro6x16(int64_t kc, const float* a, const float* b, int64_t ldb,
                                                      float* c, int64_t ldc, bool load_c, const TileEpilogue* ep,
                                                      const char* pf, int64_t lines) {
#define KILN_ROW(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps();
  KILN_ROW(0) KILN_ROW(1) KILN_ROW(2) KILN_ROW(3) KILN_ROW(4) KILN_ROW(5)
#undef KILN_ROW
  SpreadPrefetch fetch(pf, kPrefetch ? lines : 0, kc);
  for (int64_t k = 0; k < kc; ++k) {
    if (kPrefetch) fetch.step();
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#define KILN_FMA(i)                               \
  {                                               \
    const __m256 av = _mm256_broadcast_ss(a + i); \
    c##i##0 = _mm256_fmadd_ps(av, b0, c##i##0);   \
    c##i##1 = _mm256_fmadd_ps(av, b1, c##i##1);   \
  }
    KILN_FMA(0) KILN_FMA(1) KILN_FMA(2) KILN_FMA(3) KILN_FMA(4) KILN_FMA(5)
#undef KILN_FMA
    a += 6;
    b += ldb;
  }
  if (kPrefetch) fetch.finish();
#define KILN_STORE(i)                                                \
  {                                                                  \
    float* ci = c + (i) * ldc;                                       \
    if (load_c) {                                                    \
      c##i##0 = _mm256_add_ps(c##i##0, _mm256_loadu_ps(ci));         \
      c##i##1 = _mm256_add_ps(c##i##1, _mm256_loadu_ps(ci + 8));     \
    }                                                                \
    if (ep) finish(i, c##i##0, c##i##1);                             \
    _mm256_storeu_ps(ci, c##i##0);                                   \
    _mm256_storeu_ps(ci + 8, c##i##1);                               \
  }
  const Finish256 finish(ep ? *ep : TileEpilogue{});
  KILN_STORE(0) KILN_STORE(1) KILN_STORE(2) KILN_STORE(3) KILN_STORE(4) KILN_STORE(5)
#undef KILN_STORE
}

void MicroAvx2(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool load_c,
               const TileEpilogue* ep) {
  Micro6x16<false>(kc, a, b, ldb, c, ldc, load_c, ep, nullptr, 0);
}

void MicroAvx2Pf(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool load_c,
                 const TileEpilogue* ep, const char* pf, int64_t lines) {
  Micro6x16<true>(kc, a, b, ldb, c, ldc, load_c, ep, pf, lines);
}

// 12 independent chains: enough to cover FMA latency x issue width on the
// cores we know (4 cycles x 2 ports, plus slack). Each chain starts from a
// different value: identical chains are one value to the compiler, which then
// computes it once and the probe reports 12x the FMAs it ran.
float FmaLoopAvx2(int64_t iters) {
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  __m256 a0 = _mm256_set1_ps(1.f), a1 = _mm256_set1_ps(1.01f), a2 = _mm256_set1_ps(1.02f),
         a3 = _mm256_set1_ps(1.03f), a4 = _mm256_set1_ps(1.04f), a5 = _mm256_set1_ps(1.05f),
         a6 = _mm256_set1_ps(1.06f), a7 = _mm256_set1_ps(1.07f), a8 = _mm256_set1_ps(1.08f),
         a9 = _mm256_set1_ps(1.09f), a10 = _mm256_set1_ps(1.1f), a11 = _mm256_set1_ps(1.11f);
  for (int64_t i = 0; i < iters; ++i) {
    a0 = _mm256_fmadd_ps(a0, x, y); a1 = _mm256_fmadd_ps(a1, x, y); a2 = _mm256_fmadd_ps(a2, x, y);
    a3 = _mm256_fmadd_ps(a3, x, y); a4 = _mm256_fmadd_ps(a4, x, y); a5 = _mm256_fmadd_ps(a5, x, y);
    a6 = _mm256_fmadd_ps(a6, x, y); a7 = _mm256_fmadd_ps(a7, x, y); a8 = _mm256_fmadd_ps(a8, x, y);
    a9 = _mm256_fmadd_ps(a9, x, y); a10 = _mm256_fmadd_ps(a10, x, y); a11 = _mm256_fmadd_ps(a11, x, y);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)), _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_hadd_ps(h, h);
  h = _mm_hadd_ps(h, h);
  return _mm_cvtss_f32(h);
}

// F16C (every AVX2 CPU we know has it; gemm.cpp checks before using this).
void WidenF16c(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

// M == 1 over PackedB panels (gemm.h), two panels (32 columns) at a time,
// even and odd k in separate accumulators (as GemvAvx512).
void GemvAvx2(int64_t K, int64_t KC, const float* a, const float* packed, int64_t n_pad, int64_t p0, int64_t panels,
              float* y) {
  constexpr int kNr = 16;
  int64_t p = 0;
  for (; p + 2 <= panels; p += 2) {
    __m256 s00 = _mm256_setzero_ps(), s01 = _mm256_setzero_ps(), s10 = _mm256_setzero_ps(),
           s11 = _mm256_setzero_ps();
    __m256 t00 = _mm256_setzero_ps(), t01 = _mm256_setzero_ps(), t10 = _mm256_setzero_ps(),
           t11 = _mm256_setzero_ps();
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = K - pc < KC ? K - pc : KC;
      const float* b0 = packed + pc * n_pad + (p0 + p) * kNr * kc;
      const float* b1 = b0 + kNr * kc;
      const float* ak = a + pc;
      int64_t k = 0;
      for (; k + 2 <= kc; k += 2, b0 += 2 * kNr, b1 += 2 * kNr) {
        const __m256 x0 = _mm256_broadcast_ss(ak + k), x1 = _mm256_broadcast_ss(ak + k + 1);
        s00 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0), s00);
        s01 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0 + 8), s01);
        s10 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b1), s10);
        s11 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b1 + 8), s11);
        t00 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b0 + kNr), t00);
        t01 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b0 + kNr + 8), t01);
        t10 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b1 + kNr), t10);
        t11 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b1 + kNr + 8), t11);
      }
      if (k < kc) {
        const __m256 x0 = _mm256_broadcast_ss(ak + k);
        s00 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0), s00);
        s01 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0 + 8), s01);
        s10 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b1), s10);
        s11 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b1 + 8), s11);
      }
    }
    float* yp = y + p * kNr;
    _mm256_storeu_ps(yp, _mm256_add_ps(s00, t00));
    _mm256_storeu_ps(yp + 8, _mm256_add_ps(s01, t01));
    _mm256_storeu_ps(yp + 16, _mm256_add_ps(s10, t10));
    _mm256_storeu_ps(yp + 24, _mm256_add_ps(s11, t11));
  }
  // An odd last panel, summed as the pairs sum theirs (even and odd k
  // apart), so that any split of the panels over threads gives the same bits.
  for (; p < panels; ++p) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), t0 = _mm256_setzero_ps(), t1 = _mm256_setzero_ps();
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = K - pc < KC ? K - pc : KC;
      const float* b0 = packed + pc * n_pad + (p0 + p) * kNr * kc;
      const float* ak = a + pc;
      int64_t k = 0;
      for (; k + 2 <= kc; k += 2, b0 += 2 * kNr) {
        const __m256 x0 = _mm256_broadcast_ss(ak + k), x1 = _mm256_broadcast_ss(ak + k + 1);
        s0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0), s0);
        s1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0 + 8), s1);
        t0 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b0 + kNr), t0);
        t1 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b0 + kNr + 8), t1);
      }
      if (k < kc) {
        const __m256 x0 = _mm256_broadcast_ss(ak + k);
        s0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0), s0);
        s1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0 + 8), s1);
      }
    }
    _mm256_storeu_ps(y + p * kNr, _mm256_add_ps(s0, t0));
    _mm256_storeu_ps(y + p * kNr + 8, _mm256_add_ps(s1, t1));
  }
}

const GemmKernel kKernel = {6,        16,      96,      256,         2048, &MicroAvx2, &FmaLoopAvx2, 12 * 8 * 2,
                            &GemvAvx2, nullptr, &WidenF16c, nullptr, &MicroAvx2Pf};

}  // namespace

const GemmKernel* Avx2Kernel() { return &kKernel; }

}  // namespace kiln::gemm_detail

#else

namespace kiln::gemm_detail {
const GemmKernel* Avx2Kernel() { return nullptr; }
}  // namespace kiln::gemm_detail

#endif
