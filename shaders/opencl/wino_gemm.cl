// Winograd F(2x2, 3x3), the 16 products (shaders/vulkan/wino_gemm.comp,
// which documents the buffers): one work item owns MB blocks of four output
// channels by TB tiles of one position of one image.
#ifndef KILN_SPEC_7
#define KILN_SPEC_7 4
#endif
#ifndef KILN_SPEC_8
#define KILN_SPEC_8 1
#endif
#define TB KILN_SPEC_7
#define MB KILN_SPEC_8

__kernel void wino_gemm(__global const STORE_T* v, __global const STORE_T* u, __global STORE_T* out, WinoPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint tbb = (p.tiles + TB - 1u) / TB, mbb = (p.m4 + MB - 1u) / MB;
  const uint t0 = (i % tbb) * TB;
  i /= tbb;
  const uint q0 = (i % mbb) * MB;
  i /= mbb;
  const uint pos = i % 16u, n = i / 16u;
  float4 acc[MB][TB];
  for (uint mb = 0u; mb < MB; ++mb)
    for (uint b = 0u; b < TB; ++b) acc[mb][b] = (float4)(0.0f);
  uint tix[TB];
  for (uint b = 0u; b < TB; ++b) tix[b] = min(t0 + b, p.tiles - 1u);
  uint wrow[MB];
  for (uint mb = 0u; mb < MB; ++mb) wrow[mb] = (pos * p.m4 + min(q0 + mb, p.m4 - 1u)) * p.c4 * 4u;
  const uint vbase = (n * 16u + pos) * p.c4 * p.tiles;
  for (uint cb = 0u; cb < p.c4; ++cb) {
    float4 xv[TB];
    for (uint b = 0u; b < TB; ++b) xv[b] = LOAD4(v, vbase + cb * p.tiles + tix[b]);
    for (uint mb = 0u; mb < MB; ++mb) {
      const uint wi = wrow[mb] + cb * 4u;
      const float4 w0 = LOAD4(u, wi), w1 = LOAD4(u, wi + 1u), w2 = LOAD4(u, wi + 2u), w3 = LOAD4(u, wi + 3u);
      for (uint b = 0u; b < TB; ++b) acc[mb][b] += w0 * xv[b].x + w1 * xv[b].y + w2 * xv[b].z + w3 * xv[b].w;
    }
  }
  for (uint mb = 0u; mb < MB && q0 + mb < p.m4; ++mb) {
    const uint obase = ((n * 16u + pos) * p.m4 + q0 + mb) * p.tiles;
    for (uint b = 0u; b < TB && t0 + b < p.tiles; ++b) STORE4(out, obase + t0 + b, acc[mb][b]);
  }
}
