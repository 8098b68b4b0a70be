#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// The device's roof for kiln-kernelbench (VulkanBackend::measurePeaks).
// MODE 0: each invocation runs `iters` rounds of 8 independent vec4 FMA
// chains in registers (64 flops a round) and writes their sum, so nothing is
// optimised away. MODE 1: copies n vec4s (bandwidth: 32 bytes moved each).
layout(constant_id = 3) const uint MODE = 0;

layout(std430, binding = 0) readonly buffer A { vec4 a[]; };
layout(std430, binding = 1) writeonly buffer B { vec4 b[]; };
layout(push_constant) uniform P {
  uint n, iters;
  float x, y;
} p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (MODE == 1) {
    if (i < p.n) b[i] = a[i];
    return;
  }
  const vec4 x = vec4(p.x), y = vec4(p.y);
  vec4 v0 = vec4(float(i) * 1e-9), v1 = v0 + 1.0, v2 = v0 + 2.0, v3 = v0 + 3.0;
  vec4 v4 = v0 + 4.0, v5 = v0 + 5.0, v6 = v0 + 6.0, v7 = v0 + 7.0;
  for (uint k = 0; k < p.iters; ++k) {
    v0 = fma(v0, x, y); v1 = fma(v1, x, y); v2 = fma(v2, x, y); v3 = fma(v3, x, y);
    v4 = fma(v4, x, y); v5 = fma(v5, x, y); v6 = fma(v6, x, y); v7 = fma(v7, x, y);
  }
  if (i < p.n) b[i] = ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7));
}
