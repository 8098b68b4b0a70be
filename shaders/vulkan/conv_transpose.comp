#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"
#include "conv_common.glsl"

// ConvTranspose (1-D/2-D/3-D, stride, padding, dilation, group) as a
// gather: one output element per invocation. Input position iy feeds output
// oy = iy * sh - ph + ky * dh, so output oy takes, for each kernel row ky,
// iy = (oy + ph - ky * dh) / sh when that division is exact and in range
// (depth and columns likewise), summed over the group's input channels.
// W is [C, mg, kd, kh, kw].
layout(push_constant) uniform P {
  uint total;             // output elements
  uint c, cg, mg, groups; // input channels (all groups); channels in and out per group
  CONV_WINDOW
  float lo, hi, slope;    // fused activation
} p;

// The input index feeding output `o` through kernel tap `k` on one axis, or
// -1 when none does.
int Source(uint o, int pad, uint k, uint dil, uint stride, uint extent) {
  const int t = int(o) + pad - int(k * dil);
  if (t < 0 || uint(t) % stride != 0u || uint(t) / stride >= extent) return -1;
  return int(uint(t) / stride);
}

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ox = i % p.ow, t = i / p.ow, oy = t % p.oh, t2 = t / p.oh, oz = t2 % p.od, nm = t2 / p.od;
  const uint m_total = p.groups * p.mg, m = nm % m_total, n = nm / m_total;
  const uint g = m / p.mg, ml = m - g * p.mg, kvol = p.kd * p.kh * p.kw;
  const uint vol = p.d * p.h * p.w;
  const uint x_base = (n * p.c + g * p.cg) * vol, w_base = (g * p.cg * p.mg + ml) * kvol;
  float acc = HAS_BIAS ? float(bias[m]) : 0.0;
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = Source(oz, p.pd, kz, p.dd, p.sd, p.d);
    if (iz < 0) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = Source(oy, p.ph, ky, p.dh, p.sh, p.h);
      if (iy < 0) continue;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        const int ix = Source(ox, p.pw, kx, p.dw, p.sw, p.w);
        if (ix < 0) continue;
        const uint xi = x_base + (uint(iz) * p.h + uint(iy)) * p.w + uint(ix);
        const uint wi = w_base + (kz * p.kh + ky) * p.kw + kx;
        for (uint ci = 0u; ci < p.cg; ++ci) acc += float(x[xi + ci * vol]) * float(w[wi + ci * p.mg * kvol]);
      }
    }
  }
  y[i] = STORE_T(FusedActivation(ACT, acc, p.lo, p.hi, p.slope));
}
