// MatMulInteger and QLinearMatMul, one work item an output element, as
// shaders/vulkan/qmatmul.comp (spec 3 AT, 4 BT, 5 YT, 6 FLAGS; the same
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
#define AT KILN_SPEC_3
#define BT KILN_SPEC_4
#define YT KILN_SPEC_5
#define FLAGS KILN_SPEC_6

__kernel void qmatmul(__global const uchar* a, __global const uchar* b, __global const uchar* za,
                      __global const uchar* zb, __global const float* sa, __global const float* sb,
                      __global const float* sy, __global const uchar* zy, __global const int* bias,
                      __global uchar* y, QMatMulPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint j = i % p.cols, r = (i / p.cols) % p.m;
  uint bi = i / (p.cols * p.m), oa = 0, ob = 0;
  for (int d = (int)p.rank - 1; d >= 0; --d) {
    const uint q = bi / p.batch[d], idx = bi - q * p.batch[d];
    oa += idx * p.stride_a[d];
    ob += idx * p.stride_b[d];
    bi = q;
  }
  const int zav = (FLAGS & 1) != 0 ? LoadQ(za[(FLAGS & 2) != 0 ? r : 0], AT) : 0;
  const int zbv = (FLAGS & 4) != 0 ? LoadQ(zb[(FLAGS & 8) != 0 ? j : 0], BT) : 0;
  oa += r * p.k;
  ob += j;
  int acc = 0;
  for (uint t = 0; t < p.k; ++t) acc += (LoadQ(a[oa + t], AT) - zav) * (LoadQ(b[ob + t * p.cols], BT) - zbv);
  QMatMulStore(y, i, r, j, acc, FLAGS, YT, sa, sb, sy, zy, bias);
}
