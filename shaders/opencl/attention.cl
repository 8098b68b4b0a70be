// Attention, Y = softmax(scale * Q KT + mask, last axis) V in one pass over
// the keys with an online softmax (shaders/vulkan/attention.comp, which
// documents the layout and the work of an item): RB query rows of one batch
// a work item, held scaled in D4 float4s a row, DV4 float4 accumulators a
// row; four keys a block, or sixteen (KILN_KEYS16).
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

// The mask's offset for batch b (runs of batch dims, outermost first).
uint MaskOffset(uint b, AttentionPush p) {
  uint off = 0u;
  for (int k = 2; k >= 0; --k) {
    off += b % p.m_extent[k] * p.m_stride[k];
    b /= p.m_extent[k];
  }
  return off;
}

// Both forms' start: the item's batch b, its first row i0, the mask's
// offset mbase and its RB rows (rows past L repeat the last one and are not
// stored), and each row's online softmax state: the running maximum m, the
// sum l and the output accumulators acc, empty. (The signatures stay
// written out: cl_backend.cpp appends the buffer offsets to them.)
#define ATTENTION_BEGIN                                              \
  const uint i = KILN_GLOBAL_INDEX;                                  \
  if (i >= p.total) return;                                          \
  const uint blocks = (p.l + RB - 1u) / RB;                          \
  const uint b = i / blocks, i0 = (i % blocks) * RB;                 \
  const uint mbase = HAS_MASK ? MaskOffset(b, p) : 0u;               \
  uint row[RB];                                                      \
  for (uint r = 0u; r < RB; ++r) row[r] = min(i0 + r, p.l - 1u);     \
  float4 acc[RB][DV4];                                               \
  float m[RB], l[RB];                                                \
  for (uint r = 0u; r < RB; ++r) {                                   \
    m[r] = -INFINITY;                                                \
    l[r] = 0.0f;                                                     \
    for (uint c = 0u; c < DV4; ++c) acc[r][c] = (float4)(0.0f);      \
  }

#ifdef KILN_KEYS16
// KILN_KEYS16 (the attention_k16 variant, cl_backend.cpp): the form for
// CPU devices (PoCL), where work items run side by side in vector lanes and
// a load that is the same for every item of a head (K's rows in the form
// below) becomes a gather: one item a row block, sixteen keys a block in
// float16 vectors (one load of K's row a step of D, and the block's softmax
// across a vector's lanes), Q's rows scaled in registers, V's rows as in
// the other form. ALIGNED, S a multiple of 16.
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

__kernel void attention(__global const STORE_T* q, __global const STORE_T* kt, __global const STORE_T* v,
                        __global const STORE_T* mask, __global STORE_T* y, AttentionPush p) {
  ATTENTION_BEGIN
  float qs[RB][4 * D4];
  for (uint r = 0u; r < RB; ++r)
    for (uint c = 0u; c < D4; ++c) {
      const float4 t = LOAD4(q, ((b * p.l + row[r]) * p.d) / 4u + c) * p.scale;
      qs[r][4 * c] = t.x, qs[r][4 * c + 1] = t.y, qs[r][4 * c + 2] = t.z, qs[r][4 * c + 3] = t.w;
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

#else

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
  ATTENTION_BEGIN

  // The rows of Q, scaled, held for every key.
  float4 qs[RB][D4];
  for (uint r = 0u; r < RB; ++r)
    for (uint c = 0u; c < D4; ++c) qs[r][c] = Load4Masked(q, (b * p.l + row[r]) * p.d + 4u * c, p.d - 4u * c) * p.scale;
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

#endif
