// Conv on channel-packed weights with float4 arithmetic
// (shaders/vulkan/conv_c4.comp, which documents the layouts): one work item
// owns four output channels by four consecutive output columns of a row; X
// and Y each channel-packed (X_PACKED, Y_PACKED) or NCHW (LoadX4, StoreY4
// in common.cl).
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
  uint c, cg, cg4;
  uint m, mg, mg4;
  uint batch, total;
  uint bias_at;
  CONV_WINDOW
  float lo, hi, slope;
} ConvC4Push;

__kernel void conv_c4(__global const STORE_T* x, __global const STORE_T* w4, __global STORE_T* y, ConvC4Push p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint owb = (p.ow + 3u) / 4u, m4 = p.m / p.mg * p.mg4;
  const uint xb = i % owb;
  i /= owb;
  const uint oy = i % p.oh;
  i /= p.oh;
  const uint oz = i % p.od;
  i /= p.od;
  const uint gmb = i % m4, n = i / m4;
  const uint g = gmb / p.mg4;
  const uint ox0 = xb * 4u;
  const uint kvol = p.kd * p.kh * p.kw, vol = p.d * p.h * p.w;

  float4 acc[4] = {(float4)(0.0f), (float4)(0.0f), (float4)(0.0f), (float4)(0.0f)};
  const int iz0 = (int)(oz * p.sd) - p.pd, iy0 = (int)(oy * p.sh) - p.ph;
  const uint cb0 = g * p.cg4;
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = iz0 + (int)(kz * p.dd);
    if (iz < 0 || iz >= (int)p.d) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = iy0 + (int)(ky * p.dh);
      if (iy < 0 || iy >= (int)p.h) continue;
      const uint row = ((uint)iz * p.h + (uint)iy) * p.w;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        uint pix[4];
        bool ok[4];
        for (uint b = 0u; b < 4u; ++b) {
          const int ix = (int)((ox0 + b) * p.sw + kx * p.dw) - p.pw;
          ok[b] = ix >= 0 && ix < (int)p.w && ox0 + b < p.ow;
          pix[b] = row + (uint)max(ix, 0);
        }
        const uint t = (kz * p.kh + ky) * p.kw + kx;
        uint wi = (gmb * kvol + t) * p.cg4 * 4u;
        for (uint cb = 0u; cb < p.cg4; ++cb, wi += 4u) {
          const float4 w0 = LOAD4(w4, wi), w1 = LOAD4(w4, wi + 1u), w2 = LOAD4(w4, wi + 2u), w3 = LOAD4(w4, wi + 3u);
          for (uint b = 0u; b < 4u; ++b) {
            if (!ok[b]) continue;
            const float4 xv = LoadX4(x, X_PACKED, p.c, n, cb0 + cb, vol, pix[b]);
            acc[b] += w0 * xv.x + w1 * xv.y + w2 * xv.z + w3 * xv.w;
          }
        }
      }
    }
  }

  const float4 bv = HAS_BIAS ? LOAD4(w4, p.bias_at + gmb) : (float4)(0.0f);
  const uint ovol = p.od * p.oh * p.ow, orow = (oz * p.oh + oy) * p.ow;
  for (uint b = 0u; b < 4u && ox0 + b < p.ow; ++b)
    StoreY4(y, Y_PACKED, ACT, p.m, n, gmb, ovol, orow + ox0 + b, acc[b] + bv, p.lo, p.hi, p.slope);
}
