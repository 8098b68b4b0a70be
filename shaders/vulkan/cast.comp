#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// Cast (cast.glsl) between dtypes of whole 32-bit words: f32, i32, i64 (two
// words, low first).
#include "cast.glsl"

layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P { uint n; } p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uvec2 v = SRC == KIND_I64 ? uvec2(x[2 * i], x[2 * i + 1]) : uvec2(x[i], 0u);
  uvec2 r = Cast(v);
  if (DST == KIND_I64) {
    y[2 * i] = r.x;
    y[2 * i + 1] = r.y;
  } else {
    y[i] = r.x;
  }
}
