// Shared by qmatmul.comp and qmatmul_dot.comp (MatMulInteger and
// QLinearMatMul): the types and flags (spec constants, as qmatmul.comp
// describes), the bindings after A and B (which each shader declares as it
// reads them), the push constants, and the store of one output element.
#ifndef KILN_QMATMUL_GLSL
#define KILN_QMATMUL_GLSL
#include "quant.glsl"

layout(constant_id = 3) const uint AT = 0;
layout(constant_id = 4) const uint BT = 0;
layout(constant_id = 5) const uint YT = 0;
layout(constant_id = 6) const uint FLAGS = 0;

layout(std430, binding = 2) readonly buffer AZ { uint8_t za[]; };
layout(std430, binding = 3) readonly buffer BZ { uint8_t zb[]; };
layout(std430, binding = 4) readonly buffer SA { float sa[]; };
layout(std430, binding = 5) readonly buffer SB { float sb[]; };
layout(std430, binding = 6) readonly buffer SY { float sy[]; };
layout(std430, binding = 7) readonly buffer YZ { uint8_t zy[]; };
layout(std430, binding = 8) readonly buffer BIAS { int bias[]; };
layout(std430, binding = 9) writeonly buffer Y { uint8_t y[]; };
layout(push_constant) uniform P {
  uint n, m, cols, k, rank;
  uint batch[4];
  uint stride_a[4];
  uint stride_b[4];
} p;

// Output element i (row r, column j) from its int32 sum: MatMulInteger's
// sum itself, QLinearMatMul's requantized byte.
void QMatMulStore(uint i, uint r, uint j, int acc) {
  if ((FLAGS & 64u) != 0u) acc += bias[j];
  if (YT == 2u) {
    const uint v = uint(acc);
    y[4u * i] = uint8_t(v & 0xffu);
    y[4u * i + 1u] = uint8_t((v >> 8) & 0xffu);
    y[4u * i + 2u] = uint8_t((v >> 16) & 0xffu);
    y[4u * i + 3u] = uint8_t(v >> 24);
  } else {
    const float mult = QDIV(sa[(FLAGS & 16u) != 0u ? r : 0u] * sb[(FLAGS & 32u) != 0u ? j : 0u], sy[0]);
    const int v = Requantize(acc, mult, LoadQ(uint(zy[0]), YT), QLo(YT), QHi(YT));
    y[i] = uint8_t(uint(v) & 0xffu);
  }
}

#endif
