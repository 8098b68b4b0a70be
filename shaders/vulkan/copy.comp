#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// The strided copy (copy_strided.glsl) in 32-bit words: any dtype whose
// element is a whole number of words.
#include "copy_strided.glsl"

layout(std430, binding = 0) readonly buffer X { UNIT_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { UNIT_T y[]; };

#define KILN_COPY_ONE(d, s) y[d] = x[s]
void main() KILN_COPY_ITEMS(KILN_COPY_ONE)
