// QGemm's x86-64 micro-kernels (qgemm.h). Each function carries its own
// target attribute (no -m flags for the file, so nothing else in it can use
// instructions the CPU may lack) and is only entered after QIsaSupported
// checked the CPU.
//
// AVX-512 VNNI, 8 x 32: each group of four k loads two 64-byte B vectors
// (32 columns x 4 u8) and, for each of the 8 rows, broadcasts the row's four
// int8 weights as one dword and issues two vpdpbusd: 16 accumulators, 64
// multiply-adds an instruction.
// AVX-512 VNNI pixel tile, 32 x 8 (QConvPixels): the transpose of that. Each
// group of four k loads the 32 rows' weights (two 64-byte vectors of 16
// rows x 4 s8) and, for each of 8 pixels, broadcasts the pixel's four u8
// from wherever it reads them and issues two vpdpbusd: the same 16
// accumulators and loads a step, the vector lanes now output channels.
// AVX2, 6 x 16: a group of two k is 32 bytes of B (16 columns x 2 u8),
// widened to two vectors of i16 pairs; each row's two weights (int16, packed
// as such) are broadcast and vpmaddwd adds both products into the column's
// int32 lane: 12 accumulators, exact for every input.
// AMX, 32 x 32: four tile products of 16 x 16 x 64 a step (MicroAmx).
#include "qgemm.h"

#include "gemm.h"

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

// The 8 x 32 tile's sums over kq groups of four k, into sixteen named
// accumulators: with an array GCC 12 copied every one of them through
// another register on each k step (32 extra moves a step). Inlined into
// both kernels below.
#define KILN_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define KILN_VNNI_ACCS(X) X(c00) X(c01) X(c10) X(c11) X(c20) X(c21) X(c30) X(c31) \
                          X(c40) X(c41) X(c50) X(c51) X(c60) X(c61) X(c70) X(c71)
#define KILN_VNNI_REF(c) __m512i& c,
// kHalf: the tile's first 16 columns only (a last tile of a row that
// narrow: half the products).
template <bool kPrefetch = false, bool kHalf = false>
KILN_VNNI_TARGET __attribute__((always_inline)) inline void VnniSums(int64_t kq, const int8_t* a, const uint8_t* b,
                                                                     KILN_VNNI_ACCS(KILN_VNNI_REF)
                                                                         gemm_detail::SpreadPrefetch* fetch) {
  for (int64_t q = 0; q < kq; ++q, a += 32) {
    if (kPrefetch) fetch->step();
    const uint8_t* bq = b + q * 128;
    const __m512i b0 = _mm512_loadu_si512(bq), b1 = kHalf ? b0 : _mm512_loadu_si512(bq + 64);
#define KILN_VNNI_ROW(r)                                                \
  {                                                                     \
    const __m512i w = _mm512_set1_epi32(LoadDword(a + (r) * 4));        \
    c##r##0 = _mm512_dpbusd_epi32(c##r##0, b0, w);                      \
    if constexpr (!kHalf) c##r##1 = _mm512_dpbusd_epi32(c##r##1, b1, w); \
  }
    KILN_VNNI_ROW(0) KILN_VNNI_ROW(1) KILN_VNNI_ROW(2) KILN_VNNI_ROW(3)
    KILN_VNNI_ROW(4) KILN_VNNI_ROW(5) KILN_VNNI_ROW(6) KILN_VNNI_ROW(7)
#undef KILN_VNNI_ROW
  }
}
#define KILN_VNNI_ZERO(c) __m512i c = _mm512_setzero_si512();
#define KILN_VNNI_ARG(c) c,

KILN_VNNI_TARGET void MicroVnni(int64_t kq, const int8_t* a, const uint8_t* b, int32_t* c) {
  KILN_VNNI_ACCS(KILN_VNNI_ZERO)
  VnniSums(kq, a, b, KILN_VNNI_ACCS(KILN_VNNI_ARG) nullptr);
  const __m512i out[16] = {KILN_VNNI_ACCS(KILN_VNNI_ARG)};
  for (int i = 0; i < 16; ++i) _mm512_store_si512(c + i * 16, out[i]);
}

__attribute__((target("avx2"))) void MicroAvx2(int64_t kq, const int8_t* a, const uint8_t* b, int32_t* c) {
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256i c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t q = 0; q < kq; ++q, a += 24, b += 32) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(raw));
    const __m256i b1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(raw, 1));
#define KILN_AVX2_ROW(r)                                                     \
  {                                                                          \
    const __m256i w = _mm256_set1_epi32(LoadDword(a + (r) * 4));             \
    c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(b0, w));           \
    c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(b1, w));           \
  }
    KILN_AVX2_ROW(0) KILN_AVX2_ROW(1) KILN_AVX2_ROW(2) KILN_AVX2_ROW(3) KILN_AVX2_ROW(4) KILN_AVX2_ROW(5)
#undef KILN_AVX2_ROW
  }
  const __m256i out[12] = {c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51};
  for (int i = 0; i < 12; ++i) _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + i * 8), out[i]);
}

// Zero-masked forms with every lane set: GCC 12's plain ones warn inside its
// header (an "undefined" source vector).
constexpr __mmask16 kAll = 0xFFFF;

// The requantization of 16 int32 sums (the row offsets already in them):
// float(s) * scale, rounded half to even, + zero, clamped to [lo, hi]. The
// clamp is taken first, to [lo - zero, hi - zero] (rounding is monotonic and
// the bounds are integers, so the bytes are the same), then the rounding
// and the conversion are one instruction and the zero point an integer add:
// 7 instructions for 16 values.
struct Requant {
  __m512 vlo, vhi;
  __m512i vz;
  __attribute__((target("avx512f"))) Requant(float zero, float lo, float hi)
      : vlo(_mm512_set1_ps(lo - zero)), vhi(_mm512_set1_ps(hi - zero)), vz(_mm512_set1_epi32(static_cast<int32_t>(zero))) {}
  __attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) __m128i bytes(__m512i s, __m512 vs) const {
    __m512 v = _mm512_maskz_mul_ps(kAll, _mm512_maskz_cvtepi32_ps(kAll, s), vs);
    v = _mm512_maskz_min_ps(kAll, _mm512_maskz_max_ps(kAll, v, vlo), vhi);
    const __m512i r = _mm512_maskz_cvt_roundps_epi32(kAll, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_maskz_cvtepi32_epi8(kAll, _mm512_maskz_add_epi32(kAll, r, vz));
  }
};

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void FinishAvx512(const int32_t* c, int nr, int64_t rows,
                                                                         int64_t cols, const int32_t* add,
                                                                         const float* scale, float zero, float lo,
                                                                         float hi, uint8_t* out, int64_t ldc) {
  const Requant q(zero, lo, hi);
  for (int64_t r = 0; r < rows; ++r) {
    const __m512i va = _mm512_set1_epi32(add[r]);
    const __m512 vs = _mm512_set1_ps(scale[r]);
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 m = cols - j >= 16 ? kAll : static_cast<__mmask16>((1u << (cols - j)) - 1u);
      const __m512i s = _mm512_maskz_add_epi32(kAll, _mm512_maskz_loadu_epi32(m, c + r * nr + j), va);
      _mm_mask_storeu_epi8(out + r * ldc + j, m, q.bytes(s, vs));
    }
  }
}

// MicroVnni with FinishAvx512's requantization applied to the accumulators
// in registers: rows x cols of the tile stored as bytes; with kPrefetch,
// `lines` lines from pf on asked for during the k loop (micro_finish_pf).
template <bool kPrefetch, bool kHalf = false>
KILN_VNNI_TARGET __attribute__((always_inline)) inline void FinishedVnni(
    int64_t kq, const int8_t* a, const uint8_t* b, int64_t rows, int64_t cols, const int32_t* add, const float* scale,
    float zero, float lo, float hi, uint8_t* out, int64_t ldc, const char* pf, int64_t lines) {
  // The sums start from the rows' offsets (int32 wrapping either way).
#define KILN_VNNI_FROM_ADD(r) \
  __m512i c##r##0 = _mm512_set1_epi32((r) < rows ? add[r] : 0), c##r##1 = c##r##0;
  KILN_VNNI_FROM_ADD(0) KILN_VNNI_FROM_ADD(1) KILN_VNNI_FROM_ADD(2) KILN_VNNI_FROM_ADD(3)
  KILN_VNNI_FROM_ADD(4) KILN_VNNI_FROM_ADD(5) KILN_VNNI_FROM_ADD(6) KILN_VNNI_FROM_ADD(7)
#undef KILN_VNNI_FROM_ADD
  gemm_detail::SpreadPrefetch fetch(pf, kPrefetch ? lines : 0, kq);
  VnniSums<kPrefetch, kHalf>(kq, a, b, KILN_VNNI_ACCS(KILN_VNNI_ARG) & fetch);
  if (kPrefetch) fetch.finish();
  const Requant q(zero, lo, hi);
  const __mmask16 m0 = cols >= 16 ? kAll : static_cast<__mmask16>((1u << cols) - 1u);
  const __mmask16 m1 = cols >= 32 ? kAll : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1u);
  const __m512i acc[16] = {KILN_VNNI_ACCS(KILN_VNNI_ARG)};
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 vs = _mm512_set1_ps(scale[r]);
    _mm_mask_storeu_epi8(out + r * ldc, m0, q.bytes(acc[2 * r], vs));
    if (m1) _mm_mask_storeu_epi8(out + r * ldc + 16, m1, q.bytes(acc[2 * r + 1], vs));
  }
}

KILN_VNNI_TARGET void MicroFinishVnni(int64_t kq, const int8_t* a, const uint8_t* b, int64_t rows, int64_t cols,
                                      const int32_t* add, const float* scale, float zero, float lo, float hi,
                                      uint8_t* out, int64_t ldc) {
  FinishedVnni<false>(kq, a, b, rows, cols, add, scale, zero, lo, hi, out, ldc, nullptr, 0);
}

KILN_VNNI_TARGET void MicroFinishVnniHalf(int64_t kq, const int8_t* a, const uint8_t* b, int64_t rows, int64_t cols,
                                          const int32_t* add, const float* scale, float zero, float lo, float hi,
                                          uint8_t* out, int64_t ldc) {
  FinishedVnni<false, true>(kq, a, b, rows, cols, add, scale, zero, lo, hi, out, ldc, nullptr, 0);
}

KILN_VNNI_TARGET void MicroFinishVnniPf(int64_t kq, const int8_t* a, const uint8_t* b, int64_t rows, int64_t cols,
                                        const int32_t* add, const float* scale, float zero, float lo, float hi,
                                        uint8_t* out, int64_t ldc, const char* pf, int64_t lines) {
  FinishedVnni<true>(kq, a, b, rows, cols, add, scale, zero, lo, hi, out, ldc, pf, lines);
}

// The pixel tile's sums, 32 rows x NP pixels (NP <= 8; the accumulators of
// pixels past NP are never touched), then requantized a half of 16 rows at
// a time: the 8 pixels' 16 bytes transposed (three rounds of unpacks) into
// each row's 8 bytes, stored n (= NP) of them a row.
#define KILN_PIX_ACCS(X) X(c00) X(c01) X(c10) X(c11) X(c20) X(c21) X(c30) X(c31) \
                         X(c40) X(c41) X(c50) X(c51) X(c60) X(c61) X(c70) X(c71)
template <int NP>
KILN_VNNI_TARGET __attribute__((always_inline)) inline void PixelTile(
    int64_t kq, const int8_t* a, const uint8_t* base, const int64_t* pixel_off, const int64_t* off, int64_t rows,
    const int32_t* add, const float* scale, float zero, float lo, float hi, uint8_t* out, int64_t ldc) {
  // The sums start from the rows' offsets (int32 wrapping either way).
  const __mmask16 rows0 = rows >= 16 ? kAll : static_cast<__mmask16>((1u << rows) - 1u);
  const __mmask16 rows1 = rows >= 32 ? kAll : rows <= 16 ? 0 : static_cast<__mmask16>((1u << (rows - 16)) - 1u);
  const __m512i add0 = _mm512_maskz_loadu_epi32(rows0, add), add1 = _mm512_maskz_loadu_epi32(rows1, add + 16);
#define KILN_PIX_FROM_ADD(j) __m512i c##j##0 = add0, c##j##1 = add1;
  KILN_PIX_FROM_ADD(0) KILN_PIX_FROM_ADD(1) KILN_PIX_FROM_ADD(2) KILN_PIX_FROM_ADD(3)
  KILN_PIX_FROM_ADD(4) KILN_PIX_FROM_ADD(5) KILN_PIX_FROM_ADD(6) KILN_PIX_FROM_ADD(7)
#undef KILN_PIX_FROM_ADD
#define KILN_PIX_PTR(j) const uint8_t* p##j = base + pixel_off[NP > (j) ? (j) : 0];
  KILN_PIX_PTR(0) KILN_PIX_PTR(1) KILN_PIX_PTR(2) KILN_PIX_PTR(3)
  KILN_PIX_PTR(4) KILN_PIX_PTR(5) KILN_PIX_PTR(6) KILN_PIX_PTR(7)
#undef KILN_PIX_PTR
  for (int64_t q = 0; q < kq; ++q, a += 128) {
    const __m512i w0 = _mm512_loadu_si512(a), w1 = _mm512_loadu_si512(a + 64);
    const int64_t o = off[q];
#define KILN_PIX_STEP(j)                                          \
  if constexpr (NP > (j)) {                                       \
    const __m512i x = _mm512_set1_epi32(LoadDword(p##j + o));     \
    c##j##0 = _mm512_dpbusd_epi32(c##j##0, x, w0);                \
    c##j##1 = _mm512_dpbusd_epi32(c##j##1, x, w1);                \
  }
    KILN_PIX_STEP(0) KILN_PIX_STEP(1) KILN_PIX_STEP(2) KILN_PIX_STEP(3)
    KILN_PIX_STEP(4) KILN_PIX_STEP(5) KILN_PIX_STEP(6) KILN_PIX_STEP(7)
#undef KILN_PIX_STEP
  }
  const __m512i acc[16] = {KILN_PIX_ACCS(KILN_VNNI_ARG)};
  const Requant q(zero, lo, hi);
  const __mmask16 cols = static_cast<__mmask16>((1u << NP) - 1u);
  for (int h = 0; h < 2 && 16 * h < rows; ++h) {
    const int64_t left = rows - 16 * h;
    const __m512 vs = _mm512_maskz_loadu_ps(h == 0 ? rows0 : rows1, scale + 16 * h);
    __m128i x[8];
    for (int j = 0; j < 8; ++j) x[j] = j < NP ? q.bytes(acc[2 * j + h], vs) : _mm_setzero_si128();
    // x[j] = pixel j's rows 0-15 -> d[i] = rows 2i and 2i + 1, 8 pixels each.
    __m128i b8[8], b16[8], d[8];
    for (int i = 0; i < 4; ++i) {
      b8[2 * i] = _mm_unpacklo_epi8(x[2 * i], x[2 * i + 1]);      // rows 0-7, pixels 2i, 2i + 1
      b8[2 * i + 1] = _mm_unpackhi_epi8(x[2 * i], x[2 * i + 1]);  // rows 8-15
    }
    for (int i = 0; i < 2; ++i)
      for (int r = 0; r < 2; ++r) {  // pixels 4i .. 4i + 3; rows 8r ..
        b16[4 * i + 2 * r] = _mm_unpacklo_epi16(b8[4 * i + r], b8[4 * i + 2 + r]);      // rows 8r + 0-3
        b16[4 * i + 2 * r + 1] = _mm_unpackhi_epi16(b8[4 * i + r], b8[4 * i + 2 + r]);  // rows 8r + 4-7
      }
    for (int g = 0; g < 4; ++g) {  // rows 4g .. 4g + 3
      d[2 * g] = _mm_unpacklo_epi32(b16[g], b16[4 + g]);
      d[2 * g + 1] = _mm_unpackhi_epi32(b16[g], b16[4 + g]);
    }
    uint8_t* o = out + 16 * h * ldc;
    for (int i = 0; i < 8 && 2 * i < left; ++i) {
      _mm_mask_storeu_epi8(o + 2 * i * ldc, cols, d[i]);
      if (2 * i + 1 < left) _mm_mask_storeu_epi8(o + (2 * i + 1) * ldc, cols, _mm_unpackhi_epi64(d[i], d[i]));
    }
  }
}
#undef KILN_PIX_ACCS

template <int NP>
KILN_VNNI_TARGET void PixelTileN(int64_t kq, const int8_t* a, const uint8_t* base, const int64_t* pixel_off,
                                 const int64_t* off, int64_t rows, const int32_t* add, const float* scale, float zero,
                                 float lo, float hi, uint8_t* out, int64_t ldc) {
  PixelTile<NP>(kq, a, base, pixel_off, off, rows, add, scale, zero, lo, hi, out, ldc);
}

void PixelTileVnni(int64_t kq, const int8_t* a, const uint8_t* base, const int64_t* pixel_off, int n,
                   const int64_t* off, int64_t rows, const int32_t* add, const float* scale, float zero, float lo,
                   float hi, uint8_t* out, int64_t ldc) {
  using Fn = void (*)(int64_t, const int8_t*, const uint8_t*, const int64_t*, const int64_t*, int64_t,
                      const int32_t*, const float*, float, float, float, uint8_t*, int64_t);
  static constexpr Fn kTiles[8] = {&PixelTileN<1>, &PixelTileN<2>, &PixelTileN<3>, &PixelTileN<4>,
                                   &PixelTileN<5>, &PixelTileN<6>, &PixelTileN<7>, &PixelTileN<8>};
  kTiles[n - 1](kq, a, base, pixel_off, off, rows, add, scale, zero, lo, hi, out, ldc);
}

// QGemv on AVX-512 VNNI: a k group of 8 rows is 32 bytes of a panel (one
// ymm), multiplied with each column's 4 bytes broadcast (u8 x s8, the
// tile's operand order); P panels at a time share the broadcasts.
template <int P, int NC>
KILN_VNNI_TARGET __attribute__((always_inline)) inline void GemvPanels(int64_t kq, const int8_t* a, int64_t abytes,
                                                                       const uint8_t* b, int32_t* c) {
  __m256i acc[P][NC];
  for (int p = 0; p < P; ++p)
    for (int j = 0; j < NC; ++j) acc[p][j] = _mm256_setzero_si256();
  for (int64_t q = 0; q < kq; ++q) {
    __m256i bj[NC];
    for (int j = 0; j < NC; ++j) bj[j] = _mm256_set1_epi32(LoadDword(b + q * 16 + 4 * j));
    for (int p = 0; p < P; ++p) {
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + p * abytes + q * 32));
      for (int j = 0; j < NC; ++j) acc[p][j] = _mm256_dpbusd_epi32(acc[p][j], bj[j], av);
    }
  }
  alignas(32) int32_t lanes[8];
  for (int p = 0; p < P; ++p)
    for (int j = 0; j < NC; ++j) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[p][j]);
      for (int r = 0; r < 8; ++r) c[(p * 8 + r) * 4 + j] = lanes[r];
    }
}

template <int NC>
KILN_VNNI_TARGET void GemvColumns(int64_t kq, const int8_t* a, int64_t abytes, int64_t panels, const uint8_t* b,
                                  int32_t* c) {
  int64_t p = 0;
  for (; p + 4 <= panels; p += 4) GemvPanels<4, NC>(kq, a + p * abytes, abytes, b, c + p * 32);
  for (; p < panels; ++p) GemvPanels<1, NC>(kq, a + p * abytes, abytes, b, c + p * 32);
}

void GemvVnni(int64_t kq, const int8_t* a, int64_t abytes, int64_t panels, const uint8_t* b, int ncols, int32_t* c) {
  switch (ncols) {
    case 1: GemvColumns<1>(kq, a, abytes, panels, b, c); break;
    case 2: GemvColumns<2>(kq, a, abytes, panels, b, c); break;
    case 3: GemvColumns<3>(kq, a, abytes, panels, b, c); break;
    default: GemvColumns<4>(kq, a, abytes, panels, b, c); break;
  }
}

#undef KILN_VNNI_ARG
#undef KILN_VNNI_ZERO
#undef KILN_VNNI_REF
#undef KILN_VNNI_ACCS
#undef KILN_VNNI_TARGET

// AMX (Intel's tile registers), 32 x 32: the four 16 x 16 int32 tiles of
// the output in tiles 0-3; each step of 64 k loads A's two 16-row halves
// (16 rows x 64 int8, a packed panel's 2 KB: QPackA's AMX layout, rows of
// 64 k) and B's two 16-column halves (16 groups x 16 columns x 4 u8, the
// nr = 32 panel's rows of 128 bytes, 64 apart) and issues four tdpbsud (s8
// x u8, 16 x 16 x 64 products each). A thread loads the tile
// configuration at its first call and releases the tiles when its task of
// the GEMM ends (QKernel::done): loaded and released every call, the
// configuration cost short products 40% (1x1 c128 on 28x28 0.095 -> 0.038
// ms without).
// The tile configuration (palette 1; tiles 0-7 of 16 rows of 64 bytes), a
// constant in memory: GCC 12 does not count ldtilecfg as a read of its
// operand and dropped the stores of a configuration built on the stack.
struct alignas(64) AmxTileConfig {
  uint8_t palette, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
constexpr AmxTileConfig kAmxConfig = {1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

// Whether this thread's tile configuration is loaded (MicroAmx loads it,
// AmxDone releases it at the end of each task of QGemm's).
thread_local bool tl_amx_ready = false;

__attribute__((target("amx-tile"))) void AmxDone() {
  if (!tl_amx_ready) return;
  _tile_release();
  tl_amx_ready = false;
}

__attribute__((target("amx-tile,amx-int8"))) void MicroAmx(int64_t kq, const int8_t* a, const uint8_t* b,
                                                            int32_t* c) {
  if (!tl_amx_ready) {
    _tile_loadconfig(&kAmxConfig);
    tl_amx_ready = true;
  }
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t q = 0; q < kq; q += 16, a += 2048, b += 16 * 128) {
    _tile_loadd(4, a, 64);
    _tile_loadd(5, a + 1024, 64);
    _tile_loadd(6, b, 128);
    _tile_loadd(7, b + 64, 128);
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_dpbsud(2, 5, 6);
    _tile_dpbsud(3, 5, 7);
  }
  _tile_stored(0, c, 128);
  _tile_stored(1, c + 16, 128);
  _tile_stored(2, c + 16 * 32, 128);
  _tile_stored(3, c + 16 * 32 + 16, 128);
}

const QKernel kVnni = [] {
  QKernel k{8, 32, 4, false, &MicroVnni, &FinishAvx512, &MicroFinishVnni, &MicroFinishVnniPf, &GemvVnni};
  k.micro_finish_half = &MicroFinishVnniHalf;
  k.pixel_tile = &PixelTileVnni;
  k.pixel_rows = 32;
  k.pixel_cols = 8;
  return k;
}();
const QKernel kAvx2{6, 16, 2, true, &MicroAvx2};
const QKernel kAmx = [] {
  QKernel k{32, 32, 4, false, &MicroAmx, &FinishAvx512};
  k.done = &AmxDone;
  return k;
}();

}  // namespace

const QKernel* Avx512VnniKernel() { return &kVnni; }
const QKernel* Avx2QKernel() { return &kAvx2; }
const QKernel* AmxKernel() { return &kAmx; }

}  // namespace kiln::qgemm_detail

#endif
