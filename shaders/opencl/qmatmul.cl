// MatMulInteger and QLinearMatMul, one work item an output element, as
// shaders/vulkan/qmatmul.comp (spec 3 AT, 4 BT, 5 YT, 6 FLAGS; the same
// flags). KILN_F64 (qmatmul_f64) requantizes in double.
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

// 8-bit loads, division and requantizing as shaders/vulkan/quant.glsl
// (the host kernels arithmetic, host_fallback/ops/quant.cpp).
#ifdef KILN_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define QDIV(a, b) ((float)((double)(a) / (double)(b)))
#else
#define QDIV(a, b) ((a) / (b))
#endif

int LoadQ(uchar v, uint type) { return type == 1 ? (int)as_char(v) : (int)v; }
int QLo(uint type) { return type == 1 ? -128 : 0; }
int QHi(uint type) { return type == 1 ? 127 : 255; }

// round(q) half to even, plus zp, saturated to [lo, hi]; NaN gives zp.
int QuantizeValue(float q, int zp, int lo, int hi) {
  if (isnan(q)) return zp;
  const float r = rint(q) + (float)zp;
  if (r < (float)lo) return lo;
  if (r > (float)hi) return hi;
  return (int)r;
}

// An int32 sum times an f32 multiplier, rounded half to even in double
// with KILN_F64 (the host arithmetic), plus zp, saturated.
int Requantize(int acc, float mult, int zp, int lo, int hi) {
#ifdef KILN_F64
  const double r = rint((double)acc * (double)mult) + (double)zp;
  if (r < (double)lo) return lo;
  if (r > (double)hi) return hi;
  return (int)r;
#else
  return QuantizeValue((float)acc * mult, zp, lo, hi);
#endif
}

typedef struct {
  uint n, m, cols, k, rank;
  uint batch[4];
  uint stride_a[4];
  uint stride_b[4];
} QMatMulPush;

__kernel void qmatmul(__global const uchar* a, __global const uchar* b, __global const uchar* za,
                      __global const uchar* zb, __global const float* sa, __global const float* sb,
                      __global const float* sy, __global const uchar* zy, __global uchar* y, QMatMulPush p) {
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
  if (YT == 2) {
    ((__global int*)y)[i] = acc;
  } else {
    const float mult = QDIV(sa[(FLAGS & 16) != 0 ? r : 0] * sb[(FLAGS & 32) != 0 ? j : 0], sy[0]);
    y[i] = (uchar)(Requantize(acc, mult, LoadQ(zy[0], YT), QLo(YT), QHi(YT)) & 0xff);
  }
}
