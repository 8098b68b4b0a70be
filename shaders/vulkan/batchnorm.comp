#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// BatchNormalization, inference form, on X [N, C, ...]: y = x * a + b with
// a = scale / sqrt(var + eps) and b = B - mean * a for the element's channel
// (the host's formula; the per-channel terms are recomputed per element,
// from four cached reads).
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer Scale { STORE_T scale[]; };
layout(std430, binding = 2) readonly buffer Bias { STORE_T bias[]; };
layout(std430, binding = 3) readonly buffer Mean { STORE_T mean[]; };
layout(std430, binding = 4) readonly buffer Var { STORE_T var[]; };
layout(std430, binding = 5) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P { uint total, c, plane; float eps; } p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ch = (i / p.plane) % p.c;
  const float a = float(scale[ch]) / sqrt(float(var[ch]) + p.eps);
  const float b = float(bias[ch]) - float(mean[ch]) * a;
  y[i] = STORE_T(float(x[i]) * a + b);
}
