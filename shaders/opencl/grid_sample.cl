// GridSample of a 4-D X [N, C, H, W] at grid [N, H_out, W_out, 2]
// (shaders/vulkan/grid_sample.comp, the host's RunGridSample): one work item
// an output element. MODE (fb::ResizeMode) 0 nearest, 1 bilinear, 2
// bicubic; PADDING (fb::GridPadding) 0 zeros, 1 border, 2 reflection;
// ALIGN align_corners. Every read is in bounds whatever the grid holds.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 1
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#define MODE KILN_SPEC_3
#define PADDING KILN_SPEC_4
#define ALIGN (KILN_SPEC_5 != 0)

typedef struct {
  uint total, c, h, w, plane;  // plane: H_out * W_out
} GridSamplePush;

// std::min(std::max(v, lo), hi), NaN passing through as on the host.
float ClampLikeHost(float v, float lo, float hi) {
  const float m = v < lo ? lo : v;
  return hi < m ? hi : m;
}

// v reflected into [lo, hi] (the host's Reflect), the flip count a float.
float Reflect(float v, float lo, float hi) {
  const float span = hi - lo;
  if (span <= 0.0f) return lo;
  if (!(v < lo) && !(v > hi)) return v;
  const float d = v < lo ? lo - v : v - hi;
  const float flips = floor(d / span);
  const float r = d - flips * span;
  const bool even = flips - 2.0f * floor(flips * 0.5f) == 0.0f;
  if (v < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

// The coordinate after border or reflection padding along an axis of `n`.
float Pad(float v, int n) {
  switch (PADDING) {
    case 1: return ClampLikeHost(v, 0.0f, (float)(n - 1));
    case 2:
      v = ALIGN ? Reflect(v, 0.0f, (float)(n - 1)) : Reflect(v, -0.5f, (float)n - 0.5f);
      return ClampLikeHost(v, 0.0f, (float)(n - 1));
    default: return v;
  }
}

// Grid value g in pixels along an axis of `n`, padded and clamped a few
// pixels out (NaN to the low end).
float Coord(float g, int n) {
  float v = ALIGN ? (g + 1.0f) / 2.0f * (float)(n - 1) : ((g + 1.0f) * (float)n - 1.0f) / 2.0f;
  v = Pad(v, n);
  const float lim = (float)n + 4.0f;
  return isnan(v) ? -lim : clamp(v, -lim, lim);
}

// Pixel (r, q) of the plane at `base`: 0 outside with zeros padding, else
// at its padded index.
float At(__global const STORE_T* x, uint base, int h, int w, int r, int q) {
  if (r < 0 || r >= h || q < 0 || q >= w) {
    if (PADDING == 0) return 0.0f;
    r = clamp((int)Pad((float)r, h), 0, h - 1);
    q = clamp((int)Pad((float)q, w), 0, w - 1);
  }
  return LOAD(x, base + (uint)(r * w + q));
}

// Keys' cubic weight at distance s, a = -0.75 (CubicWeight, ops/op_params.h).
float CubicWeight(float s) {
  const float a = -0.75f;
  s = fabs(s);
  if (s <= 1.0f) return ((a + 2.0f) * s - (a + 3.0f)) * s * s + 1.0f;
  if (s < 2.0f) return ((a * s - 5.0f * a) * s + 8.0f * a) * s - 4.0f * a;
  return 0.0f;
}

__kernel void grid_sample(__global const STORE_T* x, __global const STORE_T* grid, __global STORE_T* y,
                          GridSamplePush p) {
  const uint e = KILN_GLOBAL_INDEX;
  if (e >= p.total) return;
  const uint nc = e / p.plane, i = e - nc * p.plane, n = nc / p.c;
  const uint base = nc * p.h * p.w, at = (n * p.plane + i) * 2u;
  const int h = (int)p.h, w = (int)p.w;
  const float fx = Coord(LOAD(grid, at), w), fy = Coord(LOAD(grid, at + 1u), h);
  float v;
  switch (MODE) {
    case 0: v = At(x, base, h, w, (int)rint(fy), (int)rint(fx)); break;
    case 1: {
      const float x0 = floor(fx), y0 = floor(fy), lx = fx - x0, ly = fy - y0;
      const int ix = (int)x0, iy = (int)y0;
      v = (1.0f - ly) * ((1.0f - lx) * At(x, base, h, w, iy, ix) + lx * At(x, base, h, w, iy, ix + 1)) +
          ly * ((1.0f - lx) * At(x, base, h, w, iy + 1, ix) + lx * At(x, base, h, w, iy + 1, ix + 1));
      break;
    }
    default: {
      const float x0 = floor(fx), y0 = floor(fy);
      v = 0.0f;
      for (int r = -1; r <= 2; ++r) {
        float row = 0.0f;
        for (int q = -1; q <= 2; ++q)
          row += CubicWeight(fx - (x0 + (float)q)) * At(x, base, h, w, (int)y0 + r, (int)x0 + q);
        v += CubicWeight(fy - (y0 + (float)r)) * row;
      }
      break;
    }
  }
  STORE(y, e, v);
}
