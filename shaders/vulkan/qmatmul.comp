#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// MatMulInteger and QLinearMatMul, one invocation an output element:
// acc = sum over k of (a[r, k] - za) (b[k, j] - zb), an int32 sum, over
// broadcast batches (up to 4 dims: each one's length and a's and b's
// strides, 0 where broadcast). AT, BT: a's and b's types (0 u8, 1 i8); YT:
// y's (0 u8, 1 i8, 2 i32: the sum itself, MatMulInteger). FLAGS (as
// gpu_quant.cpp's QFlags): 1 za, 2 za per row, 4 zb, 8 zb per column,
// 16 sa per row, 32 sb per column, 64 an int32 bias of columns added to
// acc (Kiln's QLinearMatMul input 8), 128 requantize (QLinearMatMul):
// y = saturate(round_half_even(acc * (sa sb / sy)) + zy), all in f32, the
// multiplier's division correctly rounded in the _f64 variant (KILN_F64),
// which QLinearMatMul needs. y is byte-addressed: each invocation writes its own
// element's bytes.
layout(std430, binding = 0) readonly buffer A { uint8_t a[]; };
layout(std430, binding = 1) readonly buffer B { uint8_t b[]; };
#include "qmatmul_common.glsl"

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint j = i % p.cols, r = (i / p.cols) % p.m;
  uint bi = i / (p.cols * p.m), oa = 0u, ob = 0u;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint q = bi / p.batch[d], idx = bi - q * p.batch[d];
    oa += idx * p.stride_a[d];
    ob += idx * p.stride_b[d];
    bi = q;
  }
  const int zav = (FLAGS & 1u) != 0u ? LoadQ(uint(za[(FLAGS & 2u) != 0u ? r : 0u]), AT) : 0;
  const int zbv = (FLAGS & 4u) != 0u ? LoadQ(uint(zb[(FLAGS & 8u) != 0u ? j : 0u]), BT) : 0;
  oa += r * p.k;
  ob += j;
  int acc = 0;
  for (uint t = 0u; t < p.k; ++t)
    acc += (LoadQ(uint(a[oa + t]), AT) - zav) * (LoadQ(uint(b[ob + t * p.cols]), BT) - zbv);
  QMatMulStore(i, r, j, acc);
}
