#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "int8dot.glsl"

// ConvInteger and QLinearConv (qconv.comp's types, flags, push constants
// and store) by 4-channel dot products: X and W arrive packed by qpack4.comp
// (words of four channels: X [batch][group][cg4][space], W [m][cg4][window],
// W's padding channels holding zw, X's zero). An invocation sums TM output
// channels by TW output columns of one row, each input word read once for
// the TM channels and each weight word once for the TW columns. The
// products run on raw bytes, the zero points after:
//   sum (x - zx)(w - zw) = sum x w - zw sum x - zx sum w + n zx zw
// over the whole window, where positions outside the input read zx (so
// they add nothing, as the host's skipping) and n counts every position
// and channel (padding channels add x w - zw x - zx zw + zx zw = 0). Sums
// wrap in int32 as the host's. KILN_INT8DOT: the <stem>_dp variants'
// packed dot products (int8dot.glsl). QLinearConv uses the KILN_F64
// variants (qconv.comp).
layout(std430, binding = 0) readonly buffer X4 { uint x4[]; };
layout(std430, binding = 1) readonly buffer W4 { uint w4[]; };
#include "qconv_common.glsl"

layout(constant_id = 7) const uint TW = 4;  // output columns an invocation (2 on GPUs, 8 on CPU drivers)
layout(constant_id = 8) const uint TM = 4;  // output channels an invocation (4; 2 or 8 for A/B)

void main() {
  const uint osp = p.out_dims[0] * p.out_dims[1] * p.out_dims[2];
  const uint groups = p.cout / p.mg, blocks = (p.mg + TM - 1u) / TM;
  const uint cols = (p.out_dims[2] + TW - 1u) / TW, rows = p.out_dims[0] * p.out_dims[1];
  const uint batch = p.n / (p.cout * osp);
  uint t = KILN_GLOBAL_INDEX;
  if (t >= batch * groups * blocks * rows * cols) return;
  const uint ow0 = (t % cols) * TW;
  t /= cols;
  const uint row = t % rows;
  t /= rows;
  const uint mb = t % blocks;
  t /= blocks;
  const uint g = t % groups, bn = t / groups;
  const uint oh = row % p.out_dims[1], od = row / p.out_dims[1];
  const uint m0 = g * p.mg + mb * TM, mcount = min(TM, p.mg - mb * TM);
  const uint cg4 = (p.cg + 3u) / 4u;
  const uint ksp = p.ksize[0] * p.ksize[1] * p.ksize[2];
  const uint xsp = p.in_dims[0] * p.in_dims[1] * p.in_dims[2];
  const uint ones = 0x01010101u;
  const uint zxword = (FLAGS & 1u) != 0u ? (uint(zx[0]) & 0xffu) * ones : 0u;

  int acc[TM][TW], sum_x[TW], sum_w[TM];
  [[unroll]] for (uint a = 0u; a < TM; ++a) {
    sum_w[a] = 0;
    [[unroll]] for (uint b = 0u; b < TW; ++b) acc[a][b] = 0;
  }
  [[unroll]] for (uint b = 0u; b < TW; ++b) sum_x[b] = 0;

  for (uint c4 = 0u; c4 < cg4; ++c4) {
    const uint xbase = ((bn * groups + g) * cg4 + c4) * xsp;
    uint wbase[TM];
    [[unroll]] for (uint a = 0u; a < TM; ++a) wbase[a] = ((m0 + min(a, mcount - 1u)) * cg4 + c4) * ksp;
    uint k = 0u;
    for (uint kd = 0u; kd < p.ksize[0]; ++kd) {
      const int pd = int(od * p.stride[0] + kd * p.dil[0]) - int(p.pad[0]);
      const bool dv = pd >= 0 && pd < int(p.in_dims[0]);
      for (uint kh = 0u; kh < p.ksize[1]; ++kh) {
        const int ph = int(oh * p.stride[1] + kh * p.dil[1]) - int(p.pad[1]);
        const bool rv = dv && ph >= 0 && ph < int(p.in_dims[1]);
        const uint rbase = xbase + (uint(max(pd, 0)) * p.in_dims[1] + uint(max(ph, 0))) * p.in_dims[2];
        for (uint kw = 0u; kw < p.ksize[2]; ++kw, ++k) {
          uint wv[TM];
          [[unroll]] for (uint a = 0u; a < TM; ++a) wv[a] = w4[wbase[a] + k];
          [[unroll]] for (uint b = 0u; b < TW; ++b) {
            const int pw = int((ow0 + b) * p.stride[2] + kw * p.dil[2]) - int(p.pad[2]);
            const uint xv = rv && pw >= 0 && pw < int(p.in_dims[2]) ? x4[rbase + uint(pw)] : zxword;
            [[unroll]] for (uint a = 0u; a < TM; ++a) acc[a][b] += Dot(wv[a], WT, xv, XT);
            if ((FLAGS & 4u) != 0u) sum_x[b] += Dot(xv, XT, ones, 0u);
          }
          if ((FLAGS & 1u) != 0u) [[unroll]] for (uint a = 0u; a < TM; ++a) sum_w[a] += Dot(wv[a], WT, ones, 0u);
        }
      }
    }
  }

  const int zxv = (FLAGS & 1u) != 0u ? LoadQ(uint(zx[0]), XT) : 0;
  const int n = int(cg4 * 4u * ksp);
  [[unroll]] for (uint a = 0u; a < TM; ++a) {
    if (a >= mcount) break;
    const uint m = m0 + a;
    const int zwv = (FLAGS & 4u) != 0u ? LoadQ(uint(zw[(FLAGS & 8u) != 0u ? m : 0u]), WT) : 0;
    [[unroll]] for (uint b = 0u; b < TW; ++b) {
      const uint ow = ow0 + b;
      if (ow >= p.out_dims[2]) break;
      const int v = acc[a][b] - zwv * sum_x[b] - zxv * sum_w[a] + n * zxv * zwv;
      QConvStore((bn * p.cout + m) * osp + row * p.out_dims[2] + ow, m, v);
    }
  }
}
