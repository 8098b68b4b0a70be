#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// y = cond ? a : b with numpy broadcasting (dims of y, strides of cond, a
// and b in elements, 0 where broadcast; at most KILN_MAX_RANK dims after
// collapsing). cond is bool bytes (8-bit storage); a, b and y are moved as
// WORDS 32-bit words an element (any 4- or 8-byte dtype).
layout(constant_id = 3) const uint WORDS = 1;

layout(std430, binding = 0) readonly buffer C { uint8_t c[]; };
layout(std430, binding = 1) readonly buffer A { UNIT_T a[]; };
layout(std430, binding = 2) readonly buffer B { UNIT_T b[]; };
layout(std430, binding = 3) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P {
  uint n, rank;
  uint dims[KILN_MAX_RANK];
  uint sc[KILN_MAX_RANK];
  uint sa[KILN_MAX_RANK];
  uint sb[KILN_MAX_RANK];
} p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint e = i / WORDS, w = i - e * WORDS;
  uint dims[KILN_MAX_RANK] = p.dims, sc[KILN_MAX_RANK] = p.sc, sa[KILN_MAX_RANK] = p.sa, sb[KILN_MAX_RANK] = p.sb;
  if (uint(c[BroadcastOffset(e, p.rank, dims, sc)]) != 0u)
    y[i] = a[BroadcastOffset(e, p.rank, dims, sa) * WORDS + w];
  else
    y[i] = b[BroadcastOffset(e, p.rank, dims, sb) * WORDS + w];
}
