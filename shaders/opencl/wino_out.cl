// Winograd F(2x2, 3x3), the output transform (shaders/vulkan/wino_out.comp,
// which documents the buffers): one work item a (image, output block, tile).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_6
#define KILN_SPEC_6 0
#endif
#ifndef KILN_SPEC_9
#define KILN_SPEC_9 0
#endif
#define ACT KILN_SPEC_3
#define HAS_BIAS (KILN_SPEC_4 != 0)
#define Y_PACKED (KILN_SPEC_6 != 0)
#define HAS_RESIDUAL (KILN_SPEC_9 != 0)  // r (argument 3) added before the activation

__kernel void wino_out(__global const STORE_T* prod, __global const STORE_T* u, __global STORE_T* y, __global const STORE_T* r,
                       WinoPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint t = i % p.tiles;
  i /= p.tiles;
  const uint mb = i % p.m4, n = i / p.m4;
  const uint base = (n * 16u * p.m4 + mb) * p.tiles + t, step = p.m4 * p.tiles;
  float4 s0[4], s1[4];
  for (uint c = 0u; c < 4u; ++c) {
    const float4 m0 = LOAD4(prod, base + c * step), m1 = LOAD4(prod, base + (4u + c) * step);
    const float4 m2 = LOAD4(prod, base + (8u + c) * step), m3 = LOAD4(prod, base + (12u + c) * step);
    s0[c] = m0 + m1 + m2;
    s1[c] = m1 - m2 - m3;
  }
  const float4 bv = HAS_BIAS ? LOAD4(u, p.bias_at + mb) : (float4)(0.0f);
  const uint oy0 = (t / p.tw) * 2u, ox0 = (t % p.tw) * 2u, ovol = p.oh * p.ow;
  for (uint dy = 0u; dy < 2u && oy0 + dy < p.oh; ++dy) {
    const float4* s = dy == 0u ? s0 : s1;
    const uint row = (oy0 + dy) * p.ow;
    StoreY4R(y, r, HAS_RESIDUAL, Y_PACKED, ACT, p.m, n, mb, ovol, row + ox0, s[0] + s[1] + s[2] + bv, p.lo, p.hi,
             p.slope);
    if (ox0 + 1u < p.ow)
      StoreY4R(y, r, HAS_RESIDUAL, Y_PACKED, ACT, p.m, n, mb, ovol, row + ox0 + 1u, s[1] - s[2] - s[3] + bv, p.lo,
               p.hi, p.slope);
  }
}
