// Y = act(alpha * A * B + beta * C) for MatMul, Gemm and 1x1 Conv, batched
// (shaders/vulkan/gemm.comp, same strides and push constants). One TM x TN
// tile per work group (common.cl), tiles counted n fastest, then m, batch.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 1
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#ifndef KILN_SPEC_6
#define KILN_SPEC_6 0
#endif
#define A_K_FAST (KILN_SPEC_3 != 0)
#define B_K_FAST (KILN_SPEC_4 != 0)
#ifndef KILN_SPEC_7
#define KILN_SPEC_7 0
#endif
#define ACT KILN_SPEC_5
// 0: the local-memory tile; RT > 0: an RT x RT register block a work item,
// straight from memory (CPU drivers; shaders/vulkan/gemm.comp).
#define RT KILN_SPEC_7
#define HAS_C (KILN_SPEC_6 != 0)
// The register block's rows (0: RT; 1 for a batch-1 product). Spec
// constant 9 (K4) is a form of texel reads (shaders/vulkan/gemm.comp) that
// the op layer never asks of OpenCL.
#ifndef KILN_SPEC_8
#define KILN_SPEC_8 0
#endif
#define RR (KILN_SPEC_8 != 0 ? KILN_SPEC_8 : RT)
// VN (spec constant 10, with RT == 8 and B contiguous along n, b_cs == 1):
// a work item's eight columns are one float8, loaded with one vload8 a k
// and updated with RR vector multiply-adds (broadcast A). PoCL does not
// vectorize this kernel across work items (the k loop inside), so the
// scalar form ran at one lane: 1024^3 at 14 GFLOP/s.
#ifndef KILN_SPEC_10
#define KILN_SPEC_10 0
#endif
#define VN (KILN_SPEC_10 != 0 && RT == 8)
#ifdef KILN_FP16
#define LOAD8_AT(p, i) vload_half8(0u, (p) + (i))
#define STORE8_AT(p, i, v) vstore_half8((v), 0u, (p) + (i))
#else
#define LOAD8_AT(p, i) vload8(0u, (p) + (i))
#define STORE8_AT(p, i, v) vstore8((v), 0u, (p) + (i))
#endif

#ifdef KILN_FP16
#define LOAD4_AT(p, i) vload_half4(0u, (p) + (i))
#else
#define LOAD4_AT(p, i) vload4(0u, (p) + (i))
#endif

// Eight columns of a row of B from bo on; past the last (a partial block)
// each reads column `last` again.
float8 LoadB8(__global const STORE_T* b, uint bo, bool whole, uint last) {
  if (whole) return LOAD8_AT(b, bo);
  float t[8];
  for (uint j = 0u; j < 8u; ++j) t[j] = LOAD(b, bo + min(j, last));
  return vload8(0u, t);
}

typedef struct {
  uint m, n, k;
  uint a_rs, a_cs, b_rs, b_cs;
  uint c_rs, c_cs;
  float alpha, beta;
  float lo, hi, slope;
  uint batches;
  uint bdims[4];
  uint sa[4], sb[4];
} GemmPush;

__kernel void gemm(__global const STORE_T* a, __global const STORE_T* b, __global const STORE_T* c,
                   __global STORE_T* y, GemmPush p) {
#if RT == 0
  __local float As[TK * (TILE_MAX + 1u)];
  __local float Bs[TK * (TILE_MAX + 1u)];
#define GTM TM
#define GTN TN
#else
#define GTM (RR * LY)
#define GTN (RT * LX)
#endif
  const uint tiles_n = (p.n + GTN - 1u) / GTN, tiles_m = (p.m + GTM - 1u) / GTM;
  uint tile = TILE_INDEX;
  if (tile >= tiles_n * tiles_m * p.batches) return;  // the whole group: before any barrier
  const uint col0 = (tile % tiles_n) * GTN;
  tile /= tiles_n;
  const uint row0 = (tile % tiles_m) * GTM;
  uint rest = tile / tiles_m, a_off = 0u, b_off = 0u;
  for (int d = 3; d >= 0; --d) {
    const uint q = rest / p.bdims[d], i = rest - q * p.bdims[d];
    a_off += i * p.sa[d];
    b_off += i * p.sb[d];
    rest = q;
  }
  const uint y_off = (tile / tiles_m) * p.m * p.n;
#if RT > 0
  if (VN) {
    const uint tx = get_local_id(0), ty = get_local_id(1);
    const uint c0 = col0 + tx * 8u;
    if (c0 >= p.n) return;  // no barrier in this form
    // Columns past N (a last partial block) read N - 1 and store nothing.
    const bool whole = c0 + 8u <= p.n;
    float8 acc[RR];
    uint ar[RR];
    for (uint i = 0u; i < RR; ++i) {
      ar[i] = a_off + min(row0 + ty * RR + i, p.m - 1u) * p.a_rs;
      acc[i] = (float8)(0.0f);
    }
    const uint last = p.n - 1u - c0;
    uint bo = b_off + c0, kk = 0u;
    // A along k (a_cs == 1): four k of a row a vector load, so a step of
    // four k is RR + 4 loads for 4 x RR vector multiply-adds.
    if (A_K_FAST) {
      for (; kk + 4u <= p.k; kk += 4u, bo += 4u * p.b_rs) {
        const float8 b0 = LoadB8(b, bo, whole, last), b1 = LoadB8(b, bo + p.b_rs, whole, last);
        const float8 b2 = LoadB8(b, bo + 2u * p.b_rs, whole, last), b3 = LoadB8(b, bo + 3u * p.b_rs, whole, last);
        for (uint i = 0u; i < RR; ++i) {
          const float4 av = LOAD4_AT(a, ar[i] + kk);
          acc[i] = fma((float8)(av.x), b0, acc[i]);
          acc[i] = fma((float8)(av.y), b1, acc[i]);
          acc[i] = fma((float8)(av.z), b2, acc[i]);
          acc[i] = fma((float8)(av.w), b3, acc[i]);
        }
      }
    }
    for (; kk < p.k; ++kk, bo += p.b_rs) {
      const float8 bv = LoadB8(b, bo, whole, last);
      for (uint i = 0u; i < RR; ++i) acc[i] = fma((float8)(LOAD(a, ar[i] + kk * p.a_cs)), bv, acc[i]);
    }
    for (uint i = 0u; i < RR; ++i) {
      const uint gi = row0 + ty * RR + i;
      if (gi >= p.m) break;
      float t[8];
      vstore8(acc[i], 0u, t);
      for (uint j = 0u; j < 8u; ++j) {
        const uint gj = c0 + j;
        float v = p.alpha * t[j];
        if (HAS_C && gj < p.n) v += p.beta * LOAD(c, gi * p.c_rs + gj * p.c_cs);
        t[j] = FusedActivation(ACT, v, p.lo, p.hi, p.slope);
      }
      if (whole) {
        STORE8_AT(y, y_off + gi * p.n + c0, vload8(0u, t));
      } else {
        for (uint j = 0u; c0 + j < p.n; ++j) STORE(y, y_off + gi * p.n + c0 + j, t[j]);
      }
    }
  } else {
    const uint tx = get_local_id(0), ty = get_local_id(1);
    float acc[RR][RT];
    uint ar[RR], bc[RT];
    for (uint i = 0u; i < RR; ++i) {
      ar[i] = a_off + min(row0 + ty * RR + i, p.m - 1u) * p.a_rs;
      for (uint j = 0u; j < RT; ++j) acc[i][j] = 0.0f;
    }
    for (uint j = 0u; j < RT; ++j) bc[j] = b_off + min(col0 + tx * RT + j, p.n - 1u) * p.b_cs;
    for (uint kk = 0u; kk < p.k; ++kk) {
      float av[RR], bv[RT];
      for (uint i = 0u; i < RR; ++i) av[i] = LOAD(a, ar[i] + kk * p.a_cs);
      for (uint j = 0u; j < RT; ++j) bv[j] = LOAD(b, bc[j] + kk * p.b_rs);
      for (uint i = 0u; i < RR; ++i)
        for (uint j = 0u; j < RT; ++j) acc[i][j] += av[i] * bv[j];
    }
    for (uint i = 0u; i < RR; ++i) {
      const uint gi = row0 + ty * RR + i;
      if (gi >= p.m) break;
      for (uint j = 0u; j < RT; ++j) {
        const uint gj = col0 + tx * RT + j;
        if (gj >= p.n) break;
        float v = p.alpha * acc[i][j];
        if (HAS_C) v += p.beta * LOAD(c, gi * p.c_rs + gj * p.c_cs);
        STORE(y, y_off + gi * p.n + gj, FusedActivation(ACT, v, p.lo, p.hi, p.slope));
      }
    }
  }
#else
  const uint tid = LOCAL_INDEX;
  float acc[16];
  for (uint i = 0u; i < 16u; ++i) acc[i] = 0.0f;
  for (uint k0 = 0u; k0 < p.k; k0 += TK) {
    for (uint e = tid; e < TM * TK; e += NT) {
      const uint r = A_K_FAST ? e / TK : e % TM, kk = A_K_FAST ? e % TK : e / TM;
      const uint gi = row0 + r, gk = k0 + kk;
      float v = 0.0f;
      if (gi < p.m && gk < p.k) v = LOAD(a, a_off + gi * p.a_rs + gk * p.a_cs);
      As[kk * AS_STRIDE + r] = v;
    }
    for (uint e = tid; e < TK * TN; e += NT) {
      const uint cc = B_K_FAST ? e / TK : e % TN, kk = B_K_FAST ? e % TK : e / TN;
      const uint gj = col0 + cc, gk = k0 + kk;
      float v = 0.0f;
      if (gj < p.n && gk < p.k) v = LOAD(b, b_off + gk * p.b_rs + gj * p.b_cs);
      Bs[kk * BS_STRIDE + cc] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    MultiplyTile(As, Bs, acc);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const uint tx = get_local_id(0), ty = get_local_id(1);
  for (uint i = 0u; i < 4u; ++i) {
    const uint gi = row0 + ty + i * LY;
    if (gi >= p.m) break;
    for (uint j = 0u; j < 4u; ++j) {
      const uint gj = col0 + tx + j * LX;
      if (gj >= p.n) break;
      float v = p.alpha * acc[i * 4u + j];
      if (HAS_C) v += p.beta * LOAD(c, gi * p.c_rs + gj * p.c_cs);
      STORE(y, y_off + gi * p.n + gj, FusedActivation(ACT, v, p.lo, p.hi, p.slope));
    }
  }
#endif
}
