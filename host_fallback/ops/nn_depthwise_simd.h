// AVX-512 pieces the depthwise kernels share (nn_depthwise.cpp,
// nn_depthwise_c16.cpp): KILN_DW_AVX512 says whether they exist.
#pragma once

#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KILN_DW_AVX512 1
#else
#define KILN_DW_AVX512 0
#endif

#if KILN_DW_AVX512
namespace kiln::nn {

// The first n lanes (all 16 from n = 16 on).
__attribute__((target("avx512f"))) inline __mmask16 TailMask(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
}

// v > lo ? min(v, hi) : lo, so a NaN becomes lo (the generic CopyOut's clamp).
__attribute__((target("avx512f"))) inline __m512 Clamp16(__m512 v, __m512 lo, __m512 hi) {
  const __mmask16 above = _mm512_cmp_ps_mask(v, lo, _CMP_GT_OQ);
  return _mm512_mask_blend_ps(above, lo, _mm512_maskz_min_ps(above, v, hi));
}

}  // namespace kiln::nn
#endif
