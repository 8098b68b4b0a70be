// c = a (op) b on float tensors with numpy broadcasting (shaders/vulkan/binary.comp);
// the functions are common.cl's BinaryFloat.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 1
#endif
#define OP KILN_SPEC_3
#define EPI KILN_SPEC_5  // elements a work item (binary.comp)

__kernel void binary(__global const STORE_T* a, __global const STORE_T* b, __global STORE_T* c, BroadcastPush p) {
  const uint base = KILN_GLOBAL_INDEX * EPI;
  if (base >= p.n) return;
  if (p.rank == 1u) {
    const uint s0 = p.sa[0], s1 = p.sb[0];
    for (uint e = 0u; e < EPI; ++e) {
      const uint i = base + e;
      if (i < p.n) STORE(c, i, BinaryFloat(OP, LOAD(a, i * s0), LOAD(b, i * s1)));
    }
    return;
  }
  // A dense operand times one broadcast along a plane (binary.comp's
  // per-channel scale paths): four elements a step, float4 loads and
  // stores, counters instead of a division a dim an element.
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
        const float4 x = LOAD4(a, dense_a ? i / 4u : s), y = LOAD4(b, dense_b ? i / 4u : s);
        STORE4(c, i / 4u, (float4)(BinaryFloat(OP, x.x, y.x), BinaryFloat(OP, x.y, y.y), BinaryFloat(OP, x.z, y.z),
                                   BinaryFloat(OP, x.w, y.w)));
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
  if (EPI >= 4u && p.rank == 2u && (p.dims[1] & 3u) == 0u) {
    const uint d1 = p.dims[1];
    const bool dense_a = p.sa[0] == d1 && p.sa[1] == 1u, dense_b = p.sb[0] == d1 && p.sb[1] == 1u;
    const bool row_a = p.sa[0] == 1u && p.sa[1] == 0u, row_b = p.sb[0] == 1u && p.sb[1] == 0u;
    if ((dense_a && row_b) || (row_a && dense_b)) {
      uint i0 = base / d1, i1 = base - i0 * d1;
      for (uint e = 0u; e < EPI; e += 4u) {
        const uint i = base + e;
        if (i >= p.n) break;
        const float4 x = dense_a ? LOAD4(a, i / 4u) : (float4)(LOAD(a, i0));
        const float4 y = dense_b ? LOAD4(b, i / 4u) : (float4)(LOAD(b, i0));
        STORE4(c, i / 4u, (float4)(BinaryFloat(OP, x.x, y.x), BinaryFloat(OP, x.y, y.y), BinaryFloat(OP, x.z, y.z),
                                   BinaryFloat(OP, x.w, y.w)));
        i1 += 4u;
        if (i1 < d1) continue;
        i1 = 0u;
        ++i0;
      }
      return;
    }
  }
  for (uint e = 0u; e < EPI; ++e) {
    const uint i = base + e;
    if (i >= p.n) break;
    const float x = LOAD(a, BroadcastOffset(i, p.rank, p.dims, p.sa));
    const float y = LOAD(b, BroadcastOffset(i, p.rank, p.dims, p.sb));
    STORE(c, i, BinaryFloat(OP, x, y));
  }
}
