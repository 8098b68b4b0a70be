#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// The strided copy (copy_strided.glsl) in bytes, for 1- and 2-byte dtypes
// (bool, u8, i8, f16, bf16). Needs storageBuffer8BitAccess; each
// invocation stores one byte, which 8-bit storage makes race-free.
#include "copy_strided.glsl"

layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint8_t y[]; };

#define KILN_COPY_ONE(d, s) y[d] = x[s]
void main() KILN_COPY_ITEMS(KILN_COPY_ONE)
