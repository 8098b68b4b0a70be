// Cast between f32, f16, i32, i64, bool, u8 and i8 on raw bits, shared by cast.comp
// (32-bit words) and cast_u8.comp (bytes). An element is a uvec2 (low word,
// high word; narrower elements zero-extended). Integer arithmetic only, so
// the result is the host kernel's (host_fallback/ops/elementwise.cpp) bit for
// bit on every GPU, whatever its float rounding and denormal modes:
//   * float -> int truncates toward zero and saturates, NaN -> 0;
//   * int -> float rounds as the host's int64 -> double -> float does: to
//     53 bits, then to 24 bits, each to nearest even;
//   * f32 -> f16 rounds to nearest even (FloatToHalf), f16 -> f32 is exact;
//   * x -> bool is x != 0 (NaN is true); i64 -> i32 keeps the low word;
//   * float -> u8 / i8 truncates toward zero and saturates to the byte's
//     range (NaN -> 0); integers -> u8 / i8 keep the low byte (wrap).
// The kinds (spec constants SRC and DST) are GpuCastKind in
// backends/gpu/ops/gpu_layout_logic.cpp.
#include "int64.glsl"

#define KIND_F32 0u
#define KIND_F16 1u
#define KIND_I32 2u
#define KIND_I64 3u
#define KIND_BOOL 4u
#define KIND_U8 5u
#define KIND_I8 6u

layout(constant_id = 3) const uint SRC = 0;
layout(constant_id = 4) const uint DST = 0;

// v rounded to its `keep` most significant bits, to nearest even.
uvec2 RoundBits(uvec2 v, int keep) {
  int drop = Msb64(v) + 1 - keep;
  if (drop <= 0) return v;
  uint s = uint(drop);
  uvec2 q = Shr64(v, s);
  uvec2 rem = v ^ Shl64(q, s);
  uvec2 half_ulp = Shl64(uvec2(1u, 0u), s - 1u);
  if (LessUnsigned64(half_ulp, rem) || (rem == half_ulp && (q.x & 1u) != 0u))
    q = uvec2(q.x + 1u, q.y + (q.x == 0xffffffffu ? 1u : 0u));
  return Shl64(q, s);
}

// A signed 64-bit integer as f32 bits.
uint IntToFloat(uvec2 v) {
  uint sign = v.y & 0x80000000u;
  uvec2 m = sign != 0u ? Neg64(v) : v;
  m = RoundBits(RoundBits(m, 53), 24);
  int msb = Msb64(m);
  if (msb < 0) return 0u;
  uvec2 mant = msb >= 23 ? Shr64(m, uint(msb - 23)) : Shl64(m, uint(23 - msb));
  return sign | (uint(msb + 127) << 23) | (mant.x & 0x7fffffu);
}

// f32 bits truncated toward zero to a signed 64-bit integer, saturated to
// [-2^(bits-1), 2^(bits-1) - 1]; NaN -> 0.
uvec2 FloatToInt(uint f, uint bits) {
  uint e = (f >> 23) & 0xffu;
  if ((f & 0x7fffffffu) > 0x7f800000u || e < 127u) return uvec2(0u);
  bool neg = (f & 0x80000000u) != 0u;
  uvec2 m;
  if (e - 127u >= bits - 1u) {  // |f| >= 2^(bits-1): saturate
    if (bits == 64u) m = neg ? uvec2(0u, 0x80000000u) : uvec2(0xffffffffu, 0x7fffffffu);
    else m = uvec2(neg ? 0x80000000u : 0x7fffffffu, 0u);  // |minimum| = maximum + 1
  } else {
    uvec2 mant = uvec2((f & 0x7fffffu) | 0x800000u, 0u);
    m = e >= 150u ? Shl64(mant, e - 150u) : Shr64(mant, 150u - e);
  }
  return neg ? Neg64(m) : m;
}

uint FloatToHalf(uint x) {
  uint sign = (x >> 16) & 0x8000u;
  int e = int((x >> 23) & 0xffu) - 127 + 15;
  uint mant = x & 0x7fffffu;
  if (((x >> 23) & 0xffu) == 0xffu) return sign | 0x7c00u | (mant != 0u ? 0x200u : 0u);
  if (e >= 31) return sign | 0x7c00u;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000u;
    uint shift = uint(14 - e);
    uint h = mant >> shift, rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (h & 1u) != 0u)) ++h;
    return sign | h;
  }
  uint h = sign | (uint(e) << 10) | (mant >> 13);
  uint rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) ++h;
  return h;
}

uint HalfToFloat(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (e == 0u) {
    if (mant == 0u) return sign;
    int msb = findMSB(mant);  // subnormal: normalize
    return sign | (uint(msb - 24 + 127) << 23) | ((mant << uint(10 - msb)) & 0x3ffu) << 13;
  }
  if (e == 31u) return sign | 0x7f800000u | (mant << 13);
  return sign | ((e + 127u - 15u) << 23) | (mant << 13);
}

uvec2 Cast(uvec2 v) {
  if (SRC == KIND_F32 || SRC == KIND_F16) {
    uint f = SRC == KIND_F16 ? HalfToFloat(v.x) : v.x;
    switch (DST) {
      case KIND_F32: return uvec2(f, 0u);
      case KIND_F16: return uvec2(FloatToHalf(f), 0u);
      case KIND_I32: return uvec2(FloatToInt(f, 32u).x, 0u);
      case KIND_I64: return FloatToInt(f, 64u);
      case KIND_U8: return uvec2(uint(clamp(int(FloatToInt(f, 32u).x), 0, 255)), 0u);
      case KIND_I8: return uvec2(uint(clamp(int(FloatToInt(f, 32u).x), -128, 127)) & 0xffu, 0u);
      default: return uvec2((f & 0x7fffffffu) != 0u ? 1u : 0u, 0u);
    }
  }
  uvec2 i = v;  // as a signed 64-bit integer
  if (SRC == KIND_I32) i.y = int(v.x) < 0 ? 0xffffffffu : 0u;
  if (SRC == KIND_BOOL) i = uvec2(v.x != 0u ? 1u : 0u, 0u);
  if (SRC == KIND_U8) i = uvec2(v.x & 0xffu, 0u);
  if (SRC == KIND_I8) i = uvec2(uint(int(v.x << 24) >> 24), (v.x & 0x80u) != 0u ? 0xffffffffu : 0u);
  switch (DST) {
    case KIND_F32: return uvec2(IntToFloat(i), 0u);
    case KIND_F16: return uvec2(FloatToHalf(IntToFloat(i)), 0u);
    case KIND_I32: return uvec2(i.x, 0u);
    case KIND_I64: return i;
    case KIND_U8:
    case KIND_I8: return uvec2(i.x & 0xffu, 0u);
    default: return uvec2((i.x | i.y) != 0u ? 1u : 0u, 0u);
  }
}
