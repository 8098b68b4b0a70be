// Depthwise ConvInteger and QLinearConv, as shaders/vulkan/qconv_dw.comp:
// QTW consecutive output columns of one row a work item, each tap's weight
// read once for all of them. Spec and flags as qconv.cl (7: QTW);
// QLinearConv uses the _f64 variant.
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
#ifndef KILN_SPEC_7
#define KILN_SPEC_7 8
#endif
#define XT KILN_SPEC_3
#define WT KILN_SPEC_4
#define YT KILN_SPEC_5
#define FLAGS KILN_SPEC_6
#define QTW KILN_SPEC_7

__kernel void qconv_dw(__global const uchar* x, __global const uchar* w, __global const uchar* zx,
                       __global const uchar* zw, __global const float* sx, __global const float* sw,
                       __global const float* sy, __global const uchar* zy, __global const int* bias, __global uchar* y,
                       QConvPush p) {
  const uint osp = p.out_dims[0] * p.out_dims[1] * p.out_dims[2];
  const uint cols = (p.out_dims[2] + QTW - 1) / QTW, rows = p.out_dims[0] * p.out_dims[1];
  uint t = KILN_GLOBAL_INDEX;
  if (t >= (p.n / osp) * rows * cols) return;  // p.n / osp: batch x channels
  const uint ow0 = (t % cols) * QTW;
  t /= cols;
  const uint row = t % rows, bc = t / rows, m = bc % p.cout;
  const uint oh = row % p.out_dims[1], od = row / p.out_dims[1];
  const int zxv = (FLAGS & 1) != 0 ? LoadQ(zx[0], XT) : 0;
  const int zwv = (FLAGS & 4) != 0 ? LoadQ(zw[(FLAGS & 8) != 0 ? m : 0], WT) : 0;
  const uint xsp = p.in_dims[0] * p.in_dims[1] * p.in_dims[2];
  const uint xbase = bc * xsp, wbase = m * p.ksize[0] * p.ksize[1] * p.ksize[2];
  uint acc[QTW];  // wrapping int32 sums
  #pragma unroll
  for (uint b = 0; b < QTW; ++b) acc[b] = 0;
  uint k = 0;
  for (uint kd = 0; kd < p.ksize[0]; ++kd) {
    const int pd = (int)(od * p.stride[0] + kd * p.dil[0]) - (int)p.pad[0];
    const bool dv = pd >= 0 && pd < (int)p.in_dims[0];
    for (uint kh = 0; kh < p.ksize[1]; ++kh) {
      const int ph = (int)(oh * p.stride[1] + kh * p.dil[1]) - (int)p.pad[1];
      const bool rv = dv && ph >= 0 && ph < (int)p.in_dims[1];
      const uint rbase = xbase + ((uint)max(pd, 0) * p.in_dims[1] + (uint)max(ph, 0)) * p.in_dims[2];
      for (uint kw = 0; kw < p.ksize[2]; ++kw, ++k) {
        if (!rv) continue;
        const int wv = LoadQ(w[wbase + k], WT) - zwv;
        #pragma unroll
        for (uint b = 0; b < QTW; ++b) {
          const int pw = (int)((ow0 + b) * p.stride[2] + kw * p.dil[2]) - (int)p.pad[2];
          if (pw >= 0 && pw < (int)p.in_dims[2]) acc[b] += (uint)((LoadQ(x[rbase + (uint)pw], XT) - zxv) * wv);
        }
      }
    }
  }
  for (uint b = 0; b < QTW && ow0 + b < p.out_dims[2]; ++b)
    QConvStore(y, bc * osp + row * p.out_dims[2] + ow0 + b, m, (int)acc[b], FLAGS, YT, sx, sw, sy, zy, bias, p.act_lo,
               p.act_hi);
}
