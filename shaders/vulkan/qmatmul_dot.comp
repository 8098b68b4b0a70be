#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "int8dot.glsl"

// MatMulInteger and QLinearMatMul (qmatmul.comp's types, flags, push
// constants and store) by 4-byte dot products: A and B arrive packed by
// qpack4.comp (A [batch][m][k4], four k of a row a word, padding holding
// za; B [batch][k4][cols], four k of a column a word, padding zero), and the
// push constants' batch strides count words. An invocation sums TM rows by
// TN columns; the zero points apply after the byte products, as in
// qconv_dot.comp: sum a b - zb sum a - za sum b + n za zb (padding adds
// za b - zb za - za b + za zb = 0). KILN_INT8DOT: the <stem>_dp variants'
// packed dot products (int8dot.glsl); QLinearMatMul uses the KILN_F64
// variants.
layout(std430, binding = 0) readonly buffer A4 { uint a4[]; };
layout(std430, binding = 1) readonly buffer B4 { uint b4[]; };
#include "qmatmul_common.glsl"

layout(constant_id = 7) const uint TN = 4;  // columns an invocation
layout(constant_id = 8) const uint TM = 4;  // rows an invocation

void main() {
  const uint k4 = (p.k + 3u) / 4u;
  const uint rblocks = (p.m + TM - 1u) / TM, cblocks = (p.cols + TN - 1u) / TN;
  const uint batches = p.n / (p.m * p.cols);
  uint t = KILN_GLOBAL_INDEX;
  if (t >= batches * rblocks * cblocks) return;
  const uint j0 = (t % cblocks) * TN;
  t /= cblocks;
  const uint r0 = (t % rblocks) * TM;
  uint bi = t / rblocks, oa = 0u, ob = 0u;
  const uint batch_index = bi;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint q = bi / p.batch[d], idx = bi - q * p.batch[d];
    oa += idx * p.stride_a[d];
    ob += idx * p.stride_b[d];
    bi = q;
  }
  const uint ones = 0x01010101u;
  uint arow[TM];
  [[unroll]] for (uint a = 0u; a < TM; ++a) arow[a] = oa + min(r0 + a, p.m - 1u) * k4;
  uint bcol[TN];
  [[unroll]] for (uint b = 0u; b < TN; ++b) bcol[b] = ob + min(j0 + b, p.cols - 1u);

  int acc[TM][TN], sum_a[TM], sum_b[TN];
  [[unroll]] for (uint a = 0u; a < TM; ++a) {
    sum_a[a] = 0;
    [[unroll]] for (uint b = 0u; b < TN; ++b) acc[a][b] = 0;
  }
  [[unroll]] for (uint b = 0u; b < TN; ++b) sum_b[b] = 0;
  for (uint s = 0u; s < k4; ++s) {
    uint av[TM], bv[TN];
    [[unroll]] for (uint a = 0u; a < TM; ++a) av[a] = a4[arow[a] + s];
    [[unroll]] for (uint b = 0u; b < TN; ++b) bv[b] = b4[bcol[b] + s * p.cols];
    [[unroll]] for (uint a = 0u; a < TM; ++a)
      [[unroll]] for (uint b = 0u; b < TN; ++b) acc[a][b] += Dot(av[a], AT, bv[b], BT);
    if ((FLAGS & 4u) != 0u) [[unroll]] for (uint a = 0u; a < TM; ++a) sum_a[a] += Dot(av[a], AT, ones, 0u);
    if ((FLAGS & 1u) != 0u) [[unroll]] for (uint b = 0u; b < TN; ++b) sum_b[b] += Dot(bv[b], BT, ones, 0u);
  }

  const int n = int(k4 * 4u);
  [[unroll]] for (uint a = 0u; a < TM; ++a) {
    const uint r = r0 + a;
    if (r >= p.m) break;
    const int zav = (FLAGS & 1u) != 0u ? LoadQ(uint(za[(FLAGS & 2u) != 0u ? r : 0u]), AT) : 0;
    [[unroll]] for (uint b = 0u; b < TN; ++b) {
      const uint j = j0 + b;
      if (j >= p.cols) break;
      const int zbv = (FLAGS & 4u) != 0u ? LoadQ(uint(zb[(FLAGS & 8u) != 0u ? j : 0u]), BT) : 0;
      const int v = acc[a][b] - zbv * sum_a[a] - zav * sum_b[b] + n * zav * zbv;
      QMatMulStore((batch_index * p.m + r) * p.cols + j, r, j, v);
    }
  }
}
