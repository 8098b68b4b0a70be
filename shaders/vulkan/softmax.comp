#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "reduce_rows.glsl"

// Softmax / LogSoftmax along one axis of X viewed as [outer, n, inner]: row
// o is x[(o / inner) * n * inner + o % inner + i * inner], i < n. One pass
// keeps a running maximum m and the sum s of exp(x - m), rescaling s when m
// grows (partial (m, s) pairs of a work group merge the same way); a second
// pass writes exp(x - m) / s, or x - m - log(s). A row of -inf gives NaN,
// as on the host.
layout(constant_id = 4) const bool LOG = false;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P { uint rows, n, inner; } p;

shared float part_m[KILN_ROW_GROUP_MAX];
shared float part_s[KILN_ROW_GROUP_MAX];

// (m, s) += (m2, s2); an empty part (s == 0) adds nothing, which also keeps
// exp(-inf - -inf) out.
void Merge(inout float m, inout float s, float m2, float s2) {
  const float mx = max(m, m2);
  s = (s == 0.0 ? 0.0 : s * exp(m - mx)) + (s2 == 0.0 ? 0.0 : s2 * exp(m2 - mx));
  m = mx;
}

void main() {
  const uint o = RowIndex();
  if (o >= p.rows) return;  // uniform in a ROW_GROUP group
  const uint outer = o / p.inner, base = outer * p.n * p.inner + (o - outer * p.inner);
  float m = -KILN_INF, s = 0.0;
  for (uint i = RowLane(); i < p.n; i += RowStep()) {
    const float v = float(x[base + i * p.inner]);
    if (v > m) {
      s = s * exp(m - v) + 1.0;
      m = v;
    } else if (v != -KILN_INF) {
      s += exp(v - m);
    }
  }
  if (ROW_GROUP) {
    const uint lane = gl_LocalInvocationID.x;
    part_m[lane] = m;
    part_s[lane] = s;
    barrier();
    for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
      if (lane < h) {
        float mm = part_m[lane], ss = part_s[lane];
        Merge(mm, ss, part_m[lane + h], part_s[lane + h]);
        part_m[lane] = mm;
        part_s[lane] = ss;
      }
      barrier();
    }
    m = part_m[0];
    s = part_s[0];
  }
  const float scale = LOG ? log(s) : 1.0 / s;
  for (uint i = RowLane(); i < p.n; i += RowStep()) {
    const uint at = base + i * p.inner;
    const float d = float(x[at]) - m;
    y[at] = STORE_T(LOG ? d - scale : exp(d) * scale);
  }
}
