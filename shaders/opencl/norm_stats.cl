// Row statistics for LayerNormalization and InstanceNormalization
// (shaders/vulkan/norm_stats.comp): X viewed as [rows, len] (contiguous
// rows), mean[r] and inv[r] = 1 / sqrt(variance + eps). Two passes over the
// row, as the host: the mean, then the mean of squared deviations from it
// (no cancellation from E[x^2] - E[x]^2). With APPLY, also the normalized
// row (LayerNorm in one dispatch).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#define ROW_GROUP (KILN_SPEC_3 != 0)
#define APPLY (KILN_SPEC_4 != 0)     // also writes the normalized row (norm_stats.comp)
#define HAS_BIAS (KILN_SPEC_5 != 0)

typedef struct {
  uint rows, len;
  float eps;
} NormStatsPush;

// The sum of a row over the work group (each item's `v`), or `v` itself with
// one item per row. `partial` is the kernel's __local array (OpenCL 1.2
// declares __local variables in kernel scope only).
float RowSum(float v, __local float* partial) {
  if (!ROW_GROUP) return v;
  const uint lane = (uint)get_local_id(0);
  partial[lane] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = (uint)get_local_size(0) / 2u; s > 0u; s >>= 1) {
    if (lane < s) partial[lane] += partial[lane + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float sum = partial[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // partial is reused by the next call
  return sum;
}

__kernel void norm_stats(__global const STORE_T* x, __global STORE_T* mean, __global STORE_T* inv,
                         __global const STORE_T* scale, __global const STORE_T* bias, __global STORE_T* y,
                         NormStatsPush p) {
  __local float partial[KILN_SPEC_0];
  const uint r = ROW_INDEX;
  if (r >= p.rows) return;  // uniform in a ROW_GROUP group
  const uint base = r * p.len;
  float sum = 0.0f;
  for (uint i = ROW_LANE; i < p.len; i += ROW_STEP) sum += LOAD(x, base + i);
  const float m = RowSum(sum, partial) / (float)p.len;
  float sq = 0.0f;
  for (uint i = ROW_LANE; i < p.len; i += ROW_STEP) {
    const float d = LOAD(x, base + i) - m;
    sq += d * d;
  }
  const float var = RowSum(sq, partial) / (float)p.len;
  const float is = 1.0f / sqrt(var + p.eps);
  if (APPLY) {
    for (uint i = ROW_LANE; i < p.len; i += ROW_STEP) {
      const float b = HAS_BIAS ? LOAD(bias, i) : 0.0f;
      STORE(y, base + i, (LOAD(x, base + i) - m) * is * LOAD(scale, i) + b);
    }
  }
  if (ROW_LANE != 0u) return;
  STORE(mean, r, m);
  STORE(inv, r, is);
}
