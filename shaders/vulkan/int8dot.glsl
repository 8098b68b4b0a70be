// Packed 4 x 8-bit dot products for the int8 kernels (qconv_dot.comp,
// qmatmul_dot.comp). KILN_INT8DOT (their <stem>_dp variants, for devices
// with shaderIntegerDotProduct): SPIR-V's OpSDot / OpUDot / OpSUDot on the
// packed words (SPV_KHR_integer_dot_product through GL_EXT_spirv_intrinsics:
// Debian 12's glslang has no GL_EXT_integer_dot_product); else the bytes
// multiplied one by one.
#ifndef KILN_INT8DOT_GLSL
#define KILN_INT8DOT_GLSL
#ifdef KILN_INT8DOT
#extension GL_EXT_spirv_intrinsics : require
#endif
#include "quant.glsl"

#ifdef KILN_INT8DOT
// SPIR-V opcodes 4450-4452; capabilities DotProduct (6019) and
// DotProductInput4x8BitPacked (6018); the literal 0: PackedVectorFormat4x8Bit.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int SDot(uint a, uint b, spirv_literal int format);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4451)
uint UDot(uint a, uint b, spirv_literal int format);
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int SUDot(uint a, uint b, spirv_literal int format);
#endif

// The dot product of the four bytes of a (type at) and b (type bt).
int Dot(uint a, uint at, uint b, uint bt) {
#ifdef KILN_INT8DOT
  if (at == 1u && bt == 1u) return SDot(a, b, 0);
  if (at == 0u && bt == 0u) return int(UDot(a, b, 0));
  return at == 1u ? SUDot(a, b, 0) : SUDot(b, a, 0);
#else
  int s = 0;
  [[unroll]] for (uint j = 0u; j < 32u; j += 8u) s += LoadQ((a >> j) & 0xffu, at) * LoadQ((b >> j) & 0xffu, bt);
  return s;
#endif
}

#endif
