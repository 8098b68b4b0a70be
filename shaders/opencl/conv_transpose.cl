// ConvTranspose (1-D/2-D/3-D, stride, padding, dilation, group) as a gather,
// one output element per work item (shaders/vulkan/conv_transpose.comp).
// W is [C, mg, kd, kh, kw].
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define ACT KILN_SPEC_3
#define HAS_BIAS (KILN_SPEC_4 != 0)

typedef struct {
  uint total;
  uint c, cg, mg, groups;
  CONV_WINDOW
  float lo, hi, slope;
} ConvTransposePush;

// The input index feeding output `o` through kernel tap `k` on one axis, or
// -1 when none does.
int Source(uint o, int pad, uint k, uint dil, uint stride, uint extent) {
  const int t = (int)o + pad - (int)(k * dil);
  if (t < 0 || (uint)t % stride != 0u || (uint)t / stride >= extent) return -1;
  return (int)((uint)t / stride);
}

__kernel void conv_transpose(__global const STORE_T* x, __global const STORE_T* w, __global const STORE_T* bias,
                             __global STORE_T* y, ConvTransposePush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ox = i % p.ow, t = i / p.ow, oy = t % p.oh, t2 = t / p.oh, oz = t2 % p.od, nm = t2 / p.od;
  const uint m_total = p.groups * p.mg, m = nm % m_total, n = nm / m_total;
  const uint g = m / p.mg, ml = m - g * p.mg, kvol = p.kd * p.kh * p.kw;
  const uint vol = p.d * p.h * p.w;
  const uint x_base = (n * p.c + g * p.cg) * vol, w_base = (g * p.cg * p.mg + ml) * kvol;
  float acc = HAS_BIAS ? LOAD(bias, m) : 0.0f;
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = Source(oz, p.pd, kz, p.dd, p.sd, p.d);
    if (iz < 0) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = Source(oy, p.ph, ky, p.dh, p.sh, p.h);
      if (iy < 0) continue;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        const int ix = Source(ox, p.pw, kx, p.dw, p.sw, p.w);
        if (ix < 0) continue;
        const uint xi = x_base + ((uint)iz * p.h + (uint)iy) * p.w + (uint)ix;
        const uint wi = w_base + (kz * p.kh + ky) * p.kw + kx;
        for (uint ci = 0u; ci < p.cg; ++ci) acc += LOAD(x, xi + ci * vol) * LOAD(w, wi + ci * p.mg * kvol);
      }
    }
  }
  STORE(y, i, FusedActivation(ACT, acc, p.lo, p.hi, p.slope));
}
