#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"
#include "conv_c4_common.glsl"

// Depthwise Conv (one input and one output channel per group), 1-D/2-D/3-D,
// on a block of four channels at once: one invocation per output pixel and
// channel block, a vec4 FMA per tap inside the input. X and Y in either
// layout (conv_c4_common.glsl). Weights: the vec4 of block cb and tap t at
// cb * kvol + t (zero past C), the bias at vec4 `bias_at` + cb.
// Invocations: output pixel fastest, then block, then batch.
layout(push_constant) uniform P {
  uint total, c, c4, bias_at;
  uint d, h, w;         // input extents
  uint od, oh, ow;      // output extents
  uint kd, kh, kw;      // kernel
  uint sd, sh, sw;      // strides
  uint dd, dh, dw;      // dilations
  int pd, ph, pw;       // begin pads
  float lo, hi, slope;  // fused activation
} p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ovol = p.od * p.oh * p.ow, vol = p.d * p.h * p.w, kvol = p.kd * p.kh * p.kw;
  const uint q = i % ovol, ncb = i / ovol, cb = ncb % p.c4, n = ncb / p.c4;
  const uint oz = q / (p.oh * p.ow), r = q - oz * p.oh * p.ow, oy = r / p.ow, ox = r - oy * p.ow;
  const int iz0 = int(oz * p.sd) - p.pd, iy0 = int(oy * p.sh) - p.ph, ix0 = int(ox * p.sw) - p.pw;
  vec4 acc = HAS_BIAS ? vec4(w4[p.bias_at + cb]) : vec4(0.0);
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = iz0 + int(kz * p.dd);
    if (iz < 0 || iz >= int(p.d)) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = iy0 + int(ky * p.dh);
      if (iy < 0 || iy >= int(p.h)) continue;
      const uint row = (uint(iz) * p.h + uint(iy)) * p.w, wrow = cb * kvol + (kz * p.kh + ky) * p.kw;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        const int ix = ix0 + int(kx * p.dw);
        if (ix < 0 || ix >= int(p.w)) continue;
        acc += vec4(w4[wrow + kx]) * LoadX4(p.c, n, cb, vol, row + uint(ix));
      }
    }
  }
  StoreY4(p.c, n, cb, ovol, q, acc, p.lo, p.hi, p.slope);
}
