// c = a (op) b on float tensors with numpy broadcasting (shaders/vulkan/binary.comp);
// the functions are common.cl's BinaryFloat.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define OP KILN_SPEC_3

__kernel void binary(__global const STORE_T* a, __global const STORE_T* b, __global STORE_T* c, BroadcastPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const float x = LOAD(a, BroadcastOffset(i, p.rank, p.dims, p.sa));
  const float y = LOAD(b, BroadcastOffset(i, p.rank, p.dims, p.sb));
  STORE(c, i, BinaryFloat(OP, x, y));
}
