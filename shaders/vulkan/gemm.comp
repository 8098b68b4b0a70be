#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"
#include "gemm_tile.glsl"

// Y = act(alpha * A * B + beta * C) for MatMul, Gemm and 1x1 Conv, batched.
// A(i, k) = a[a_off + i * a_rs + k * a_cs], B(k, j) likewise, so transposed
// operands are strides; C(i, j) = c[i * c_rs + j * c_cs] (0 along a
// broadcast axis: Gemm's C, or a per-row bias). Y is dense [batches, M, N].
// Batch index b splits over bdims (innermost last) into A's and B's batch
// offsets (strides 0 where broadcast). One TM x TN tile per work group (see
// gemm_tile.glsl), tiles counted n fastest, then m, then batch.
layout(constant_id = 3) const bool A_K_FAST = true;   // a_cs == 1: fill As along k
layout(constant_id = 4) const bool B_K_FAST = false;  // b_rs == 1: fill Bs along k
layout(constant_id = 5) const uint ACT = 0;
layout(constant_id = 6) const bool HAS_C = false;

layout(std430, binding = 0) readonly buffer A { STORE_T a[]; };
layout(std430, binding = 1) readonly buffer B { STORE_T b[]; };
layout(std430, binding = 2) readonly buffer C { STORE_T c[]; };
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint m, n, k;
  uint a_rs, a_cs, b_rs, b_cs;
  uint c_rs, c_cs;
  float alpha, beta;
  float lo, hi, slope;  // fused activation
  uint batches;
  uint bdims[4];
  uint sa[4], sb[4];
} p;

void main() {
  const uint tiles_n = (p.n + TN - 1u) / TN, tiles_m = (p.m + TM - 1u) / TM;
  uint tile = TileIndex();
  if (tile >= tiles_n * tiles_m * p.batches) return;  // the whole group: before any barrier
  const uint col0 = (tile % tiles_n) * TN;
  tile /= tiles_n;
  const uint row0 = (tile % tiles_m) * TM;
  uint rest = tile / tiles_m, a_off = 0u, b_off = 0u;
  [[unroll]] for (int d = 3; d >= 0; --d) {
    const uint q = rest / p.bdims[d], i = rest - q * p.bdims[d];
    a_off += i * p.sa[d];
    b_off += i * p.sb[d];
    rest = q;
  }
  const uint y_off = (tile / tiles_m) * p.m * p.n;
  const uint tid = gl_LocalInvocationIndex;

  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0u; k0 < p.k; k0 += TK) {
    // Consecutive invocations read consecutive addresses of A and of B.
    for (uint e = tid; e < TM * TK; e += NT) {
      const uint r = A_K_FAST ? e / TK : e % TM, kk = A_K_FAST ? e % TK : e / TM;
      const uint gi = row0 + r, gk = k0 + kk;
      float v = 0.0;
      if (gi < p.m && gk < p.k) v = float(a[a_off + gi * p.a_rs + gk * p.a_cs]);
      As[kk * AS_STRIDE + r] = v;
    }
    for (uint e = tid; e < TK * TN; e += NT) {
      const uint cc = B_K_FAST ? e / TK : e % TN, kk = B_K_FAST ? e % TK : e / TN;
      const uint gj = col0 + cc, gk = k0 + kk;
      float v = 0.0;
      if (gj < p.n && gk < p.k) v = float(b[b_off + gk * p.b_rs + gj * p.b_cs]);
      Bs[kk * BS_STRIDE + cc] = v;
    }
    barrier();
    MultiplyTile(acc);
    barrier();
  }

  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uint gi = row0 + ty + i * LY;
    if (gi >= p.m) break;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      const uint gj = col0 + tx + j * LX;
      if (gj >= p.n) break;
      float v = p.alpha * acc[i][j];
      if (HAS_C) v += p.beta * float(c[gi * p.c_rs + gj * p.c_cs]);
      y[y_off + gi * p.n + gj] = STORE_T(FusedActivation(ACT, v, p.lo, p.hi, p.slope));
    }
  }
}
