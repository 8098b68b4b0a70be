#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "quant.glsl"

// DynamicQuantizeLinear's first pass, one work group of 64: the range of x
// (always including 0; NaNs skipped, as the host's strict comparisons),
// then the u8 scale and zero point computed as the host does, in f32:
// scale = (max == min ? 1 : max - min) / 255, zp = round_half_even(clamp(0
// - min / scale, 0, 255)). quantize.comp then reads them. The _f64 variant
// (KILN_F64) divides in double.
#define DQ_LOCAL 64u

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer S { float scale[]; };
layout(std430, binding = 2) writeonly buffer Z { uint8_t zero_point[]; };
layout(push_constant) uniform P { uint n, axis_n, inner; } p;

shared float smin[DQ_LOCAL];
shared float smax[DQ_LOCAL];

void main() {
  const uint t = gl_LocalInvocationID.x;
  float mn = 0.0, mx = 0.0;
  for (uint i = t; i < p.n; i += DQ_LOCAL) {
    const float v = x[i];
    if (v < mn) mn = v;
    if (v > mx) mx = v;
  }
  smin[t] = mn;
  smax[t] = mx;
  barrier();
  for (uint h = DQ_LOCAL / 2u; h > 0u; h >>= 1) {
    if (t < h) {
      if (smin[t + h] < smin[t]) smin[t] = smin[t + h];
      if (smax[t + h] > smax[t]) smax[t] = smax[t + h];
    }
    barrier();
  }
  if (t == 0u) {
    mn = smin[0];
    mx = smax[0];
    const float s = QDIV(mx == mn ? 1.0 : mx - mn, 255.0);
    const float zpf = min(255.0, max(0.0, 0.0 - QDIV(mn, s)));
    scale[0] = s;
    zero_point[0] = uint8_t(uint(roundEven(zpf)) & 0xffu);
  }
}
