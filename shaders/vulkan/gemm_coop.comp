#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_16bit_storage : require
#include "common.glsl"
#include "unary_fn.glsl"

// gemm.comp's product on a GPU's matrix units (VK_NV_cooperative_matrix:
// 16 x 16 x 16 products of half matrices summed into float ones), for
// fp16-stored tensors at precision low: Y = act(alpha * A * B + beta * C),
// batched, with gemm.comp's push constants. Glslang 11 (Debian 12) has the
// NV form of the extension, not the KHR one.
//
// A work group of SGM x SGN subgroups of 32 computes a TM x TN tile of Y,
// each subgroup FM x FN blocks of 16 x 16 in float accumulators. Each step
// of 32 k, the group copies A's TM x 32 and B's 32 x TN halves into shared
// memory, 16 bytes an invocation (zeros past the matrices), and each
// subgroup multiplies its blocks from there. The op layer asks for it only
// where M, N and K are multiples of 16, A runs along k, B along n or along
// k, and every stride and offset is a multiple of 8 halves: then each
// 16-byte load lies wholly inside or outside a matrix. The accumulators go
// out a block at a time through shared memory, where alpha, C and the
// activation are applied element by element.
layout(constant_id = 3) const bool B_K_FAST = false;  // b_rs == 1: B(k, j) at j * b_cs + k
layout(constant_id = 4) const uint ACT = 0;
layout(constant_id = 5) const bool HAS_C = false;
layout(constant_id = 6) const uint SGM = 2u;  // subgroups along M, along N
layout(constant_id = 7) const uint SGN = 2u;
layout(constant_id = 8) const uint FM = 2u;  // 16 x 16 blocks a subgroup along M, along N
layout(constant_id = 9) const uint FN = 2u;
const uint TM = SGM * FM * 16u, TN = SGN * FN * 16u, NSG = SGM * SGN, NT = NSG * 32u;
const uint BK = 32u;  // k a step: four 16-byte vectors of halves
// Shared rows padded by one vector (16 bytes) against bank conflicts.
const uint AS = BK / 8u + 1u;                     // A: TM rows of k
const uint BS = B_K_FAST ? AS : TN / 8u + 1u;     // B: TN rows of k, or BK rows of n

layout(std430, binding = 0) readonly buffer A { uvec4 a[]; };
layout(std430, binding = 1) readonly buffer B { uvec4 b[]; };
layout(std430, binding = 2) readonly buffer C { float16_t c[]; };
layout(std430, binding = 3) writeonly buffer Y { float16_t y[]; };
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

shared uvec4 a_tile[TM * AS];
shared uvec4 b_tile[B_K_FAST ? TN * AS : BK * (TN / 8u + 1u)];
shared float block_out[NSG * 256u];  // a 16 x 16 block a subgroup, for the store

#define ACC_T fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define HALF_T fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

void main() {
  const uint tiles_n = (p.n + TN - 1u) / TN, tiles_m = (p.m + TM - 1u) / TM;
  uint tile = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (tile >= tiles_n * tiles_m * p.batches) return;  // the whole group, before any barrier
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
  const uint tid = gl_LocalInvocationIndex, sg = gl_SubgroupID;
  const uint sg_m = sg / SGN, sg_n = sg % SGN;

  ACC_T acc[FM][FN];
  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i][j] = ACC_T(0.0);
  for (uint k0 = 0u; k0 < p.k; k0 += BK) {
    // A's rows row0.., k0..k0+31: four vectors a row.
    for (uint e = tid; e < TM * 4u; e += NT) {
      const uint r = e / 4u, q = e % 4u, gi = row0 + r, gk = k0 + q * 8u;
      uvec4 v = uvec4(0u);
      if (gi < p.m && gk < p.k) v = a[(a_off + gi * p.a_rs + gk) / 8u];
      a_tile[r * AS + q] = v;
    }
    if (B_K_FAST) {  // B's columns col0.. as rows of k
      for (uint e = tid; e < TN * 4u; e += NT) {
        const uint r = e / 4u, q = e % 4u, gj = col0 + r, gk = k0 + q * 8u;
        uvec4 v = uvec4(0u);
        if (gj < p.n && gk < p.k) v = b[(b_off + gj * p.b_cs + gk) / 8u];
        b_tile[r * AS + q] = v;
      }
    } else {  // B's rows k0.., TN / 8 vectors a row
      const uint vr = TN / 8u;
      for (uint e = tid; e < BK * vr; e += NT) {
        const uint r = e / vr, q = e % vr, gk = k0 + r, gj = col0 + q * 8u;
        uvec4 v = uvec4(0u);
        if (gk < p.k && gj < p.n) v = b[(b_off + gk * p.b_rs + gj) / 8u];
        b_tile[r * BS + q] = v;
      }
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
      HALF_T fa[FM], fb[FN];
      [[unroll]] for (uint i = 0u; i < FM; ++i)
        coopMatLoadNV(fa[i], a_tile, ((sg_m * FM + i) * 16u) * AS + kk / 8u, AS, false);
      [[unroll]] for (uint j = 0u; j < FN; ++j) {
        if (B_K_FAST)
          coopMatLoadNV(fb[j], b_tile, ((sg_n * FN + j) * 16u) * AS + kk / 8u, AS, true);
        else
          coopMatLoadNV(fb[j], b_tile, kk * BS + (sg_n * FN + j) * 2u, BS, false);
      }
      [[unroll]] for (uint i = 0u; i < FM; ++i)
        [[unroll]] for (uint j = 0u; j < FN; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
    barrier();
  }

  // Each block inside Y, through this subgroup's 16 x 16 of shared memory.
  const uint base = sg * 256u;
  [[unroll]] for (uint i = 0u; i < FM; ++i)
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      const uint r0 = row0 + (sg_m * FM + i) * 16u, c0 = col0 + (sg_n * FN + j) * 16u;
      if (r0 >= p.m || c0 >= p.n) continue;  // uniform in the subgroup
      coopMatStoreNV(acc[i][j], block_out, base, 16u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = gl_SubgroupInvocationID; e < 256u; e += gl_SubgroupSize) {
        const uint gi = r0 + e / 16u, gj = c0 + e % 16u;
        float v = p.alpha * block_out[base + e];
        if (HAS_C) v += p.beta * float(c[gi * p.c_rs + gj * p.c_cs]);
        y[y_off + gi * p.n + gj] = float16_t(FusedActivation(ACT, v, p.lo, p.hi, p.slope));
      }
      subgroupBarrier();
    }
}
