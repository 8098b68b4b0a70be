// ConvInteger and QLinearConv, direct, one work item an output element, as
// shaders/vulkan/qconv.comp (spec 3 XT, 4 WT, 5 YT, 6 FLAGS; the same
// flags). The multiplier is divided by QDIV (common.cl).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 2
#endif
#ifndef KILN_SPEC_6
#define KILN_SPEC_6 0
#endif
#define XT KILN_SPEC_3
#define WT KILN_SPEC_4
#define YT KILN_SPEC_5
#define FLAGS KILN_SPEC_6

__kernel void qconv(__global const uchar* x, __global const uchar* w, __global const uchar* zx,
                    __global const uchar* zw, __global const float* sx, __global const float* sw,
                    __global const float* sy, __global const uchar* zy, __global const int* bias, __global uchar* y,
                    QConvPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint osp = p.out_dims[0] * p.out_dims[1] * p.out_dims[2];
  const uint o = i % osp, m = (i / osp) % p.cout, bn = i / (osp * p.cout);
  const uint ow = o % p.out_dims[2], oh = (o / p.out_dims[2]) % p.out_dims[1], od = o / (p.out_dims[2] * p.out_dims[1]);
  const uint g = m / p.mg;
  const int zxv = (FLAGS & 1) != 0 ? LoadQ(zx[0], XT) : 0;
  const int zwv = (FLAGS & 4) != 0 ? LoadQ(zw[(FLAGS & 8) != 0 ? m : 0], WT) : 0;
  const uint ksp = p.ksize[0] * p.ksize[1] * p.ksize[2];
  const uint xsp = p.in_dims[0] * p.in_dims[1] * p.in_dims[2];
  int acc = 0;
  for (uint c = 0; c < p.cg; ++c) {
    const uint xbase = (bn * p.cin + g * p.cg + c) * xsp;
    const uint wbase = (m * p.cg + c) * ksp;
    for (uint kd = 0; kd < p.ksize[0]; ++kd) {
      const int pd = (int)(od * p.stride[0] + kd * p.dil[0]) - (int)p.pad[0];
      if (pd < 0 || pd >= (int)p.in_dims[0]) continue;
      for (uint kh = 0; kh < p.ksize[1]; ++kh) {
        const int ph = (int)(oh * p.stride[1] + kh * p.dil[1]) - (int)p.pad[1];
        if (ph < 0 || ph >= (int)p.in_dims[1]) continue;
        for (uint kw = 0; kw < p.ksize[2]; ++kw) {
          const int pw = (int)(ow * p.stride[2] + kw * p.dil[2]) - (int)p.pad[2];
          if (pw < 0 || pw >= (int)p.in_dims[2]) continue;
          const uint xi = xbase + ((uint)pd * p.in_dims[1] + (uint)ph) * p.in_dims[2] + (uint)pw;
          const uint wi = wbase + (kd * p.ksize[1] + kh) * p.ksize[2] + kw;
          acc += (LoadQ(x[xi], XT) - zxv) * (LoadQ(w[wi], WT) - zwv);
        }
      }
    }
  }
  QConvStore(y, i, m, acc, FLAGS, YT, sx, sw, sy, zy, bias, p.act_lo, p.act_hi);
}
