// MaxPool / AveragePool over 1 to 3 spatial axes (shaders/vulkan/pool.comp;
// fewer axes arrive padded with size-1 axes in front), one output element
// per item. Along each axis the taps that land inside the input form one
// range of kernel positions (positions grow with k), so the loops visit only
// those; the taps inside the padded input (count_include_pad) are counted
// the same way. MaxPool: the first maximum in kernel order wins and an empty
// window gives -inf; with INDICES its flat index in X (plane * in_plane +
// offset) is also written as an int64 (two 32-bit words, low first), else Y
// stands in for the unused binding. AveragePool: the sum over the count, 0
// when empty. PACKED: X and Y channel-packed, `total` counting Y's stored
// elements, lane fastest.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 1
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#define IS_MAX (KILN_SPEC_3 != 0)
#define INCLUDE_PAD (KILN_SPEC_4 != 0)
#define INDICES (KILN_SPEC_5 != 0)
#ifndef KILN_SPEC_6
#define KILN_SPEC_6 0
#endif
#define LANES (KILN_SPEC_6 != 0 ? 4u : 1u)
#ifndef KILN_SPEC_7
#define KILN_SPEC_7 0
#endif
#define VEC4 (KILN_SPEC_7 != 0)  // packed, no indices: a pixel's four lanes a work item (pool.comp)
#ifndef KILN_SPEC_8
#define KILN_SPEC_8 1
#endif
// With VEC4, 2-D and dilation 1: XB output pixels of a row a work item, the
// row's index arithmetic done once for them and each tap's range found
// without a division (PoCL divides lane by lane).
#define XB KILN_SPEC_8


// The window of output pixel `pixel` (over all planes): per axis its first
// input position and the kernel taps inside the input (taps) or inside the
// padded input (their product in *padded); returns the pixel's plane.
uint Window(const PoolPush* p, uint pixel, int* start, uint2* taps, uint* padded) {
  uint rest = pixel;
  *padded = 1u;
  for (int j = 2; j >= 0; --j) {
    const uint q = rest / p->out_size[j];
    start[j] = (int)((rest - q * p->out_size[j]) * p->stride[j]) - p->pad_begin[j];
    rest = q;
    taps[j] = TapRange(start[j], p->ksize[j], p->dilation[j], 0, (int)p->in_size[j]);
    const uint2 pt =
        TapRange(start[j], p->ksize[j], p->dilation[j], -p->pad_begin[j], (int)p->in_size[j] + p->pad_end[j]);
    *padded *= pt.y - pt.x;
  }
  return rest;
}

__kernel void pool(__global const STORE_T* x, __global STORE_T* y, __global uint* indices, PoolPush p) {
  if (XB > 1) {  // with VEC4 (pool.cl's XB)
    const uint ow = p.out_size[2], oh = p.out_size[1], owb = (ow + XB - 1u) / XB;
    const uint planes = p.total / 4u / (oh * ow);
    uint i = KILN_GLOBAL_INDEX;
    if (i >= planes * oh * owb) return;
    const uint xb = i % owb;
    i /= owb;
    const uint oy = i % oh, plane = i / oh;
    const int h = (int)p.in_size[1], w = (int)p.in_size[2];
    const int y0 = (int)(oy * p.stride[1]) - p.pad_begin[1];
    const uint kh0 = (uint)max(0, -y0), kh1 = (uint)max((int)kh0, min((int)p.ksize[1], h - y0));
    // The rows inside the padded input (count_include_pad).
    const uint hpad = (uint)max(0, min(y0 + (int)p.ksize[1], h + p.pad_end[1]) - max(y0, -p.pad_begin[1]));
    const uint xbase = plane * (uint)(h * w), ybase = (plane * oh + oy) * ow;
    for (uint b = 0u; b < XB; ++b) {
      const uint ox = xb * XB + b;
      if (ox >= ow) break;
      const int x0 = (int)(ox * p.stride[2]) - p.pad_begin[2];
      const uint kw0 = (uint)max(0, -x0), kw1 = (uint)max((int)kw0, min((int)p.ksize[2], w - x0));
      float4 best = (float4)(-INFINITY), sum = (float4)(0.0f);
      for (uint kh = kh0; kh < kh1; ++kh) {
        const uint row = xbase + (uint)(y0 + (int)kh) * (uint)w;
        for (uint kw = kw0; kw < kw1; ++kw) {
          const float4 v = LOAD4(x, row + (uint)(x0 + (int)kw));
          if (IS_MAX) best = kw == kw0 && kh == kh0 ? v : select(best, v, isgreater(v, best));
          else sum += v;
        }
      }
      if (IS_MAX) {
        STORE4(y, ybase + ox, best);
      } else {
        const uint wpad = (uint)max(0, min(x0 + (int)p.ksize[2], w + p.pad_end[2]) - max(x0, -p.pad_begin[2]));
        const uint count = INCLUDE_PAD ? hpad * wpad : (kh1 - kh0) * (kw1 - kw0);
        STORE4(y, ybase + ox, count > 0u ? sum / (float)count : (float4)(0.0f));
      }
    }
    return;
  }
  if (VEC4) {
    const uint o4 = KILN_GLOBAL_INDEX;
    if (o4 * 4u >= p.total) return;
    int start[3];
    uint2 taps[3];
    uint padded;
    const uint xbase = Window(&p, o4, start, taps, &padded) * p.in_size[0] * p.in_size[1] * p.in_size[2];
    float4 best = (float4)(-INFINITY), sum = (float4)(0.0f);
    bool first = true;
    for (uint kd = taps[0].x; kd < taps[0].y; ++kd) {
      const uint zd = (uint)(start[0] + (int)(kd * p.dilation[0])) * p.in_size[1];
      for (uint kh = taps[1].x; kh < taps[1].y; ++kh) {
        const uint zh = (zd + (uint)(start[1] + (int)(kh * p.dilation[1]))) * p.in_size[2];
        for (uint kw = taps[2].x; kw < taps[2].y; ++kw) {
          const float4 v = LOAD4(x, xbase + zh + (uint)(start[2] + (int)(kw * p.dilation[2])));
          if (IS_MAX) {
            best = first ? v : select(best, v, isgreater(v, best));
            first = false;
          } else {
            sum += v;
          }
        }
      }
    }
    if (IS_MAX) {
      STORE4(y, o4, best);
    } else {
      const uint valid = (taps[0].y - taps[0].x) * (taps[1].y - taps[1].x) * (taps[2].y - taps[2].x);
      const uint count = INCLUDE_PAD ? padded : valid;
      STORE4(y, o4, count > 0u ? sum / (float)count : (float4)(0.0f));
    }
    return;
  }
  const uint o = KILN_GLOBAL_INDEX;
  if (o >= p.total) return;
  int start[3];
  uint2 taps[3];
  uint padded;
  const uint plane = Window(&p, o / LANES, start, taps, &padded), in_plane = p.in_size[0] * p.in_size[1] * p.in_size[2];
  const uint xbase = plane * in_plane * LANES + o % LANES;
  float best = -INFINITY, sum = 0.0f;
  uint best_at = 0u;
  bool first = true;
  for (uint kd = taps[0].x; kd < taps[0].y; ++kd) {
    const uint zd = (uint)(start[0] + (int)(kd * p.dilation[0])) * p.in_size[1];
    for (uint kh = taps[1].x; kh < taps[1].y; ++kh) {
      const uint zh = (zd + (uint)(start[1] + (int)(kh * p.dilation[1]))) * p.in_size[2];
      for (uint kw = taps[2].x; kw < taps[2].y; ++kw) {
        const uint at = zh + (uint)(start[2] + (int)(kw * p.dilation[2]));
        const float v = LOAD(x, xbase + at * LANES);
        if (IS_MAX) {
          if (first || v > best) {
            best = v;
            best_at = at;
          }
          first = false;
        } else {
          sum += v;
        }
      }
    }
  }
  if (IS_MAX) {
    STORE(y, o, best);
    if (INDICES) {
      indices[2u * o] = xbase + best_at;
      indices[2u * o + 1u] = 0u;
    }
  } else {
    const uint valid = (taps[0].y - taps[0].x) * (taps[1].y - taps[1].x) * (taps[2].y - taps[2].x);
    const uint count = INCLUDE_PAD ? padded : valid;
    STORE(y, o, count > 0u ? sum / (float)count : 0.0f);
  }
}
