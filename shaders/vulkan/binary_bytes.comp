#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"
#include "binary_fn.glsl"

// c = a (op) b on 8-bit integers and f16 tensors, broadcast as in
// binary.comp (same push constants). TYPE: 0 u8, 1 i8, 2 f16. Tensors are
// addressed in bytes, so each invocation writes exactly its own element
// (needs storageBuffer8BitAccess). f16 is computed in f32 by
// binary_fn.glsl's functions. Integers follow the host kernel
// (host_fallback/ops/elementwise.cpp): two's complement wraparound, Div
// truncating toward zero with x / 0 = 0, Mod with x % 0 = 0; OP codes as in
// binary.comp plus 10 / 11 BitShift left / right (a shift of 8 or more
// gives 0).
layout(constant_id = 3) const uint OP = 0;
layout(constant_id = 4) const uint TYPE = 0;

layout(std430, binding = 0) readonly buffer A { uint8_t a[]; };
layout(std430, binding = 1) readonly buffer B { uint8_t b[]; };
layout(std430, binding = 2) writeonly buffer C { uint8_t c[]; };
KILN_BROADCAST_PUSH;

// Truncating division and remainder of magnitudes (GLSL's % on negative
// operands is not C's).
int DivInt(int x, int y) {
  const int q = int(uint(abs(x)) / uint(abs(y)));
  return (x < 0) != (y < 0) ? -q : q;
}

int ApplyInt(int x, int y) {
  switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return y == 0 ? 0 : DivInt(x, y);
    case 5: return max(x, y);
    case 6: return min(x, y);
    case 8:
    case 9: {
      if (y == 0) return 0;
      const int r = x - y * DivInt(x, y);
      return OP == 9u && r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
    }
    case 10: return y >= 8 ? 0 : x << y;
    default: return y >= 8 ? 0 : x >> y;  // 11
  }
}

int LoadByte(uint v) { return TYPE == 1u ? int(v << 24) >> 24 : int(v); }

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint dims[KILN_MAX_RANK] = p.dims, sa[KILN_MAX_RANK] = p.sa, sb[KILN_MAX_RANK] = p.sb;
  const uint ia = BroadcastOffset(i, p.rank, dims, sa), ib = BroadcastOffset(i, p.rank, dims, sb);
  if (TYPE == 2u) {
    const float x = unpackHalf2x16(uint(a[2u * ia]) | (uint(a[2u * ia + 1u]) << 8)).x;
    const float y = unpackHalf2x16(uint(b[2u * ib]) | (uint(b[2u * ib + 1u]) << 8)).x;
    const uint h = packHalf2x16(vec2(BinaryFloat(OP, x, y), 0.0));
    c[2u * i] = uint8_t(h & 0xffu);
    c[2u * i + 1u] = uint8_t((h >> 8) & 0xffu);
  } else {
    c[i] = uint8_t(uint(ApplyInt(LoadByte(uint(a[ia])), LoadByte(uint(b[ib])))) & 0xffu);
  }
}
