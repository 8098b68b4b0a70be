#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "nn_activation.glsl"

// Conv (1-D/2-D, any stride, padding, dilation, group) computed directly:
// one invocation owns a 4 x 4 register block, 4 output channels by 4
// consecutive output columns of one output row, and loops over its group's
// kh x kw x cg inputs reading X and W from memory (no shared memory, no
// barriers). (One pixel by 8 channels, with contiguous X reads across
// invocations, measured 1.4x slower on lavapipe.) Chosen for CPU Vulkan drivers (lavapipe, SwiftShader), where a
// work group's barriers are context switches and the caches do what shared
// memory does on a GPU; conv.comp (tiled implicit GEMM) serves GPUs.
// Invocations are counted ox-block fastest, then oy, then channel block,
// then group and batch.
layout(constant_id = 3) const uint ACT = 0;
layout(constant_id = 4) const bool HAS_BIAS = false;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer W { STORE_T w[]; };
layout(std430, binding = 2) readonly buffer Bias { STORE_T bias[]; };
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint c, h, w;           // input channels (all groups), height, width
  uint cg, mg, groups;    // channels in and out per group, group count
  uint batch, oh, ow;
  uint kh, kw, sh, sw, dh, dw;
  int ph, pw;             // begin pads
  float lo, hi, slope;    // fused activation
  uint total;             // invocations
} p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint owb = (p.ow + 3u) / 4u, mgb = (p.mg + 3u) / 4u;
  const uint xb = i % owb;
  i /= owb;
  const uint oy = i % p.oh;
  i /= p.oh;
  const uint mb = i % mgb;
  i /= mgb;
  const uint g = i % p.groups, n = i / p.groups;
  const uint ox0 = xb * 4u, m0 = mb * 4u;
  const uint khw = p.kh * p.kw, K = p.cg * khw;

  float acc[4][4];
  [[unroll]] for (uint a = 0u; a < 4u; ++a)
    [[unroll]] for (uint b = 0u; b < 4u; ++b) acc[a][b] = 0.0;
  uint wrow[4];
  [[unroll]] for (uint a = 0u; a < 4u; ++a) wrow[a] = (g * p.mg + min(m0 + a, p.mg - 1u)) * K;
  const uint x_base = (n * p.c + g * p.cg) * p.h * p.w;
  const int iy0 = int(oy * p.sh) - p.ph;
  for (uint ky = 0u; ky < p.kh; ++ky) {
    const int iy = iy0 + int(ky * p.dh);
    if (iy < 0 || iy >= int(p.h)) continue;
    for (uint kx = 0u; kx < p.kw; ++kx) {
      int ix[4];
      bool ok[4];
      [[unroll]] for (uint b = 0u; b < 4u; ++b) {
        ix[b] = int((ox0 + b) * p.sw + kx * p.dw) - p.pw;
        ok[b] = ix[b] >= 0 && ix[b] < int(p.w) && ox0 + b < p.ow;
      }
      const uint kk = ky * p.kw + kx;
      for (uint ci = 0u; ci < p.cg; ++ci) {
        const uint row = x_base + (ci * p.h + uint(iy)) * p.w;
        float xv[4];
        [[unroll]] for (uint b = 0u; b < 4u; ++b) xv[b] = ok[b] ? float(x[row + uint(ix[b])]) : 0.0;
        const uint k = ci * khw + kk;
        [[unroll]] for (uint a = 0u; a < 4u; ++a) {
          const float wv = float(w[wrow[a] + k]);
          [[unroll]] for (uint b = 0u; b < 4u; ++b) acc[a][b] += wv * xv[b];
        }
      }
    }
  }
  const uint m_total = p.groups * p.mg, ohw = p.oh * p.ow;
  [[unroll]] for (uint a = 0u; a < 4u; ++a) {
    if (m0 + a >= p.mg) break;
    const uint m = g * p.mg + m0 + a;
    const float b0 = HAS_BIAS ? float(bias[m]) : 0.0;
    [[unroll]] for (uint b = 0u; b < 4u; ++b)
      if (ox0 + b < p.ow)
        y[(n * m_total + m) * ohw + oy * p.ow + ox0 + b] = STORE_T(FusedActivation(ACT, acc[a][b] + b0, p.lo, p.hi, p.slope));
  }
}
