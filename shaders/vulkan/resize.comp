#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// Resize from per-axis tables built on the host at resize with the host's
// arithmetic (ResizeAxisTap; backends/gpu/ops/gpu_layout_index.cpp): for
// output coordinate c of dim d, entry tab[d] + c is two uvec4s, the element
// offsets (index * input stride) of up to 4 taps, then their weights (float
// bits). TAPS 1, nearest (any 4- or 8-byte dtype, WORDS words an element),
// reads x[sum_d off0]. TAPS 2 (linear) and 4 (cubic), f32, sum over the
// TAPS^nact combinations of taps of the `nact` interpolated dims (listed in
// `act`, 4 bits each; the other dims add off0) the product of the taps'
// weights times x.
layout(constant_id = 3) const uint TAPS = 1;
layout(constant_id = 4) const uint WORDS = 1;

layout(std430, binding = 0) readonly buffer X { UNIT_T x[]; };
layout(std430, binding = 1) readonly buffer T { uvec4 taps[]; };
layout(std430, binding = 2) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P {
  uint n, rank, nact, act, act_mask;
  uint dims[KILN_MAX_RANK];
  uint tab[KILN_MAX_RANK];
} p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint e = i / WORDS, w = i - e * WORDS;
  uint c[KILN_MAX_RANK];
  uint base = 0u;
  [[unroll]] for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if (uint(d) < p.rank) {
      uint q = e / p.dims[d];
      c[d] = e - q * p.dims[d];
      e = q;
      if ((p.act_mask & (1u << uint(d))) == 0u) base += taps[2u * (p.tab[d] + c[d])].x;
    }
  }
  if (TAPS == 1u) {
    y[i] = x[base * WORDS + w];
    return;
  }
  uint combos = 1u;
  for (uint j = 0u; j < p.nact; ++j) combos *= TAPS;
  float acc = 0.0;
  for (uint combo = 0u; combo < combos; ++combo) {
    uint off = base, rest = combo;
    float weight = 1.0;
    for (uint j = 0u; j < p.nact; ++j) {
      const uint d = (p.act >> (4u * j)) & 15u, k = rest % TAPS;
      rest /= TAPS;
      const uint entry = 2u * (p.tab[d] + c[d]);
      off += taps[entry][k];
      weight *= uintBitsToFloat(taps[entry + 1u][k]);
    }
    if (weight != 0.0) acc += weight * UnitToFloat(x[off]);
  }
  y[i] = FloatToUnit(acc);
}
