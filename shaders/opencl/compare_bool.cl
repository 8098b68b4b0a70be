// Logic on bytes (bool or u8), with numpy broadcasting as in binary.cl
// (shaders/vulkan/compare_bool.comp): OP 0: And (both nonzero), 1: Equal
// (same byte), 2: Not (of a; b is not read), 3: Or, 4: Xor. The result is
// a bool byte.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define OP KILN_SPEC_3

__kernel void compare_bool(__global const uchar* a, __global const uchar* b, __global uchar* c, BroadcastPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uchar x = a[BroadcastOffset(i, p.rank, p.dims, p.sa)];
  bool r;
  if (OP == 2) {
    r = x == 0;
  } else {
    const uchar y = b[BroadcastOffset(i, p.rank, p.dims, p.sb)];
    switch (OP) {
      case 0: r = x != 0 && y != 0; break;
      case 3: r = x != 0 || y != 0; break;
      case 4: r = (x != 0) != (y != 0); break;
      default: r = x == y; break;
    }
  }
  c[i] = r ? 1 : 0;
}
