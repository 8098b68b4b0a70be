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
// Invocations: XB output columns of a row, rows fastest, then block, then batch.
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

// Output columns an invocation (GpuCaps::conv_tile_cols): each weight is
// loaded once for XB outputs of a row instead of once an output.
layout(constant_id = 7) const uint XB = 1u;
// RS (with XB 8, or 7 on rows of a multiple of 7): a 2-D square kernel of
// RK (3 or 5) taps, dilation 1 and column stride RS (1 or 2); RS 0: any
// kernel. A row's pixels are read once for the XB outputs, (XB - 1) * RS +
// RK reads where the taps made RK * XB (lavapipe: each read a gather),
// their indices all fixed once the loops unroll.
layout(constant_id = 8) const uint RS = 0u;
layout(constant_id = 9) const uint RK = 3u;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ovol = p.od * p.oh * p.ow, vol = p.d * p.h * p.w, kvol = p.kd * p.kh * p.kw;
  const uint owb = (p.ow + XB - 1u) / XB, rows = p.od * p.oh;
  const uint xb = i % owb, rest = i / owb, orow = rest % rows, ncb = rest / rows;
  const uint cb = ncb % p.c4, n = ncb / p.c4;
  const uint oz = orow / p.oh, oy = orow - oz * p.oh, ox0 = xb * XB;
  const int iz0 = int(oz * p.sd) - p.pd, iy0 = int(oy * p.sh) - p.ph;
  const vec4 bias = HAS_BIAS ? LOAD_W4(p.bias_at + cb) : vec4(0.0);
  vec4 acc[XB];
  [[unroll]] for (uint b = 0u; b < XB; ++b) acc[b] = bias;
  if (RS != 0u && (XB == 8u || XB == 7u)) {
    const uint npx = (XB - 1u) * RS + RK;
    const int ix0 = int(ox0 * RS) - p.pw;
    [[unroll]] for (uint ky = 0u; ky < RK; ++ky) {
      const int iy = iy0 + int(ky);
      if (iy < 0 || iy >= int(p.h)) continue;
      const uint row = uint(iy) * p.w, wrow = cb * RK * RK + ky * RK;
      vec4 wk[5];
      [[unroll]] for (uint j = 0u; j < RK; ++j) wk[j] = LOAD_W4(wrow + j);
      vec4 px[19];
      [[unroll]] for (uint j = 0u; j < npx; ++j) {
        const int ix = ix0 + int(j);
        px[j] = ix >= 0 && ix < int(p.w) ? LoadX4(p.c, n, cb, vol, row + uint(ix)) : vec4(0.0);
      }
      [[unroll]] for (uint b = 0u; b < XB; ++b)
        [[unroll]] for (uint j = 0u; j < RK; ++j) acc[b] += wk[j] * px[b * RS + j];
    }
  } else {
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = iz0 + int(kz * p.dd);
    if (iz < 0 || iz >= int(p.d)) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = iy0 + int(ky * p.dh);
      if (iy < 0 || iy >= int(p.h)) continue;
      const uint row = (uint(iz) * p.h + uint(iy)) * p.w, wrow = cb * kvol + (kz * p.kh + ky) * p.kw;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        const vec4 wv = LOAD_W4(wrow + kx);
        [[unroll]] for (uint b = 0u; b < XB; ++b) {
          const int ix = int((ox0 + b) * p.sw + kx * p.dw) - p.pw;
          if (ix >= 0 && ix < int(p.w)) acc[b] += wv * LoadX4(p.c, n, cb, vol, row + uint(ix));
        }
      }
    }
  }
  }
  [[unroll]] for (uint b = 0u; b < XB; ++b) {
    if (ox0 + b >= p.ow) break;
    StoreY4(p.c, n, cb, ovol, orow * p.ow + ox0 + b, acc[b], p.lo, p.hi, p.slope);
  }
}
