#include "vec_math.h"

#include <cstring>

#include "simd_clones.h"

namespace kiln {
namespace {

// e^x for x in [-87, 88] (callers clamp): x = n ln2 + r, |r| <= ln2 / 2, e^r by
// a polynomial, 2^n put into the exponent bits. Written so that the compiler
// vectorizes a loop around it: no calls, no branches, rounding by the
// 1.5 * 2^23 trick (round to nearest in the default mode).
inline float ExpReduced(float x) {
  const float t = x * 1.44269504088896341f;
  const float fn = (t + 12582912.f) - 12582912.f;
  const float r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const int32_t bits = (static_cast<int32_t>(fn) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

}  // namespace

KILN_SIMD_CLONES
void SigmoidF32(const float* x, float* y, int64_t n) {
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

}  // namespace kiln
