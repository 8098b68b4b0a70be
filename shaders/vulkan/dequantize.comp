#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "quant.glsl"

// DequantizeLinear: y[i] = float(x[i] - z[c]) * s[c] (f32, as the host),
// c = (i / inner) % axis_n. TYPE: x's type (0 u8, 1 i8); HAS_ZP 0: zero
// point 0 (z bound, not read).
layout(constant_id = 3) const uint TYPE = 0;
layout(constant_id = 4) const uint HAS_ZP = 0;

layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) readonly buffer S { float s[]; };
layout(std430, binding = 2) readonly buffer Z { uint8_t z[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint n, axis_n, inner; } p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint c = (i / p.inner) % p.axis_n;
  const int zp = HAS_ZP != 0u ? LoadQ(uint(z[c]), TYPE) : 0;
  y[i] = float(LoadQ(uint(x[i]), TYPE) - zp) * s[c];
}
