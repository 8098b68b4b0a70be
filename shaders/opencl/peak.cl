// The device's roof for kiln-kernelbench (OpenCLBackend::measurePeaks;
// shaders/vulkan/peak.comp). MODE 0: `iters` rounds of 8 independent float4
// FMA chains in registers per work item (64 flops a round), their sum
// written so that nothing is optimised away; each chain starts from its own
// value so that no compiler merges them. MODE 1: copies n float4s.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define MODE KILN_SPEC_3

typedef struct {
  uint n, iters;
  float x, y;
} PeakPush;

__kernel void peak(__global const float4* a, __global float4* b, PeakPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (MODE == 1) {
    if (i < p.n) b[i] = a[i];
    return;
  }
  const float4 x = (float4)(p.x), y = (float4)(p.y);
  float4 v0 = (float4)((float)i * 1e-9f), v1 = v0 + 1.0f, v2 = v0 + 2.0f, v3 = v0 + 3.0f;
  float4 v4 = v0 + 4.0f, v5 = v0 + 5.0f, v6 = v0 + 6.0f, v7 = v0 + 7.0f;
  for (uint k = 0; k < p.iters; ++k) {
    v0 = fma(v0, x, y); v1 = fma(v1, x, y); v2 = fma(v2, x, y); v3 = fma(v3, x, y);
    v4 = fma(v4, x, y); v5 = fma(v5, x, y); v6 = fma(v6, x, y); v7 = fma(v7, x, y);
  }
  if (i < p.n) b[i] = ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7));
}
