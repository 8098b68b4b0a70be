#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// Depthwise ConvInteger and QLinearConv (one input and one output channel a
// group; qconv.comp's types, flags, push constants and store): TW
// consecutive output columns of one row an invocation, so that each tap's
// weight is read once for all of them; sums as qconv.comp's (window
// positions outside x skipped, int32 wrapping). QLinearConv uses the
// KILN_F64 variant (qconv.comp).
layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) readonly buffer W { uint8_t w[]; };
#include "qconv_common.glsl"

layout(constant_id = 7) const uint TW = 8;  // output columns an invocation

void main() {
  const uint osp = p.out_dims[0] * p.out_dims[1] * p.out_dims[2];
  const uint cols = (p.out_dims[2] + TW - 1u) / TW, rows = p.out_dims[0] * p.out_dims[1];
  uint t = KILN_GLOBAL_INDEX;
  if (t >= (p.n / osp) * rows * cols) return;  // p.n / osp: batch x channels
  const uint ow0 = (t % cols) * TW;
  t /= cols;
  const uint row = t % rows, bc = t / rows, m = bc % p.cout;
  const uint oh = row % p.out_dims[1], od = row / p.out_dims[1];
  const int zxv = (FLAGS & 1u) != 0u ? LoadQ(uint(zx[0]), XT) : 0;
  const int zwv = (FLAGS & 4u) != 0u ? LoadQ(uint(zw[(FLAGS & 8u) != 0u ? m : 0u]), WT) : 0;
  const uint xsp = p.in_dims[0] * p.in_dims[1] * p.in_dims[2];
  const uint xbase = bc * xsp, wbase = m * p.ksize[0] * p.ksize[1] * p.ksize[2];
  int acc[TW];
  [[unroll]] for (uint b = 0u; b < TW; ++b) acc[b] = 0;
  uint k = 0u;
  for (uint kd = 0u; kd < p.ksize[0]; ++kd) {
    const int pd = int(od * p.stride[0] + kd * p.dil[0]) - int(p.pad[0]);
    const bool dv = pd >= 0 && pd < int(p.in_dims[0]);
    for (uint kh = 0u; kh < p.ksize[1]; ++kh) {
      const int ph = int(oh * p.stride[1] + kh * p.dil[1]) - int(p.pad[1]);
      const bool rv = dv && ph >= 0 && ph < int(p.in_dims[1]);
      const uint rbase = xbase + (uint(max(pd, 0)) * p.in_dims[1] + uint(max(ph, 0))) * p.in_dims[2];
      for (uint kw = 0u; kw < p.ksize[2]; ++kw, ++k) {
        if (!rv) continue;
        const int wv = LoadQ(uint(w[wbase + k]), WT) - zwv;
        [[unroll]] for (uint b = 0u; b < TW; ++b) {
          const int pw = int((ow0 + b) * p.stride[2] + kw * p.dil[2]) - int(p.pad[2]);
          if (pw >= 0 && pw < int(p.in_dims[2])) acc[b] += (LoadQ(uint(x[rbase + uint(pw)]), XT) - zxv) * wv;
        }
      }
    }
  }
  [[unroll]] for (uint b = 0u; b < TW; ++b) {
    const uint ow = ow0 + b;
    if (ow >= p.out_dims[2]) break;
    QConvStore(bc * osp + row * p.out_dims[2] + ow, m, acc[b]);
  }
}
