// QLinearAdd, as shaders/vulkan/qadd.comp (spec 3 TYPE, 4 FLAGS: 1 za, 2 zb,
// 4 zc, 8 / 16 the fused activation's bounds): the host's arithmetic,
// fma(a, ra, fma(b, rb, f)) with ra = sa / sc, rb = sb / sc (QDIV,
// common.cl) and f = zc - ra za - rb zb, each step rounded (FP_CONTRACT
// OFF; fma is correctly rounded in OpenCL).
#pragma OPENCL FP_CONTRACT OFF
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define TYPE KILN_SPEC_3
#define FLAGS KILN_SPEC_4

typedef struct {
  uint n, a_step, b_step;
  float act_lo, act_hi;
} QAddPush;

__kernel void qadd(__global const uchar* a, __global const float* sa, __global const uchar* za,
                   __global const uchar* b, __global const float* sb, __global const uchar* zb,
                   __global const float* sc, __global const uchar* zc, __global uchar* c, QAddPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const int zav = (FLAGS & 1) != 0 ? LoadQ(za[0], TYPE) : 0;
  const int zbv = (FLAGS & 2) != 0 ? LoadQ(zb[0], TYPE) : 0;
  const int zcv = (FLAGS & 4) != 0 ? LoadQ(zc[0], TYPE) : 0;
  const float ra = QDIV(sa[0], sc[0]), rb = QDIV(sb[0], sc[0]);
  const float pa = ra * (float)zav;
  const float pb = rb * (float)zbv;
  const float f0 = (float)zcv - pa;
  const float f = f0 - pb;
  const float y = fma((float)LoadQ(a[i * p.a_step], TYPE), ra, fma((float)LoadQ(b[i * p.b_step], TYPE), rb, f));
  int lo = QLo(TYPE), hi = QHi(TYPE);
  if ((FLAGS & 8) != 0) lo = max(lo, zcv + (int)clamp(rint(QDIV(p.act_lo, sc[0])), -1e9f, 1e9f));
  if ((FLAGS & 16) != 0) hi = min(hi, zcv + (int)clamp(rint(QDIV(p.act_hi, sc[0])), -1e9f, 1e9f));
  c[i] = (uchar)((int)clamp(rint(y), (float)lo, (float)max(lo, hi)) & 0xff);
}
