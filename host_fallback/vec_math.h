// Vectorizable transcendental kernels for the host backend: whole rows, built
// per ISA through KILN_SIMD_CLONES (simd_clones.h). std::exp is a libm call
// per element; Sigmoid through it was 40% of EfficientNet-B0's host time, and
// Softmax through it ran at 1 GB/s.
#pragma once

#include <cstdint>

namespace kiln {

// y[i] = 1 / (1 + e^-x[i]) for i in [0, n); y may be x. Relative error a few
// ulp (e^x: Cephes' degree-6 polynomial after reduction by ln 2); NaN stays NaN.
void SigmoidF32(const float* x, float* y, int64_t n);
// y = x * sigmoid(x) (Silu / Swish); y may be x.
void SiluF32(const float* x, float* y, int64_t n);

// y[i] = e^x[i] over the whole float range: 0 below the denormals, subnormal
// results graded (not flushed), +inf past FLT_MAX, NaN stays NaN; within 2 ulp
// elsewhere. y may be x.
void ExpF32(const float* x, float* y, int64_t n);

// Softmax (log = false) or LogSoftmax (log = true) of `rows` contiguous rows
// of n elements each (the axis is the innermost one): y = e^(x - max) /
// sum e^(x - max), or (x - max) - log(sum); y must not overlap x. As in ONNX's
// reference, a NaN in a row makes the whole row NaN, and so does +inf or a
// row of -inf (their x - max is NaN); a -inf next to finite values gives 0.
void SoftmaxRowsF32(const float* x, float* y, int64_t rows, int64_t n, bool log);

// The same along a strided axis: w columns, n elements apart by `stride`
// (x[a * stride + j] for a in [0, n), j in [0, w)); y must not overlap x.
// mx and sum: scratch of w floats each.
void SoftmaxColumnsF32(const float* x, float* y, int64_t n, int64_t stride, int64_t w, bool log, float* mx,
                       float* sum);

namespace vec_detail {
// Per-ISA forms (vec_math_avx512.cpp), null where the build has none;
// SoftmaxRowsF32 picks one by the CPU. Tests run each.
using SoftmaxRowsFn = void (*)(const float* x, float* y, int64_t rows, int64_t n, bool log);
SoftmaxRowsFn SoftmaxRowsAvx512();
void SoftmaxRowsGeneric(const float* x, float* y, int64_t rows, int64_t n, bool log);  // KILN_SIMD_CLONES
// Sigmoid and Silu likewise (SigmoidF32, SiluF32 pick them).
using GateFn = void (*)(const float* x, float* y, int64_t n);
GateFn SigmoidAvx512();
GateFn SiluAvx512();
void SigmoidGeneric(const float* x, float* y, int64_t n);  // KILN_SIMD_CLONES
void SiluGeneric(const float* x, float* y, int64_t n);
}  // namespace vec_detail

}  // namespace kiln
