// c = a ^ b, broadcast as in binary.cl, with the base and the exponent of
// their own types (shaders/vulkan/pow_mixed.comp): TA, TB (spec constants 3, 4)
// 0 f32, 1 i32, 2 i64; the output has the base's type. An integral exponent
// of an integer base is exact (repeated squaring, two's complement
// wraparound, a negative exponent 0 unless the base is 1 or -1); everything
// else is f32 pow, truncated toward zero for an integer base.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define TA KILN_SPEC_3
#define TB KILN_SPEC_4

long LoadInt(__global const uint* v, uint type, uint k) {
  return type == 2 ? ((__global const long*)v)[k] : (long)(int)v[k];
}

long IntPow(long x, long e) {
  if (e < 0) return x == 1 ? 1 : x == -1 ? ((e & 1) != 0 ? -1 : 1) : 0;
  ulong r = 1, ux = as_ulong(x);
  for (; e != 0; e >>= 1) {
    if ((e & 1) != 0) r *= ux;
    ux *= ux;
  }
  return as_long(r);
}

__kernel void pow_mixed(__global const uint* a, __global const uint* b, __global uint* c, BroadcastPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint ia = BroadcastOffset(i, p.rank, p.dims, p.sa), ib = BroadcastOffset(i, p.rank, p.dims, p.sb);
  const long xi = TA == 0 ? 0 : LoadInt(a, TA, ia), yi = TB == 0 ? 0 : LoadInt(b, TB, ib);
  const float x = TA == 0 ? as_float(a[ia]) : (float)xi, y = TB == 0 ? as_float(b[ib]) : (float)yi;
  if (TA == 0) {
    c[i] = as_uint(BinaryFloat(4, x, y));
    return;
  }
  long r;
  if (TB != 0) {
    r = IntPow(xi, yi);
  } else if (y == floor(y) && fabs(y) < 9.2e18f) {
    r = IntPow(xi, (long)y);
  } else {
    r = (long)trunc(BinaryFloat(4, x, y));
  }
  if (TA == 1) c[i] = (uint)(ulong)r;
  else ((__global long*)c)[i] = r;
}
