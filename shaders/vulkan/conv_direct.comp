#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"
#include "conv_common.glsl"

// Conv (1-D/2-D/3-D, any stride, padding, dilation, group) computed
// directly: one invocation owns a 4 x 4 register block, 4 output channels by
// 4 consecutive output columns of one output row, and loops over its group's
// kd x kh x kw x cg inputs reading X and W from memory (no shared memory, no
// barriers). (One pixel by 8 channels, with contiguous X reads across
// invocations, measured 1.4x slower on lavapipe.) Chosen for CPU Vulkan drivers (lavapipe, SwiftShader), where a
// work group's barriers are context switches and the caches do what shared
// memory does on a GPU; conv.comp (tiled implicit GEMM) serves GPUs.
// Invocations are counted ox-block fastest, then oy, oz, channel block,
// then group and batch.
layout(push_constant) uniform P {
  uint c, cg, mg, groups, batch;  // input channels (all groups); channels in and out per group
  CONV_WINDOW
  float lo, hi, slope;            // fused activation
  uint total;                     // invocations
} p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint owb = (p.ow + 3u) / 4u, mgb = (p.mg + 3u) / 4u;
  const uint xb = i % owb;
  i /= owb;
  const uint oy = i % p.oh;
  i /= p.oh;
  const uint oz = i % p.od;
  i /= p.od;
  const uint mb = i % mgb;
  i /= mgb;
  const uint g = i % p.groups, n = i / p.groups;
  const uint ox0 = xb * 4u, m0 = mb * 4u;
  const uint kvol = p.kd * p.kh * p.kw, K = p.cg * kvol, vol = p.d * p.h * p.w;

  float acc[4][4];
  [[unroll]] for (uint a = 0u; a < 4u; ++a)
    [[unroll]] for (uint b = 0u; b < 4u; ++b) acc[a][b] = 0.0;
  uint wrow[4];
  [[unroll]] for (uint a = 0u; a < 4u; ++a) wrow[a] = (g * p.mg + min(m0 + a, p.mg - 1u)) * K;
  const uint x_base = (n * p.c + g * p.cg) * vol;
  const int iz0 = int(oz * p.sd) - p.pd, iy0 = int(oy * p.sh) - p.ph;
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = iz0 + int(kz * p.dd);
    if (iz < 0 || iz >= int(p.d)) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = iy0 + int(ky * p.dh);
      if (iy < 0 || iy >= int(p.h)) continue;
      const uint x_row = x_base + (uint(iz) * p.h + uint(iy)) * p.w;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        int ix[4];
        bool ok[4];
        [[unroll]] for (uint b = 0u; b < 4u; ++b) {
          ix[b] = int((ox0 + b) * p.sw + kx * p.dw) - p.pw;
          ok[b] = ix[b] >= 0 && ix[b] < int(p.w) && ox0 + b < p.ow;
        }
        const uint kk = (kz * p.kh + ky) * p.kw + kx;
        for (uint ci = 0u; ci < p.cg; ++ci) {
          const uint row = x_row + ci * vol;
          float xv[4];
          [[unroll]] for (uint b = 0u; b < 4u; ++b) xv[b] = ok[b] ? float(x[row + uint(ix[b])]) : 0.0;
          const uint k = ci * kvol + kk;
          [[unroll]] for (uint a = 0u; a < 4u; ++a) {
            const float wv = float(w[wrow[a] + k]);
            [[unroll]] for (uint b = 0u; b < 4u; ++b) acc[a][b] += wv * xv[b];
          }
        }
      }
    }
  }
  const uint m_total = p.groups * p.mg, ovol = p.od * p.oh * p.ow, orow = (oz * p.oh + oy) * p.ow;
  [[unroll]] for (uint a = 0u; a < 4u; ++a) {
    if (m0 + a >= p.mg) break;
    const uint m = g * p.mg + m0 + a;
    const float b0 = HAS_BIAS ? float(bias[m]) : 0.0;
    [[unroll]] for (uint b = 0u; b < 4u; ++b)
      if (ox0 + b < p.ow)
        y[(n * m_total + m) * ovol + orow + ox0 + b] = STORE_T(FusedActivation(ACT, acc[a][b] + b0, p.lo, p.hi, p.slope));
  }
}
