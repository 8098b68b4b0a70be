#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "reduce_rows.glsl"

// ArgMax / ArgMin along one axis of X viewed as [outer, n, inner]: result o
// reads x[(o / inner) * n * inner + o % inner + i * inner], i < n. Ties go to
// the smaller index, or the larger with SELECT_LAST; a NaN never wins unless
// it is the row's first element, which then stays (the host's scan). The
// int64 result is written as two 32-bit words, low first (no shaderInt64).
layout(constant_id = 4) const bool IS_MAX = true;
layout(constant_id = 5) const bool SELECT_LAST = false;
const uint kNone = 0xffffffffu;  // no candidate yet

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint outputs, n, inner; } p;

shared float best_v[KILN_ROW_GROUP_MAX];
shared uint best_i[KILN_ROW_GROUP_MAX];

// Whether candidate (v, i) beats (bv, bi).
bool Better(float v, uint i, float bv, uint bi) {
  if (i == kNone) return false;
  if (bi == kNone) return true;
  if (v == bv) return SELECT_LAST ? i > bi : i < bi;
  return IS_MAX ? v > bv : v < bv;
}

void main() {
  const uint o = RowIndex();
  if (o >= p.outputs) return;  // uniform in a ROW_GROUP group
  const uint outer = o / p.inner, base = outer * p.n * p.inner + (o - outer * p.inner);
  float bv = 0.0;
  uint bi = kNone;
  for (uint i = RowLane(); i < p.n; i += RowStep()) {
    const float v = float(x[base + i * p.inner]);
    if (!isnan(v) && Better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  if (ROW_GROUP) {
    const uint lane = gl_LocalInvocationID.x;
    best_v[lane] = bv;
    best_i[lane] = bi;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
      if (lane < s && Better(best_v[lane + s], best_i[lane + s], best_v[lane], best_i[lane])) {
        best_v[lane] = best_v[lane + s];
        best_i[lane] = best_i[lane + s];
      }
      barrier();
    }
    if (lane != 0u) return;
    bi = best_i[0];
  }
  y[2u * o] = bi == kNone || isnan(float(x[base])) ? 0u : bi;
  y[2u * o + 1u] = 0u;
}
