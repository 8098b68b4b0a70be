#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "int64.glsl"
#include "binary_fn.glsl"

// c = a ^ b, broadcast as in binary.comp (same push constants), where the
// base and the exponent have their own types (ONNX Pow; the output has the
// base's): TA, TB 0 f32, 1 i32, 2 i64 (two words, low first). The host
// kernel computes pow in double and converts to the base's type; here an
// integral exponent of an integer base is exact (repeated squaring, two's
// complement wraparound, a negative exponent 0 unless the base is 1 or -1),
// everything else is f32 pow, truncated toward zero for an integer base.
layout(constant_id = 3) const uint TA = 0;
layout(constant_id = 4) const uint TB = 0;

layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer C { uint c[]; };
KILN_BROADCAST_PUSH;

// An element's words (i32 sign-extended) and its value as a float.
uvec2 Widen(uint type, uvec2 w) { return type == 1u ? uvec2(w.x, int(w.x) < 0 ? 0xffffffffu : 0u) : w; }
float AsFloat(uint type, uvec2 w) {
  return type == 0u ? uintBitsToFloat(w.x) : float(int(w.y)) * 4294967296.0 + float(w.x);
}
uvec2 FromFloat(float f) {  // f integral (truncated), |f| < 2^63
  const float hi = floor(f / 4294967296.0);
  return uvec2(uint(f - hi * 4294967296.0), uint(int(hi)));
}

uvec2 IntPow(uvec2 x, uvec2 e) {
  if (Negative64(e)) {
    if (x == uvec2(1u, 0u)) return x;
    if (x == uvec2(0xffffffffu)) return (e.x & 1u) != 0u ? x : uvec2(1u, 0u);
    return uvec2(0u);
  }
  uvec2 r = uvec2(1u, 0u);
  for (int k = 0; k < 64 && (e.x | e.y) != 0u; ++k) {
    if ((e.x & 1u) != 0u) r = Mul64(r, x);
    x = Mul64(x, x);
    e = Shr64(e, 1u);
  }
  return r;
}

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint dims[KILN_MAX_RANK] = p.dims, sa[KILN_MAX_RANK] = p.sa, sb[KILN_MAX_RANK] = p.sb;
  const uint ia = BroadcastOffset(i, p.rank, dims, sa), ib = BroadcastOffset(i, p.rank, dims, sb);
  const uvec2 wa = Widen(TA, TA == 2u ? uvec2(a[2u * ia], a[2u * ia + 1u]) : uvec2(a[ia], 0u));
  const uvec2 wb = Widen(TB, TB == 2u ? uvec2(b[2u * ib], b[2u * ib + 1u]) : uvec2(b[ib], 0u));
  const float x = AsFloat(TA, wa), y = AsFloat(TB, wb);
  if (TA == 0u) {
    c[i] = floatBitsToUint(BinaryFloat(4u, x, y));
    return;
  }
  uvec2 r;
  if (TB != 0u) {
    r = IntPow(wa, wb);
  } else if (fract(y) == 0.0 && abs(y) < 9.2e18) {
    r = IntPow(wa, FromFloat(y));
  } else {
    r = FromFloat(trunc(BinaryFloat(4u, x, y)));
  }
  if (TA == 1u) {
    c[i] = r.x;
  } else {
    c[2u * i] = r.x;
    c[2u * i + 1u] = r.y;
  }
}
