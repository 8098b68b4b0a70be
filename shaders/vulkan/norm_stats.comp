#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "reduce_rows.glsl"

// Row statistics for LayerNormalization and InstanceNormalization: X viewed
// as [rows, len] (contiguous rows), mean[r] and inv[r] = 1 / sqrt(variance +
// eps). Two passes over the row, as the host: the mean, then the mean of
// squared deviations from it (no cancellation from E[x^2] - E[x]^2).
//
// APPLY (LayerNorm with scale and bias of a whole row each, and rows enough
// to fill the device): the same kernel then writes the normalized row, y =
// (x - mean) * inv * scale[j] + bias[j] (bindings 3 to 5), a third pass
// over the row: LayerNorm in one dispatch.
layout(constant_id = 4) const bool APPLY = false;
layout(constant_id = 5) const bool HAS_BIAS = false;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Mean { STORE_T mean[]; };
layout(std430, binding = 2) writeonly buffer Inv { STORE_T inv[]; };
layout(std430, binding = 3) readonly buffer Scale { STORE_T scale[]; };
layout(std430, binding = 4) readonly buffer Bias { STORE_T bias[]; };
layout(std430, binding = 5) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P { uint rows, len; float eps; } p;

shared float partial[KILN_ROW_GROUP_MAX];

// The sum of a row over the work group (each invocation's `v`), or `v`
// itself with one invocation per row.
float RowSum(float v) {
  if (!ROW_GROUP) return v;
  const uint lane = gl_LocalInvocationID.x;
  partial[lane] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (lane < s) partial[lane] += partial[lane + s];
    barrier();
  }
  const float sum = partial[0];
  barrier();  // partial is reused by the next call
  return sum;
}

void main() {
  const uint r = RowIndex();
  if (r >= p.rows) return;  // uniform in a ROW_GROUP group
  const uint base = r * p.len;
  float sum = 0.0;
  for (uint i = RowLane(); i < p.len; i += RowStep()) sum += float(x[base + i]);
  const float m = RowSum(sum) / float(p.len);
  float sq = 0.0;
  for (uint i = RowLane(); i < p.len; i += RowStep()) {
    const float d = float(x[base + i]) - m;
    sq += d * d;
  }
  const float var = RowSum(sq) / float(p.len);
  const float is = 1.0 / sqrt(var + p.eps);
  if (APPLY) {
    for (uint i = RowLane(); i < p.len; i += RowStep()) {
      const float b = HAS_BIAS ? float(bias[i]) : 0.0;
      y[base + i] = STORE_T((float(x[base + i]) - m) * is * float(scale[i]) + b);
    }
  }
  if (RowLane() != 0u) return;
  mean[r] = STORE_T(m);
  inv[r] = STORE_T(is);
}
