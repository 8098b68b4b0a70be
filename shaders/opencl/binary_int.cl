// c = a (op) b on i32 / i64 tensors, broadcast as in binary.cl; TYPE (spec
// constant 4): 1 i32, 2 i64. The host kernel's semantics
// (host_fallback/ops/elementwise.cpp): two's complement wraparound (computed
// unsigned), Div truncating toward zero with x / 0 = 0 and MIN / -1 = MIN.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 1
#endif
#define OP KILN_SPEC_3
#define TYPE KILN_SPEC_4

long ApplyInt(long x, long y) {
  switch (OP) {
    case 0: return as_long(as_ulong(x) + as_ulong(y));
    case 1: return as_long(as_ulong(x) - as_ulong(y));
    case 2: return as_long(as_ulong(x) * as_ulong(y));
    case 3: {
      if (y == 0) return 0;
      if (y == -1) return as_long(0ul - as_ulong(x));  // MIN / -1 wraps to MIN
      return x / y;
    }
    case 8:    // Mod, fmod: the dividend's sign (x % 0 = 0)
    case 9: {  // Mod: the divisor's sign
      if (y == 0 || y == -1) return 0;
      const long r = x % y;
      return OP == 9 && r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
    }
    case 5: return max(x, y);
    default: return min(x, y);  // 6: Min
  }
}

__kernel void binary_int(__global const uint* a, __global const uint* b, __global uint* c, BroadcastPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint ia = BroadcastOffset(i, p.rank, p.dims, p.sa), ib = BroadcastOffset(i, p.rank, p.dims, p.sb);
  if (TYPE == 1) {
    const long r = ApplyInt((long)(int)a[ia], (long)(int)b[ib]);
    c[i] = (uint)(ulong)r;
  } else {
    const __global long* a64 = (const __global long*)a;
    const __global long* b64 = (const __global long*)b;
    ((__global long*)c)[i] = ApplyInt(a64[ia], b64[ib]);
  }
}
