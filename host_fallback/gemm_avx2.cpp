// The AVX2 + FMA micro-kernel of Sgemm (gemm.h): 6 x 16 (12 ymm accumulators).
// Built with -mavx2 -mfma -mf16c on x86-64 only; called only when the CPU has them.
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace kiln::gemm_detail {
namespace {

void MicroAvx2(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool load_c) {
#define KILN_ROW(i) __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = _mm256_setzero_ps();
  KILN_ROW(0) KILN_ROW(1) KILN_ROW(2) KILN_ROW(3) KILN_ROW(4) KILN_ROW(5)
#undef KILN_ROW
  for (int64_t k = 0; k < kc; ++k) {
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
    b += 16;
  }
#define KILN_STORE(i)                                                \
  {                                                                  \
    float* ci = c + (i) * ldc;                                       \
    if (load_c) {                                                    \
      c##i##0 = _mm256_add_ps(c##i##0, _mm256_loadu_ps(ci));         \
      c##i##1 = _mm256_add_ps(c##i##1, _mm256_loadu_ps(ci + 8));     \
    }                                                                \
    _mm256_storeu_ps(ci, c##i##0);                                   \
    _mm256_storeu_ps(ci + 8, c##i##1);                               \
  }
  KILN_STORE(0) KILN_STORE(1) KILN_STORE(2) KILN_STORE(3) KILN_STORE(4) KILN_STORE(5)
#undef KILN_STORE
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

const GemmKernel kKernel = {6, 16, 96, 256, 2048, &MicroAvx2, &FmaLoopAvx2, 12 * 8 * 2, &WidenF16c};

}  // namespace

const GemmKernel* Avx2Kernel() { return &kKernel; }

}  // namespace kiln::gemm_detail

#else

namespace kiln::gemm_detail {
const GemmKernel* Avx2Kernel() { return nullptr; }
}  // namespace kiln::gemm_detail

#endif
