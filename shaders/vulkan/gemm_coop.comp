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
// A work group is four subgroups of 32 (local size 128) and computes a
// 64 x 64 tile of Y, each subgroup a 32 x 32 quarter as 2 x 2 float
// accumulators, its operands loaded straight from memory 16 k at a time.
// The op layer asks for it only where M, N and K are multiples of 16, A
// runs along k, B along n or along k, and every stride and offset is a
// multiple of 8 halves (16 bytes, what the loads need): then a 16 x 16
// block is either wholly inside Y or wholly outside. The accumulators go
// through shared memory for the store, where alpha, C and the activation
// are applied element by element.
layout(constant_id = 3) const bool B_K_FAST = false;  // b_rs == 1: B(k, j) at j * b_cs + k (column-major)
layout(constant_id = 4) const uint ACT = 0;
layout(constant_id = 5) const bool HAS_C = false;

layout(std430, binding = 0) readonly buffer A { float16_t a[]; };
layout(std430, binding = 1) readonly buffer B { float16_t b[]; };
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

// Each subgroup's 32 x 32 quarter, row-major, for the store.
shared float quarter[4 * 32 * 32];

#define ACC_T fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define HALF_T fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

void main() {
  const uint tiles_n = (p.n + 63u) / 64u, tiles_m = (p.m + 63u) / 64u;
  uint tile = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (tile >= tiles_n * tiles_m * p.batches) return;  // the whole group
  const uint col0 = (tile % tiles_n) * 64u;
  tile /= tiles_n;
  const uint row0 = (tile % tiles_m) * 64u;
  uint rest = tile / tiles_m, a_off = 0u, b_off = 0u;
  [[unroll]] for (int d = 3; d >= 0; --d) {
    const uint q = rest / p.bdims[d], i = rest - q * p.bdims[d];
    a_off += i * p.sa[d];
    b_off += i * p.sb[d];
    rest = q;
  }
  const uint y_off = (tile / tiles_m) * p.m * p.n;

  // This subgroup's quarter: rows r0, r0 + 16, columns c0, c0 + 16, each
  // block taken where it lies inside Y (uniform in the subgroup, as the
  // matrix operations need).
  const uint sg = gl_SubgroupID;
  const uint r0 = row0 + (sg / 2u) * 32u, c0 = col0 + (sg % 2u) * 32u;
  const bool row_in[2] = {r0 < p.m, r0 + 16u < p.m};
  const bool col_in[2] = {c0 < p.n, c0 + 16u < p.n};
  ACC_T acc[2][2];
  [[unroll]] for (uint i = 0u; i < 2u; ++i)
    [[unroll]] for (uint j = 0u; j < 2u; ++j) acc[i][j] = ACC_T(0.0);
  if (row_in[0] && col_in[0]) {
    for (uint k0 = 0u; k0 < p.k; k0 += 16u) {
      HALF_T fa[2], fb[2];
      [[unroll]] for (uint i = 0u; i < 2u; ++i)
        if (row_in[i]) coopMatLoadNV(fa[i], a, a_off + (r0 + 16u * i) * p.a_rs + k0, p.a_rs, false);
      [[unroll]] for (uint j = 0u; j < 2u; ++j) {
        if (!col_in[j]) continue;
        if (B_K_FAST)
          coopMatLoadNV(fb[j], b, b_off + (c0 + 16u * j) * p.b_cs + k0, p.b_cs, true);
        else
          coopMatLoadNV(fb[j], b, b_off + k0 * p.b_rs + c0 + 16u * j, p.b_rs, false);
      }
      [[unroll]] for (uint i = 0u; i < 2u; ++i)
        [[unroll]] for (uint j = 0u; j < 2u; ++j)
          if (row_in[i] && col_in[j]) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
  }
  const uint base = sg * 1024u;
  [[unroll]] for (uint i = 0u; i < 2u; ++i)
    [[unroll]] for (uint j = 0u; j < 2u; ++j)
      if (row_in[i] && col_in[j]) coopMatStoreNV(acc[i][j], quarter, base + i * 16u * 32u + j * 16u, 32u, false);
  subgroupMemoryBarrierShared();
  subgroupBarrier();
  for (uint e = gl_SubgroupInvocationID; e < 1024u; e += gl_SubgroupSize) {
    const uint gi = r0 + e / 32u, gj = c0 + e % 32u;
    if (gi >= p.m || gj >= p.n) continue;
    float v = p.alpha * quarter[base + e];
    if (HAS_C) v += p.beta * float(c[gi * p.c_rs + gj * p.c_cs]);
    y[y_off + gi * p.n + gj] = float16_t(FusedActivation(ACT, v, p.lo, p.hi, p.slope));
  }
}
