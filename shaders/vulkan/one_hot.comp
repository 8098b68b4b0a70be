#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// OneHot in UNIT_T units: output element e, as (o, d, r) over [outer,
// depth, inner], is values[1] (on) where index[o * inner + r] is d
// (negative indices count from the end of depth), else values[0] (off); an
// index outside [-depth, depth) gives off. Indices are i32, or i64 (IDX64),
// or f32 (FLOAT_IDX: truncated toward zero, as the host's).
layout(constant_id = 3) const bool IDX64 = false;
layout(constant_id = 4) const bool FLOAT_IDX = false;

layout(std430, binding = 0) readonly buffer I { uint ind[]; };
layout(std430, binding = 1) readonly buffer V { UNIT_T vals[]; };
layout(std430, binding = 2) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P { uint n, units, depth, inner; } p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  const uint t = e / p.inner, r = e - t * p.inner;
  const uint o = t / p.depth, d = t - o * p.depth;
  const uint k = o * p.inner + r;
  int v;  // -1 (out of range) matches no d: off
  if (FLOAT_IDX) {
    const float f = uintBitsToFloat(ind[k]), dim = float(p.depth);
    const int t = f >= -dim && f < dim ? int(f) : 0;  // NaN fails both
    v = f >= -dim && f < dim ? (t < 0 ? t + int(p.depth) : t) : -1;
  } else {
    v = KILN_INDEX(k, p.depth);
  }
  y[i] = vals[(v == int(d) ? p.units : 0u) + w];
}
