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
// gemm_tile.glsl; RT * LY x RT * LX with a register tile), tiles counted n
// fastest, then m, then batch.
layout(constant_id = 3) const bool A_K_FAST = true;   // a_cs == 1: fill As along k
layout(constant_id = 4) const bool B_K_FAST = false;  // b_rs == 1: fill Bs along k
layout(constant_id = 5) const uint ACT = 0;
layout(constant_id = 6) const bool HAS_C = false;
// 0: the shared-memory tile of gemm_tile.glsl (GPUs). RT > 0: each
// invocation computes an RT x RT block of C straight from memory, no shared
// memory and no barriers (CPU drivers: lavapipe ran the 1024^3 product in
// 153 ms against 783 with RT = 8; its barriers and shared-memory copies
// cost more than the reuse saved).
layout(constant_id = 7) const uint RT = 0u;
// The register block's rows (0: RT; 1 for a batch-1 product, where the
// other seven rows only repeated the first), and K4: A and B read four k at
// a time as vec4 (a_cs == b_rs == 1, k and every offset a multiple of 4;
// in gemm_tx, texels of four floats): a quarter of the loads.
layout(constant_id = 8) const uint RM = 0u;
layout(constant_id = 9) const bool K4 = false;
// VN (RT == 8, A contiguous along k, B along n; k, strides and offsets
// multiples of four): a row of B's 8 columns is two vec4 reads and A four k
// a vec4 read, 16 reads for 4 x 64 multiply-adds where the scalar form made
// 64 (in gemm_tx, RGBA texels: the 1024^3 product's B runs along n).
layout(constant_id = 10) const bool VN = false;
const uint RR = RM == 0u ? RT : RM;

// KILN_TEXEL (gemm_tx, GpuBinding::texel): A and B are uniform texel
// buffers of one float a texel, where the device reads those faster
// (lavapipe: a storage-buffer load runs lane by lane).
#ifdef KILN_TEXEL
layout(binding = 0) uniform samplerBuffer a_texels;
layout(binding = 1) uniform samplerBuffer b_texels;
#define LOAD_A(i) texelFetch(a_texels, int(i)).x
#define LOAD_B(i) texelFetch(b_texels, int(i)).x
#define LOAD_A4K(q) texelFetch(a_texels, int(q))
#define LOAD_B4K(q) texelFetch(b_texels, int(q))
#else
layout(std430, binding = 0) readonly buffer A { STORE_T a[]; };
layout(std430, binding = 1) readonly buffer B { STORE_T b[]; };
layout(std430, binding = 0) readonly buffer A4 { STORE4_T a4[]; };
layout(std430, binding = 1) readonly buffer B4 { STORE4_T b4[]; };
#define LOAD_A(i) float(a[i])
#define LOAD_B(i) float(b[i])
#define LOAD_A4K(q) vec4(a4[q])
#define LOAD_B4K(q) vec4(b4[q])
#endif
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

// Y(i, j) from the accumulated sum: alpha, beta * C, the activation.
void Store(uint y_off, uint gi, uint gj, float acc) {
  float v = p.alpha * acc;
  if (HAS_C) v += p.beta * float(c[gi * p.c_rs + gj * p.c_cs]);
  y[y_off + gi * p.n + gj] = STORE_T(FusedActivation(ACT, v, p.lo, p.hi, p.slope));
}

// The RT x RT block at rows row0 + ty * RT + i, columns col0 + tx * RT + j;
// rows and columns past the matrix read its last one and store nothing.
void RegisterTile(uint a_off, uint b_off, uint y_off, uint row0, uint col0) {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  float acc[8][8];
  uint ar[8], bc[8];
  [[unroll]] for (uint i = 0u; i < RR; ++i) {
    ar[i] = a_off + min(row0 + ty * RR + i, p.m - 1u) * p.a_rs;
    [[unroll]] for (uint j = 0u; j < RT; ++j) acc[i][j] = 0.0;
  }
  [[unroll]] for (uint j = 0u; j < RT; ++j) bc[j] = b_off + min(col0 + tx * RT + j, p.n - 1u) * p.b_cs;
  if (VN) {
    // Columns past N (n is a multiple of four) read its last four.
    const uint c0 = col0 + tx * 8u, c1 = min(c0 + 4u, p.n - 4u);
    vec4 lo[8], hi[8];
    [[unroll]] for (uint i = 0u; i < RR; ++i) lo[i] = hi[i] = vec4(0.0);
    uint bo = b_off + min(c0, p.n - 4u);
    const uint b1 = c1 - min(c0, p.n - 4u);
    for (uint kk = 0u; kk < p.k; kk += 4u, bo += 4u * p.b_rs) {
      vec4 av[8];
      [[unroll]] for (uint i = 0u; i < RR; ++i) av[i] = LOAD_A4K((ar[i] + kk) / 4u);
      [[unroll]] for (uint s = 0u; s < 4u; ++s) {
        const uint q = bo + s * p.b_rs;
        const vec4 bl = LOAD_B4K(q / 4u), bh = LOAD_B4K((q + b1) / 4u);
        [[unroll]] for (uint i = 0u; i < RR; ++i) {
          lo[i] += av[i][s] * bl;
          hi[i] += av[i][s] * bh;
        }
      }
    }
    [[unroll]] for (uint i = 0u; i < RR; ++i) {
      const uint gi = row0 + ty * RR + i;
      if (gi >= p.m) break;
      [[unroll]] for (uint j = 0u; j < 8u; ++j) {
        const uint gj = c0 + j;
        if (gj >= p.n) break;
        Store(y_off, gi, gj, j < 4u ? lo[i][j] : hi[i][j - 4u]);
      }
    }
    return;
  }
  if (K4) {
    for (uint kk = 0u; kk < p.k; kk += 4u) {
      vec4 av[8], bv[8];
      [[unroll]] for (uint i = 0u; i < RR; ++i) av[i] = LOAD_A4K((ar[i] + kk) / 4u);
      [[unroll]] for (uint j = 0u; j < RT; ++j) bv[j] = LOAD_B4K((bc[j] + kk) / 4u);
      [[unroll]] for (uint i = 0u; i < RR; ++i)
        [[unroll]] for (uint j = 0u; j < RT; ++j) acc[i][j] += dot(av[i], bv[j]);
    }
  } else {
    for (uint kk = 0u; kk < p.k; ++kk) {
      float av[8], bv[8];
      [[unroll]] for (uint i = 0u; i < RR; ++i) av[i] = LOAD_A(ar[i] + kk * p.a_cs);
      [[unroll]] for (uint j = 0u; j < RT; ++j) bv[j] = LOAD_B(bc[j] + kk * p.b_rs);
      [[unroll]] for (uint i = 0u; i < RR; ++i)
        [[unroll]] for (uint j = 0u; j < RT; ++j) acc[i][j] += av[i] * bv[j];
    }
  }
  [[unroll]] for (uint i = 0u; i < RR; ++i) {
    const uint gi = row0 + ty * RR + i;
    if (gi >= p.m) break;
    [[unroll]] for (uint j = 0u; j < RT; ++j) {
      const uint gj = col0 + tx * RT + j;
      if (gj >= p.n) break;
      Store(y_off, gi, gj, acc[i][j]);
    }
  }
}

void main() {
  const uint GTM = RT == 0u ? TM : RR * LY, GTN = RT == 0u ? TN : RT * LX;
  const uint tiles_n = (p.n + GTN - 1u) / GTN, tiles_m = (p.m + GTM - 1u) / GTM;
  uint tile = TileIndex();
  if (tile >= tiles_n * tiles_m * p.batches) return;  // the whole group: before any barrier
  const uint col0 = (tile % tiles_n) * GTN;
  tile /= tiles_n;
  const uint row0 = (tile % tiles_m) * GTM;
  uint rest = tile / tiles_m, a_off = 0u, b_off = 0u;
  [[unroll]] for (int d = 3; d >= 0; --d) {
    const uint q = rest / p.bdims[d], i = rest - q * p.bdims[d];
    a_off += i * p.sa[d];
    b_off += i * p.sb[d];
    rest = q;
  }
  const uint y_off = (tile / tiles_m) * p.m * p.n;
  if (RT != 0u) {
    RegisterTile(a_off, b_off, y_off, row0, col0);
    return;
  }
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
      if (gi < p.m && gk < p.k) v = LOAD_A(a_off + gi * p.a_rs + gk * p.a_cs);
      As[kk * AS_STRIDE + r] = v;
    }
    for (uint e = tid; e < TK * TN; e += NT) {
      const uint cc = B_K_FAST ? e / TK : e % TN, kk = B_K_FAST ? e % TK : e / TN;
      const uint gj = col0 + cc, gk = k0 + kk;
      float v = 0.0;
      if (gj < p.n && gk < p.k) v = LOAD_B(b_off + gk * p.b_rs + gj * p.b_cs);
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
      Store(y_off, gi, gj, acc[i][j]);
    }
  }
}
