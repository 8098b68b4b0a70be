#include "vec_math.h"

#include <cmath>
#include <cstring>

#include "gemm.h"
#include "simd_clones.h"

namespace kiln {
namespace {

// e^r for |r| <= ln2 / 2, given fn = round(x / ln2): r = x - fn ln2 in two
// parts (Cody-Waite), then the polynomial. Shared by both exponentials.
inline float ExpOfRemainder(float x, float fn) {
  const float r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.f;
}

inline float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

// e^x for x in [-87, 88] (callers clamp): x = n ln2 + r, |r| <= ln2 / 2, e^r by
// a polynomial, 2^n put into the exponent bits. Written so that the compiler
// vectorizes a loop around it: no calls, no branches, rounding by the
// 1.5 * 2^23 trick (round to nearest in the default mode).
// n is read from the bits of the rounding sum, as in ExpFull below: no
// float-to-int conversion (undefined for NaN) and no signed shift.
inline float ExpReduced(float x) {
  const float t = x * 1.44269504088896341f;
  const float j = t + 12582912.f;
  uint32_t jb;
  std::memcpy(&jb, &j, sizeof(jb));
  const uint32_t n = jb - 0x4B400000u;  // round(t), two's complement
  return ExpOfRemainder(x, j - 12582912.f) * FromBits((n + 127u) << 23);
}

// e^x on the whole float range, branch-free like ExpReduced so that loops
// around it vectorize. Below -87.3 the result is subnormal and above 88.7 it
// overflows; neither 2^n fits one float's exponent there, so 2^n is applied
// as two factors 2^(n/2) and 2^(n - n/2), both normal for n in [-151, 129]:
// the first product stays normal, the second rounds once into the subnormals
// (or to 0, or overflows to inf) as the exact result would. n is read from
// the bits of the rounding sum t + 1.5 * 2^23 (its low mantissa bits hold n
// in two's complement), not by a float-to-int conversion, which is undefined
// for NaN; a NaN x gives a NaN polynomial and so a NaN result.
inline float ExpFull(float x) {
  x = x < -104.5f ? -104.5f : x;  // e^-104.5 < half the smallest subnormal: rounds to 0
  x = x > 89.f ? 89.f : x;        // e^89 > FLT_MAX: overflows to inf
  const float t = x * 1.44269504088896341f;
  const float j = t + 12582912.f;
  uint32_t jb;
  std::memcpy(&jb, &j, sizeof(jb));
  const int32_t n = static_cast<int32_t>(jb - 0x4B400000u);
  const float p = ExpOfRemainder(x, j - 12582912.f);
  const int32_t n1 = n >> 1, n2 = n - n1;
  return p * FromBits(static_cast<uint32_t>(n1 + 127) << 23) * FromBits(static_cast<uint32_t>(n2 + 127) << 23);
}

constexpr int kLanes = 16;  // partial sums a row: one AVX-512 register, two AVX2 ones

// Reductions over a row keep kLanes partial results, so that the compiler
// vectorizes them without reassociating one float sum (which it may not).
// The maximum ignores NaN (v > m is false), as std::max(m, v) does; the
// exponentials then carry the NaN into the sum.
inline float RowMax(const float* __restrict x, int64_t n) {
  float part[kLanes];
  for (float& v : part) v = -INFINITY;
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) part[l] = x[k + l] > part[l] ? x[k + l] : part[l];
  // Halving steps (8, 4, 2, 1 lanes), which vectorize, instead of a chain
  // of 16 dependent compares.
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) part[l] = part[l + w] > part[l] ? part[l + w] : part[l];
  float m = part[0];
  for (; k < n; ++k) m = x[k] > m ? x[k] : m;
  return m;
}

// sum of e^(x - sub) over the row, writing each term to y when y is set.
inline float ExpSubSum(const float* __restrict x, float sub, float* __restrict y, int64_t n) {
  float part[kLanes] = {};
  int64_t k = 0;
  if (y) {
    for (; k + kLanes <= n; k += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const float e = ExpFull(x[k + l] - sub);
        y[k + l] = e;
        part[l] += e;
      }
  } else {
    for (; k + kLanes <= n; k += kLanes)
      for (int l = 0; l < kLanes; ++l) part[l] += ExpFull(x[k + l] - sub);
  }
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) part[l] += part[l + w];
  float s = part[0];
  for (; k < n; ++k) {
    const float e = ExpFull(x[k] - sub);
    if (y) y[k] = e;
    s += e;
  }
  return s;
}

}  // namespace

namespace vec_detail {

KILN_SIMD_CLONES
void SigmoidGeneric(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v = -x[i];
    // Clamped so that e^v stays finite and normal; sigmoid is 0 or 1 to
    // float precision well before either bound. A NaN passes both tests.
    v = v < -87.f ? -87.f : v;
    v = v > 88.f ? 88.f : v;
    const float e = ExpReduced(v);
    y[i] = x[i] != x[i] ? x[i] : 1.f / (1.f + e);
  }
}

KILN_SIMD_CLONES
void SiluGeneric(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v = -x[i];
    v = v < -87.f ? -87.f : v;  // as SigmoidF32
    v = v > 88.f ? 88.f : v;
    const float e = ExpReduced(v);
    y[i] = x[i] != x[i] ? x[i] : x[i] / (1.f + e);
  }
}

}  // namespace vec_detail

void SigmoidF32(const float* x, float* y, int64_t n) {
  static const vec_detail::GateFn avx512 = GemmIsaSupported(Isa::kAvx512) ? vec_detail::SigmoidAvx512() : nullptr;
  (avx512 ? avx512 : &vec_detail::SigmoidGeneric)(x, y, n);
}

void SiluF32(const float* x, float* y, int64_t n) {
  static const vec_detail::GateFn avx512 = GemmIsaSupported(Isa::kAvx512) ? vec_detail::SiluAvx512() : nullptr;
  (avx512 ? avx512 : &vec_detail::SiluGeneric)(x, y, n);
}

KILN_SIMD_CLONES
void ExpF32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ExpFull(x[i]);
}

namespace vec_detail {

// Two passes over each row (the maximum, then the exponentials and their sum
// written to y), and a third over y alone to scale it; a row of a few
// thousand floats stays in L1 throughout.
KILN_SIMD_CLONES
void SoftmaxRowsGeneric(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * n;
    float* __restrict yr = y + r * n;
    const float mx = RowMax(xr, n);
    if (log) {
      // (x - max) - log(sum): the exponentials are only summed.
      const float ls = std::log(ExpSubSum(xr, mx, nullptr, n));
      for (int64_t k = 0; k < n; ++k) yr[k] = (xr[k] - mx) - ls;
    } else {
      const float inv = 1.f / ExpSubSum(xr, mx, yr, n);
      for (int64_t k = 0; k < n; ++k) yr[k] *= inv;
    }
  }
}

}  // namespace vec_detail

// The intrinsics form where the CPU has AVX-512 (the same passes, masked
// tails, e^x scaled by vscalefps: 512 rows of 128 in 27 us instead of 57),
// the compiler-vectorized one elsewhere.
void SoftmaxRowsF32(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  static const vec_detail::SoftmaxRowsFn avx512 =
      GemmIsaSupported(Isa::kAvx512) ? vec_detail::SoftmaxRowsAvx512() : nullptr;
  if (avx512) return avx512(x, y, rows, n, log);
  vec_detail::SoftmaxRowsGeneric(x, y, rows, n, log);
}

// The strided case keeps the w columns' running maxima and sums side by side,
// so each pass reads a contiguous run of w floats per axis step.
KILN_SIMD_CLONES
void SoftmaxColumnsF32(const float* x, float* y, int64_t n, int64_t stride, int64_t w, bool log, float* mx,
                       float* sum) {
  float* __restrict m = mx;
  float* __restrict s = sum;
  for (int64_t j = 0; j < w; ++j) {
    m[j] = -INFINITY;
    s[j] = 0.f;
  }
  for (int64_t a = 0; a < n; ++a) {
    const float* __restrict xa = x + a * stride;
    for (int64_t j = 0; j < w; ++j) m[j] = xa[j] > m[j] ? xa[j] : m[j];
  }
  for (int64_t a = 0; a < n; ++a) {
    const float* __restrict xa = x + a * stride;
    float* __restrict ya = y + a * stride;
    if (log) {
      for (int64_t j = 0; j < w; ++j) s[j] += ExpFull(xa[j] - m[j]);
    } else {
      for (int64_t j = 0; j < w; ++j) {
        const float e = ExpFull(xa[j] - m[j]);
        ya[j] = e;
        s[j] += e;
      }
    }
  }
  if (log) {
    for (int64_t j = 0; j < w; ++j) s[j] = std::log(s[j]);
    for (int64_t a = 0; a < n; ++a) {
      const float* __restrict xa = x + a * stride;
      float* __restrict ya = y + a * stride;
      for (int64_t j = 0; j < w; ++j) ya[j] = (xa[j] - m[j]) - s[j];
    }
  } else {
    for (int64_t j = 0; j < w; ++j) s[j] = 1.f / s[j];
    for (int64_t a = 0; a < n; ++a) {
      float* __restrict ya = y + a * stride;
      for (int64_t j = 0; j < w; ++j) ya[j] *= s[j];
    }
  }
}

}  // namespace kiln
