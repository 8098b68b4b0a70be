// MatMulInteger and QLinearMatMul by four-byte words, as
// shaders/vulkan/qmatmul_dot.comp (A and B packed by qpack4, A four k of a
// row a word with za in its padding, B four k of a column a word; batch
// strides in words; QTM rows by QTN columns a work item; the zero points
// applied after the byte products). Spec and flags as qmatmul.cl;
// QLinearMatMul uses the _f64 variant.
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
#define AT KILN_SPEC_3
#define BT KILN_SPEC_4
#define YT KILN_SPEC_5
#define FLAGS KILN_SPEC_6
#ifndef KILN_SPEC_7
#define KILN_SPEC_7 4
#endif
#define QTN KILN_SPEC_7  // columns a work item
#ifndef KILN_SPEC_8
#define KILN_SPEC_8 4
#endif
#define QTM KILN_SPEC_8  // rows a work item

__kernel void qmatmul_dot(__global const uint* a4, __global const uint* b4, __global const uchar* za,
                          __global const uchar* zb, __global const float* sa, __global const float* sb,
                          __global const float* sy, __global const uchar* zy, __global const int* bias,
                          __global uchar* y, QMatMulPush p) {
  const uint k4 = (p.k + 3) / 4;
  const uint rblocks = (p.m + QTM - 1) / QTM, cblocks = (p.cols + QTN - 1) / QTN;
  const uint batches = p.n / (p.m * p.cols);
  uint t = KILN_GLOBAL_INDEX;
  if (t >= batches * rblocks * cblocks) return;
  const uint j0 = (t % cblocks) * QTN;
  t /= cblocks;
  const uint r0 = (t % rblocks) * QTM;
  uint bi = t / rblocks, oa = 0, ob = 0;
  const uint batch_index = bi;
  for (int d = (int)p.rank - 1; d >= 0; --d) {
    const uint q = bi / p.batch[d], idx = bi - q * p.batch[d];
    oa += idx * p.stride_a[d];
    ob += idx * p.stride_b[d];
    bi = q;
  }
  uint arow[QTM], bcol[QTN];
  #pragma unroll
  for (uint a = 0; a < QTM; ++a) arow[a] = oa + min(r0 + a, p.m - 1) * k4;
  #pragma unroll
  for (uint b = 0; b < QTN; ++b) bcol[b] = ob + min(j0 + b, p.cols - 1);

  uint acc[QTM][QTN], sum_a[QTM], sum_b[QTN];  // wrapping int32 sums
  #pragma unroll
  for (int a = 0; a < QTM; ++a) {
    sum_a[a] = 0;
    #pragma unroll
    for (int b = 0; b < QTN; ++b) acc[a][b] = 0;
  }
  #pragma unroll
  for (int b = 0; b < QTN; ++b) sum_b[b] = 0;
  for (uint s = 0; s < k4; ++s) {
    int4 av[QTM], bv[QTN];
    #pragma unroll
    for (uint a = 0; a < QTM; ++a) av[a] = Unpack4(a4[arow[a] + s], AT);
    #pragma unroll
    for (uint b = 0; b < QTN; ++b) bv[b] = Unpack4(b4[bcol[b] + s * p.cols], BT);
    #pragma unroll
    for (uint a = 0; a < QTM; ++a)
      #pragma unroll
      for (uint b = 0; b < QTN; ++b) acc[a][b] += (uint)Dot4(av[a], bv[b]);
    if ((FLAGS & 4) != 0)
      #pragma unroll
      for (uint a = 0; a < QTM; ++a) sum_a[a] += (uint)(av[a].x + av[a].y + av[a].z + av[a].w);
    if ((FLAGS & 1) != 0)
      #pragma unroll
      for (uint b = 0; b < QTN; ++b) sum_b[b] += (uint)(bv[b].x + bv[b].y + bv[b].z + bv[b].w);
  }

  const int n = (int)(k4 * 4);
  for (uint a = 0; a < QTM && r0 + a < p.m; ++a) {
    const uint r = r0 + a;
    const int zav = (FLAGS & 1) != 0 ? LoadQ(za[(FLAGS & 2) != 0 ? r : 0], AT) : 0;
    for (uint b = 0; b < QTN && j0 + b < p.cols; ++b) {
      const uint j = j0 + b;
      const int zbv = (FLAGS & 4) != 0 ? LoadQ(zb[(FLAGS & 8) != 0 ? j : 0], BT) : 0;
      // In uint: the sums wrap as the host's int32 (signed overflow is undefined in OpenCL C).
      const int v = (int)(acc[a][b] - (uint)zbv * sum_a[a] - (uint)zav * sum_b[b] +
                          (uint)n * (uint)zav * (uint)zbv);
      QMatMulStore(y, (batch_index * p.m + r) * p.cols + j, r, j, v, FLAGS, YT, sa, sb, sy, zy, bias);
    }
  }
}
