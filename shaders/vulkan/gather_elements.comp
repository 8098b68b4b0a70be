#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// GatherElements in UNIT_T units (an 8-byte element is 2 words): output
// element e has the indices' coordinates c; it reads x at c with c[axis]
// replaced by index[e]. Indices are i32, or i64 (IDX64) as in gather.comp;
// negative ones count from the end. An index outside [-dim, dim) (the host
// kernel reports it as an error) writes 0 here instead of reading out of
// bounds.
layout(constant_id = 3) const bool IDX64 = false;

layout(std430, binding = 0) readonly buffer X { UNIT_T x[]; };
layout(std430, binding = 1) readonly buffer I { uint ind[]; };
layout(std430, binding = 2) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P {
  uint n, units, rank, axis, dim;
  uint dims[KILN_MAX_RANK];      // the indices' (and output's) dims
  uint xstrides[KILN_MAX_RANK];  // x's strides in elements
} p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  const int v = KILN_INDEX(e, p.dim);
  uint word = 0u;
  if (v >= 0) {
    uint rem = e, off = 0u;
    for (uint d = p.rank; d-- > 0u;) {
      const uint c = rem % p.dims[d];
      rem /= p.dims[d];
      off += (d == p.axis ? uint(v) : c) * p.xstrides[d];
    }
    word = uint(x[off * p.units + w]);
  }
  y[i] = UNIT_T(word);
}
