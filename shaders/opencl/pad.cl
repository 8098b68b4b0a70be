// Pad in UNIT_T units, WORDS units an element (shaders/vulkan/pad.comp). For
// each output element, per dim (innermost first) the input coordinate is c -
// begin; outside [0, len):
//   MODE 0 (constant): the element is the fill value v (WORDS units),
//   MODE 1 (reflect):  mirrored without repeating the edge, repeatedly
//                      (a triangle wave of period 2 * (len - 1); len 1: 0),
//   MODE 2 (edge):     clamped.
// Negative pads crop. Modes are fb::PadMode's values.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 1
#endif
#define MODE KILN_SPEC_3
#define WORDS KILN_SPEC_4

typedef struct {
  uint n, rank;
  uint out_dims[KILN_MAX_RANK];
  uint in_dims[KILN_MAX_RANK];
  int begin[KILN_MAX_RANK];
} PadPush;

__kernel void pad(__global const UNIT_T* x, __global const UNIT_T* v, __global UNIT_T* y, PadPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint e = i / WORDS, w = i - e * WORDS;
  uint off = 0u, stride = 1u;
  bool fill = false;
  for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if ((uint)d < p.rank) {
      uint q = e / p.out_dims[d];
      int s = (int)(e - q * p.out_dims[d]) - p.begin[d], len = (int)p.in_dims[d];
      e = q;
      if (s < 0 || s >= len) {
        if (MODE == 0) {
          fill = true;
        } else if (MODE == 2 || len == 1) {
          s = clamp(s, 0, len - 1);
        } else {  // a triangle wave is even: reflect |s|
          int period = 2 * (len - 1);
          s = abs(s) % period;
          if (s >= len) s = period - s;
        }
      }
      off += (uint)s * stride;
      stride *= p.in_dims[d];
    }
  }
  y[i] = fill ? v[w] : x[off * WORDS + w];
}
