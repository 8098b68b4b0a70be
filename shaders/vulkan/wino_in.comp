#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"
#include "conv_c4_common.glsl"
#include "wino_common.glsl"

// The input transform: one invocation a (image, input block, tile) reads
// the tile's 4x4 patch of X (zero outside it; X packed or NCHW) and writes
// V = B^T d B as 16 vec4 into binding 2, position pos of block cb at
// ((n * 16 + pos) * c4 + cb) * tiles + t. Invocations: tile fastest, then
// block, image.
// (wino_in_tx reads X as texels: conv_c4_common.glsl's LoadX4.)

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint t = i % p.tiles;
  i /= p.tiles;
  const uint cb = i % p.c4, n = i / p.c4;
  const int y0 = int(t / p.tw) * 2 - p.ph, x0 = int(t % p.tw) * 2 - p.pw;
  const uint vol = p.h * p.w;
  vec4 d[4][4];
  [[unroll]] for (int r = 0; r < 4; ++r) {
    const int iy = y0 + r;
    const bool row_ok = iy >= 0 && iy < int(p.h);
    const uint row = uint(clamp(iy, 0, int(p.h) - 1)) * p.w;
    [[unroll]] for (int c = 0; c < 4; ++c) {
      const int ix = x0 + c;
      const vec4 v = LoadX4(p.c, n, cb, vol, row + uint(clamp(ix, 0, int(p.w) - 1)));
      d[r][c] = row_ok && ix >= 0 && ix < int(p.w) ? v : vec4(0.0);
    }
  }
  // B^T d (rows), then (B^T d) B (columns).
  vec4 e[4][4];
  [[unroll]] for (int c = 0; c < 4; ++c) {
    e[0][c] = d[0][c] - d[2][c];
    e[1][c] = d[1][c] + d[2][c];
    e[2][c] = d[2][c] - d[1][c];
    e[3][c] = d[1][c] - d[3][c];
  }
  const uint base = (n * 16u * p.c4 + cb) * p.tiles + t, step = p.c4 * p.tiles;
  [[unroll]] for (int r = 0; r < 4; ++r) {
    y4[base + uint(r * 4 + 0) * step] = STORE4_T(e[r][0] - e[r][2]);
    y4[base + uint(r * 4 + 1) * step] = STORE4_T(e[r][1] + e[r][2]);
    y4[base + uint(r * 4 + 2) * step] = STORE4_T(e[r][2] - e[r][1]);
    y4[base + uint(r * 4 + 3) * step] = STORE4_T(e[r][1] - e[r][3]);
  }
}
