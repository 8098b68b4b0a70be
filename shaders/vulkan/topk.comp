#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// TopK along an axis, one invocation a line of X ([outer, n, inner]): the k
// largest (LARGEST) or smallest values in order, ties to the lower index,
// NaN above everything (the host's TotalCompare order), and their indices as
// i64 (two words). Step j picks the best element after step j - 1's in that
// strict order, so no per-line scratch is needed (O(n k) a line).
layout(constant_id = 3) const bool LARGEST = true;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer V { STORE_T v[]; };
layout(std430, binding = 2) writeonly buffer I { uint ind[]; };
layout(push_constant) uniform P { uint lines, n, inner, k; } p;

// -1, 0, 1 as a <, =, > b, NaN above everything.
int Compare(float a, float b) {
  const bool na = isnan(a), nb = isnan(b);
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  return a < b ? -1 : (a > b ? 1 : 0);
}

// True when (a, ia) comes before (b, ib) in the output order.
bool Before(float a, uint ia, float b, uint ib) {
  const int c = Compare(a, b);
  if (c != 0) return LARGEST ? c > 0 : c < 0;
  return ia < ib;
}

void main() {
  const uint l = KILN_GLOBAL_INDEX;
  if (l >= p.lines) return;
  const uint o = l / p.inner, i = l - o * p.inner;
  const uint base = o * p.n * p.inner + i, obase = o * p.k * p.inner + i;
  float last = 0.0;
  uint last_i = 0u;
  for (uint j = 0u; j < p.k; ++j) {
    bool found = false;
    float best = 0.0;
    uint best_i = 0u;
    for (uint t = 0u; t < p.n; ++t) {
      const float val = float(x[base + t * p.inner]);
      if (j > 0u && !Before(last, last_i, val, t)) continue;
      if (!found || Before(val, t, best, best_i)) {
        found = true;
        best = val;
        best_i = t;
      }
    }
    const uint at = obase + j * p.inner;
    v[at] = STORE_T(best);
    ind[2u * at] = best_i;
    ind[2u * at + 1u] = 0u;
    last = best;
    last_i = best_i;
  }
}
