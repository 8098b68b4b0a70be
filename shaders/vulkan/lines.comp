#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// One invocation a line along an axis, X viewed as [outer, n, inner]:
//   MODE 0 Hardmax: 1 at the line's first maximum, 0 elsewhere;
//   MODE 1 CumSum: running sums, exclusive (flags bit 0) and/or reversed
//     (bit 1);
//   MODE 2 LRN across the axis (channels): x / (bias + alpha / size * sum of
//     squares over [k - (size - 1) / 2, k + ceil((size - 1) / 2)])^beta.
// The host kernels' arithmetic (host_fallback/ops/indexing.cpp, nn_misc.cpp),
// accumulated in fp32.
layout(constant_id = 3) const uint MODE = 0;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint lines, n, inner, flags;
  float alpha, beta, bias;
  uint size;
} p;

void main() {
  const uint l = KILN_GLOBAL_INDEX;
  if (l >= p.lines) return;
  const uint o = l / p.inner, i = l - o * p.inner;
  const uint base = o * p.n * p.inner + i;
  if (MODE == 0u) {
    uint best = 0u;
    float top = float(x[base]);
    for (uint j = 1u; j < p.n; ++j) {
      const float v = float(x[base + j * p.inner]);
      if (v > top) {
        top = v;
        best = j;
      }
    }
    for (uint j = 0u; j < p.n; ++j) y[base + j * p.inner] = STORE_T(j == best ? 1.0 : 0.0);
  } else if (MODE == 1u) {
    const bool exclusive = (p.flags & 1u) != 0u, reverse = (p.flags & 2u) != 0u;
    float acc = 0.0;
    for (uint jj = 0u; jj < p.n; ++jj) {
      const uint at = base + (reverse ? p.n - 1u - jj : jj) * p.inner;
      const float v = float(x[at]);
      if (exclusive) {
        y[at] = STORE_T(acc);
        acc += v;
      } else {
        acc += v;
        y[at] = STORE_T(acc);
      }
    }
  } else {
    const int lo = int(p.size - 1u) / 2, hi = int(p.size) - 1 - lo;
    for (int k = 0; k < int(p.n); ++k) {
      float sq = 0.0;
      for (int j = max(0, k - lo); j <= min(int(p.n) - 1, k + hi); ++j) {
        const float v = float(x[base + uint(j) * p.inner]);
        sq += v * v;
      }
      const uint at = base + uint(k) * p.inner;
      y[at] = STORE_T(float(x[at]) / pow(p.bias + p.alpha / float(p.size) * sq, p.beta));
    }
  }
}
