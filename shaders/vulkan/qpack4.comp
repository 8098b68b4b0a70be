#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// Bytes [outer][c][sp] -> words [outer][c4][sp], each word four channels of
// one position (channel 4 c4 + j in byte j), for the int8 dot-product
// kernels (qconv_dot.comp): a conv's input (outer: batch x group) and its
// weights (outer: output channel, sp: the window). Channels past c hold a
// fill byte: FILL 0 zero, 1 fill[0], 2 fill[outer % fill_mod] (a per-channel
// zero point).
layout(constant_id = 3) const uint FILL = 0;

layout(std430, binding = 0) readonly buffer S { uint8_t src[]; };
layout(std430, binding = 1) readonly buffer F { uint8_t fill[]; };
layout(std430, binding = 2) writeonly buffer D { uint dst[]; };
layout(push_constant) uniform P { uint n, c, c4, sp, fill_mod; } p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint s = i % p.sp, q = i / p.sp, c4 = q % p.c4, o = q / p.c4;
  const uint pad = FILL == 0u ? 0u : uint(fill[FILL == 1u ? 0u : o % p.fill_mod]);
  uint word = 0u;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint c = 4u * c4 + j;
    word |= (c < p.c ? uint(src[(o * p.c + c) * p.sp + s]) : pad) << (8u * j);
  }
  dst[i] = word;
}
