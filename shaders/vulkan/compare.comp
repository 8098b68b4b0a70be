#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// c = a (op) b as bool bytes, with numpy broadcasting (as binary.comp).
// TYPE: 0 f32, 1 i32, 2 i64 (two words, low first). OP: 0 Equal, 1 Less,
// 2 Greater, 3 And (both nonzero; a NaN is nonzero, as in C++),
// 4 GreaterOrEqual, 5 LessOrEqual. Floats are
// compared as IEEE values (NaN compares false; -0 == +0).
layout(constant_id = 3) const uint TYPE = 0;
layout(constant_id = 4) const uint OP = 0;

layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer C { uint8_t c[]; };
KILN_BROADCAST_PUSH;

// -1, 0 or 1 as x <, =, > y; 2 when unordered (a NaN).
int Order(uvec2 x, uvec2 y) {
  if (TYPE == 0u) {
    float u = uintBitsToFloat(x.x), v = uintBitsToFloat(y.x);
    return u < v ? -1 : (u > v ? 1 : (u == v ? 0 : 2));
  }
  if (TYPE == 2u && x.y != y.y) return int(x.y) < int(y.y) ? -1 : 1;
  if (TYPE == 2u) return x.x < y.x ? -1 : (x.x > y.x ? 1 : 0);  // equal high words: the low ones are unsigned
  return int(x.x) < int(y.x) ? -1 : (x.x == y.x ? 0 : 1);
}

bool NonZero(uvec2 x) { return TYPE == 0u ? (x.x & 0x7fffffffu) != 0u : (x.x | x.y) != 0u; }

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint dims[KILN_MAX_RANK] = p.dims, sa[KILN_MAX_RANK] = p.sa, sb[KILN_MAX_RANK] = p.sb;
  uint ia = BroadcastOffset(i, p.rank, dims, sa), ib = BroadcastOffset(i, p.rank, dims, sb);
  uvec2 x = TYPE == 2u ? uvec2(a[2 * ia], a[2 * ia + 1]) : uvec2(a[ia], 0u);
  uvec2 y = TYPE == 2u ? uvec2(b[2 * ib], b[2 * ib + 1]) : uvec2(b[ib], 0u);
  bool r;
  switch (OP) {
    case 0: r = Order(x, y) == 0; break;
    case 1: r = Order(x, y) == -1; break;
    case 2: r = Order(x, y) == 1; break;
    case 4: r = Order(x, y) == 0 || Order(x, y) == 1; break;
    case 5: r = Order(x, y) == 0 || Order(x, y) == -1; break;
    default: r = NonZero(x) && NonZero(y); break;
  }
  c[i] = uint8_t(r ? 1u : 0u);
}
