#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "nn_activation.glsl"

// Depthwise Conv (one input channel per group; output channel m reads input
// channel m / mult), 1-D/2-D: one output element per invocation, a direct
// sum over the kernel window that skips taps in the padding. Memory-bound:
// neighbouring invocations share their input rows through the cache.
layout(constant_id = 3) const uint ACT = 0;
layout(constant_id = 4) const bool HAS_BIAS = false;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer W { STORE_T w[]; };
layout(std430, binding = 2) readonly buffer Bias { STORE_T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint total;          // output elements
  uint c, h, w, mult;  // input channels, height, width; output channels per input channel
  uint oh, ow;
  uint kh, kw, sh, sw, dh, dw;
  int ph, pw;          // begin pads
  float lo, hi, slope; // fused activation
} p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ox = i % p.ow, t = i / p.ow, oy = t % p.oh, nm = t / p.oh;
  const uint m_total = p.c * p.mult, m = nm % m_total, n = nm / m_total;
  const uint x_base = (n * p.c + m / p.mult) * p.h * p.w, w_base = m * p.kh * p.kw;
  const int iy0 = int(oy * p.sh) - p.ph, ix0 = int(ox * p.sw) - p.pw;
  float acc = HAS_BIAS ? float(bias[m]) : 0.0;
  for (uint ky = 0u; ky < p.kh; ++ky) {
    const int iy = iy0 + int(ky * p.dh);
    if (iy < 0 || iy >= int(p.h)) continue;
    const uint row = x_base + uint(iy) * p.w;
    for (uint kx = 0u; kx < p.kw; ++kx) {
      const int ix = ix0 + int(kx * p.dw);
      if (ix >= 0 && ix < int(p.w)) acc += float(w[w_base + ky * p.kw + kx]) * float(x[row + uint(ix)]);
    }
  }
  y[i] = STORE_T(FusedActivation(ACT, acc, p.lo, p.hi, p.slope));
}
