#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "quant.glsl"

// QLinearAdd: c[i] = saturate(round_half_even(a ra + b rb + f)), the
// host's arithmetic (onnxruntime's; host_fallback/ops/quant.cpp): ra = sa /
// sc and rb = sb / sc (correctly rounded in the _f64 variant, KILN_F64), f
// = zc - ra za - rb zb each step rounded (`precise`: no contraction), the
// sum fma(a, ra, fma(b, rb, f)) (QFMA, quant.glsl). A or B may be one value (a_step / b_step
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
  const float ra = QDIV(sa[0], sc[0]), rb = QDIV(sb[0], sc[0]);
  precise const float pa = ra * float(zav);
  precise const float pb = rb * float(zbv);
  precise const float f0 = float(zcv) - pa;
  precise const float f = f0 - pb;
  const float y = QFMA(float(LoadQ(uint(a[i * p.a_step]), TYPE)), ra,
                       QFMA(float(LoadQ(uint(b[i * p.b_step]), TYPE)), rb, f));
  int lo = QLo(TYPE), hi = QHi(TYPE);
  if ((FLAGS & 8u) != 0u) lo = max(lo, zcv + int(clamp(roundEven(QDIV(p.act_lo, sc[0])), -1e9, 1e9)));
  if ((FLAGS & 16u) != 0u) hi = min(hi, zcv + int(clamp(roundEven(QDIV(p.act_hi, sc[0])), -1e9, 1e9)));
  const int v = int(clamp(roundEven(y), float(lo), float(max(lo, hi))));
  c[i] = uint8_t(uint(v) & 0xffu);
}
