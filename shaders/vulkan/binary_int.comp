#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "int64.glsl"

// c = a (op) b on integer tensors, broadcast as in binary.comp (same push
// constants). TYPE: 1 i32, 2 i64 (two words, low first). No shaderInt64: an
// element is a uvec2 (low, high word; i32 sign-extended, its result the low
// word), and the arithmetic is the host kernel's
// (host_fallback/ops/elementwise.cpp) on every device: two's complement
// wraparound for Add, Sub, Mul, Div truncating toward zero with x / 0 = 0.
// OP codes as in binary.comp (8, 9: Mod, as the host's: x % 0 = 0); Pow (4)
// and PRelu (7) are float only.
layout(constant_id = 3) const uint OP = 0;
layout(constant_id = 4) const uint TYPE = 1;

layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer C { uint c[]; };
KILN_BROADCAST_PUSH;

uvec2 ApplyInt(uvec2 x, uvec2 y) {
  switch (OP) {
    case 0: return Add64(x, y);
    case 1: return Sub64(x, y);
    case 2: return Mul64(x, y);
    case 3: {
      if ((y.x | y.y) == 0u) return uvec2(0u);
      const bool neg = Negative64(x) != Negative64(y);
      uvec2 q = UDiv64(Negative64(x) ? Neg64(x) : x, Negative64(y) ? Neg64(y) : y);
      return neg ? Neg64(q) : q;
    }
    case 8:    // Mod, fmod: the dividend's sign (x % 0 = 0)
    case 9: {  // Mod: the divisor's sign
      if ((y.x | y.y) == 0u) return uvec2(0u);
      const bool neg = Negative64(x) != Negative64(y);
      uvec2 q = UDiv64(Negative64(x) ? Neg64(x) : x, Negative64(y) ? Neg64(y) : y);
      uvec2 r = Sub64(x, Mul64(neg ? Neg64(q) : q, y));
      if (OP == 9u && (r.x | r.y) != 0u && Negative64(r) != Negative64(y)) r = Add64(r, y);
      return r;
    }
    case 5: return LessSigned64(x, y) ? y : x;
    default: return LessSigned64(y, x) ? y : x;  // 6: Min
  }
}

uvec2 LoadInt(uint w0, uint w1) { return TYPE == 2u ? uvec2(w0, w1) : uvec2(w0, int(w0) < 0 ? 0xffffffffu : 0u); }

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint dims[KILN_MAX_RANK] = p.dims, sa[KILN_MAX_RANK] = p.sa, sb[KILN_MAX_RANK] = p.sb;
  const uint ia = BroadcastOffset(i, p.rank, dims, sa), ib = BroadcastOffset(i, p.rank, dims, sb);
  if (TYPE == 1u) {
    c[i] = ApplyInt(LoadInt(a[ia], 0u), LoadInt(b[ib], 0u)).x;
  } else {
    const uvec2 r = ApplyInt(LoadInt(a[2u * ia], a[2u * ia + 1u]), LoadInt(b[2u * ib], b[2u * ib + 1u]));
    c[2u * i] = r.x;
    c[2u * i + 1u] = r.y;
  }
}
