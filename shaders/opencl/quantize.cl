// QuantizeLinear (and DynamicQuantizeLinear's second pass), as
// shaders/vulkan/quantize.comp: y[i] = saturate(round_half_even(x[i] / s[c])
// + z[c]), c = (i / inner) % axis_n. TYPE (spec 3): y's type (0 u8, 1 i8);
// HAS_ZP (spec 4) 0: zero point 0. KILN_F64 (quantize_f64) divides in double.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define TYPE KILN_SPEC_3
#define HAS_ZP KILN_SPEC_4

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
  uint n, axis_n, inner;
} QuantizePush;

__kernel void quantize(__global const float* x, __global const float* s, __global const uchar* z, __global uchar* y,
                       QuantizePush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint c = (i / p.inner) % p.axis_n;
  const int zp = HAS_ZP != 0 ? LoadQ(z[c], TYPE) : 0;
  const int v = QuantizeValue(QDIV(x[i], s[c]), zp, QLo(TYPE), QHi(TYPE));
  y[i] = (uchar)(v & 0xff);
}
