// Vectorizable transcendental kernels for the host backend: whole rows, built
// per ISA through KILN_SIMD_CLONES (simd_clones.h). std::exp is a libm call
// per element; Sigmoid through it was 40% of EfficientNet-B0's host time.
#pragma once

#include <cstdint>

namespace kiln {

// y[i] = 1 / (1 + e^-x[i]) for i in [0, n); y may be x. Relative error a few
// ulp (e^x: Cephes' degree-6 polynomial after reduction by ln 2); NaN stays NaN.
void SigmoidF32(const float* x, float* y, int64_t n);

}  // namespace kiln
