// Attention for CPU devices (PoCL; backends/gpu/ops/gpu_attention.cpp picks
// it): attention.cl's work, sixteen keys a block.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 4
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 8
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#ifndef KILN_SPEC_6
#define KILN_SPEC_6 0
#endif
#ifndef KILN_SPEC_7
#define KILN_SPEC_7 8
#endif
#define RB KILN_SPEC_3                   // query rows a work item
#define DV4 KILN_SPEC_4                  // ceil(Dv / 4), at most 32
#define HAS_MASK (KILN_SPEC_5 != 0)      // the mask (argument 3) added to the scores
#define ALIGNED (KILN_SPEC_6 != 0)       // D, S and Dv multiples of 4: float4 loads
#define D4 KILN_SPEC_7                   // ceil(D / 4), at most 32

typedef struct {
  uint l, d, s, dv, total;
  float scale;
  uint m_row, m_col;
  uint m_extent[3], m_stride[3];  // runs of batch dims (ops/attention_mask.h), outermost first
} AttentionPush;

// The form for CPU devices (PoCL), where work items run side by side in
// vector lanes and a load that is the same for every item of a head (K's
// rows above) becomes a gather: one item a row block, sixteen keys a block
// in float16 vectors (one load of K's row a step of D, and the block's
// softmax across a vector's lanes), Q's rows scaled in registers, V's rows
// as above. ALIGNED, S a multiple of 16.
#ifdef KILN_FP16
#define LOAD16(p, i) vload_half16((i), (p))
#else
#define LOAD16(p, i) vload16((i), (p))
#endif

float Max16(float16 v) {
  const float8 a = fmax(v.lo, v.hi);
  const float4 b = fmax(a.lo, a.hi);
  return fmax(fmax(b.x, b.y), fmax(b.z, b.w));
}

float Sum16(float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  return (b.x + b.y) + (b.z + b.w);
}

__kernel void attention_k16(__global const STORE_T* q, __global const STORE_T* kt, __global const STORE_T* v,
                            __global const STORE_T* mask, __global STORE_T* y, AttentionPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint blocks = (p.l + RB - 1u) / RB;
  const uint b = i / blocks, i0 = (i % blocks) * RB;
  uint mbase = 0u, rest = b;
  for (int k = 2; k >= 0; --k) {
    mbase += rest % p.m_extent[k] * p.m_stride[k];
    rest /= p.m_extent[k];
  }
  uint row[RB];
  for (uint r = 0u; r < RB; ++r) row[r] = min(i0 + r, p.l - 1u);
  float qs[RB][4 * D4];
  for (uint r = 0u; r < RB; ++r)
    for (uint c = 0u; c < D4; ++c) {
      const float4 t = LOAD4(q, ((b * p.l + row[r]) * p.d) / 4u + c) * p.scale;
      qs[r][4 * c] = t.x, qs[r][4 * c + 1] = t.y, qs[r][4 * c + 2] = t.z, qs[r][4 * c + 3] = t.w;
    }
  float4 acc[RB][DV4];
  float m[RB], l[RB];
  for (uint r = 0u; r < RB; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
    for (uint c = 0u; c < DV4; ++c) acc[r][c] = (float4)(0.0f);
  }
  for (uint j = 0u; j < p.s; j += 16u) {
    float16 sc[RB];
    for (uint r = 0u; r < RB; ++r) sc[r] = (float16)(0.0f);
    for (uint dd = 0u; dd < p.d; ++dd) {
      const float16 k16 = LOAD16(kt, ((b * p.d + dd) * p.s + j) / 16u);
      for (uint r = 0u; r < RB; ++r) sc[r] += qs[r][dd] * k16;
    }
    float e[RB][16];
    for (uint r = 0u; r < RB; ++r) {
      float16 s16 = sc[r];
      if (HAS_MASK) {
        float t[16];
        vstore16(s16, 0, t);
        for (uint k = 0u; k < 16u; ++k) t[k] += LOAD(mask, mbase + row[r] * p.m_row + (j + k) * p.m_col);
        s16 = vload16(0, t);
      }
      const float mx = fmax(m[r], Max16(s16));
      const float base = mx == -INFINITY ? 0.0f : mx;  // keeps exp(-inf - -inf) out
      const float corr = exp(m[r] - base);
      const float16 e16 = exp(s16 - base);
      l[r] = l[r] * corr + Sum16(e16);
      m[r] = mx;
      vstore16(e16, 0, e[r]);
      for (uint c = 0u; c < DV4; ++c) acc[r][c] *= corr;
    }
    for (uint k = 0u; k < 16u; ++k) {
      const uint vrow = ((b * p.s + j + k) * p.dv) / 4u;
      for (uint c = 0u; c < DV4; ++c) {
        const float4 vv = LOAD4(v, vrow + c);
        for (uint r = 0u; r < RB; ++r) acc[r][c] += e[r][k] * vv;
      }
    }
  }
  for (uint r = 0u; r < RB && i0 + r < p.l; ++r) {
    const float inv = p.s == 0u ? 0.0f : 1.0f / l[r];  // no keys: empty sums, as the host
    for (uint c = 0u; c < DV4; ++c) STORE4(y, ((b * p.l + i0 + r) * p.dv) / 4u + c, acc[r][c] * inv);
  }
}
