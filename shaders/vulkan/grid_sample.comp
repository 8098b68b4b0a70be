#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// GridSample of a 4-D X [N, C, H, W] at grid [N, H_out, W_out, 2] ((x, y)
// pairs in [-1, 1]): one invocation an output element (n, c, i), i the
// pixel of the H_out x W_out plane. The host kernel's arithmetic
// (RunGridSample, host_fallback/ops/signal.cpp), step for step:
//   * the grid value to pixels: align_corners maps -1 and 1 to the centres
//     of the edge pixels, else to their outer edges;
//   * border padding clamps the coordinate into [0, size - 1]; reflection
//     reflects it about the edges (the centres with align_corners, the
//     outer edges without) and then clamps; zeros leaves it;
//   * the coordinate is then clamped a few pixels out (NaN to the low end):
//     such taps read only padding, and no huge value becomes an index;
//   * MODE 0 nearest (round half to even), 1 bilinear, 2 bicubic (Keys,
//     a = -0.75, over the 4 x 4 pixels around), each tap read through At:
//     0 outside the image with zeros padding, else its index padded again.
// Every read is in bounds whatever the grid holds.
layout(constant_id = 3) const uint MODE = 1;     // fb::ResizeMode
layout(constant_id = 4) const uint PADDING = 0;  // fb::GridPadding: 0 zeros, 1 border, 2 reflection
layout(constant_id = 5) const bool ALIGN = false;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer G { STORE_T grid[]; };
layout(std430, binding = 2) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P { uint total, c, h, w, plane; } p;  // plane: H_out * W_out

// std::min(std::max(v, lo), hi), NaN passing through as on the host.
float ClampLikeHost(float v, float lo, float hi) {
  const float m = v < lo ? lo : v;
  return hi < m ? hi : m;
}

// v reflected into [lo, hi] (the host's Reflect). The flip count is a float
// (the host's int for any coordinate that fits one).
float Reflect(float v, float lo, float hi) {
  const float span = hi - lo;
  if (span <= 0.0) return lo;
  if (!(v < lo) && !(v > hi)) return v;
  const float d = v < lo ? lo - v : v - hi;
  const float flips = floor(d / span);
  const float r = d - flips * span;
  const bool even = flips - 2.0 * floor(flips * 0.5) == 0.0;
  if (v < lo) return even ? lo + r : hi - r;
  return even ? hi - r : lo + r;
}

// The coordinate after border or reflection padding along an axis of `n`.
float Pad(float v, int n) {
  if (PADDING == 1u) return ClampLikeHost(v, 0.0, float(n - 1));
  if (PADDING == 2u) {
    v = ALIGN ? Reflect(v, 0.0, float(n - 1)) : Reflect(v, -0.5, float(n) - 0.5);
    return ClampLikeHost(v, 0.0, float(n - 1));
  }
  return v;
}

// Grid value g in pixels along an axis of `n`, padded and clamped.
float Coord(float g, int n) {
  float v = ALIGN ? (g + 1.0) / 2.0 * float(n - 1) : ((g + 1.0) * float(n) - 1.0) / 2.0;
  v = Pad(v, n);
  const float lim = float(n) + 4.0;
  return isnan(v) ? -lim : clamp(v, -lim, lim);
}

// Pixel (r, q) of the plane at `base`: 0 outside with zeros padding, else
// at its padded index (border and reflection padding land inside).
float At(uint base, int r, int q) {
  const int h = int(p.h), w = int(p.w);
  if (r < 0 || r >= h || q < 0 || q >= w) {
    if (PADDING == 0u) return 0.0;
    r = clamp(int(Pad(float(r), h)), 0, h - 1);
    q = clamp(int(Pad(float(q), w)), 0, w - 1);
  }
  return float(x[base + uint(r * w + q)]);
}

// Keys' cubic weight at distance s, a = -0.75 (CubicWeight, ops/op_params.h).
float CubicWeight(float s) {
  const float a = -0.75;
  s = abs(s);
  if (s <= 1.0) return ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0;
  if (s < 2.0) return ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a;
  return 0.0;
}

void main() {
  const uint e = KILN_GLOBAL_INDEX;
  if (e >= p.total) return;
  const uint nc = e / p.plane, i = e - nc * p.plane, n = nc / p.c;
  const uint base = nc * p.h * p.w, at = (n * p.plane + i) * 2u;
  const float fx = Coord(float(grid[at]), int(p.w)), fy = Coord(float(grid[at + 1u]), int(p.h));
  float v;
  if (MODE == 0u) {
    v = At(base, int(roundEven(fy)), int(roundEven(fx)));
  } else if (MODE == 1u) {
    const float x0 = floor(fx), y0 = floor(fy), lx = fx - x0, ly = fy - y0;
    const int ix = int(x0), iy = int(y0);
    v = (1.0 - ly) * ((1.0 - lx) * At(base, iy, ix) + lx * At(base, iy, ix + 1)) +
        ly * ((1.0 - lx) * At(base, iy + 1, ix) + lx * At(base, iy + 1, ix + 1));
  } else {
    const float x0 = floor(fx), y0 = floor(fy);
    v = 0.0;
    for (int r = -1; r <= 2; ++r) {
      float row = 0.0;
      for (int q = -1; q <= 2; ++q) row += CubicWeight(fx - (x0 + float(q))) * At(base, int(y0) + r, int(x0) + q);
      v += CubicWeight(fy - (y0 + float(r))) * row;
    }
  }
  y[e] = STORE_T(v);
}
