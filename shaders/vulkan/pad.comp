#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// Pad, in 32-bit words (WORDS an element). For each output element, per dim
// (innermost first) the input coordinate is c - begin; outside [0, len):
//   MODE 0 (constant): the element is the fill value v (WORDS words),
//   MODE 1 (reflect):  mirrored without repeating the edge, repeatedly
//                      (a triangle wave of period 2 * (len - 1); len 1: 0),
//   MODE 2 (edge):     clamped.
// Negative pads crop. Modes are fb::PadMode's values.
layout(constant_id = 3) const uint MODE = 0;
layout(constant_id = 4) const uint WORDS = 1;

layout(std430, binding = 0) readonly buffer X { UNIT_T x[]; };
layout(std430, binding = 1) readonly buffer V { UNIT_T v[]; };
layout(std430, binding = 2) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P {
  uint n, rank;
  uint out_dims[KILN_MAX_RANK];
  uint in_dims[KILN_MAX_RANK];
  int begin[KILN_MAX_RANK];
} p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint e = i / WORDS, w = i - e * WORDS;
  uint off = 0u, stride = 1u;
  bool fill = false;
  [[unroll]] for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if (uint(d) < p.rank) {
      uint q = e / p.out_dims[d];
      int s = int(e - q * p.out_dims[d]) - p.begin[d], len = int(p.in_dims[d]);
      e = q;
      if (s < 0 || s >= len) {
        if (MODE == 0u) {
          fill = true;
        } else if (MODE == 2u || len == 1) {
          s = clamp(s, 0, len - 1);
        } else {  // a triangle wave is even: reflect |s|
          int period = 2 * (len - 1);
          s = abs(s) % period;
          if (s >= len) s = period - s;
        }
      }
      off += uint(s) * stride;
      stride *= p.in_dims[d];
    }
  }
  y[i] = UNIT_T(fill ? uint(v[w]) : uint(x[off * WORDS + w]));
}
