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
  for (uint e = 0u; e < EPI; ++e) {
    const uint i = base + e;
    if (i >= p.n) break;
    const float x = LOAD(a, BroadcastOffset(i, p.rank, p.dims, p.sa));
    const float y = LOAD(b, BroadcastOffset(i, p.rank, p.dims, p.sb));
    STORE(c, i, BinaryFloat(OP, x, y));
  }
}
