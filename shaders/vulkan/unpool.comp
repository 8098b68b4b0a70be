#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// MaxUnpool in three dispatches (STAGE), Y viewed as 32-bit words:
//   0: Y = 0;
//   1: for each input i whose i64 index j is valid, Y[j] = max(Y[j], i + 1)
//      (atomicMax: where indices repeat the last input wins, as in the host
//      kernel's serial loop, whatever the order invocations run in);
//   2: Y[j] = claim ? x[claim - 1] : 0.
// With REMAP, j is a flat index into the default-size output (def dims)
// and moves to the same coordinates of the real output (out dims); an
// index outside the output (an error on the host) is skipped.
layout(constant_id = 3) const uint STAGE = 0;
layout(constant_id = 4) const bool REMAP = false;

layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) readonly buffer I { uint ind[]; };
layout(std430, binding = 2) buffer Y { uint y[]; };
layout(push_constant) uniform P {
  uint n, total, rank;
  uint def_dims[KILN_MAX_RANK];
  uint out_dims[KILN_MAX_RANK];
} p;

// The flat output index of input i, or p.total when it is invalid.
uint Target(uint i) {
  uint lo = ind[2 * i], hi = ind[2 * i + 1];
  if (hi != 0u) return p.total;
  if (!REMAP) return lo < p.total ? lo : p.total;
  uint rest = lo, at = 0u, stride = 1u;
  bool inside = true;
  [[unroll]] for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if (uint(d) < p.rank) {
      uint q = rest / p.def_dims[d], c = rest - q * p.def_dims[d];
      rest = q;
      inside = inside && c < p.out_dims[d];
      at += c * stride;
      stride *= p.out_dims[d];
    }
  }
  return inside && rest == 0u ? at : p.total;
}

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (STAGE == 1u) {
    if (i >= p.n) return;
    uint j = Target(i);
    if (j < p.total) atomicMax(y[j], i + 1u);
    return;
  }
  if (i >= p.total) return;
  if (STAGE == 0u) {
    y[i] = 0u;
  } else {
    uint claim = y[i];
    y[i] = claim == 0u || claim > p.n ? 0u : x[claim - 1u];  // a claim beyond n: never in a run, but stages can run alone (tuning)
  }
}
