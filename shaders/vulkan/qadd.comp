#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "quant.glsl"

// QLinearAdd: c[i] = saturate(round_half_even(((a - za) sa + (b - zb) sb) /
// sc) + zc), each step an f32 operation as the host's (the products are
// `precise`: no multiply-add contraction), the division correctly rounded
// in the _f64 variant (KILN_F64). A or B may be one value (a_step / b_step
// 0). TYPE: the tensors' type (0 u8, 1 i8). FLAGS: 1 za, 2 zb, 4 zc (else
// 0), 8 / 16 the fused activation's lower / upper bound (act_lo, act_hi on
// the real output, quantized here as the host's ActivationRange).
layout(constant_id = 3) const uint TYPE = 0;
layout(constant_id = 4) const uint FLAGS = 0;

layout(std430, binding = 0) readonly buffer A { uint8_t a[]; };
layout(std430, binding = 1) readonly buffer SA { float sa[]; };
layout(std430, binding = 2) readonly buffer ZA { uint8_t za[]; };
layout(std430, binding = 3) readonly buffer B { uint8_t b[]; };
layout(std430, binding = 4) readonly buffer SB { float sb[]; };
layout(std430, binding = 5) readonly buffer ZB { uint8_t zb[]; };
layout(std430, binding = 6) readonly buffer SC { float sc[]; };
layout(std430, binding = 7) readonly buffer ZC { uint8_t zc[]; };
layout(std430, binding = 8) writeonly buffer C { uint8_t c[]; };
layout(push_constant) uniform P {
  uint n, a_step, b_step;
  float act_lo, act_hi;
} p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const int zav = (FLAGS & 1u) != 0u ? LoadQ(uint(za[0]), TYPE) : 0;
  const int zbv = (FLAGS & 2u) != 0u ? LoadQ(uint(zb[0]), TYPE) : 0;
  const int zcv = (FLAGS & 4u) != 0u ? LoadQ(uint(zc[0]), TYPE) : 0;
  precise const float fa = float(LoadQ(uint(a[i * p.a_step]), TYPE) - zav) * sa[0];
  precise const float fb = float(LoadQ(uint(b[i * p.b_step]), TYPE) - zbv) * sb[0];
  precise const float sum = fa + fb;
  int lo = QLo(TYPE), hi = QHi(TYPE);
  if ((FLAGS & 8u) != 0u) lo = max(lo, zcv + int(clamp(roundEven(QDIV(p.act_lo, sc[0])), -1e9, 1e9)));
  if ((FLAGS & 16u) != 0u) hi = min(hi, zcv + int(clamp(roundEven(QDIV(p.act_hi, sc[0])), -1e9, 1e9)));
  const int v = QuantizeValue(QDIV(sum, sc[0]), zcv, lo, max(lo, hi));
  c[i] = uint8_t(uint(v) & 0xffu);
}
