#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "wino_common.glsl"

// The 16 products: one invocation owns MB blocks of four output channels
// by TB consecutive tiles of one position of one image, and sums over the
// input blocks cb: acc += U[pos][mb][cb] (four vec4 columns, lane = output
// channel) times V[pos][cb][t] (binding 0, as wino_in wrote it). Weights
// (binding 1): column j of (pos, mb, cb) at ((pos * m4 + mb) * c4 + cb) * 4
// + j. Writes position pos of block mb of tile t at ((n * 16 + pos) * m4 +
// mb) * tiles + t (binding 2). Invocations: tile group fastest, then block
// group, position, image.
//
// Buffers hold STORE_T (wino_gemm_f16: fp16 storage). KILN_FP16_MATH
// (wino_gemm_f16m): half multiply-adds, KILN_F16_CHUNK input blocks a
// partial sum, the partial sums added in f32 (common.glsl).
// KILN_TEXEL (wino_gemm_tx): V and U read as uniform texel buffers of vec4
// (GpuCaps::texel_elements), where lavapipe's storage-buffer loads run lane
// by lane.
layout(constant_id = 7) const uint TB = 4u;
layout(constant_id = 8) const uint MB = 1u;
#ifdef KILN_TEXEL
layout(binding = 0) uniform samplerBuffer v_texels;
layout(binding = 1) uniform samplerBuffer u_texels;
#define LOAD_V(i) MATH4_T(texelFetch(v_texels, int(i)))
#define LOAD_U(i) MATH4_T(texelFetch(u_texels, int(i)))
#else
layout(std430, binding = 0) readonly buffer V { STORE4_T v4[]; };
layout(std430, binding = 1) readonly buffer U { STORE4_T u4[]; };
#define LOAD_V(i) MATH4_T(v4[i])
#define LOAD_U(i) MATH4_T(u4[i])
#endif
layout(std430, binding = 2) writeonly buffer M { STORE4_T m4[]; };

// Input block cb's products, TB tiles by MB output blocks, added to SUM
// (MATH4_T[MB][TB]: the f32 accumulators, or a half partial sum), with
// main's vbase, tix and wrow: one body for both arithmetics.
#define WINO_BLOCK(SUM, cb)                                                                        \
  {                                                                                                \
    MATH4_T xv[TB];                                                                                \
    [[unroll]] for (uint b = 0u; b < TB; ++b) xv[b] = LOAD_V(vbase + (cb) * p.tiles + tix[b]);    \
    [[unroll]] for (uint mb = 0u; mb < MB; ++mb) {                                                 \
      const uint wi = wrow[mb] + (cb) * 4u;                                                        \
      const MATH4_T w0 = LOAD_U(wi), w1 = LOAD_U(wi + 1u), w2 = LOAD_U(wi + 2u), w3 = LOAD_U(wi + 3u); \
      [[unroll]] for (uint b = 0u; b < TB; ++b)                                                    \
        SUM[mb][b] += w0 * xv[b].x + w1 * xv[b].y + w2 * xv[b].z + w3 * xv[b].w;                  \
    }                                                                                              \
  }

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint tbb = (p.tiles + TB - 1u) / TB, mbb = (p.m4 + MB - 1u) / MB;
  const uint t0 = (i % tbb) * TB;
  i /= tbb;
  const uint q0 = (i % mbb) * MB;
  i /= mbb;
  const uint pos = i % 16u, n = i / 16u;
  vec4 acc[MB][TB];
  [[unroll]] for (uint mb = 0u; mb < MB; ++mb)
    [[unroll]] for (uint b = 0u; b < TB; ++b) acc[mb][b] = vec4(0.0);
  uint tix[TB];  // tiles past the last read the last, store nothing
  [[unroll]] for (uint b = 0u; b < TB; ++b) tix[b] = min(t0 + b, p.tiles - 1u);
  uint wrow[MB];
  [[unroll]] for (uint mb = 0u; mb < MB; ++mb) wrow[mb] = (pos * p.m4 + min(q0 + mb, p.m4 - 1u)) * p.c4 * 4u;
  const uint vbase = (n * 16u + pos) * p.c4 * p.tiles;
#ifdef KILN_FP16_MATH
  for (uint c0 = 0u; c0 < p.c4; c0 += KILN_F16_CHUNK) {
    MATH4_T part[MB][TB];
    [[unroll]] for (uint mb = 0u; mb < MB; ++mb)
      [[unroll]] for (uint b = 0u; b < TB; ++b) part[mb][b] = MATH4_T(0.0);
    for (uint cb = c0; cb < min(c0 + KILN_F16_CHUNK, p.c4); ++cb) WINO_BLOCK(part, cb)
    [[unroll]] for (uint mb = 0u; mb < MB; ++mb)
      [[unroll]] for (uint b = 0u; b < TB; ++b) acc[mb][b] += vec4(part[mb][b]);
  }
#else
  for (uint cb = 0u; cb < p.c4; ++cb) WINO_BLOCK(acc, cb)
#endif
  [[unroll]] for (uint mb = 0u; mb < MB; ++mb) {
    if (q0 + mb >= p.m4) break;
    const uint obase = ((n * 16u + pos) * p.m4 + q0 + mb) * p.tiles;
    [[unroll]] for (uint b = 0u; b < TB; ++b) {
      if (t0 + b >= p.tiles) break;
      m4[obase + t0 + b] = STORE4_T(acc[mb][b]);
    }
  }
}
