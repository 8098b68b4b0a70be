#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// Trilu in UNIT_T units: element e of a stack of [rows, cols] matrices is
// kept when its column minus its row is >= k (UPPER) or <= k (lower), else
// zeroed. y may be x (in place).
layout(constant_id = 3) const bool UPPER = true;

layout(std430, binding = 0) readonly buffer X { UNIT_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P { uint n, units, rows, cols; int k; } p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units;
  const int col = int(e % p.cols), row = int((e / p.cols) % p.rows);
  const bool keep = UPPER ? col - row >= p.k : col - row <= p.k;
  y[i] = UNIT_T(keep ? uint(x[i]) : 0u);
}
