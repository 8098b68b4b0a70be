// The AVX2 + FMA micro-kernel of Sgemm (gemm.h): 6 x 16 (12 ymm accumulators).
// Built with -mavx2 -mfma on x86-64 only; called only when the CPU has them.
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

const GemmKernel kKernel = {6, 16, 96, 256, 2048, &MicroAvx2};

}  // namespace

const GemmKernel* Avx2Kernel() { return &kKernel; }

}  // namespace kiln::gemm_detail

#else

namespace kiln::gemm_detail {
const GemmKernel* Avx2Kernel() { return nullptr; }
}  // namespace kiln::gemm_detail

#endif
