#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// Logic on bytes (bool or u8), with numpy broadcasting (as binary.comp):
// OP 0: And (both nonzero), 1: Equal (same byte), 2: Not (of a; b is not
// read), 3: Or, 4: Xor. The result is a bool byte.
layout(constant_id = 3) const uint OP = 0;

layout(std430, binding = 0) readonly buffer A { uint8_t a[]; };
layout(std430, binding = 1) readonly buffer B { uint8_t b[]; };
layout(std430, binding = 2) writeonly buffer C { uint8_t c[]; };
KILN_BROADCAST_PUSH;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint dims[KILN_MAX_RANK] = p.dims, sa[KILN_MAX_RANK] = p.sa, sb[KILN_MAX_RANK] = p.sb;
  uint x = uint(a[BroadcastOffset(i, p.rank, dims, sa)]);
  bool r;
  if (OP == 2u) {
    r = x == 0u;
  } else {
    uint y = uint(b[BroadcastOffset(i, p.rank, dims, sb)]);
    switch (OP) {
      case 0: r = x != 0u && y != 0u; break;
      case 3: r = x != 0u || y != 0u; break;
      case 4: r = (x != 0u) != (y != 0u); break;
      default: r = x == y; break;
    }
  }
  c[i] = uint8_t(r ? 1u : 0u);
}
