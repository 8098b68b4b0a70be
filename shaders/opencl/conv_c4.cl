// Conv on channel-packed weights with float4 arithmetic
// (shaders/vulkan/conv_c4.comp, which documents the layouts): one work item
// owns MB blocks of four output channels by XB consecutive output columns
// of a row (1 x 4, or 2 x 8 on CPU drivers); X
// and Y each channel-packed (X_PACKED, Y_PACKED) or NCHW (LoadX4, StoreY4
// in common.cl); a fused residual r in Y's layout where HAS_RESIDUAL.
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
#ifndef KILN_SPEC_7
#define KILN_SPEC_7 4
#endif
#ifndef KILN_SPEC_8
#define KILN_SPEC_8 1
#endif
#ifndef KILN_SPEC_9
#define KILN_SPEC_9 0
#endif
#define ACT KILN_SPEC_3
#define HAS_BIAS (KILN_SPEC_4 != 0)
#define X_PACKED (KILN_SPEC_5 != 0)
#define Y_PACKED (KILN_SPEC_6 != 0)
#define XB KILN_SPEC_7  // output columns a work item
#define MB KILN_SPEC_8  // blocks of four output channels a work item
#define HAS_RESIDUAL (KILN_SPEC_9 != 0)  // r (argument 3) added before the activation

typedef struct {
  uint c, cg, cg4;
  uint m, mg, mg4;
  uint batch, total;
  uint bias_at;
  CONV_WINDOW
  float lo, hi, slope;
} ConvC4Push;

__kernel void conv_c4(__global const STORE_T* x, __global const STORE_T* w4, __global STORE_T* y, __global const STORE_T* r,
                      ConvC4Push p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint owb = (p.ow + XB - 1u) / XB, groups = p.m / p.mg, mbb = (p.mg4 + MB - 1u) / MB;
  const uint xb = i % owb;
  i /= owb;
  const uint oy = i % p.oh;
  i /= p.oh;
  const uint oz = i % p.od;
  i /= p.od;
  const uint gq = i % (groups * mbb), n = i / (groups * mbb);
  const uint g = gq / mbb, q0 = (gq % mbb) * MB;
  const uint ox0 = xb * XB;
  const uint kvol = p.kd * p.kh * p.kw, vol = p.d * p.h * p.w;

  float4 acc[MB][XB];
  for (uint mb = 0u; mb < MB; ++mb)
    for (uint b = 0u; b < XB; ++b) acc[mb][b] = (float4)(0.0f);
  uint gmb[MB];
  for (uint mb = 0u; mb < MB; ++mb) gmb[mb] = g * p.mg4 + min(q0 + mb, p.mg4 - 1u);
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
        uint pix[XB];
        bool ok[XB];
        for (uint b = 0u; b < XB; ++b) {
          const int ix = (int)((ox0 + b) * p.sw + kx * p.dw) - p.pw;
          ok[b] = ix >= 0 && ix < (int)p.w && ox0 + b < p.ow;
          pix[b] = row + (uint)clamp(ix, 0, (int)p.w - 1);  // always inside X: loads need no mask
        }
        const uint t = (kz * p.kh + ky) * p.kw + kx;
        for (uint cb = 0u; cb < p.cg4; ++cb) {
          float4 xv[XB];
          for (uint b = 0u; b < XB; ++b) {
            const float4 v = LoadX4(x, X_PACKED, p.c, n, cb0 + cb, vol, pix[b]);
            xv[b] = ok[b] ? v : (float4)(0.0f);
          }
          for (uint mb = 0u; mb < MB; ++mb) {
            const uint wi = ((gmb[mb] * kvol + t) * p.cg4 + cb) * 4u;
            const float4 w0 = LOAD4(w4, wi), w1 = LOAD4(w4, wi + 1u), w2 = LOAD4(w4, wi + 2u), w3 = LOAD4(w4, wi + 3u);
            for (uint b = 0u; b < XB; ++b) acc[mb][b] += w0 * xv[b].x + w1 * xv[b].y + w2 * xv[b].z + w3 * xv[b].w;
          }
        }
      }
    }
  }

  const uint ovol = p.od * p.oh * p.ow, orow = (oz * p.oh + oy) * p.ow;
  for (uint mb = 0u; mb < MB && q0 + mb < p.mg4; ++mb) {
    const float4 bv = HAS_BIAS ? LOAD4(w4, p.bias_at + gmb[mb]) : (float4)(0.0f);
    for (uint b = 0u; b < XB && ox0 + b < p.ow; ++b)
      StoreY4R(y, r, HAS_RESIDUAL, Y_PACKED, ACT, p.m, n, gmb[mb], ovol, orow + ox0 + b, acc[mb][b] + bv, p.lo, p.hi,
               p.slope);
  }
}
