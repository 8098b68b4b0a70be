// Winograd F(2x2, 3x3), the input transform (shaders/vulkan/wino_in.comp,
// which documents the buffers): one work item a (image, input block, tile).
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#define X_PACKED (KILN_SPEC_5 != 0)

__kernel void wino_in(__global const STORE_T* x, __global const STORE_T* unused, __global STORE_T* v, WinoPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint t = i % p.tiles;
  i /= p.tiles;
  const uint cb = i % p.c4, n = i / p.c4;
  const int y0 = (int)(t / p.tw) * 2 - p.ph, x0 = (int)(t % p.tw) * 2 - p.pw;
  const uint vol = p.h * p.w;
  float4 d[4][4];
  for (int r = 0; r < 4; ++r) {
    const int iy = y0 + r;
    const bool row_ok = iy >= 0 && iy < (int)p.h;
    const uint row = (uint)clamp(iy, 0, (int)p.h - 1) * p.w;
    for (int c = 0; c < 4; ++c) {
      const int ix = x0 + c;
      const float4 l = LoadX4(x, X_PACKED, p.c, n, cb, vol, row + (uint)clamp(ix, 0, (int)p.w - 1));
      d[r][c] = row_ok && ix >= 0 && ix < (int)p.w ? l : (float4)(0.0f);
    }
  }
  float4 e[4][4];
  for (int c = 0; c < 4; ++c) {
    e[0][c] = d[0][c] - d[2][c];
    e[1][c] = d[1][c] + d[2][c];
    e[2][c] = d[2][c] - d[1][c];
    e[3][c] = d[1][c] - d[3][c];
  }
  const uint base = (n * 16u * p.c4 + cb) * p.tiles + t, step = p.c4 * p.tiles;
  for (int r = 0; r < 4; ++r) {
    STORE4(v, base + (uint)(r * 4 + 0) * step, e[r][0] - e[r][2]);
    STORE4(v, base + (uint)(r * 4 + 1) * step, e[r][1] + e[r][2]);
    STORE4(v, base + (uint)(r * 4 + 2) * step, e[r][2] - e[r][1]);
    STORE4(v, base + (uint)(r * 4 + 3) * step, e[r][1] - e[r][3]);
  }
}
