#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// Gather along an axis, in 32-bit words: output item i, as (o, k, r) over
// [outer, count, inner] (inner counts words: an 8-byte element is 2), reads
// x[(o * dim + index[k]) * inner + r]. Indices are i32, or i64 (IDX64) read
// as two words: an i64 in int32's range has a high word equal to the low
// word's sign, anything else is out of range. Negative indices count from
// the end. An index outside [-dim, dim) (the host kernel reports it as an
// error) writes 0 here instead of reading out of bounds.
layout(constant_id = 3) const bool IDX64 = false;

layout(std430, binding = 0) readonly buffer X { UNIT_T x[]; };
layout(std430, binding = 1) readonly buffer I { uint ind[]; };
layout(std430, binding = 2) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P { uint n, inner, count, dim; } p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint t = i / p.inner, r = i - t * p.inner;
  uint o = t / p.count, k = t - o * p.count;
  const int v = KILN_INDEX(k, p.dim);
  uint word = 0u;
  if (v >= 0) word = uint(x[(o * p.dim + uint(v)) * p.inner + r]);
  y[i] = UNIT_T(word);
}
