#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// RoiAlign of X [N, C, H, W] over rois [R, 4] (x1, y1, x2, y2) of images
// batch_indices [R]: one invocation an output element (r, c, ph, pw) of
// [R, C, out_h, out_w]. The host kernel's arithmetic (RunRoiAlign,
// host_fallback/ops/signal.cpp): the ROI scaled by spatial_scale and, with
// HALF_PIXEL, shifted by half a pixel (else at least 1 pixel wide); its bin
// sampled on a grid of `ratio` x `ratio` points, or with ratio 0
// ceil(roi size / output size) per axis; each point bilinear (0 more than a
// pixel outside the image, clamped to the edge within it); the bin their
// average, or with MAX_MODE the largest weighted corner of any point.
// Where the host reports an error the output is 0 instead: a batch index
// outside [0, N), a box that is not finite, a negative sampling grid, or a
// grid over the host's work bound for one ROI (max_grid points a bin).
// Every read is in bounds.
layout(constant_id = 3) const bool MAX_MODE = false;
layout(constant_id = 4) const bool HALF_PIXEL = true;
layout(constant_id = 5) const bool IDX64 = true;  // batch_indices i64 (two words), else i32

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer R { STORE_T rois[]; };
layout(std430, binding = 2) readonly buffer I { uint ind[]; };
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint total, batch, c, h, w, oh, ow, ratio;
  float scale, max_grid;
} p;

// ceil(len / n) as the host's double arithmetic gives it: the float
// quotient's ceiling, corrected by one either way where the division
// rounded across an integer (q * n is exact for any grid the bound allows).
float GridSize(float len, uint n) {
  float q = ceil(len / float(n));
  if (q * float(n) < len) q += 1.0;
  else if ((q - 1.0) * float(n) >= len) q -= 1.0;
  return q;
}

void main() {
  const uint e = KILN_GLOBAL_INDEX;
  if (e >= p.total) return;
  const uint pw = e % p.ow, ph = (e / p.ow) % p.oh, rc = e / (p.ow * p.oh), ch = rc % p.c, r = rc / p.c;
  const uint b = IDX64 ? ind[2u * r] : ind[r];  // a negative i32 is a large uint
  const float offset = HALF_PIXEL ? 0.5 : 0.0;
  const float x1 = float(rois[4u * r]) * p.scale - offset, y1 = float(rois[4u * r + 1u]) * p.scale - offset;
  float rw = float(rois[4u * r + 2u]) * p.scale - offset - x1, rh = float(rois[4u * r + 3u]) * p.scale - offset - y1;
  if (!HALF_PIXEL) {
    rw = rw < 1.0 ? 1.0 : rw;
    rh = rh < 1.0 ? 1.0 : rh;
  }
  const float bw = rw / float(p.ow), bh = rh / float(p.oh);
  const float dgh = p.ratio > 0u ? float(p.ratio) : GridSize(rh, p.oh);
  const float dgw = p.ratio > 0u ? float(p.ratio) : GridSize(rw, p.ow);
  const bool valid = b < p.batch && (!IDX64 || ind[2u * r + 1u] == 0u) && !isnan(x1) && !isinf(x1) && !isnan(y1) &&
                     !isinf(y1) && dgh >= 0.0 && dgw >= 0.0 && dgh * dgw <= p.max_grid;
  // An empty grid averages or maxes nothing: 0, as on the host.
  if (!valid || dgh * dgw == 0.0) {
    y[e] = STORE_T(0.0);
    return;
  }
  const uint gh = uint(dgh), gw = uint(dgw);
  const uint base = (b * p.c + ch) * p.h * p.w;
  const int h = int(p.h), w = int(p.w);
  float acc = 0.0;
  bool first = true;
  for (uint iy = 0u; iy < gh; ++iy)
    for (uint ix = 0u; ix < gw; ++ix) {
      float yy = y1 + float(ph) * bh + (float(iy) + 0.5) * bh / float(gh);
      float xx = x1 + float(pw) * bw + (float(ix) + 0.5) * bw / float(gw);
      float v = 0.0;
      // (NaN fails these, where the host's negated test would pass it.)
      if (yy >= -1.0 && yy <= float(h) && xx >= -1.0 && xx <= float(w)) {
        yy = max(yy, 0.0);
        xx = max(xx, 0.0);
        int y0 = int(yy), x0 = int(xx), y1i, x1i;
        if (y0 >= h - 1) {
          y0 = y1i = h - 1;
          yy = float(y0);
        } else {
          y1i = y0 + 1;
        }
        if (x0 >= w - 1) {
          x0 = x1i = w - 1;
          xx = float(x0);
        } else {
          x1i = x0 + 1;
        }
        const float ly = yy - float(y0), lx = xx - float(x0), hy = 1.0 - ly, hx = 1.0 - lx;
        const float t0 = hy * hx * float(x[base + uint(y0 * w + x0)]);
        const float t1 = hy * lx * float(x[base + uint(y0 * w + x1i)]);
        const float t2 = ly * hx * float(x[base + uint(y1i * w + x0)]);
        const float t3 = ly * lx * float(x[base + uint(y1i * w + x1i)]);
        // max mode takes the largest weighted corner (as onnxruntime does).
        v = MAX_MODE ? max(max(t0, t1), max(t2, t3)) : t0 + t1 + t2 + t3;
      }
      if (MAX_MODE) acc = first ? v : max(acc, v);
      else acc += v;
      first = false;
    }
  y[e] = STORE_T(MAX_MODE ? acc : acc / float(gh * gw));
}
