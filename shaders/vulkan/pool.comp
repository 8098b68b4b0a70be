#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// MaxPool / AveragePool over 1 to 3 spatial axes (fewer axes arrive padded
// with size-1 axes in front), one output element per invocation. Along each
// axis the taps that land inside the input form one range of kernel
// positions (positions grow with k), so the loops visit only those; the taps
// inside the padded input (count_include_pad) are counted the same way.
// MaxPool: the first maximum in kernel order wins and an empty window gives
// -inf; with INDICES its flat index in X (plane * in_plane + offset) is also
// written as an int64 (two 32-bit words, low first), else Y stands in for
// the unused binding. AveragePool: the sum over the count, 0 when empty.
// PACKED: X and Y are channel-packed ([planes/4][spatial][4], common.glsl),
// `total` counts Y's stored elements, lane fastest, so neighbouring
// invocations read neighbouring words; zero lanes pool to zero.
layout(constant_id = 3) const bool IS_MAX = true;
layout(constant_id = 4) const bool INCLUDE_PAD = false;
layout(constant_id = 5) const bool INDICES = false;
layout(constant_id = 6) const bool PACKED = false;
// PACKED without INDICES on CPU drivers: an invocation pools the four lanes
// of one packed pixel as a vec4 (one access a tap instead of four).
layout(constant_id = 7) const bool VEC4 = false;
const uint LANES = PACKED ? 4u : 1u;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };
layout(std430, binding = 2) writeonly buffer I { uint indices[]; };
layout(std430, binding = 0) readonly buffer X4 { STORE4_T x4[]; };
layout(std430, binding = 1) writeonly buffer Y4 { STORE4_T y4[]; };
layout(push_constant) uniform P {
  uint total;  // output elements
  uint in_size[3], out_size[3], kernel[3], stride[3], dilation[3];
  int pad_begin[3], pad_end[3];
} p;

// The window of output pixel `pixel` (over all planes): per axis its first
// input position and the kernel taps inside the input (taps) or inside the
// padded input (their product in `padded`); returns the pixel's plane.
uint Window(uint pixel, out int start[3], out uvec2 taps[3], out uint padded) {
  uint rest = pixel;
  padded = 1u;
  for (int j = 2; j >= 0; --j) {
    const uint q = rest / p.out_size[j];
    start[j] = int((rest - q * p.out_size[j]) * p.stride[j]) - p.pad_begin[j];
    rest = q;
    taps[j] = TapRange(start[j], p.kernel[j], p.dilation[j], 0, int(p.in_size[j]));
    const uvec2 pt = TapRange(start[j], p.kernel[j], p.dilation[j], -p.pad_begin[j], int(p.in_size[j]) + p.pad_end[j]);
    padded *= pt.y - pt.x;
  }
  return rest;
}

// VEC4: pixel o4 of the packed output, all four lanes (lane by lane the
// same order and comparisons as below).
void PoolPixel(uint o4) {
  int start[3];
  uvec2 taps[3];
  uint padded;
  const uint xbase = Window(o4, start, taps, padded) * p.in_size[0] * p.in_size[1] * p.in_size[2];
  vec4 best = vec4(-uintBitsToFloat(0x7f800000u)), sum = vec4(0.0);
  bool first = true;
  for (uint kd = taps[0].x; kd < taps[0].y; ++kd) {
    const uint zd = uint(start[0] + int(kd * p.dilation[0])) * p.in_size[1];
    for (uint kh = taps[1].x; kh < taps[1].y; ++kh) {
      const uint zh = (zd + uint(start[1] + int(kh * p.dilation[1]))) * p.in_size[2];
      for (uint kw = taps[2].x; kw < taps[2].y; ++kw) {
        const vec4 v = vec4(x4[xbase + zh + uint(start[2] + int(kw * p.dilation[2]))]);
        if (IS_MAX) {
          best = first ? v : mix(best, v, greaterThan(v, best));
          first = false;
        } else {
          sum += v;
        }
      }
    }
  }
  if (IS_MAX) {
    y4[o4] = STORE4_T(best);
  } else {
    const uint valid = (taps[0].y - taps[0].x) * (taps[1].y - taps[1].x) * (taps[2].y - taps[2].x);
    const uint count = INCLUDE_PAD ? padded : valid;
    y4[o4] = STORE4_T(count > 0u ? sum / float(count) : vec4(0.0));
  }
}

void main() {
  if (VEC4) {
    const uint o4 = KILN_GLOBAL_INDEX;
    if (o4 * 4u < p.total) PoolPixel(o4);
    return;
  }
  const uint o = KILN_GLOBAL_INDEX;
  if (o >= p.total) return;
  int start[3];
  uvec2 taps[3];
  uint padded;
  const uint plane = Window(o / LANES, start, taps, padded), in_plane = p.in_size[0] * p.in_size[1] * p.in_size[2];
  const uint xbase = plane * in_plane * LANES + o % LANES;
  float best = -uintBitsToFloat(0x7f800000u), sum = 0.0;  // -inf
  uint best_at = 0u;
  bool first = true;
  for (uint kd = taps[0].x; kd < taps[0].y; ++kd) {
    const uint zd = uint(start[0] + int(kd * p.dilation[0])) * p.in_size[1];
    for (uint kh = taps[1].x; kh < taps[1].y; ++kh) {
      const uint zh = (zd + uint(start[1] + int(kh * p.dilation[1]))) * p.in_size[2];
      for (uint kw = taps[2].x; kw < taps[2].y; ++kw) {
        const uint at = zh + uint(start[2] + int(kw * p.dilation[2]));
        const float v = float(x[xbase + at * LANES]);
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
    y[o] = STORE_T(best);
    if (INDICES) {
      indices[2u * o] = xbase + best_at;
      indices[2u * o + 1u] = 0u;
    }
  } else {
    const uint valid = (taps[0].y - taps[0].x) * (taps[1].y - taps[1].x) * (taps[2].y - taps[2].x);
    const uint count = INCLUDE_PAD ? padded : valid;
    y[o] = STORE_T(count > 0u ? sum / float(count) : 0.0);
  }
}
