// c = a (op) b on 8-bit integers and f16 tensors, broadcast as in binary.cl
// (shaders/vulkan/binary_bytes.comp). TYPE (spec constant 4): 0 u8, 1 i8,
// 2 f16 (computed in f32 by BinaryFloat; vload_half / vstore_half need no
// cl_khr_fp16). Integers follow the host kernel: two's complement
// wraparound, Div truncating toward zero with x / 0 = 0, Mod with x % 0 = 0;
// OP codes as in binary.cl plus 10 / 11 BitShift left / right (a shift of 8
// or more gives 0).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define OP KILN_SPEC_3
#define TYPE KILN_SPEC_4

int ApplyInt(int x, int y) {
  switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return y == 0 ? 0 : x / y;
    case 5: return max(x, y);
    case 6: return min(x, y);
    case 8:
    case 9: {
      if (y == 0) return 0;
      const int r = x % y;
      return OP == 9 && r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
    }
    case 10: return y >= 8 ? 0 : x << y;
    default: return y >= 8 ? 0 : x >> y;  // 11
  }
}

int LoadByte(uchar v) { return TYPE == 1 ? (int)as_char(v) : (int)v; }

__kernel void binary_bytes(__global const uchar* a, __global const uchar* b, __global uchar* c, BroadcastPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint ia = BroadcastOffset(i, p.rank, p.dims, p.sa), ib = BroadcastOffset(i, p.rank, p.dims, p.sb);
  if (TYPE == 2) {
    const float x = vload_half(ia, (__global const half*)a);
    const float y = vload_half(ib, (__global const half*)b);
    vstore_half(BinaryFloat(OP, x, y), i, (__global half*)c);
  } else {
    c[i] = (uchar)(ApplyInt(LoadByte(a[ia]), LoadByte(b[ib])) & 0xff);
  }
}
