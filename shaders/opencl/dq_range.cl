// DynamicQuantizeLinear's first pass, one work group of 64, as
// shaders/vulkan/dq_range.comp: the range of x (including 0, NaNs
// skipped), then the scale and u8 zero point as the host computes them in
// f32. KILN_F64 (dq_range_f64) divides in double.
#define DQ_LOCAL 64

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

__kernel __attribute__((reqd_work_group_size(DQ_LOCAL, 1, 1))) void dq_range(__global const float* x,
                                                                             __global float* scale,
                                                                             __global uchar* zero_point,
                                                                             QuantizePush p) {
  __local float smin[DQ_LOCAL];
  __local float smax[DQ_LOCAL];
  const uint t = (uint)get_local_id(0);
  float mn = 0.0f, mx = 0.0f;
  for (uint i = t; i < p.n; i += DQ_LOCAL) {
    const float v = x[i];
    if (v < mn) mn = v;
    if (v > mx) mx = v;
  }
  smin[t] = mn;
  smax[t] = mx;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = DQ_LOCAL / 2; h > 0; h >>= 1) {
    if (t < h) {
      if (smin[t + h] < smin[t]) smin[t] = smin[t + h];
      if (smax[t + h] > smax[t]) smax[t] = smax[t + h];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) {
    mn = smin[0];
    mx = smax[0];
    const float s = QDIV(mx == mn ? 1.0f : mx - mn, 255.0f);
    const float zpf = fmin(255.0f, fmax(0.0f, 0.0f - QDIV(mn, s)));
    scale[0] = s;
    zero_point[0] = (uchar)((uint)rint(zpf) & 0xff);
  }
}
