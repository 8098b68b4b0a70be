// Attention, Y = softmax(scale * Q KT + mask, last axis) V in one pass over
// the keys with an online softmax (shaders/vulkan/attention.comp, which
// documents the layout and the work of an item): RB query rows of one batch
// a work item, held scaled in D4 float4s a row, DV4 float4 accumulators a
// row.
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

// 4 elements of a row from `at`, 0 from `valid` on (`valid` >= 4: all).
float4 Load4Masked(__global const STORE_T* x, uint at, uint valid) {
  if (ALIGNED) return LOAD4(x, at / 4u);
  float4 r = (float4)(0.0f);
  if (valid > 0u) r.x = LOAD(x, at);
  if (valid > 1u) r.y = LOAD(x, at + 1u);
  if (valid > 2u) r.z = LOAD(x, at + 2u);
  if (valid > 3u) r.w = LOAD(x, at + 3u);
  return r;
}

__kernel void attention(__global const STORE_T* q, __global const STORE_T* kt, __global const STORE_T* v,
                        __global const STORE_T* mask, __global STORE_T* y, AttentionPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint blocks = (p.l + RB - 1u) / RB;
  const uint b = i / blocks, i0 = (i % blocks) * RB;
  uint mbase = 0u, rest = b;  // the mask's offset for batch b
  for (int k = 2; k >= 0; --k) {
    mbase += rest % p.m_extent[k] * p.m_stride[k];
    rest /= p.m_extent[k];
  }
  uint row[RB];
  for (uint r = 0u; r < RB; ++r) row[r] = min(i0 + r, p.l - 1u);

  // The rows of Q, scaled, held for every key.
  float4 qs[RB][D4];
  for (uint r = 0u; r < RB; ++r)
    for (uint c = 0u; c < D4; ++c) qs[r][c] = Load4Masked(q, (b * p.l + row[r]) * p.d + 4u * c, p.d - 4u * c) * p.scale;
  float4 acc[RB][DV4];
  float m[RB], l[RB];
  for (uint r = 0u; r < RB; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
    for (uint c = 0u; c < DV4; ++c) acc[r][c] = (float4)(0.0f);
  }
  for (uint j = 0u; j < p.s; j += 4u) {
    const uint keys = min(4u, p.s - j);
    float4 sc[RB];
    for (uint r = 0u; r < RB; ++r) sc[r] = (float4)(0.0f);
    for (uint c = 0u; c < D4; ++c) {
      const uint dd = 4u * c, base = (b * p.d + dd) * p.s + j;
      const float4 k0 = Load4Masked(kt, base, keys);
      const float4 k1 = dd + 1u < p.d ? Load4Masked(kt, base + p.s, keys) : (float4)(0.0f);
      const float4 k2 = dd + 2u < p.d ? Load4Masked(kt, base + 2u * p.s, keys) : (float4)(0.0f);
      const float4 k3 = dd + 3u < p.d ? Load4Masked(kt, base + 3u * p.s, keys) : (float4)(0.0f);
      for (uint r = 0u; r < RB; ++r) {
        const float4 qv = qs[r][c];
        sc[r] += qv.x * k0 + qv.y * k1 + qv.z * k2 + qv.w * k3;
      }
    }
    float4 e[RB];
    for (uint r = 0u; r < RB; ++r) {
      float s4[4] = {sc[r].x, sc[r].y, sc[r].z, sc[r].w};
      for (uint k = 0u; k < 4u; ++k) {
        if (k >= keys) {
          s4[k] = -INFINITY;
        } else if (HAS_MASK) {
          s4[k] += LOAD(mask, mbase + row[r] * p.m_row + (j + k) * p.m_col);
        }
      }
      const float mx = fmax(m[r], fmax(fmax(s4[0], s4[1]), fmax(s4[2], s4[3])));
      const float base = mx == -INFINITY ? 0.0f : mx;  // keeps exp(-inf - -inf) out
      const float corr = exp(m[r] - base);
      e[r] = exp((float4)(s4[0], s4[1], s4[2], s4[3]) - base);
      l[r] = l[r] * corr + (e[r].x + e[r].y) + (e[r].z + e[r].w);
      m[r] = mx;
      for (uint c = 0u; c < DV4; ++c) acc[r][c] *= corr;
    }
    // V's rows j .. j+3 (a row past S weighs 0, and is read only when S
    // is a multiple of 4, so inside V).
    const uint vrow = (b * p.s + j) * p.dv;
    for (uint c = 0u; c < DV4; ++c) {
      const uint at = vrow + 4u * c, valid = p.dv - 4u * c;
      const float4 v0 = Load4Masked(v, at, valid);
      const float4 v1 = keys > 1u ? Load4Masked(v, at + p.dv, valid) : (float4)(0.0f);
      const float4 v2 = keys > 2u ? Load4Masked(v, at + 2u * p.dv, valid) : (float4)(0.0f);
      const float4 v3 = keys > 3u ? Load4Masked(v, at + 3u * p.dv, valid) : (float4)(0.0f);
      for (uint r = 0u; r < RB; ++r) acc[r][c] += e[r].x * v0 + e[r].y * v1 + e[r].z * v2 + e[r].w * v3;
    }
  }
  for (uint r = 0u; r < RB && i0 + r < p.l; ++r) {
    const float inv = p.s == 0u ? 0.0f : 1.0f / l[r];  // no keys: empty sums, as the host
    const uint at = (b * p.l + i0 + r) * p.dv;
    for (uint c = 0u; c < DV4; ++c) {
      const float4 o = acc[r][c] * inv;
      const float e4[4] = {o.x, o.y, o.z, o.w};
      for (uint k = 0u; k < 4u && 4u * c + k < p.dv; ++k) STORE(y, at + 4u * c + k, e4[k]);
    }
  }
}

