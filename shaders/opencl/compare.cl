// c = a (op) b as bool bytes, with numpy broadcasting as in binary.cl
// (shaders/vulkan/compare.comp). TYPE: 0 f32, 1 i32, 2 i64. OP: 0 Equal,
// 1 Less, 2 Greater, 3 And (both nonzero; a NaN is nonzero, as in C++),
// 4 GreaterOrEqual, 5 LessOrEqual.
// Floats are compared as IEEE values (NaN compares false; -0 == +0).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define TYPE KILN_SPEC_3
#define OP KILN_SPEC_4

// Element k of a buffer of TYPE, as bits (i32 sign-extended).
long Element(__global const uint* t, uint k) {
  if (TYPE == 2) return ((__global const long*)t)[k];
  return TYPE == 1 ? (long)(int)t[k] : (long)t[k];
}

// -1, 0 or 1 as x <, =, > y; 2 when unordered (a NaN).
int Order(long x, long y) {
  if (TYPE == 0) {
    const float u = as_float((uint)x), v = as_float((uint)y);
    return u < v ? -1 : (u > v ? 1 : (u == v ? 0 : 2));
  }
  return x < y ? -1 : (x > y ? 1 : 0);
}

bool NonZero(long x) { return TYPE == 0 ? ((uint)x & 0x7fffffffu) != 0u : x != 0; }

__kernel void compare(__global const uint* a, __global const uint* b, __global uchar* c, BroadcastPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const long x = Element(a, BroadcastOffset(i, p.rank, p.dims, p.sa));
  const long y = Element(b, BroadcastOffset(i, p.rank, p.dims, p.sb));
  bool r;
  switch (OP) {
    case 0: r = Order(x, y) == 0; break;
    case 1: r = Order(x, y) == -1; break;
    case 2: r = Order(x, y) == 1; break;
    case 4: r = Order(x, y) == 0 || Order(x, y) == 1; break;
    case 5: r = Order(x, y) == 0 || Order(x, y) == -1; break;
    default: r = NonZero(x) && NonZero(y); break;
  }
  c[i] = r ? 1 : 0;
}
