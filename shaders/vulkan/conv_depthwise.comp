#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"
#include "conv_common.glsl"

// Depthwise Conv (one input channel per group; output channel m reads input
// channel m / mult), 1-D/2-D/3-D: one output element per invocation, a
// direct sum over the kernel window that skips taps in the padding.
// Memory-bound: neighbouring invocations share their input rows through the
// cache.
layout(push_constant) uniform P {
  uint total;          // output elements
  uint c, mult;        // input channels; output channels per input channel
  CONV_WINDOW
  float lo, hi, slope; // fused activation
} p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ox = i % p.ow, t = i / p.ow, oy = t % p.oh, t2 = t / p.oh, oz = t2 % p.od, nm = t2 / p.od;
  const uint m_total = p.c * p.mult, m = nm % m_total, n = nm / m_total;
  const uint x_base = (n * p.c + m / p.mult) * p.d * p.h * p.w, w_base = m * p.kd * p.kh * p.kw;
  const int iz0 = int(oz * p.sd) - p.pd, iy0 = int(oy * p.sh) - p.ph, ix0 = int(ox * p.sw) - p.pw;
  float acc = HAS_BIAS ? float(bias[m]) : 0.0;
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = iz0 + int(kz * p.dd);
    if (iz < 0 || iz >= int(p.d)) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = iy0 + int(ky * p.dh);
      if (iy < 0 || iy >= int(p.h)) continue;
      const uint row = x_base + (uint(iz) * p.h + uint(iy)) * p.w, w_row = w_base + (kz * p.kh + ky) * p.kw;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        const int ix = ix0 + int(kx * p.dw);
        if (ix >= 0 && ix < int(p.w)) acc += float(w[w_row + kx]) * float(x[row + uint(ix)]);
      }
    }
  }
  y[i] = STORE_T(FusedActivation(ACT, acc, p.lo, p.hi, p.slope));
}
