// QGemm's x86-64 micro-kernels (qgemm.h). Each function carries its own
// target attribute (no -m flags for the file, so nothing else in it can use
// instructions the CPU may lack) and is only entered after QIsaSupported
// checked the CPU.
//
// AVX-512 VNNI, 8 x 32: each group of four k loads two 64-byte B vectors
// (32 columns x 4 u8) and, for each of the 8 rows, broadcasts the row's four
// int8 weights as one dword and issues two vpdpbusd: 16 accumulators, 64
// multiply-adds an instruction.
// AVX2, 6 x 16: a group of two k is 32 bytes of B (16 columns x 2 u8),
// widened to two vectors of i16 pairs; each row's two weights (int16, packed
// as such) are broadcast and vpmaddwd adds both products into the column's
// int32 lane: 12 accumulators, exact for every input.
#include "qgemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <cstring>

namespace kiln::qgemm_detail {
namespace {

inline int32_t LoadDword(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void MicroVnni(int64_t kq, const int8_t* a, const uint8_t* b, int32_t* c) {
  __m512i acc[8][2];
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  for (int64_t q = 0; q < kq; ++q, a += 32, b += 128) {
    const __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 64);
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
      const __m512i w = _mm512_set1_epi32(LoadDword(a + r * 4));
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], b0, w);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], b1, w);
    }
  }
  for (int r = 0; r < 8; ++r) {
    _mm512_store_si512(c + r * 32, acc[r][0]);
    _mm512_store_si512(c + r * 32 + 16, acc[r][1]);
  }
}

__attribute__((target("avx2"))) void MicroAvx2(int64_t kq, const int8_t* a, const uint8_t* b, int32_t* c) {
  __m256i acc[6][2];
  for (int r = 0; r < 6; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t q = 0; q < kq; ++q, a += 24, b += 32) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(raw));
    const __m256i b1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(raw, 1));
#pragma GCC unroll 6
    for (int r = 0; r < 6; ++r) {
      const __m256i w = _mm256_set1_epi32(LoadDword(a + r * 4));
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(b0, w));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(b1, w));
    }
  }
  for (int r = 0; r < 6; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 16), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 16 + 8), acc[r][1]);
  }
}

const QKernel kVnni{8, 32, 4, false, &MicroVnni};
const QKernel kAvx2{6, 16, 2, true, &MicroAvx2};

}  // namespace

const QKernel* Avx512VnniKernel() { return &kVnni; }
const QKernel* Avx2QKernel() { return &kAvx2; }

}  // namespace kiln::qgemm_detail

#endif
