// RoiAlign of X [N, C, H, W] over rois [R, 4] of images batch_indices [R]
// (shaders/vulkan/roi_align.comp, the host's RunRoiAlign): one work item an
// output element (r, c, ph, pw). MAX_MODE: the largest weighted corner,
// else the average; HALF_PIXEL: the half-pixel shift (else ROIs at least 1
// pixel wide); IDX64: batch_indices i64 (two words, low first), else i32.
// Where the host reports an error (a batch index outside [0, N), a box that
// is not finite, a negative sampling grid or one over the host's work bound)
// the output is 0 instead. Every read is in bounds.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 1
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 1
#endif
#define MAX_MODE (KILN_SPEC_3 != 0)
#define HALF_PIXEL (KILN_SPEC_4 != 0)
#define IDX64 (KILN_SPEC_5 != 0)

typedef struct {
  uint total, batch, c, h, w, oh, ow, ratio;
  float scale, max_grid;
} RoiAlignPush;

// ceil(len / n) as the host's double arithmetic gives it: the float
// quotient's ceiling, corrected where the division rounded across an
// integer.
float GridSize(float len, uint n) {
  float q = ceil(len / (float)n);
  if (q * (float)n < len) q += 1.0f;
  else if ((q - 1.0f) * (float)n >= len) q -= 1.0f;
  return q;
}

// The batch index of ROI r, or `batch` (out of range) when it is not in
// [0, batch).
uint BatchOf(__global const uint* ind, uint r, uint batch) {
  if (IDX64) return ind[2u * r + 1u] == 0u && ind[2u * r] < batch ? ind[2u * r] : batch;
  return ind[r] < batch ? ind[r] : batch;  // a negative i32 is a large uint
}

__kernel void roi_align(__global const STORE_T* x, __global const STORE_T* rois, __global const uint* ind,
                        __global STORE_T* y, RoiAlignPush p) {
  const uint e = KILN_GLOBAL_INDEX;
  if (e >= p.total) return;
  const uint pw = e % p.ow, ph = (e / p.ow) % p.oh, rc = e / (p.ow * p.oh), ch = rc % p.c, r = rc / p.c;
  const uint b = BatchOf(ind, r, p.batch);
  const float offset = HALF_PIXEL ? 0.5f : 0.0f;
  const float x1 = LOAD(rois, 4u * r) * p.scale - offset, y1 = LOAD(rois, 4u * r + 1u) * p.scale - offset;
  float rw = LOAD(rois, 4u * r + 2u) * p.scale - offset - x1, rh = LOAD(rois, 4u * r + 3u) * p.scale - offset - y1;
  if (!HALF_PIXEL) {
    rw = rw < 1.0f ? 1.0f : rw;
    rh = rh < 1.0f ? 1.0f : rh;
  }
  const float bw = rw / (float)p.ow, bh = rh / (float)p.oh;
  const float dgh = p.ratio > 0u ? (float)p.ratio : GridSize(rh, p.oh);
  const float dgw = p.ratio > 0u ? (float)p.ratio : GridSize(rw, p.ow);
  const bool valid = b < p.batch && isfinite(x1) && isfinite(y1) && dgh >= 0.0f && dgw >= 0.0f &&
                     dgh * dgw <= p.max_grid;
  // An empty grid averages or maxes nothing: 0, as on the host.
  if (!valid || dgh * dgw == 0.0f) {
    STORE(y, e, 0.0f);
    return;
  }
  const uint gh = (uint)dgh, gw = (uint)dgw;
  const uint base = (b * p.c + ch) * p.h * p.w;
  const int h = (int)p.h, w = (int)p.w;
  float acc = 0.0f;
  bool first = true;
  for (uint iy = 0u; iy < gh; ++iy)
    for (uint ix = 0u; ix < gw; ++ix) {
      float yy = y1 + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
      float xx = x1 + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
      float v = 0.0f;
      // (NaN fails these, where the host's negated test would pass it.)
      if (yy >= -1.0f && yy <= (float)h && xx >= -1.0f && xx <= (float)w) {
        yy = fmax(yy, 0.0f);
        xx = fmax(xx, 0.0f);
        int y0 = (int)yy, x0 = (int)xx, y1i, x1i;
        if (y0 >= h - 1) {
          y0 = y1i = h - 1;
          yy = (float)y0;
        } else {
          y1i = y0 + 1;
        }
        if (x0 >= w - 1) {
          x0 = x1i = w - 1;
          xx = (float)x0;
        } else {
          x1i = x0 + 1;
        }
        const float ly = yy - (float)y0, lx = xx - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
        const float t0 = hy * hx * LOAD(x, base + (uint)(y0 * w + x0));
        const float t1 = hy * lx * LOAD(x, base + (uint)(y0 * w + x1i));
        const float t2 = ly * hx * LOAD(x, base + (uint)(y1i * w + x0));
        const float t3 = ly * lx * LOAD(x, base + (uint)(y1i * w + x1i));
        // max mode takes the largest weighted corner (as onnxruntime does).
        v = MAX_MODE ? fmax(fmax(t0, t1), fmax(t2, t3)) : t0 + t1 + t2 + t3;
      }
      if (MAX_MODE) acc = first ? v : fmax(acc, v);
      else acc += v;
      first = false;
    }
  STORE(y, e, MAX_MODE ? acc : acc / (float)(gh * gw));
}
