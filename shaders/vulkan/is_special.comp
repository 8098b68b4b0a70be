#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// IsNaN (MODE 0) and IsInf (MODE 1; DETECT bit 0: +inf, bit 1: -inf) of a
// float tensor, as bool bytes.
layout(constant_id = 3) const uint MODE = 0;
layout(constant_id = 4) const uint DETECT = 3;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint8_t y[]; };
layout(push_constant) uniform P { uint n; } p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const float v = float(x[i]);
  bool r;
  if (MODE == 0u) r = isnan(v);
  else r = isinf(v) && ((v > 0.0 && (DETECT & 1u) != 0u) || (v < 0.0 && (DETECT & 2u) != 0u));
  y[i] = uint8_t(r ? 1u : 0u);
}
