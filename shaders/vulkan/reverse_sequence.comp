#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// ReverseSequence in UNIT_T units: element e at batch b (e / bstride % nb)
// and step t (e / tstride % nt) reads step len[b] - 1 - t of its sequence
// when t < len[b], else itself. Lengths are i32, or i64 (IDX64: its low
// word; the host kernel refuses lengths outside [0, nt], which are clamped
// here so that nothing is read out of bounds).
layout(constant_id = 3) const bool IDX64 = false;

layout(std430, binding = 0) readonly buffer X { UNIT_T x[]; };
layout(std430, binding = 1) readonly buffer L { uint lens[]; };
layout(std430, binding = 2) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P { uint n, units, bstride, nb, tstride, nt; } p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  const uint b = e / p.bstride % p.nb, t = e / p.tstride % p.nt;
  const uint lo = lens[IDX64 ? 2u * b : b], hi = IDX64 ? lens[2u * b + 1u] : (int(lo) < 0 ? 0xffffffffu : 0u);
  const uint len = int(hi) < 0 ? 0u : (hi != 0u ? p.nt : min(lo, p.nt));
  const uint src = t < len ? e + (len - 1u - t) * p.tstride - t * p.tstride : e;
  y[i] = x[src * p.units + w];
}
