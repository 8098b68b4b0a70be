#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// The strided copy (copy_strided.glsl) in 32-bit words: any dtype whose
// element is a whole number of words.
#include "copy_strided.glsl"

layout(std430, binding = 0) readonly buffer X { UNIT_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { UNIT_T y[]; };
// QUADS: the push constants count in groups of four units (the host
// checked that every offset and run is a multiple of four): one 16-byte
// access (8 with 16-bit units) instead of four.
layout(constant_id = 6) const bool QUADS = false;
#ifdef KILN_UNIT16
#define UNIT4_T u16vec4
#else
#define UNIT4_T uvec4
#endif
layout(std430, binding = 0) readonly buffer X4 { UNIT4_T x4[]; };
layout(std430, binding = 1) writeonly buffer Y4 { UNIT4_T y4[]; };

#define KILN_COPY_ONE(d, s) y[d] = x[s]
#define KILN_COPY_QUAD(d, s) y4[d] = x4[s]
void main() {
  if (QUADS)
    KILN_COPY_ITEMS(KILN_COPY_QUAD)
  else
    KILN_COPY_ITEMS(KILN_COPY_ONE)
}
