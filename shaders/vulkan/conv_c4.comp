#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"
#define KILN_RESIDUAL
#include "conv_c4_common.glsl"

// Conv (1-D/2-D/3-D, any stride, padding, dilation; one group, or groups of
// channels in whole blocks of four) on channel-packed weights with vec4
// arithmetic. One invocation owns four output channels (one block) by four
// consecutive output columns of one output row: per tap and input block it
// loads four input pixels (each the vec4 of four input channels) and four
// weight columns, and does sixteen vec4 FMAs. X and Y in either layout
// (conv_c4_common.glsl), a fused residual at binding 3 where HAS_RESIDUAL;
// XB and MB below widen the tile. Weights
// (backends/gpu/ops/gpu_nn_conv.cpp, PackConvWeights): vec4 column j of
// (group g, output block mb, tap t, input block cb) holds W[g*mg + 4mb +
// 0..3][4cb + j][t], zero past the group's channels, at ((gmb * kvol + t)
// * cg4 + cb) * 4 + j with gmb = g * mg4 + mb; the bias follows at vec4
// `bias_at` + gmb. Invocations: ox block fastest, then oy, oz, output
// block (all groups), batch.
layout(push_constant) uniform P {
  uint c, cg, cg4;      // input channels; per group, and its blocks
  uint m, mg, mg4;      // output channels; per group, and its blocks
  uint batch, total;    // images; invocations
  uint bias_at;         // vec4 index of the bias in W4
  uint d, h, w;         // input extents
  uint od, oh, ow;      // output extents
  uint kd, kh, kw;      // kernel
  uint sd, sh, sw;      // strides
  uint dd, dh, dw;      // dilations
  int pd, ph, pw;       // begin pads
  float lo, hi, slope;  // fused activation
} p;

// Register tile of an invocation: MB blocks of four output channels (of
// one group) by XB consecutive output columns. GPUs take 1 x 4; CPU
// drivers (lavapipe) 2 x 8, where each load is a per-lane memory access
// and the larger tile does twice the multiply-adds a load.
layout(constant_id = 7) const uint XB = 4u;
layout(constant_id = 8) const uint MB = 1u;

// Input block cb's products, XB pixels by MB output blocks, added to SUM
// (MATH4_T[MB][XB]: the f32 accumulators, or a half partial sum), with
// main's n, cb0, vol, pix, ok, gmb, kvol and t: one body for both
// arithmetics.
#define CONV_C4_BLOCK(SUM, cb)                                                                    \
  {                                                                                               \
    MATH4_T xv[XB];                                                                               \
    [[unroll]] for (uint b = 0u; b < XB; ++b) {                                                   \
      const MATH4_T v = LoadX4M(p.c, n, cb0 + (cb), vol, pix[b]);                                \
      xv[b] = ok[b] ? v : MATH4_T(0.0);                                                           \
    }                                                                                             \
    [[unroll]] for (uint mb = 0u; mb < MB; ++mb) {                                                \
      const uint wi = ((gmb[mb] * kvol + t) * p.cg4 + (cb)) * 4u;                                 \
      const MATH4_T w0 = LOAD_W4_M(wi), w1 = LOAD_W4_M(wi + 1u), w2 = LOAD_W4_M(wi + 2u),        \
                    w3 = LOAD_W4_M(wi + 3u);                                                      \
      [[unroll]] for (uint b = 0u; b < XB; ++b)                                                   \
        SUM[mb][b] += w0 * xv[b].x + w1 * xv[b].y + w2 * xv[b].z + w3 * xv[b].w;                 \
    }                                                                                             \
  }

void main() {
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

  vec4 acc[MB][XB];
  [[unroll]] for (uint mb = 0u; mb < MB; ++mb)
    [[unroll]] for (uint b = 0u; b < XB; ++b) acc[mb][b] = vec4(0.0);
  uint gmb[MB];  // the output blocks (a block past the group's last reads the last, stores nothing)
  [[unroll]] for (uint mb = 0u; mb < MB; ++mb) gmb[mb] = g * p.mg4 + min(q0 + mb, p.mg4 - 1u);
  const int iz0 = int(oz * p.sd) - p.pd, iy0 = int(oy * p.sh) - p.ph;
  const uint cb0 = g * p.cg4;  // the group's first input block
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = iz0 + int(kz * p.dd);
    if (iz < 0 || iz >= int(p.d)) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = iy0 + int(ky * p.dh);
      if (iy < 0 || iy >= int(p.h)) continue;
      const uint row = (uint(iz) * p.h + uint(iy)) * p.w;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        uint pix[XB];
        bool ok[XB];
        [[unroll]] for (uint b = 0u; b < XB; ++b) {
          const int ix = int((ox0 + b) * p.sw + kx * p.dw) - p.pw;
          ok[b] = ix >= 0 && ix < int(p.w) && ox0 + b < p.ow;
          pix[b] = row + uint(clamp(ix, 0, int(p.w) - 1));  // always inside X: loads need no mask
        }
        const uint t = (kz * p.kh + ky) * p.kw + kx;
#ifdef KILN_FP16_MATH
        // Half products summed 16 input blocks (64 channels) at a time, each
        // partial sum added to the f32 accumulators: a 3x3 conv of 512
        // channels sums 4608 products, too many for half's 11 bits.
        for (uint c0 = 0u; c0 < p.cg4; c0 += KILN_F16_CHUNK) {
          MATH4_T part[MB][XB];
          [[unroll]] for (uint mb = 0u; mb < MB; ++mb)
            [[unroll]] for (uint b = 0u; b < XB; ++b) part[mb][b] = MATH4_T(0.0);
          for (uint cb = c0; cb < min(c0 + KILN_F16_CHUNK, p.cg4); ++cb) CONV_C4_BLOCK(part, cb)
          [[unroll]] for (uint mb = 0u; mb < MB; ++mb)
            [[unroll]] for (uint b = 0u; b < XB; ++b) acc[mb][b] += vec4(part[mb][b]);
        }
#else
        for (uint cb = 0u; cb < p.cg4; ++cb) CONV_C4_BLOCK(acc, cb)
#endif
      }
    }
  }

  const uint ovol = p.od * p.oh * p.ow, orow = (oz * p.oh + oy) * p.ow;
  [[unroll]] for (uint mb = 0u; mb < MB; ++mb) {
    if (q0 + mb >= p.mg4) break;
    const vec4 bv = HAS_BIAS ? LOAD_W4(p.bias_at + gmb[mb]) : vec4(0.0);
    [[unroll]] for (uint b = 0u; b < XB; ++b) {
      if (ox0 + b >= p.ow) break;
      StoreY4R(p.m, n, gmb[mb], ovol, orow + ox0 + b, acc[mb][b] + bv, p.lo, p.hi, p.slope);
    }
  }
}
