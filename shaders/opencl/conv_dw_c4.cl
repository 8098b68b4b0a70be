// Depthwise Conv on blocks of four channels (shaders/vulkan/conv_dw_c4.comp,
// which documents the layouts): one work item per output pixel and channel
// block; X and Y each channel-packed (X_PACKED, Y_PACKED) or NCHW (LoadX4,
// StoreY4 in common.cl).
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
        acc += LOAD4(w4, wrow + kx) * LoadX4(x, X_PACKED, p.c, n, cb, vol, row + (uint)ix);
      }
    }
  }
  StoreY4(y, Y_PACKED, ACT, p.c, n, cb, ovol, q, acc, p.lo, p.hi, p.slope);
}
