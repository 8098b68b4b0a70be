// QLinearAdd, as shaders/vulkan/qadd.comp (spec 3 TYPE, 4 FLAGS: 1 za, 2 zb,
// 4 zc, 8 / 16 the fused activation's bounds). No multiply-add contraction
// (FP_CONTRACT OFF): each step is the host's f32 operation; quotients are
// QDIV's (common.cl).
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
  const float fa = (float)(LoadQ(a[i * p.a_step], TYPE) - zav) * sa[0];
  const float fb = (float)(LoadQ(b[i * p.b_step], TYPE) - zbv) * sb[0];
  const float sum = fa + fb;
  int lo = QLo(TYPE), hi = QHi(TYPE);
  if ((FLAGS & 8) != 0) lo = max(lo, zcv + (int)clamp(rint(QDIV(p.act_lo, sc[0])), -1e9f, 1e9f));
  if ((FLAGS & 16) != 0) hi = min(hi, zcv + (int)clamp(rint(QDIV(p.act_hi, sc[0])), -1e9f, 1e9f));
  c[i] = (uchar)(QuantizeValue(QDIV(sum, sc[0]), zcv, lo, max(lo, hi)) & 0xff);
}
