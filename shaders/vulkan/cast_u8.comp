#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// Cast (cast.glsl) where a side is f16, bool, u8 or i8: both sides are addressed
// in bytes (little-endian), so each invocation writes exactly its own
// element's bytes. Needs storageBuffer8BitAccess.
#include "cast.glsl"

layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint8_t y[]; };
layout(push_constant) uniform P { uint n; } p;

uint Bytes(uint kind) { return kind == KIND_BOOL || kind == KIND_U8 || kind == KIND_I8 ? 1u : (kind == KIND_F16 ? 2u : (kind == KIND_I64 ? 8u : 4u)); }

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint sb = Bytes(SRC), db = Bytes(DST);
  uvec2 v = uvec2(0u);
  for (uint b = 0u; b < sb; ++b) v[b / 4u] |= uint(x[i * sb + b]) << (8u * (b % 4u));
  uvec2 r = Cast(v);
  for (uint b = 0u; b < db; ++b) y[i * db + b] = uint8_t(r[b / 4u] >> (8u * (b % 4u)));
}
