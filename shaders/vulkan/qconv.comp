#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// ConvInteger and QLinearConv, direct, one invocation an output element
// (b, m, od, oh, ow): acc = sum over the group's channels and the window of
// (x - zx) (w[m] - zw[m]), an int32 sum (the host's, wrapped to int32),
// window positions outside x skipped (the zero point's padding). Up to
// three spatial dims, right-aligned (missing ones of size 1). Types and
// FLAGS as qmatmul.comp (1 zx, 4 zw, 8 zw per output channel, 32 w_scale
// per output channel, 64 bias, 128 requantize, 256 / 512 the fused
// activation's lower / upper bound: QLinearConv, whose
// multiplier sx sw[m] / sy is f32, its division correctly rounded in the
// _f64 variant, KILN_F64, and its product with acc + bias f32).
layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) readonly buffer W { uint8_t w[]; };
#include "qconv_common.glsl"

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint osp = p.out_dims[0] * p.out_dims[1] * p.out_dims[2];
  const uint o = i % osp, m = (i / osp) % p.cout, bn = i / (osp * p.cout);
  const uint ow = o % p.out_dims[2], oh = (o / p.out_dims[2]) % p.out_dims[1], od = o / (p.out_dims[2] * p.out_dims[1]);
  const uint g = m / p.mg;
  const int zxv = (FLAGS & 1u) != 0u ? LoadQ(uint(zx[0]), XT) : 0;
  const int zwv = (FLAGS & 4u) != 0u ? LoadQ(uint(zw[(FLAGS & 8u) != 0u ? m : 0u]), WT) : 0;
  const uint ksp = p.ksize[0] * p.ksize[1] * p.ksize[2];
  const uint xsp = p.in_dims[0] * p.in_dims[1] * p.in_dims[2];
  int acc = 0;
  for (uint c = 0u; c < p.cg; ++c) {
    const uint xbase = (bn * p.cin + g * p.cg + c) * xsp;
    const uint wbase = (m * p.cg + c) * ksp;
    for (uint kd = 0u; kd < p.ksize[0]; ++kd) {
      const int pd = int(od * p.stride[0] + kd * p.dil[0]) - int(p.pad[0]);
      if (pd < 0 || pd >= int(p.in_dims[0])) continue;
      for (uint kh = 0u; kh < p.ksize[1]; ++kh) {
        const int ph = int(oh * p.stride[1] + kh * p.dil[1]) - int(p.pad[1]);
        if (ph < 0 || ph >= int(p.in_dims[1])) continue;
        for (uint kw = 0u; kw < p.ksize[2]; ++kw) {
          const int pw = int(ow * p.stride[2] + kw * p.dil[2]) - int(p.pad[2]);
          if (pw < 0 || pw >= int(p.in_dims[2])) continue;
          const uint xi = xbase + (uint(pd) * p.in_dims[1] + uint(ph)) * p.in_dims[2] + uint(pw);
          const uint wi = wbase + (kd * p.ksize[1] + kh) * p.ksize[2] + kw;
          acc += (LoadQ(uint(x[xi]), XT) - zxv) * (LoadQ(uint(w[wi]), WT) - zwv);
        }
      }
    }
  }
  QConvStore(i, m, acc);
}
