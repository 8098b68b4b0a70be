#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// MeanVarianceNormalization, one invocation a group (the elements that
// share their coordinates on the kept dims): y = (x - mean) / (sqrt(var) +
// 1e-9), as the host kernel (host_fallback/ops/nn_misc.cpp), with the
// variance taken about the mean (two passes, fp32). `dims` (innermost last)
// are x's after merging neighbours of the same kind; bit d of `reduced`
// marks a reduced one.
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint groups, count, rank, reduced;
  uint dims[KILN_MAX_RANK];
} p;

// The offset of element r of group g.
uint At(uint g, uint r) {
  uint off = 0u, stride = 1u;
  for (uint d = p.rank; d-- > 0u;) {
    uint c;
    if ((p.reduced & (1u << d)) != 0u) {
      c = r % p.dims[d];
      r /= p.dims[d];
    } else {
      c = g % p.dims[d];
      g /= p.dims[d];
    }
    off += c * stride;
    stride *= p.dims[d];
  }
  return off;
}

void main() {
  const uint g = KILN_GLOBAL_INDEX;
  if (g >= p.groups) return;
  float sum = 0.0;
  for (uint r = 0u; r < p.count; ++r) sum += float(x[At(g, r)]);
  const float mean = sum / float(p.count);
  float sq = 0.0;
  for (uint r = 0u; r < p.count; ++r) {
    const float d = float(x[At(g, r)]) - mean;
    sq += d * d;
  }
  const float scale = 1.0 / (sqrt(sq / float(p.count)) + 1e-9);
  for (uint r = 0u; r < p.count; ++r) {
    const uint at = At(g, r);
    y[at] = STORE_T((float(x[at]) - mean) * scale);
  }
}
