// QGemm (qgemm.h): the ISA dispatch, packing, the column-block driver, the
// requantizing epilogue and the portable micro-kernel.
#include "qgemm.h"

#include "gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cpu_features.h"
#include "scratch.h"
#include "simd_clones.h"
#include "thread_pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__x86_64__) || defined(__SSE2__)
#include <emmintrin.h>
#define KILN_QGEMM_SSE2 1
#else
#define KILN_QGEMM_SSE2 0
#endif

namespace kiln {
namespace qgemm_detail {
namespace {

// c[r * 16 + j] = sum_q sum_g a[(q * 4 + r) * 4 + g] * b[(q * 16 + j) * 4 + g].
void MicroScalar(int64_t kq, const int8_t* a, const uint8_t* b, int32_t* c) {
  int32_t acc[4][16] = {};
  for (int64_t q = 0; q < kq; ++q, a += 16, b += 64)
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < 16; ++j)
        for (int g = 0; g < 4; ++g) acc[r][j] += int32_t{a[r * 4 + g]} * int32_t{b[j * 4 + g]};
  std::memcpy(c, acc, sizeof(acc));
}

const QKernel kScalar{4, 16, 4, false, &MicroScalar};

}  // namespace

#if !(defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)))
const QKernel* Avx512VnniKernel() { return nullptr; }
const QKernel* Avx2QKernel() { return nullptr; }
const QKernel* AmxKernel() { return nullptr; }
#endif
#if !(defined(__aarch64__) && defined(__ARM_NEON))
const QKernel* NeonDotKernel() { return nullptr; }
#endif

}  // namespace qgemm_detail

using qgemm_detail::QKernel;

namespace {

const QKernel& KernelFor(QIsa isa) {
  const QKernel* k = nullptr;
  switch (isa) {
    case QIsa::kAvx512Vnni: k = qgemm_detail::Avx512VnniKernel(); break;
    case QIsa::kAmx: k = qgemm_detail::AmxKernel(); break;
    case QIsa::kAvx2: k = qgemm_detail::Avx2QKernel(); break;
    case QIsa::kNeonDot: k = qgemm_detail::NeonDotKernel(); break;
    case QIsa::kScalar: break;
  }
  return k ? *k : qgemm_detail::kScalar;
}

// The NEON kernel multiplies int8 by int8: its B bytes are stored offset by
// -128 (x ^ 0x80), which the epilogue puts back as 128 * row_sum.
bool OffsetB(QIsa isa) { return isa == QIsa::kNeonDot; }

thread_local ScratchBuffer tl_qb, tl_qrows;

// KILN_HOST_QGEMV=0: B of 4 columns or fewer takes the tiles too (kiln-bench
// comparisons; read once).
bool GemvOn() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_HOST_QGEMV");
    return !(e && e[0] == '0');
  }();
  return on;
}

// Rows of B gathered at a time before they are interleaved (a multiple of
// every kernel's kg).
constexpr int64_t kChunk = 32;

// B's bytes (K x N) up to which the threads split A's rows only (QGemm).
constexpr int64_t kRowsOnlyB = int64_t{64} << 10;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KILN_QGEMM_AVX512_INTERLEAVE 1
// Interleave4's columns [0, 64 * chunks) on AVX-512BW, 64 columns a step:
// the SSE2 form's unpacks on four 128-bit lanes at once, then a 4 x 4
// transpose of the lanes so that each 16 columns' 64 bytes are contiguous
// (a third of the SSE2 form's instructions). flip is 0; nr a multiple of 16.
// 64 columns of four rows interleaved: t[i] = columns 16 i .. 16 i + 15,
// 4 bytes each.
__attribute__((target("avx512f,avx512bw"), always_inline)) inline void Interleave64(__m512i r0, __m512i r1, __m512i r2,
                                                                                    __m512i r3, __m512i t[4]) {
  // Zero-masked shuffles with every lane set: GCC 12's plain ones warn
  // inside its header (an "undefined" source vector).
  const __mmask8 kAll8 = 0xFF;
  const __m512i ab_lo = _mm512_unpacklo_epi8(r0, r1), ab_hi = _mm512_unpackhi_epi8(r0, r1);
  const __m512i cd_lo = _mm512_unpacklo_epi8(r2, r3), cd_hi = _mm512_unpackhi_epi8(r2, r3);
  const __m512i o0 = _mm512_unpacklo_epi16(ab_lo, cd_lo), o1 = _mm512_unpackhi_epi16(ab_lo, cd_lo);
  const __m512i o2 = _mm512_unpacklo_epi16(ab_hi, cd_hi), o3 = _mm512_unpackhi_epi16(ab_hi, cd_hi);
  const __m512i u0 = _mm512_maskz_shuffle_i64x2(kAll8, o0, o1, 0x44), u1 = _mm512_maskz_shuffle_i64x2(kAll8, o0, o1, 0xEE);
  const __m512i u2 = _mm512_maskz_shuffle_i64x2(kAll8, o2, o3, 0x44), u3 = _mm512_maskz_shuffle_i64x2(kAll8, o2, o3, 0xEE);
  t[0] = _mm512_maskz_shuffle_i64x2(kAll8, u0, u2, 0x88);
  t[1] = _mm512_maskz_shuffle_i64x2(kAll8, u0, u2, 0xDD);
  t[2] = _mm512_maskz_shuffle_i64x2(kAll8, u1, u3, 0x88);
  t[3] = _mm512_maskz_shuffle_i64x2(kAll8, u1, u3, 0xDD);
}

__attribute__((target("avx512f,avx512bw"))) void Interleave4Avx512(const uint8_t* const rows[4], int64_t chunks,
                                                                   int nr, int64_t pstride, uint8_t* dst) {
  int64_t p = 0, c = 0;  // the panel and column of the next 16 columns
  for (int64_t j = 0; j < chunks * 64; j += 64) {
    __m512i t[4];
    Interleave64(_mm512_loadu_si512(rows[0] + j), _mm512_loadu_si512(rows[1] + j), _mm512_loadu_si512(rows[2] + j),
                 _mm512_loadu_si512(rows[3] + j), t);
    for (int i = 0; i < 4; ++i) {
      _mm512_storeu_si512(dst + p * pstride + c * 4, t[i]);
      if ((c += 16) == nr) c = 0, ++p;
    }
  }
}

// QInterleave4Rows on AVX-512BW, 64 columns a step, the last step's loads
// and stores masked to the columns left (short rows, a 7x7 plane's, in one
// step with no scalar tail).
__attribute__((target("avx512f,avx512bw"))) void Interleave4RowsAvx512(const uint8_t* const planes[4], int64_t rows,
                                                                       int64_t n, int64_t src_stride, uint8_t flip,
                                                                       uint8_t* dst, int64_t dst_stride) {
  const __m512i f = _mm512_set1_epi8(static_cast<char>(flip));
  for (int64_t y = 0; y < rows; ++y) {
    const uint8_t* r[4];
    for (int g = 0; g < 4; ++g) r[g] = planes[g] + y * src_stride;
    uint8_t* d = dst + y * dst_stride;
    for (int64_t j = 0; j < n; j += 64) {
      const int64_t left = n - j;
      const __mmask64 m = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
      __m512i t[4];
      Interleave64(_mm512_xor_si512(_mm512_maskz_loadu_epi8(m, r[0] + j), f),
                   _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, r[1] + j), f),
                   _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, r[2] + j), f),
                   _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, r[3] + j), f), t);
      for (int i = 0; i < 4 && 16 * i < left; ++i) {
        const int64_t cols = left - 16 * i;
        if (cols >= 16) _mm512_storeu_si512(d + 4 * (j + 16 * i), t[i]);
        else _mm512_mask_storeu_epi8(d + 4 * (j + 16 * i), (__mmask64{1} << (4 * cols)) - 1, t[i]);
      }
    }
  }
}

#else
#define KILN_QGEMM_AVX512_INTERLEAVE 0
#endif

// Four rows of n bytes interleaved into nr-wide panels of kg = 4:
// dst[p * pstride + (c * 4 + g)] = rows[g][p * nr + c] (x ^ flip), for the
// n columns (the last panel's columns past n are not written).
void Interleave4(const uint8_t* const rows[4], int64_t n, int nr, int64_t pstride, uint8_t flip, uint8_t* dst) {
  int64_t j = 0, p = 0, c = 0;  // the next column, its panel and its column there
#if KILN_QGEMM_AVX512_INTERLEAVE
  if (flip == 0 && nr % 16 == 0 && n >= 64 && CpuHasAvx512Bw()) {
    Interleave4Avx512(rows, n / 64, nr, pstride, dst);
    j = n / 64 * 64;
    p = j / nr, c = j % nr;
  }
#endif
#if KILN_QGEMM_SSE2
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  for (; j + 16 <= n && c + 16 <= nr; j += 16) {
    const __m128i r0 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + j)), f);
    const __m128i r1 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + j)), f);
    const __m128i r2 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[2] + j)), f);
    const __m128i r3 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[3] + j)), f);
    const __m128i ab_lo = _mm_unpacklo_epi8(r0, r1), ab_hi = _mm_unpackhi_epi8(r0, r1);
    const __m128i cd_lo = _mm_unpacklo_epi8(r2, r3), cd_hi = _mm_unpackhi_epi8(r2, r3);
    __m128i* o = reinterpret_cast<__m128i*>(dst + p * pstride + c * 4);
    _mm_storeu_si128(o + 0, _mm_unpacklo_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab_lo, cd_lo));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab_hi, cd_hi));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab_hi, cd_hi));
    if ((c += 16) == nr) c = 0, ++p;
  }
#endif
  for (; j < n; ++j) {
    uint8_t* d = dst + p * pstride + c * 4;
    for (int g = 0; g < 4; ++g) d[g] = static_cast<uint8_t>(rows[g][j] ^ flip);
    if (++c == nr) c = 0, ++p;
  }
}

// The same for kg = 2.
void Interleave2(const uint8_t* const rows[2], int64_t n, int nr, int64_t pstride, uint8_t* dst) {
  for (int64_t p = 0; p * nr < n; ++p) {
    uint8_t* d = dst + p * pstride;
    const int64_t j0 = p * nr;
    int c = 0;
#if KILN_QGEMM_SSE2
    for (; c + 16 <= nr; c += 16) {
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[0] + j0 + c));
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[1] + j0 + c));
      __m128i* o = reinterpret_cast<__m128i*>(d + c * 2);
      _mm_storeu_si128(o + 0, _mm_unpacklo_epi8(r0, r1));
      _mm_storeu_si128(o + 1, _mm_unpackhi_epi8(r0, r1));
    }
#endif
    for (; c < nr; ++c)
      for (int g = 0; g < 2; ++g) d[c * 2 + g] = rows[g][j0 + c];
  }
}

// One row of a finished tile: out[j] = ep(c[j] + add) for j < cols.
KILN_SIMD_CLONES
void FinishRow(const int32_t* __restrict c, int64_t cols, int32_t add, float scale, const QEpilogue& ep,
               void* out) {
  if (!ep.row_scale) {
    int32_t* o = static_cast<int32_t*>(out);
    for (int64_t j = 0; j < cols; ++j)
      o[j] = static_cast<int32_t>(static_cast<uint32_t>(c[j]) + static_cast<uint32_t>(add));
    return;
  }
  const float lo = static_cast<float>(ep.lo), hi = static_cast<float>(ep.hi), zero = static_cast<float>(ep.y_zero);
  if (ep.out_i8) {
    int8_t* o = static_cast<int8_t*>(out);
    for (int64_t j = 0; j < cols; ++j) {
      const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(c[j]) + static_cast<uint32_t>(add));
      const float r = std::nearbyint(static_cast<float>(v) * scale) + zero;
      o[j] = static_cast<int8_t>(static_cast<int32_t>(std::min(hi, std::max(lo, r))));
    }
  } else {
    uint8_t* o = static_cast<uint8_t*>(out);
    for (int64_t j = 0; j < cols; ++j) {
      const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(c[j]) + static_cast<uint32_t>(add));
      const float r = std::nearbyint(static_cast<float>(v) * scale) + zero;
      o[j] = static_cast<uint8_t>(static_cast<int32_t>(std::min(hi, std::max(lo, r))));
    }
  }
}

}  // namespace

namespace {

// AMX: the CPU's tile and int8 features (CPUID leaf 7: EDX bits 24 and 25)
// and the kernel's leave to use the tile data state (Linux asks a process
// to request it: arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA), once.
bool AmxUsable() {
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
  static const bool usable = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 24)) || !(edx & (1u << 25))) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
#else
  return false;
#endif
}

// The ISA a matrix of depth K is packed and multiplied with: AMX's step is
// 64 k, and shallower products (MobileNetV2's 16- to 32-channel pointwise
// convs, a stem's 27) keep VNNI's: padded to 64 they ran MobileNetV2 int8
// 2.92 -> 3.04 ms (1 thread). `kiln-kernelbench --kernels qconv1x1` c64
// on 56x56 (K = 64): 0.108-0.117 ms with VNNI, 0.060-0.083 with AMX.
QIsa EffectiveIsa(QIsa isa, int64_t K) { return isa == QIsa::kAmx && K < 64 ? QIsa::kAvx512Vnni : isa; }

}  // namespace

QIsa QIsaFor(int64_t K) { return EffectiveIsa(QBestIsa(), K); }

bool QIsaSupported(QIsa isa) {
  if (isa == QIsa::kScalar) return true;
  switch (isa) {
    case QIsa::kAmx: return qgemm_detail::AmxKernel() && QIsaSupported(QIsa::kAvx512Vnni) && AmxUsable();
    case QIsa::kAvx512Vnni:
      if (!qgemm_detail::Avx512VnniKernel()) return false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#else
      return false;
#endif
    case QIsa::kAvx2:
      if (!qgemm_detail::Avx2QKernel()) return false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
      return __builtin_cpu_supports("avx2");
#else
      return false;
#endif
    case QIsa::kNeonDot: return qgemm_detail::NeonDotKernel() && CpuHasDotProd();
    default: return false;
  }
}

QIsa QBestIsa() {
  static const bool amx_off = [] {
    const char* e = std::getenv("KILN_HOST_AMX");
    return e && e[0] == '0';
  }();
  static const QIsa best = !amx_off && QIsaSupported(QIsa::kAmx) ? QIsa::kAmx
                           : QIsaSupported(QIsa::kAvx512Vnni) ? QIsa::kAvx512Vnni
                           : QIsaSupported(QIsa::kAvx2)     ? QIsa::kAvx2
                           : QIsaSupported(QIsa::kNeonDot)  ? QIsa::kNeonDot
                                                            : QIsa::kScalar;
  return best;
}

int QPixelRows(QIsa isa) {
  const QKernel& k = KernelFor(isa);
  return k.pixel_tile && k.kg == 4 && !k.a16 && !OffsetB(isa) ? k.pixel_rows : 0;
}

void QInterleave4Rows(const uint8_t* const planes[4], int64_t rows, int64_t n, int64_t src_stride, uint8_t flip,
                      uint8_t* dst, int64_t dst_stride) {
#if KILN_QGEMM_AVX512_INTERLEAVE
  if (CpuHasAvx512Bw()) {
    Interleave4RowsAvx512(planes, rows, n, src_stride, flip, dst, dst_stride);
    return;
  }
#endif
  for (int64_t y = 0; y < rows; ++y)
    // One panel as wide as the row (Interleave4's nr is an int).
    for (int64_t j0 = 0; j0 < n; j0 += int64_t{1} << 20) {
      const int64_t len = std::min<int64_t>(n - j0, int64_t{1} << 20), at = y * src_stride + j0;
      const uint8_t* const part[4] = {planes[0] + at, planes[1] + at, planes[2] + at, planes[3] + at};
      Interleave4(part, len, static_cast<int>(len), 0, flip, dst + y * dst_stride + 4 * j0);
    }
}

const char* QIsaName(QIsa isa) {
  switch (isa) {
    case QIsa::kAvx512Vnni: return "avx512-vnni";
    case QIsa::kAmx: return "amx-int8";
    case QIsa::kAvx2: return "avx2";
    case QIsa::kNeonDot: return "neon-dot";
    case QIsa::kScalar: return "scalar";
  }
  return "?";
}

int QPackedA::panelRows() const {
  const QKernel& k = KernelFor(isa);
  return pixel ? k.pixel_rows : k.mr;
}

size_t QPackedA::panelBytes() const {
  const QKernel& k = KernelFor(isa);
  return static_cast<size_t>(m_pad * kq * k.kg * (k.a16 ? 2 : 1));
}

std::vector<int64_t> QPackedMeta(const QPackedA& a) {
  return {static_cast<int64_t>(a.isa), a.M, a.K, a.kq, a.m_pad, a.pixel ? 1 : 0};
}

namespace {

// QPackA's result for (isa, M, K, pixel) without its panels: the sizes
// alone (pixel panels only where the ISA has the pixel kernel).
QPackedA QGeometry(QIsa isa, int64_t M, int64_t K, bool pixel) {
  isa = EffectiveIsa(isa, K);
  const QKernel& k = KernelFor(isa);
  QPackedA p;
  p.isa = isa;
  p.M = M;
  p.K = K;
  p.pixel = pixel && QPixelRows(isa) != 0;
  p.kq = (K + k.kg - 1) / k.kg;
  if (isa == QIsa::kAmx) p.kq = (p.kq + 15) / 16 * 16;  // whole steps of 64 k
  const int mr = p.panelRows();
  p.m_pad = (M + mr - 1) / mr * mr;
  return p;
}

}  // namespace

bool QViewPackedA(QIsa isa, int64_t M, int64_t K, bool pixel, const std::vector<int64_t>& meta, const void* panels,
                  size_t panel_bytes, const void* row_sums, size_t row_sum_bytes, QPackedA* out) {
  QPackedA p = QGeometry(isa, M, K, pixel);
  if (meta != QPackedMeta(p) || !panels || !row_sums || panel_bytes != p.panelBytes() ||
      row_sum_bytes != static_cast<size_t>(M) * sizeof(int32_t) || reinterpret_cast<uintptr_t>(panels) % 64 != 0 ||
      reinterpret_cast<uintptr_t>(row_sums) % alignof(int32_t) != 0)
    return false;
  p.data_view = static_cast<const int8_t*>(panels);
  p.row_sum_view = static_cast<const int32_t*>(row_sums);
  *out = std::move(p);
  return true;
}

QPackedA QPackA(QIsa isa, int64_t M, int64_t K, const int8_t* A, int64_t lda, bool pixel) {
  QPackedA p = QGeometry(isa, M, K, pixel);
  const QKernel& k = KernelFor(p.isa);
  const int64_t group = int64_t{k.kg} * (k.a16 ? 2 : 1);  // bytes of one row's group
  p.data.assign(static_cast<size_t>(p.m_pad * p.kq * group), 0);
  p.row_sum.assign(static_cast<size_t>(M), 0);
  const int kg = k.kg, mr = p.panelRows();  // the pixel panels: the same layout, more rows
  const int64_t steps = p.kq / 16;  // AMX: steps of 64 k
  for (int64_t i = 0; i < M; ++i) {
    const int8_t* row = A + i * lda;
    int32_t sum = 0;
    for (int64_t kk = 0; kk < K; ++kk) sum += row[kk];
    p.row_sum[static_cast<size_t>(i)] = sum;
    if (p.isa == QIsa::kAmx) {
      // Panels of mr rows, each step of 64 k as mr rows of 64 bytes (a tile
      // row each): row i's k at ((panel * steps + k / 64) * mr + i % mr) *
      // 64 + k % 64.
      int8_t* d = p.data.data() + (((i / mr) * steps) * mr + i % mr) * 64;
      for (int64_t kb = 0; kb * 64 < K; ++kb, d += mr * 64)
        std::memcpy(d, row + kb * 64, static_cast<size_t>(std::min<int64_t>(64, K - kb * 64)));
      continue;
    }
    // Row i's k-th value lands at ((panel * kq + k / kg) * mr + r) * kg + k %
    // kg (panel, r = i / mr, i % mr): walked without divisions, kg values a
    // step.
    const int64_t base = ((i / mr) * p.kq * mr + i % mr) * kg;
    if (k.a16) {  // int16 values in the byte vector (written bytewise: no aliasing)
      int8_t* d = p.data.data() + base * 2;
      for (int64_t q = 0, kk = 0; q < p.kq; ++q, d += mr * kg * 2)
        for (int g = 0; g < kg && kk < K; ++g, ++kk) {
          const int16_t w = row[kk];
          std::memcpy(d + 2 * g, &w, 2);
        }
    } else {
      int8_t* d = p.data.data() + base;
      for (int64_t q = 0, kk = 0; q < p.kq; ++q, d += mr * kg)
        for (int g = 0; g < kg && kk < K; ++g, ++kk) d[g] = row[kk];
    }
  }
  return p;
}

namespace {

// QGemm for B of at most 4 columns through the kernel's gemv: B gathered
// once into k groups of 4 columns, then the panels of A split over the
// threads, each panel's sums requantized row by row (FinishRow).
bool NarrowGemm(ThreadPool& pool, const QPackedA& a, const QKernel& k, int64_t N, const QBSource& b,
                const QEpilogue& ep, void* C, int64_t ldc) {
  const int64_t kq = a.kq, rstride = N + 16;
  std::vector<uint8_t> bq(static_cast<size_t>(kq * 16), 0), rows(static_cast<size_t>(kChunk * rstride));
  for (int64_t k0 = 0; k0 < a.K; k0 += kChunk) {
    const int64_t kn = std::min(kChunk, a.K - k0);
    b.block(b.ctx, k0, kn, 0, N, rows.data(), rstride);
    for (int64_t kk = 0; kk < kn; ++kk)
      for (int64_t j = 0; j < N; ++j)
        bq[static_cast<size_t>(((k0 + kk) / 4) * 16 + 4 * j + (k0 + kk) % 4)] = rows[static_cast<size_t>(kk * rstride + j)];
  }
  const uint8_t flip = OffsetB(a.isa) ? 0x80 : 0;
  if (flip)
    for (uint8_t& v : bq) v ^= flip;
  const int64_t panels = a.m_pad / k.mr, abytes = a.kq * k.mr * k.kg;
  const size_t elem = ep.row_scale ? 1 : sizeof(int32_t);
  // About 64 KiB of weights a task.
  const int64_t grain = std::max<int64_t>(1, (int64_t{64} << 10) / std::max<int64_t>(abytes, 1));
  pool.parallelFor(panels, [&](int64_t p0, int64_t p1) {
    std::vector<int32_t> sums(static_cast<size_t>((p1 - p0) * k.mr * 4));
    k.gemv(kq, a.panels() + p0 * abytes, abytes, p1 - p0, bq.data(), static_cast<int>(N), sums.data());
    for (int64_t m = p0 * k.mr; m < std::min(a.M, p1 * k.mr); ++m) {
      int32_t add = ep.row_add ? ep.row_add[m] : 0;
      if (flip) add = static_cast<int32_t>(static_cast<uint32_t>(add) + 128u * static_cast<uint32_t>(a.rowSums()[m]));
      FinishRow(sums.data() + (m - p0 * k.mr) * 4, N, add, ep.row_scale ? ep.row_scale[m] : 0.f, ep,
                static_cast<uint8_t*>(C) + m * ldc * static_cast<int64_t>(elem));
    }
  }, grain);
  return true;
}

}  // namespace

bool QGemm(ThreadPool& pool, const QPackedA& a, int64_t N, const QBSource& b, const QEpilogue& ep, void* C,
           int64_t ldc) {
  const QKernel& k = KernelFor(a.isa);
  if (a.M <= 0 || N <= 0) return true;
  if (k.gemv && N <= 4 && k.mr == 8 && k.kg == 4 && !k.a16 && GemvOn()) return NarrowGemm(pool, a, k, N, b, ep, C, ldc);
  const int nr = k.nr, mr = k.mr, kg = k.kg;
  const int64_t depth = a.kq * kg;
  const int64_t n_pad = (N + nr - 1) / nr * nr;
  // A column block of B (depth x nc bytes) of up to 384 KiB, in L2 (1 MiB on
  // Zen 4 and 5): fewer blocks read the packed A fewer times (512 channels
  // of 7x7: 2.4 MB of weights, read once a block).
  // The blocks are then made equal, and a multiple of the threads where
  // there are columns enough (3136 columns of K = 144 made one block of 2720
  // and one of 416: the second thread idled half the op).
  const int64_t panels_n = n_pad / nr, threads = pool.threads(), panels_m = a.m_pad / mr;
  const int64_t nc_max = std::max<int64_t>(1, (int64_t{384} << 10) / std::max<int64_t>(depth, 1) / nr);  // in panels
  int64_t blocks = (panels_n + nc_max - 1) / nc_max;
  // A small B (up to kRowsOnlyB bytes, 14x14 and 7x7 planes) is packed by
  // every thread whole and the threads take rows of A each: threads that
  // split B's columns write parts of the same rows of C, and the cache lines
  // at their boundaries, two a row, pass between the cores for every row
  // (96 -> 576 1x1 on 14x14: 0.032 ms at 1 thread and at 2).
  const bool rows_only = threads > 1 && depth * n_pad <= kRowsOnlyB && panels_m >= threads;
  if (!rows_only) {
    blocks = std::max(blocks, std::min(threads, panels_n));
    if (blocks % threads != 0 && (blocks + threads - 1) / threads * threads <= panels_n)
      blocks = (blocks + threads - 1) / threads * threads;
  }
  const int64_t nc = (panels_n + blocks - 1) / blocks * nr;
  blocks = (N + nc - 1) / nc;
  // Split M too when there are fewer column blocks than threads can share
  // (late layers: 7x7 outputs, one block).
  const int64_t split =
      rows_only ? threads : std::min<int64_t>(panels_m, std::max<int64_t>(1, (2 * threads + blocks - 1) / blocks));
  const int64_t per_split = (panels_m + split - 1) / split;
  const uint8_t flip = OffsetB(a.isa) ? 0x80 : 0;
  const size_t elem = ep.row_scale ? 1 : sizeof(int32_t);
  // Bytes of one B panel, and a line more: the interleave writes each k
  // group to every panel of a block in turn, and panels a multiple of 4 KiB
  // apart (kq = 64: 8 KiB) fall in one L1 set (c256 -> 64 1x1 on 56x56:
  // 0.151 -> 0.121 ms).
  const int64_t pstride = a.kq * nr * kg + 64;
  const int64_t work = a.m_pad * depth * n_pad / std::max<int64_t>(blocks * split, 1);
  std::atomic<bool> failed{false};
  pool.parallelFor(blocks * split, [&](int64_t begin, int64_t end) {
    const int64_t rstride = nc + 16;
    uint8_t* bbuf = reinterpret_cast<uint8_t*>(tl_qb.get(static_cast<size_t>((pstride * (nc / nr) + 3) / 4)));
    uint8_t* rbuf = reinterpret_cast<uint8_t*>(tl_qrows.get(static_cast<size_t>((kChunk * rstride + 3) / 4)));
    if (!bbuf || !rbuf) {
      failed.store(true, std::memory_order_relaxed);
      return;
    }
    int64_t packed_block = -1;
    alignas(64) int32_t tile[32 * 32];  // mr x nr of every kernel
    for (int64_t t = begin; t < end; ++t) {
      const int64_t blk = t / split, ms = t % split;
      const int64_t j0 = blk * nc, ncols = std::min(nc, N - j0), ncols_pad = (ncols + nr - 1) / nr * nr;
      if (packed_block != blk) {
        // B's block kChunk rows at a time (kept in L1), then interleaved
        // into panels kg rows at a time; columns and rows past B are zero
        // (A is zero past K, so rows there are irrelevant but defined).
        for (int64_t k0 = 0; k0 < depth; k0 += kChunk) {
          const int64_t kn = std::min(kChunk, depth - k0), real = std::max<int64_t>(0, std::min(kn, a.K - k0));
          const uint8_t* src[kChunk];
          bool direct = b.row != nullptr;
          for (int64_t kk = 0; direct && kk < real; ++kk) direct = (src[kk] = b.row(b.ctx, k0 + kk, j0, ncols_pad)) != nullptr;
          if (direct) {
            if (real < kn) std::memset(rbuf, 0, static_cast<size_t>(ncols_pad));  // the rows past K
            for (int64_t kk = real; kk < kn; ++kk) src[kk] = rbuf;
          } else {
            if (real > 0) b.block(b.ctx, k0, real, j0, ncols, rbuf, rstride);
            for (int64_t kk = 0; kk < kn; ++kk) {
              uint8_t* r = rbuf + kk * rstride;
              if (kk >= real) std::memset(r, 0, static_cast<size_t>(ncols));
              std::memset(r + ncols, 0, static_cast<size_t>(ncols_pad - ncols));
              src[kk] = r;
            }
          }
          for (int64_t q = k0 / kg; q < (k0 + kn) / kg; ++q) {
            const uint8_t* const* rows = src + (q * kg - k0);
            if (kg == 4) Interleave4(rows, ncols_pad, nr, pstride, flip, bbuf + q * nr * 4);
            else Interleave2(rows, ncols_pad, nr, pstride, bbuf + q * nr * 2);
          }
        }
        packed_block = blk;
      }
      const int64_t p0 = ms * per_split, p1 = std::min(panels_m, p0 + per_split);
      for (int64_t pm = p0; pm < p1; ++pm) {
        const int64_t abytes = a.kq * mr * kg * (k.a16 ? 2 : 1);
        const int8_t* ap = a.panels() + pm * abytes;
        const int64_t m0 = pm * mr, rows = std::min<int64_t>(mr, a.M - m0);
        // The weights stream from memory once a column block (a deep
        // layer's outgrow L2): the next panel is asked for, spread over the
        // row's tiles' k loops where the kernel can (micro_finish_pf), else
        // all of it now.
        const char* next = pm + 1 < p1 ? reinterpret_cast<const char*>(ap + abytes) : nullptr;
        const bool spread = next && ep.row_scale && k.micro_finish_pf && gemm_detail::PrefetchWeights();
        if (next && !spread) gemm_detail::PrefetchLines(next, (abytes + 63) / 64);
        const int64_t row_tiles = (ncols + nr - 1) / nr;
        // The panel's row offsets (the flip's correction included).
        int32_t add[32];
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t m = m0 + r;
          add[r] = ep.row_add ? ep.row_add[m] : 0;
          if (flip) add[r] = static_cast<int32_t>(static_cast<uint32_t>(add[r]) + 128u * static_cast<uint32_t>(a.rowSums()[m]));
        }
        for (int64_t pn = 0; pn * nr < ncols; ++pn) {
          const int64_t jj = j0 + pn * nr, cols = std::min<int64_t>(nr, N - jj);
          const gemm_detail::PanelShare share =
              spread ? gemm_detail::ShareOfNext(next, abytes, row_tiles, pn) : gemm_detail::PanelShare{};
          if (2 * cols <= nr && ep.row_scale && k.micro_finish_half) {
            // A row's narrow last tile (196 columns: 6 tiles of 32 and 4
            // columns) at half the products; its share of the next panel
            // asked for at once.
            if (share.lines > 0) gemm_detail::PrefetchLines(share.at, share.lines);
            k.micro_finish_half(a.kq, ap, bbuf + pn * pstride, rows, cols, add, ep.row_scale + m0,
                                static_cast<float>(ep.y_zero), static_cast<float>(ep.lo), static_cast<float>(ep.hi),
                                static_cast<uint8_t*>(C) + m0 * ldc + jj, ldc);
            continue;
          }
          if (spread) {
            k.micro_finish_pf(a.kq, ap, bbuf + pn * pstride, rows, cols, add, ep.row_scale + m0,
                              static_cast<float>(ep.y_zero), static_cast<float>(ep.lo), static_cast<float>(ep.hi),
                              static_cast<uint8_t*>(C) + m0 * ldc + jj, ldc, share.at, share.lines);
            continue;
          }
          if (ep.row_scale && k.micro_finish) {
            k.micro_finish(a.kq, ap, bbuf + pn * pstride, rows, cols, add, ep.row_scale + m0,
                           static_cast<float>(ep.y_zero), static_cast<float>(ep.lo), static_cast<float>(ep.hi),
                           static_cast<uint8_t*>(C) + m0 * ldc + jj, ldc);
            continue;
          }
          k.micro(a.kq, ap, bbuf + pn * pstride, tile);
          if (ep.row_scale && k.finish) {
            k.finish(tile, nr, rows, cols, add, ep.row_scale + m0, static_cast<float>(ep.y_zero),
                     static_cast<float>(ep.lo), static_cast<float>(ep.hi), static_cast<uint8_t*>(C) + m0 * ldc + jj, ldc);
            continue;
          }
          for (int64_t r = 0; r < rows; ++r)
            FinishRow(tile + r * nr, cols, add[r], ep.row_scale ? ep.row_scale[m0 + r] : 0.f, ep,
                      static_cast<uint8_t*>(C) + ((m0 + r) * ldc + jj) * static_cast<int64_t>(elem));
        }
      }
    }
    if (k.done) k.done();
  }, std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(work, 1)));
  return !failed.load(std::memory_order_relaxed);
}

void QConvPixels(ThreadPool& pool, const QPackedA& a, int64_t N, const QPixelSource& b, const QEpilogue& ep, void* C,
                 int64_t ldc) {
  const QKernel& k = KernelFor(a.isa);
  if (a.M <= 0 || N <= 0) return;
  const int mr = a.panelRows(), np = k.pixel_cols;
  const int64_t panels = a.m_pad / mr, tiles = (N + np - 1) / np, threads = pool.threads();
  const int64_t abytes = a.kq * mr * k.kg;
  // A task is a panel of A (its weights, up to 147 KB at K = 4608, stay in
  // L2 while every pixel tile passes) over a run of pixel tiles; pixels are
  // split as well only where the panels are too few for the threads.
  const int64_t chunks = std::min(tiles, std::max<int64_t>(1, (2 * threads + panels - 1) / panels));
  const int64_t per_chunk = (tiles + chunks - 1) / chunks;
  const int64_t work = abytes * per_chunk * np;  // multiply-adds a task
  std::vector<int32_t> zero_add;
  const int32_t* add = ep.row_add;
  if (!add) {
    zero_add.assign(static_cast<size_t>(a.m_pad), 0);
    add = zero_add.data();
  }
  const float zero = static_cast<float>(ep.y_zero), lo = static_cast<float>(ep.lo), hi = static_cast<float>(ep.hi);
  uint8_t* out = static_cast<uint8_t*>(C);
  pool.parallelFor(panels * chunks, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t pm = t / chunks, m0 = pm * mr, rows = std::min<int64_t>(mr, a.M - m0);
      const int64_t t0 = (t % chunks) * per_chunk, t1 = std::min(tiles, t0 + per_chunk);
      const int8_t* ap = a.panels() + pm * abytes;
      for (int64_t tile = t0; tile < t1; ++tile) {
        const int64_t j0 = tile * np;
        k.pixel_tile(a.kq, ap, b.base, b.pixel_off + j0, static_cast<int>(std::min<int64_t>(np, N - j0)), b.group_off,
                     rows, add + m0, ep.row_scale + m0, zero, lo, hi, out + m0 * ldc + j0, ldc);
      }
    }
  }, std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(work, 1)));
}

}  // namespace kiln
