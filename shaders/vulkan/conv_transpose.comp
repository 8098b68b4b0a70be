#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "nn_activation.glsl"

// ConvTranspose (1-D/2-D, stride, padding, dilation, group) as a gather:
// one output element per invocation. Input position iy feeds output
// oy = iy * sh - ph + ky * dh, so output oy takes, for each kernel row ky,
// iy = (oy + ph - ky * dh) / sh when that division is exact and in range
// (columns likewise), summed over the group's input channels.
// W is [C, mg, kh, kw].
layout(constant_id = 3) const uint ACT = 0;
layout(constant_id = 4) const bool HAS_BIAS = false;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer W { STORE_T w[]; };
layout(std430, binding = 2) readonly buffer Bias { STORE_T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint total;             // output elements
  uint c, h, w;           // input channels (all groups), height, width
  uint cg, mg, groups;    // channels in and out per group, group count
  uint oh, ow;
  uint kh, kw, sh, sw, dh, dw;
  int ph, pw;             // begin pads
  float lo, hi, slope;    // fused activation
} p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ox = i % p.ow, t = i / p.ow, oy = t % p.oh, nm = t / p.oh;
  const uint m_total = p.groups * p.mg, m = nm % m_total, n = nm / m_total;
  const uint g = m / p.mg, ml = m - g * p.mg, khw = p.kh * p.kw;
  const uint plane = p.h * p.w;
  const uint x_base = (n * p.c + g * p.cg) * plane, w_base = (g * p.cg * p.mg + ml) * khw;
  float acc = HAS_BIAS ? float(bias[m]) : 0.0;
  for (uint ky = 0u; ky < p.kh; ++ky) {
    const int ty = int(oy) + p.ph - int(ky * p.dh);
    if (ty < 0 || uint(ty) % p.sh != 0u || uint(ty) / p.sh >= p.h) continue;
    const uint iy = uint(ty) / p.sh;
    for (uint kx = 0u; kx < p.kw; ++kx) {
      const int tx = int(ox) + p.pw - int(kx * p.dw);
      if (tx < 0 || uint(tx) % p.sw != 0u || uint(tx) / p.sw >= p.w) continue;
      const uint xi = x_base + iy * p.w + uint(tx) / p.sw, wi = w_base + ky * p.kw + kx;
      for (uint ci = 0u; ci < p.cg; ++ci)
        acc += float(x[xi + ci * plane]) * float(w[wi + ci * p.mg * khw]);
    }
  }
  y[i] = STORE_T(FusedActivation(ACT, acc, p.lo, p.hi, p.slope));
}
