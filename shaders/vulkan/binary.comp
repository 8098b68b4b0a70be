#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "binary_fn.glsl"

// c = a (op) b on float tensors with numpy broadcasting: dims of c, strides
// of a and b (0 where broadcast), at most KILN_MAX_RANK dims after
// collapsing; the functions are binary_fn.glsl's. Integer tensors:
// binary_int.comp, 8-bit and f16 ones binary_bytes.comp (same push
// constants).
layout(constant_id = 3) const uint OP = 0;

// KILN_TEXEL (binary_tx, GpuBinding::texel): a and b are uniform texel
// buffers of one float a texel, where the device reads those faster
// (lavapipe: a storage-buffer load runs lane by lane). On such devices a
// texel read of c's own element before its store is ordinary memory (the
// fused residual's y += r reads and writes y).
#ifdef KILN_TEXEL
layout(binding = 0) uniform samplerBuffer a_texels;
layout(binding = 1) uniform samplerBuffer b_texels;
#define LOAD_A(i) texelFetch(a_texels, int(i)).x
#define LOAD_B(i) texelFetch(b_texels, int(i)).x
#define LOAD_A4(q) vec4(LOAD_A(4u * (q)), LOAD_A(4u * (q) + 1u), LOAD_A(4u * (q) + 2u), LOAD_A(4u * (q) + 3u))
#define LOAD_B4(q) vec4(LOAD_B(4u * (q)), LOAD_B(4u * (q) + 1u), LOAD_B(4u * (q) + 2u), LOAD_B(4u * (q) + 3u))
#else
layout(std430, binding = 0) readonly buffer A { STORE_T a[]; };
layout(std430, binding = 1) readonly buffer B { STORE_T b[]; };
layout(std430, binding = 0) readonly buffer A4 { STORE4_T a4[]; };
layout(std430, binding = 1) readonly buffer B4 { STORE4_T b4[]; };
#define LOAD_A(i) float(a[i])
#define LOAD_B(i) float(b[i])
#define LOAD_A4(q) vec4(a4[q])
#define LOAD_B4(q) vec4(b4[q])
#endif
layout(std430, binding = 2) writeonly buffer C { STORE_T c[]; };
layout(std430, binding = 2) writeonly buffer C4 { STORE4_T c4[]; };
KILN_BROADCAST_PUSH;

// Elements an invocation (1 on GPUs; on CPU drivers, where an invocation
// costs more than an element's arithmetic, 8, or up to 128 on large
// tensors: GpuCaps::elementwise_items_large). The element loops do not
// unroll (lavapipe compiles at the first dispatch, and an unrolled loop of
// 128 took seconds). Collapsed to one dim (equal shapes, or a scalar
// operand), offsets are i times the stride: no divisions, which CPU
// drivers do lane by lane.
layout(constant_id = 5) const uint EPI = 1u;

void main() {
  const uint base = KILN_GLOBAL_INDEX * EPI;
  if (base >= p.n) return;
  // Equal shapes or a scalar operand, n a multiple of 4, several elements
  // an invocation: vec4 accesses (a CPU driver makes each access of a lane
  // a memory operation of its own).
  if (EPI >= 4u && p.rank == 1u && (p.n & 3u) == 0u && p.sa[0] <= 1u && p.sb[0] <= 1u) {
    const vec4 as = vec4(LOAD_A(0u)), bs = vec4(LOAD_B(0u));
    [[dont_unroll]] for (uint e = 0u; e < EPI; e += 4u) {
      const uint q = (base + e) / 4u;
      if (q * 4u >= p.n) break;
      const vec4 x = p.sa[0] == 1u ? LOAD_A4(q) : as, y = p.sb[0] == 1u ? LOAD_B4(q) : bs;
      vec4 r;
      [[unroll]] for (uint l = 0u; l < 4u; ++l) r[l] = BinaryFloat(OP, x[l], y[l]);
      c4[q] = STORE4_T(r);
    }
    return;
  }
  if (p.rank == 1u) {
    const uint s0 = p.sa[0], s1 = p.sb[0];
    [[dont_unroll]] for (uint e = 0u; e < EPI; ++e) {
      const uint i = base + e;
      if (i < p.n) c[i] = STORE_T(BinaryFloat(OP, LOAD_A(i * s0), LOAD_B(i * s1)));
    }
    return;
  }
  // One operand dense over [D0, D1, D2], the other [D0, 1, D2] (strides
  // D2, 0, 1), D2 a multiple of four: a packed tensor times a per-channel
  // scale (an SE block's x [N, C/4, HW, 4] * s [N, C/4, 1, 4]), or an NCHW
  // one over [N, C, HW] with HW a multiple of four. Four elements a step,
  // vec4 reads and store, plain counters (no arrays: lavapipe keeps a
  // run-time-indexed array in memory, lane by lane).
  if (EPI >= 4u && p.rank == 3u && (p.dims[2] & 3u) == 0u) {
    const uint d1 = p.dims[1], d2 = p.dims[2], plane = d1 * d2;
    const bool dense_a = p.sa[0] == plane && p.sa[1] == d2 && p.sa[2] == 1u;
    const bool dense_b = p.sb[0] == plane && p.sb[1] == d2 && p.sb[2] == 1u;
    const bool scale_a = p.sa[0] == d2 && p.sa[1] == 0u && p.sa[2] == 1u;
    const bool scale_b = p.sb[0] == d2 && p.sb[1] == 0u && p.sb[2] == 1u;
    if ((dense_a && scale_b) || (scale_a && dense_b)) {
      uint i0 = base / plane, r = base - i0 * plane, i1 = r / d2, i2 = r - i1 * d2;
      for (uint e = 0u; e < EPI; e += 4u) {
        const uint i = base + e;
        if (i >= p.n) break;
        const uint s = (i0 * d2 + i2) / 4u;
        const vec4 x = dense_a ? LOAD_A4(i / 4u) : LOAD_A4(s), y = dense_b ? LOAD_B4(i / 4u) : LOAD_B4(s);
        vec4 v;
        [[unroll]] for (uint l = 0u; l < 4u; ++l) v[l] = BinaryFloat(OP, x[l], y[l]);
        c4[i / 4u] = STORE4_T(v);
        i2 += 4u;
        if (i2 < d2) continue;
        i2 = 0u;
        if (++i1 < d1) continue;
        i1 = 0u;
        ++i0;
      }
      return;
    }
  }
  // One operand dense over [D0, D1], the other one value a row (strides 1,
  // 0), D1 a multiple of four: an NCHW tensor times a per-channel scale
  // ([N * C, H * W] * [N * C, 1]). Four elements a step as above.
  if (EPI >= 4u && p.rank == 2u && (p.dims[1] & 3u) == 0u) {
    const uint d1 = p.dims[1];
    const bool dense_a = p.sa[0] == d1 && p.sa[1] == 1u, dense_b = p.sb[0] == d1 && p.sb[1] == 1u;
    const bool row_a = p.sa[0] == 1u && p.sa[1] == 0u, row_b = p.sb[0] == 1u && p.sb[1] == 0u;
    if ((dense_a && row_b) || (row_a && dense_b)) {
      uint i0 = base / d1, i1 = base - i0 * d1;
      for (uint e = 0u; e < EPI; e += 4u) {
        const uint i = base + e;
        if (i >= p.n) break;
        const vec4 x = dense_a ? LOAD_A4(i / 4u) : vec4(LOAD_A(i0)), y = dense_b ? LOAD_B4(i / 4u) : vec4(LOAD_B(i0));
        vec4 v;
        [[unroll]] for (uint l = 0u; l < 4u; ++l) v[l] = BinaryFloat(OP, x[l], y[l]);
        c4[i / 4u] = STORE4_T(v);
        i1 += 4u;
        if (i1 < d1) continue;
        i1 = 0u;
        ++i0;
      }
      return;
    }
  }
  uint dims[KILN_MAX_RANK] = p.dims, sa[KILN_MAX_RANK] = p.sa, sb[KILN_MAX_RANK] = p.sb;
  if (EPI == 1u) {
    c[base] = STORE_T(BinaryFloat(OP, LOAD_A(BroadcastOffset(base, p.rank, dims, sa)),
                                  LOAD_B(BroadcastOffset(base, p.rank, dims, sb))));
    return;
  }
  // Several items: the coordinates of the first by division, then a
  // counter that carries into outer dims (SE blocks' x * s[c] broadcasts
  // took a division a dim an element).
  uint coord[KILN_MAX_RANK];
  uint rest = base, oa = 0u, ob = 0u;
  [[unroll]] for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    coord[d] = 0u;
    if (uint(d) < p.rank) {
      const uint q = rest / dims[d];
      coord[d] = rest - q * dims[d];
      oa += coord[d] * sa[d];
      ob += coord[d] * sb[d];
      rest = q;
    }
  }
  const int last = int(p.rank) - 1;
  for (uint e = 0u; e < EPI; ++e) {
    const uint i = base + e;
    if (i >= p.n) break;
    c[i] = STORE_T(BinaryFloat(OP, LOAD_A(oa), LOAD_B(ob)));
    for (int d = last; d >= 0; --d) {
      oa += sa[d];
      ob += sb[d];
      if (++coord[d] < dims[d] || d == 0) break;
      oa -= dims[d] * sa[d];
      ob -= dims[d] * sb[d];
      coord[d] = 0u;
    }
  }
}
