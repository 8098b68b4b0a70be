#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "nn_activation.glsl"

// Depthwise Conv (one input and one output channel per group), 1-D/2-D/3-D,
// on a block of four channels at once: one invocation per output pixel and
// channel block, a vec4 FMA per tap inside the input. X and Y are each
// channel-packed or NCHW (X_PACKED, Y_PACKED; see conv_c4.comp). Weights:
// the vec4 of block cb and tap t at cb * kvol + t (zero past C), the bias
// at vec4 `bias_at` + cb. Invocations: output pixel fastest, then block,
// then batch.
layout(constant_id = 3) const uint ACT = 0;
layout(constant_id = 4) const bool HAS_BIAS = false;
layout(constant_id = 5) const bool X_PACKED = false;
layout(constant_id = 6) const bool Y_PACKED = false;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 0) readonly buffer X4 { STORE4_T x4[]; };
layout(std430, binding = 1) readonly buffer W4 { STORE4_T w4[]; };
layout(std430, binding = 2) writeonly buffer Y { STORE_T y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { STORE4_T y4[]; };

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
  const uint c0 = cb * 4u, left = min(4u, p.c - c0);
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
        const uint pix = row + uint(ix);
        vec4 xv = vec4(0.0);
        if (X_PACKED) {
          xv = vec4(x4[ncb * vol + pix]);
        } else {
          [[unroll]] for (uint j = 0u; j < 4u; ++j)
            if (j < left) xv[j] = float(x[(n * p.c + c0 + j) * vol + pix]);
        }
        acc += vec4(w4[wrow + kx]) * xv;
      }
    }
  }
  [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[j] = j < left ? FusedActivation(ACT, acc[j], p.lo, p.hi, p.slope) : 0.0;
  if (Y_PACKED) {
    y4[ncb * ovol + q] = STORE4_T(acc);
  } else {
    [[unroll]] for (uint j = 0u; j < 4u; ++j)
      if (j < left) y[(n * p.c + c0 + j) * ovol + q] = STORE_T(acc[j]);
  }
}
