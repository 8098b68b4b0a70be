#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

#define KILN_INF uintBitsToFloat(0x7f800000u)

// Attention (the fuse_attention pass's op; backends/gpu/ops/gpu_attention.cpp
// plans it): Y = softmax(scale * Q KT + mask, last axis) V with Q [B, L, D],
// KT [B, D, S], V [B, S, Dv] (batch dims flattened), in one pass over the
// keys and without storing the scores: an online softmax keeps each row's
// running maximum m and sum l of exp(score - m), and rescales the row's
// accumulated output when m grows. An invocation owns RB query rows of one
// batch, held scaled in registers (D4 vec4s a row), and all Dv output
// columns (DV4 vec4 accumulators a row); per block of four keys it computes
// the RB x 4 scores four steps of D at a time (vec4 loads of KT's rows, each
// used for the RB rows), updates m and l, and adds the four rows of V, each
// loaded once for the RB rows. The mask (binding 3, where HAS_MASK) is
// read at MaskOffset(b) + row * m_row + key * m_col (0 strides where it
// broadcasts). A row whose scores are all -inf gives NaN, as the host's
// Softmax. Invocations: row block fastest, then batch.
layout(constant_id = 3) const uint RB = 4u;           // query rows an invocation
layout(constant_id = 4) const uint DV4 = 8u;          // ceil(Dv / 4), at most 32
layout(constant_id = 5) const bool HAS_MASK = false;
layout(constant_id = 6) const bool ALIGNED = false;   // D, S and Dv multiples of 4: vec4 loads
layout(constant_id = 7) const uint D4 = 8u;           // ceil(D / 4), at most 32

layout(std430, binding = 0) readonly buffer Q { STORE_T q[]; };
layout(std430, binding = 0) readonly buffer Q4 { STORE4_T q4[]; };
layout(std430, binding = 1) readonly buffer KT { STORE_T kt[]; };
layout(std430, binding = 1) readonly buffer KT4 { STORE4_T kt4[]; };
layout(std430, binding = 2) readonly buffer V { STORE_T v[]; };
layout(std430, binding = 2) readonly buffer V4 { STORE4_T v4[]; };
layout(std430, binding = 3) readonly buffer M { STORE_T mask[]; };
layout(std430, binding = 4) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint l, d, s, dv, total;
  float scale;
  uint m_row, m_col;
  uint m_extent0, m_extent1, m_extent2;  // runs of batch dims (ops/attention_mask.h), outermost first
  uint m_stride0, m_stride1, m_stride2;
} p;

// The mask's offset for batch b.
uint MaskOffset(uint b) {
  uint off = (b % p.m_extent2) * p.m_stride2;
  b /= p.m_extent2;
  off += (b % p.m_extent1) * p.m_stride1;
  b /= p.m_extent1;
  return off + (b % p.m_extent0) * p.m_stride0;
}

// Q[b][row][dd .. dd+3], 0 past D.
vec4 LoadQ4(uint b, uint row, uint dd) {
  const uint at = (b * p.l + row) * p.d + dd;
  if (ALIGNED) return vec4(q4[at / 4u]);
  vec4 r = vec4(0.0);
  [[unroll]] for (uint k = 0u; k < 4u; ++k)
    if (dd + k < p.d) r[k] = float(q[at + k]);
  return r;
}

// KT[b][dd][j .. j+3]: 0 past S, and 0 for a row dd past D.
vec4 LoadKT4(uint b, uint dd, uint j) {
  const uint at = (b * p.d + dd) * p.s + j;
  if (ALIGNED) return vec4(kt4[at / 4u]);
  vec4 r = vec4(0.0);
  if (dd >= p.d) return r;
  [[unroll]] for (uint k = 0u; k < 4u; ++k)
    if (j + k < p.s) r[k] = float(kt[at + k]);
  return r;
}

// V[b][j][4c .. 4c+3], 0 past Dv.
vec4 LoadV4(uint b, uint j, uint c) {
  const uint at = (b * p.s + j) * p.dv + 4u * c;
  if (ALIGNED) return vec4(v4[at / 4u]);
  vec4 r = vec4(0.0);
  [[unroll]] for (uint k = 0u; k < 4u; ++k)
    if (4u * c + k < p.dv) r[k] = float(v[at + k]);
  return r;
}

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint blocks = (p.l + RB - 1u) / RB;
  const uint b = i / blocks, i0 = (i % blocks) * RB;
  const uint mbase = HAS_MASK ? MaskOffset(b) : 0u;
  uint row[RB];  // rows past L repeat the last one and are not stored
  [[unroll]] for (uint r = 0u; r < RB; ++r) row[r] = min(i0 + r, p.l - 1u);

  // The rows of Q, scaled, held for every key.
  vec4 qs[RB][D4];
  [[unroll]] for (uint r = 0u; r < RB; ++r)
    [[unroll]] for (uint c = 0u; c < D4; ++c) qs[r][c] = LoadQ4(b, row[r], 4u * c) * p.scale;
  vec4 acc[RB][DV4];
  float m[RB], l[RB];
  [[unroll]] for (uint r = 0u; r < RB; ++r) {
    m[r] = -KILN_INF;
    l[r] = 0.0;
    [[unroll]] for (uint c = 0u; c < DV4; ++c) acc[r][c] = vec4(0.0);
  }
  for (uint j = 0u; j < p.s; j += 4u) {
    // The scores of keys j .. j+3: sc[r][k] = scale * Q[row r] . KT[:, j + k].
    vec4 sc[RB];
    [[unroll]] for (uint r = 0u; r < RB; ++r) sc[r] = vec4(0.0);
    for (uint c = 0u; c < D4; ++c) {
      const uint dd = 4u * c;
      const vec4 k0 = LoadKT4(b, dd, j), k1 = LoadKT4(b, dd + 1u, j), k2 = LoadKT4(b, dd + 2u, j),
                 k3 = LoadKT4(b, dd + 3u, j);
      [[unroll]] for (uint r = 0u; r < RB; ++r) {
        const vec4 qv = qs[r][c];
        sc[r] += qv.x * k0 + qv.y * k1 + qv.z * k2 + qv.w * k3;
      }
    }
    // The online softmax: e = exp(score - m'), the row's sums and outputs
    // so far scaled by exp(m - m').
    vec4 e[RB];
    [[unroll]] for (uint r = 0u; r < RB; ++r) {
      vec4 s4 = sc[r];
      [[unroll]] for (uint k = 0u; k < 4u; ++k) {
        if (j + k >= p.s) {
          s4[k] = -KILN_INF;
        } else if (HAS_MASK) {
          s4[k] += float(mask[mbase + row[r] * p.m_row + (j + k) * p.m_col]);
        }
      }
      const float mx = max(m[r], max(max(s4.x, s4.y), max(s4.z, s4.w)));
      const float base = mx == -KILN_INF ? 0.0 : mx;  // keeps exp(-inf - -inf) out
      const float corr = exp(m[r] - base);
      e[r] = exp(s4 - base);
      l[r] = l[r] * corr + (e[r].x + e[r].y) + (e[r].z + e[r].w);
      m[r] = mx;
      [[unroll]] for (uint c = 0u; c < DV4; ++c) acc[r][c] *= corr;
    }
    const uint keys = min(4u, p.s - j);
    for (uint k = 0u; k < keys; ++k) {
      [[unroll]] for (uint c = 0u; c < DV4; ++c) {
        const vec4 vv = LoadV4(b, j + k, c);
        [[unroll]] for (uint r = 0u; r < RB; ++r) acc[r][c] += e[r][k] * vv;
      }
    }
  }
  [[unroll]] for (uint r = 0u; r < RB; ++r) {
    if (i0 + r >= p.l) break;
    const float inv = p.s == 0u ? 0.0 : 1.0 / l[r];  // no keys: empty sums, as the host
    const uint at = (b * p.l + i0 + r) * p.dv;
    [[unroll]] for (uint c = 0u; c < DV4; ++c) {
      const vec4 o = acc[r][c] * inv;
      [[unroll]] for (uint k = 0u; k < 4u; ++k)
        if (4u * c + k < p.dv) y[at + 4u * c + k] = STORE_T(o[k]);
    }
  }
}
