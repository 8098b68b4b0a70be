// DynamicQuantizeLinear's first pass, one work group of 64, as
// shaders/vulkan/dq_range.comp: the range of x (including 0, NaNs
// skipped), then the scale and u8 zero point as the host computes them in
// f32 (its quotients QDIV's, common.cl).
#define DQ_LOCAL 64

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
