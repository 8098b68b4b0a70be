#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// Resize from per-axis tables built on the host at resize with the host
// kernel's arithmetic (backends/gpu/ops/gpu_layout_index.cpp): for output
// coordinate c of dim d, taps[tab[d] + c] = (off0, off1, w0, w1), the
// element offsets (index * input stride) of the two neighbours and their
// weights (float bits). Nearest (any 4- or 8-byte dtype, WORDS words an
// element) reads x[sum_d off0]. Linear (f32) sums, over the 2^nact corners
// of the `nact` interpolated dims (listed in `act`, 4 bits each; the other
// dims add off0), the product of the corners' weights times x.
layout(constant_id = 3) const bool LINEAR = false;
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
      if ((p.act_mask & (1u << uint(d))) == 0u) base += taps[p.tab[d] + c[d]].x;
    }
  }
  if (!LINEAR) {
    y[i] = x[base * WORDS + w];
    return;
  }
  float acc = 0.0;
  for (uint corner = 0u; corner < (1u << p.nact); ++corner) {
    uint off = base;
    float weight = 1.0;
    for (uint j = 0u; j < p.nact; ++j) {
      uint d = (p.act >> (4u * j)) & 15u;
      uvec4 t = taps[p.tab[d] + c[d]];
      bool hi = ((corner >> j) & 1u) != 0u;
      off += hi ? t.y : t.x;
      weight *= uintBitsToFloat(hi ? t.w : t.z);
    }
    if (weight != 0.0) acc += weight * UnitToFloat(x[off]);
  }
  y[i] = FloatToUnit(acc);
}
