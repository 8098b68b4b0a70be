// The AVX-512 micro-kernel of Sgemm (gemm.h): 8 x 32 (16 zmm accumulators).
// Built with -mavx512f -mfma on x86-64 only; called only when the CPU has it.
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

namespace kiln::gemm_detail {
namespace {

void MicroAvx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool load_c) {
#define KILN_ROW(i) __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = _mm512_setzero_ps();
  KILN_ROW(0) KILN_ROW(1) KILN_ROW(2) KILN_ROW(3) KILN_ROW(4) KILN_ROW(5) KILN_ROW(6) KILN_ROW(7)
#undef KILN_ROW
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#define KILN_FMA(i)                               \
  {                                               \
    const __m512 av = _mm512_set1_ps(a[i]);       \
    c##i##0 = _mm512_fmadd_ps(av, b0, c##i##0);   \
    c##i##1 = _mm512_fmadd_ps(av, b1, c##i##1);   \
  }
    KILN_FMA(0) KILN_FMA(1) KILN_FMA(2) KILN_FMA(3) KILN_FMA(4) KILN_FMA(5) KILN_FMA(6) KILN_FMA(7)
#undef KILN_FMA
    a += 8;
    b += 32;
  }
#define KILN_STORE(i)                                                                   \
  {                                                                                     \
    float* ci = c + (i) * ldc;                                                          \
    if (load_c) {                                                                       \
      c##i##0 = _mm512_add_ps(c##i##0, _mm512_loadu_ps(ci));                            \
      c##i##1 = _mm512_add_ps(c##i##1, _mm512_loadu_ps(ci + 16));                       \
    }                                                                                   \
    _mm512_storeu_ps(ci, c##i##0);                                                      \
    _mm512_storeu_ps(ci + 16, c##i##1);                                                 \
  }
  KILN_STORE(0) KILN_STORE(1) KILN_STORE(2) KILN_STORE(3) KILN_STORE(4) KILN_STORE(5) KILN_STORE(6) KILN_STORE(7)
#undef KILN_STORE
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

// M == 1 over PackedB panels (gemm.h), two panels (64 columns) at a time:
// each k is 256 contiguous bytes of B against one broadcast of a[k]. Even and
// odd k go to separate accumulators, so four FMA chains are in flight; that
// streams B faster than L3 delivers it.
void GemvAvx512(int64_t K, int64_t KC, const float* a, const float* packed, int64_t n_pad, int64_t p0,
                int64_t panels, float* y) {
  constexpr int kNr = 32;
  int64_t p = 0;
  for (; p + 2 <= panels; p += 2) {
    __m512 s00 = _mm512_setzero_ps(), s01 = _mm512_setzero_ps(), s10 = _mm512_setzero_ps(),
           s11 = _mm512_setzero_ps();
    __m512 t00 = _mm512_setzero_ps(), t01 = _mm512_setzero_ps(), t10 = _mm512_setzero_ps(),
           t11 = _mm512_setzero_ps();
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = K - pc < KC ? K - pc : KC;
      const float* b0 = packed + pc * n_pad + (p0 + p) * kNr * kc;
      const float* b1 = b0 + kNr * kc;
      const float* ak = a + pc;
      int64_t k = 0;
      for (; k + 2 <= kc; k += 2, b0 += 2 * kNr, b1 += 2 * kNr) {
        const __m512 x0 = _mm512_set1_ps(ak[k]), x1 = _mm512_set1_ps(ak[k + 1]);
        s00 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0), s00);
        s01 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0 + 16), s01);
        s10 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b1), s10);
        s11 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b1 + 16), s11);
        t00 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b0 + kNr), t00);
        t01 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b0 + kNr + 16), t01);
        t10 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b1 + kNr), t10);
        t11 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(b1 + kNr + 16), t11);
      }
      if (k < kc) {
        const __m512 x0 = _mm512_set1_ps(ak[k]);
        s00 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0), s00);
        s01 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0 + 16), s01);
        s10 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b1), s10);
        s11 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b1 + 16), s11);
      }
    }
    float* yp = y + p * kNr;
    _mm512_storeu_ps(yp, _mm512_add_ps(s00, t00));
    _mm512_storeu_ps(yp + 16, _mm512_add_ps(s01, t01));
    _mm512_storeu_ps(yp + 32, _mm512_add_ps(s10, t10));
    _mm512_storeu_ps(yp + 48, _mm512_add_ps(s11, t11));
  }
  for (; p < panels; ++p) {  // an odd last panel
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = K - pc < KC ? K - pc : KC;
      const float* b0 = packed + pc * n_pad + (p0 + p) * kNr * kc;
      for (int64_t k = 0; k < kc; ++k, b0 += kNr) {
        const __m512 x0 = _mm512_set1_ps(a[pc + k]);
        s0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0), s0);
        s1 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(b0 + 16), s1);
      }
    }
    _mm512_storeu_ps(y + p * kNr, s0);
    _mm512_storeu_ps(y + p * kNr + 16, s1);
  }
}

const GemmKernel kKernel = {8, 32, 128, 256, 2048, &MicroAvx512, &FmaLoopAvx512, 12 * 16 * 2, &GemvAvx512};

}  // namespace

const GemmKernel* Avx512Kernel() { return &kKernel; }

}  // namespace kiln::gemm_detail

#else

namespace kiln::gemm_detail {
const GemmKernel* Avx512Kernel() { return nullptr; }
}  // namespace kiln::gemm_detail

#endif
