#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"
#define KILN_RESIDUAL
#include "conv_c4_common.glsl"
#include "wino_common.glsl"

// The output transform: one invocation a (image, output block, tile) reads
// the tile's 16 products (binding 0, as wino_gemm wrote them), makes the
// 2x2 outputs A^T m A, adds the bias (binding 1 at bias_at + block) and
// stores them, plus a fused residual (binding 3, where HAS_RESIDUAL),
// through the fused activation into Y (binding 2, packed or NCHW), the tile's pixels past the output's edge left out. Invocations:
// tile fastest, then block, image.
// The products are read as conv_c4_common.glsl reads a packed X (so, in
// wino_out_tx, as texels; the bias too).
#define LOAD_M(i) LOAD_X4_AT(i)

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint t = i % p.tiles;
  i /= p.tiles;
  const uint mb = i % p.m4, n = i / p.m4;
  const uint base = (n * 16u * p.m4 + mb) * p.tiles + t, step = p.m4 * p.tiles;
  vec4 s[2][4];  // A^T m: the rows
  [[unroll]] for (uint c = 0u; c < 4u; ++c) {
    const vec4 m0 = LOAD_M(base + c * step), m1 = LOAD_M(base + (4u + c) * step);
    const vec4 m2 = LOAD_M(base + (8u + c) * step), m3 = LOAD_M(base + (12u + c) * step);
    s[0][c] = m0 + m1 + m2;
    s[1][c] = m1 - m2 - m3;
  }
  const vec4 bv = HAS_BIAS ? LOAD_W4(p.bias_at + mb) : vec4(0.0);
  const uint oy0 = (t / p.tw) * 2u, ox0 = (t % p.tw) * 2u, ovol = p.oh * p.ow;
  [[unroll]] for (uint dy = 0u; dy < 2u; ++dy) {
    if (oy0 + dy >= p.oh) break;
    const uint row = (oy0 + dy) * p.ow;
    StoreY4R(p.m, n, mb, ovol, row + ox0, s[dy][0] + s[dy][1] + s[dy][2] + bv, p.lo, p.hi, p.slope);
    if (ox0 + 1u < p.ow)
      StoreY4R(p.m, n, mb, ovol, row + ox0 + 1u, s[dy][1] - s[dy][2] - s[dy][3] + bv, p.lo, p.hi, p.slope);
  }
}
