// The NEON (Advanced SIMD) kernels of Sgemm (gemm.h): the micro-kernel, the
// M == 1 product over packed B, fp16 widening. Micro-kernel 8 x 12, 24 q
// registers of accumulators, 2 of A and 3 of B (29 of the 32). Each k step
// loads one 8-float column of the A panel and one 12-float row of the B
// panel and does 24 vfmaq_laneq_f32 (a B vector times one lane of A), so A
// needs no broadcast loads. Advanced SIMD is part of every AArch64 CPU, so
// this file needs no -march flags; it is built on aarch64 only, and Sgemm
// still checks HWCAP_ASIMD (cpu_features.h) before picking it.
#include "gemm.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

namespace kiln::gemm_detail {
namespace {

// The tile epilogue (TileEpilogue) on row i's three vectors. vmaxq_f32
// would keep a NaN; the compare-and-select turns it into lo like the scalar
// clamp.
struct FinishNeon {
  float32x4_t cb0, cb1, cb2, lo, hi;
  const float* rb;
  bool clamp;
  explicit FinishNeon(const TileEpilogue& e)
      : cb0(e.col_bias ? vld1q_f32(e.col_bias) : vdupq_n_f32(0.f)),
        cb1(e.col_bias ? vld1q_f32(e.col_bias + 4) : vdupq_n_f32(0.f)),
        cb2(e.col_bias ? vld1q_f32(e.col_bias + 8) : vdupq_n_f32(0.f)),
        lo(vdupq_n_f32(e.lo)), hi(vdupq_n_f32(e.hi)), rb(e.row_bias), clamp(e.clamp) {}
  float32x4_t one(float32x4_t v, float32x4_t r, float32x4_t cb) const {
    v = vaddq_f32(v, vaddq_f32(r, cb));
    if (clamp) {
      v = vbslq_f32(vcgtq_f32(v, lo), v, lo);
      v = vbslq_f32(vcltq_f32(v, hi), v, hi);
    }
    return v;
  }
  void operator()(int i, float32x4_t& v0, float32x4_t& v1, float32x4_t& v2) const {
    const float32x4_t r = vdupq_n_f32(rb ? rb[i] : 0.f);
    v0 = one(v0, r, cb0);
    v1 = one(v1, r, cb1);
    v2 = one(v2, r, cb2);
  }
};

// The 8 x 12 tile; with kPrefetch, micro_pf's prefetches (SpreadPrefetch).
template <bool kPrefetch>
__attribute__((always_inline)) inline void Micro8x12(int64_t kc, const float* a, const float* b, int64_t ldb,
                                                      float* c, int64_t ldc, bool load_c, const TileEpilogue* ep,
                                                      const char* pf, int64_t lines) {
#define KILN_ROW(i) float32x4_t c##i##0 = vdupq_n_f32(0.f), c##i##1 = vdupq_n_f32(0.f), c##i##2 = vdupq_n_f32(0.f);
  KILN_ROW(0) KILN_ROW(1) KILN_ROW(2) KILN_ROW(3) KILN_ROW(4) KILN_ROW(5) KILN_ROW(6) KILN_ROW(7)
#undef KILN_ROW
  SpreadPrefetch fetch(pf, kPrefetch ? lines : 0, kc);
  for (int64_t k = 0; k < kc; ++k) {
    if (kPrefetch) fetch.step();
    const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
    const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
    // Row i takes lane i % 4 of a0 (rows 0-3) or a1 (rows 4-7).
#define KILN_FMA(i, av, lane)                          \
  c##i##0 = vfmaq_laneq_f32(c##i##0, b0, av, lane);    \
  c##i##1 = vfmaq_laneq_f32(c##i##1, b1, av, lane);    \
  c##i##2 = vfmaq_laneq_f32(c##i##2, b2, av, lane);
    KILN_FMA(0, a0, 0) KILN_FMA(1, a0, 1) KILN_FMA(2, a0, 2) KILN_FMA(3, a0, 3)
    KILN_FMA(4, a1, 0) KILN_FMA(5, a1, 1) KILN_FMA(6, a1, 2) KILN_FMA(7, a1, 3)
#undef KILN_FMA
    a += 8;
    b += ldb;
  }
  if (kPrefetch) fetch.finish();
#define KILN_STORE(i)                                  \
  {                                                    \
    float* ci = c + (i) * ldc;                         \
    if (load_c) {                                      \
      c##i##0 = vaddq_f32(c##i##0, vld1q_f32(ci));     \
      c##i##1 = vaddq_f32(c##i##1, vld1q_f32(ci + 4)); \
      c##i##2 = vaddq_f32(c##i##2, vld1q_f32(ci + 8)); \
    }                                                  \
    if (ep) finish(i, c##i##0, c##i##1, c##i##2);      \
    vst1q_f32(ci, c##i##0);                            \
    vst1q_f32(ci + 4, c##i##1);                        \
    vst1q_f32(ci + 8, c##i##2);                        \
  }
  const FinishNeon finish(ep ? *ep : TileEpilogue{});
  KILN_STORE(0) KILN_STORE(1) KILN_STORE(2) KILN_STORE(3) KILN_STORE(4) KILN_STORE(5) KILN_STORE(6) KILN_STORE(7)
#undef KILN_STORE
}

void MicroNeon(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool load_c,
               const TileEpilogue* ep) {
  Micro8x12<false>(kc, a, b, ldb, c, ldc, load_c, ep, nullptr, 0);
}

void MicroNeonPf(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool load_c,
                 const TileEpilogue* ep, const char* pf, int64_t lines) {
  Micro8x12<true>(kc, a, b, ldb, c, ldc, load_c, ep, pf, lines);
}

// 20 independent chains of 4-lane FMAs: the widest Arm cores we know issue
// four 128-bit FMAs a cycle at 4 cycles' latency (16 in flight), plus slack.
// Each chain starts from a different value: identical chains are one value
// to the compiler, which then computes it once (see FmaLoopAvx512).
float FmaLoopNeon(int64_t iters) {
  const float32x4_t x = vdupq_n_f32(0.999999f), y = vdupq_n_f32(1e-7f);
#define KILN_CHAIN(i) float32x4_t a##i = vdupq_n_f32(1.f + 0.01f * (i));
  KILN_CHAIN(0) KILN_CHAIN(1) KILN_CHAIN(2) KILN_CHAIN(3) KILN_CHAIN(4) KILN_CHAIN(5) KILN_CHAIN(6)
  KILN_CHAIN(7) KILN_CHAIN(8) KILN_CHAIN(9) KILN_CHAIN(10) KILN_CHAIN(11) KILN_CHAIN(12) KILN_CHAIN(13)
  KILN_CHAIN(14) KILN_CHAIN(15) KILN_CHAIN(16) KILN_CHAIN(17) KILN_CHAIN(18) KILN_CHAIN(19)
#undef KILN_CHAIN
  for (int64_t i = 0; i < iters; ++i) {
#define KILN_STEP(i) a##i = vfmaq_f32(y, a##i, x);
    KILN_STEP(0) KILN_STEP(1) KILN_STEP(2) KILN_STEP(3) KILN_STEP(4) KILN_STEP(5) KILN_STEP(6)
    KILN_STEP(7) KILN_STEP(8) KILN_STEP(9) KILN_STEP(10) KILN_STEP(11) KILN_STEP(12) KILN_STEP(13)
    KILN_STEP(14) KILN_STEP(15) KILN_STEP(16) KILN_STEP(17) KILN_STEP(18) KILN_STEP(19)
#undef KILN_STEP
  }
  float32x4_t s = vaddq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)), vaddq_f32(vaddq_f32(a4, a5), vaddq_f32(a6, a7)));
  s = vaddq_f32(s, vaddq_f32(vaddq_f32(vaddq_f32(a8, a9), vaddq_f32(a10, a11)), vaddq_f32(vaddq_f32(a12, a13), vaddq_f32(a14, a15))));
  s = vaddq_f32(s, vaddq_f32(vaddq_f32(a16, a17), vaddq_f32(a18, a19)));
  return vaddvq_f32(s);
}

// fp16 -> fp32 with FCVTL (base Advanced SIMD: conversions need no fp16
// arithmetic, so no HWCAP_ASIMDHP), 8 values a step.
void WidenNeon(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(src + i));
    vst1q_f32(dst + i, vcvt_f32_f16(vget_low_f16(h)));
    vst1q_f32(dst + i + 4, vcvt_high_f32_f16(h));
  }
  for (; i < n; ++i) dst[i] = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(src[i]))), 0);
}

// M == 1 over PackedB panels (gemm.h): P 12-wide panels at a time, even
// and odd k in separate accumulators (as GemvAvx2; 12 accumulators for a
// pair), added at the end. A pair and an odd last panel sum alike, so that
// any split of the panels over threads gives the same bits.
template <int P>
inline void GemvPanelsNeon(int64_t K, int64_t KC, const float* a, const float* packed, int64_t n_pad, int64_t p0,
                           float* y) {
  constexpr int kNr = 12;
  float32x4_t s[P][3], t[P][3];
  for (int j = 0; j < P; ++j)
    for (int v = 0; v < 3; ++v) s[j][v] = t[j][v] = vdupq_n_f32(0.f);
  for (int64_t pc = 0; pc < K; pc += KC) {
    const int64_t kc = K - pc < KC ? K - pc : KC;
    const float* b = packed + pc * n_pad + p0 * kNr * kc;
    const float* ak = a + pc;
    int64_t k = 0;
    for (; k + 2 <= kc; k += 2, b += 2 * kNr) {
      const float32x2_t x = vld1_f32(ak + k);  // x[0]: k, x[1]: k + 1
      for (int j = 0; j < P; ++j)
        for (int v = 0; v < 3; ++v) {
          const float* bj = b + j * kNr * kc + 4 * v;
          s[j][v] = vfmaq_lane_f32(s[j][v], vld1q_f32(bj), x, 0);
          t[j][v] = vfmaq_lane_f32(t[j][v], vld1q_f32(bj + kNr), x, 1);
        }
    }
    if (k < kc) {
      const float32x4_t x0 = vdupq_n_f32(ak[k]);
      for (int j = 0; j < P; ++j)
        for (int v = 0; v < 3; ++v) s[j][v] = vfmaq_f32(s[j][v], vld1q_f32(b + j * kNr * kc + 4 * v), x0);
    }
  }
  for (int j = 0; j < P; ++j)
    for (int v = 0; v < 3; ++v) vst1q_f32(y + j * kNr + 4 * v, vaddq_f32(s[j][v], t[j][v]));
}

void GemvNeon(int64_t K, int64_t KC, const float* a, const float* packed, int64_t n_pad, int64_t p0, int64_t panels,
              float* y) {
  int64_t p = 0;
  for (; p + 2 <= panels; p += 2) GemvPanelsNeon<2>(K, KC, a, packed, n_pad, p0 + p, y + p * 12);
  if (p < panels) GemvPanelsNeon<1>(K, KC, a, packed, n_pad, p0 + p, y + p * 12);
}

// mc 128 (A block 128 KiB), kc 256 (an A panel 8 KiB and a B panel 12 KiB
// stay in L1), nc 2040 (a multiple of 12; B block 2 MiB).
// A panels are packed by the generic loop (pack_a null).
const GemmKernel kKernel = {8,        12,      128,       256,     2040,        &MicroNeon, &FmaLoopNeon, 20 * 4 * 2,
                            &GemvNeon, nullptr, &WidenNeon, nullptr, &MicroNeonPf};

}  // namespace

const GemmKernel* NeonKernel() { return &kKernel; }

}  // namespace kiln::gemm_detail

#else

namespace kiln::gemm_detail {
const GemmKernel* NeonKernel() { return nullptr; }
}  // namespace kiln::gemm_detail

#endif
