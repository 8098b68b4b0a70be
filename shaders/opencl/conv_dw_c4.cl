// Depthwise Conv on blocks of four channels (shaders/vulkan/conv_dw_c4.comp,
// which documents the layouts): one work item per output pixel and channel
// block; X and Y each channel-packed (X_PACKED, Y_PACKED) or NCHW.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#ifndef KILN_SPEC_6
#define KILN_SPEC_6 0
#endif
#define ACT KILN_SPEC_3
#define HAS_BIAS (KILN_SPEC_4 != 0)
#define X_PACKED (KILN_SPEC_5 != 0)
#define Y_PACKED (KILN_SPEC_6 != 0)

typedef struct {
  uint total, c, c4, bias_at;
  CONV_WINDOW
  float lo, hi, slope;
} ConvDwC4Push;

__kernel void conv_dw_c4(__global const STORE_T* x, __global const STORE_T* w4, __global STORE_T* y,
                         ConvDwC4Push p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ovol = p.od * p.oh * p.ow, vol = p.d * p.h * p.w, kvol = p.kd * p.kh * p.kw;
  const uint q = i % ovol, ncb = i / ovol, cb = ncb % p.c4, n = ncb / p.c4;
  const uint oz = q / (p.oh * p.ow), r = q - oz * p.oh * p.ow, oy = r / p.ow, ox = r - oy * p.ow;
  const uint c0 = cb * 4u, left = min(4u, p.c - c0);
  const int iz0 = (int)(oz * p.sd) - p.pd, iy0 = (int)(oy * p.sh) - p.ph, ix0 = (int)(ox * p.sw) - p.pw;
  float4 acc = HAS_BIAS ? LOAD4(w4, p.bias_at + cb) : (float4)(0.0f);
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = iz0 + (int)(kz * p.dd);
    if (iz < 0 || iz >= (int)p.d) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = iy0 + (int)(ky * p.dh);
      if (iy < 0 || iy >= (int)p.h) continue;
      const uint row = ((uint)iz * p.h + (uint)iy) * p.w, wrow = cb * kvol + (kz * p.kh + ky) * p.kw;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        const int ix = ix0 + (int)(kx * p.dw);
        if (ix < 0 || ix >= (int)p.w) continue;
        const uint pix = row + (uint)ix;
        float4 xv = (float4)(0.0f);
        if (X_PACKED) {
          xv = LOAD4(x, ncb * vol + pix);
        } else {
          const uint base = (n * p.c + c0) * vol + pix;
          if (left > 0u) xv.x = LOAD(x, base);
          if (left > 1u) xv.y = LOAD(x, base + vol);
          if (left > 2u) xv.z = LOAD(x, base + 2u * vol);
          if (left > 3u) xv.w = LOAD(x, base + 3u * vol);
        }
        acc += LOAD4(w4, wrow + kx) * xv;
      }
    }
  }
  float v[4] = {acc.x, acc.y, acc.z, acc.w};
  for (uint j = 0u; j < 4u; ++j) v[j] = j < left ? FusedActivation(ACT, v[j], p.lo, p.hi, p.slope) : 0.0f;
  if (Y_PACKED) {
    STORE4(y, ncb * ovol + q, (float4)(v[0], v[1], v[2], v[3]));
  } else {
    for (uint j = 0u; j < left; ++j) STORE(y, (n * p.c + c0 + j) * ovol + q, v[j]);
  }
}
