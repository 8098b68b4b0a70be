// ConvInteger and QLinearConv by four-channel words, as
// shaders/vulkan/qconv_dot.comp (X and W packed by qpack4; QTM output
// channels by QTW output columns a work item; the zero points applied after
// the raw byte products: sum x w - zw sum x - zx sum w + n zx zw over the
// whole window, positions outside X read as zx). The bytes are multiplied
// one by one (no device here offers cl_khr_integer_dot_product). Spec and
// flags as qconv.cl; QLinearConv uses the _f64 variant.
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
#ifndef KILN_SPEC_7
#define KILN_SPEC_7 4
#endif
#define QTW KILN_SPEC_7  // output columns a work item (2 on GPUs, 8 on CPU drivers)
#ifndef KILN_SPEC_8
#define KILN_SPEC_8 4
#endif
#define QTM KILN_SPEC_8  // output channels a work item (4; 2 or 8 for A/B)

__kernel void qconv_dot(__global const uint* x4, __global const uint* w4, __global const uchar* zx,
                        __global const uchar* zw, __global const float* sx, __global const float* sw,
                        __global const float* sy, __global const uchar* zy, __global const int* bias,
                        __global uchar* y, QConvPush p) {
  const uint osp = p.out_dims[0] * p.out_dims[1] * p.out_dims[2];
  const uint groups = p.cout / p.mg, blocks = (p.mg + QTM - 1) / QTM;
  const uint cols = (p.out_dims[2] + QTW - 1) / QTW, rows = p.out_dims[0] * p.out_dims[1];
  const uint batch = p.n / (p.cout * osp);
  uint t = KILN_GLOBAL_INDEX;
  if (t >= batch * groups * blocks * rows * cols) return;
  const uint ow0 = (t % cols) * QTW;
  t /= cols;
  const uint row = t % rows;
  t /= rows;
  const uint mb = t % blocks;
  t /= blocks;
  const uint g = t % groups, bn = t / groups;
  const uint oh = row % p.out_dims[1], od = row / p.out_dims[1];
  const uint m0 = g * p.mg + mb * QTM, mcount = min((uint)QTM, p.mg - mb * QTM);
  const uint cg4 = (p.cg + 3) / 4;
  const uint ksp = p.ksize[0] * p.ksize[1] * p.ksize[2];
  const uint xsp = p.in_dims[0] * p.in_dims[1] * p.in_dims[2];
  const int zxv = (FLAGS & 1) != 0 ? LoadQ(zx[0], XT) : 0;
  const uint zxword = (FLAGS & 1) != 0 ? (uint)zx[0] * 0x01010101u : 0u;

  uint acc[QTM][QTW], sum_x[QTW], sum_w[QTM];  // wrapping int32 sums
  #pragma unroll
  for (int a = 0; a < QTM; ++a) {
    sum_w[a] = 0;
    #pragma unroll
    for (int b = 0; b < QTW; ++b) acc[a][b] = 0;
  }
  #pragma unroll
  for (int b = 0; b < QTW; ++b) sum_x[b] = 0;

  for (uint c4 = 0; c4 < cg4; ++c4) {
    const uint xbase = ((bn * groups + g) * cg4 + c4) * xsp;
    uint wbase[QTM];
    #pragma unroll
    for (uint a = 0; a < QTM; ++a) wbase[a] = ((m0 + min(a, mcount - 1)) * cg4 + c4) * ksp;
    uint k = 0;
    for (uint kd = 0; kd < p.ksize[0]; ++kd) {
      const int pd = (int)(od * p.stride[0] + kd * p.dil[0]) - (int)p.pad[0];
      const bool dv = pd >= 0 && pd < (int)p.in_dims[0];
      for (uint kh = 0; kh < p.ksize[1]; ++kh) {
        const int ph = (int)(oh * p.stride[1] + kh * p.dil[1]) - (int)p.pad[1];
        const bool rv = dv && ph >= 0 && ph < (int)p.in_dims[1];
        const uint rbase = xbase + ((uint)max(pd, 0) * p.in_dims[1] + (uint)max(ph, 0)) * p.in_dims[2];
        for (uint kw = 0; kw < p.ksize[2]; ++kw, ++k) {
          int4 wv[QTM];
          #pragma unroll
          for (uint a = 0; a < QTM; ++a) wv[a] = Unpack4(w4[wbase[a] + k], WT);
          #pragma unroll
          for (uint b = 0; b < QTW; ++b) {
            const int pw = (int)((ow0 + b) * p.stride[2] + kw * p.dil[2]) - (int)p.pad[2];
            const uint xw = rv && pw >= 0 && pw < (int)p.in_dims[2] ? x4[rbase + (uint)pw] : zxword;
            const int4 xv = Unpack4(xw, XT);
            #pragma unroll
            for (uint a = 0; a < QTM; ++a) acc[a][b] += (uint)Dot4(wv[a], xv);
            if ((FLAGS & 4) != 0) sum_x[b] += (uint)(xv.x + xv.y + xv.z + xv.w);
          }
          if ((FLAGS & 1) != 0)
            #pragma unroll
            for (uint a = 0; a < QTM; ++a) sum_w[a] += (uint)(wv[a].x + wv[a].y + wv[a].z + wv[a].w);
        }
      }
    }
  }

  const int n = (int)(cg4 * 4 * ksp);
  for (uint a = 0; a < mcount; ++a) {
    const uint m = m0 + a;
    const int zwv = (FLAGS & 4) != 0 ? LoadQ(zw[(FLAGS & 8) != 0 ? m : 0], WT) : 0;
    for (uint b = 0; b < QTW && ow0 + b < p.out_dims[2]; ++b) {
      // In uint: the sums wrap as the host's int32 (signed overflow is undefined in OpenCL C).
      const int v = (int)(acc[a][b] - (uint)zwv * sum_x[b] - (uint)zxv * sum_w[a] +
                          (uint)n * (uint)zxv * (uint)zwv);
      QConvStore(y, (bn * p.cout + m) * osp + row * p.out_dims[2] + ow0 + b, m, v, FLAGS, YT, sx, sw, sy, zy, bias,
                 p.act_lo, p.act_hi);
    }
  }
}
