// 64-bit integers as uvec2 (low word, high word) with 32-bit arithmetic
// only, so that no shader needs shaderInt64. Two's complement: signed and
// unsigned differ only in comparisons and division. Shared by cast.glsl and
// binary.comp.
#ifndef KILN_INT64_GLSL
#define KILN_INT64_GLSL

uvec2 Shr64(uvec2 v, uint s) {  // s in [0, 63]
  if (s == 0u) return v;
  if (s >= 32u) return uvec2(v.y >> (s - 32u), 0u);
  return uvec2((v.x >> s) | (v.y << (32u - s)), v.y >> s);
}

uvec2 Shl64(uvec2 v, uint s) {  // s in [0, 63]
  if (s == 0u) return v;
  if (s >= 32u) return uvec2(0u, v.x << (s - 32u));
  return uvec2(v.x << s, (v.y << s) | (v.x >> (32u - s)));
}

int Msb64(uvec2 v) { return v.y != 0u ? 32 + findMSB(v.y) : findMSB(v.x); }  // -1 for 0

bool Negative64(uvec2 v) { return (v.y & 0x80000000u) != 0u; }

uvec2 Neg64(uvec2 v) {
  uint lo = ~v.x + 1u;
  return uvec2(lo, ~v.y + (lo == 0u ? 1u : 0u));
}

uvec2 Add64(uvec2 x, uvec2 y) {
  uint carry;
  uint lo = uaddCarry(x.x, y.x, carry);
  return uvec2(lo, x.y + y.y + carry);
}

uvec2 Sub64(uvec2 x, uvec2 y) {
  uint borrow;
  uint lo = usubBorrow(x.x, y.x, borrow);
  return uvec2(lo, x.y - y.y - borrow);
}

// The low 64 bits of the product, which are the same signed or unsigned.
uvec2 Mul64(uvec2 x, uvec2 y) {
  uint hi, lo;
  umulExtended(x.x, y.x, hi, lo);
  return uvec2(lo, hi + x.x * y.y + x.y * y.x);
}

bool LessSigned64(uvec2 x, uvec2 y) {
  if (x.y != y.y) return int(x.y) < int(y.y);
  return x.x < y.x;  // equal high words: the low ones are unsigned
}

bool LessUnsigned64(uvec2 x, uvec2 y) { return x.y < y.y || (x.y == y.y && x.x < y.x); }

// n / d for unsigned n and 0 < d <= 2^63 (a magnitude of a signed value), so
// that the remainder, below d, never overflows when shifted.
uvec2 UDiv64(uvec2 n, uvec2 d) {
  if (n.y == 0u && d.y == 0u) return uvec2(n.x / d.x, 0u);
  uvec2 q = uvec2(0u), r = uvec2(0u);
  for (int i = Msb64(n); i >= 0; --i) {
    r = Shl64(r, 1u);
    r.x |= Shr64(n, uint(i)).x & 1u;
    if (!LessUnsigned64(r, d)) {
      r = Sub64(r, d);
      if (i >= 32) q.y |= 1u << uint(i - 32);
      else q.x |= 1u << uint(i);
    }
  }
  return q;
}

#endif  // KILN_INT64_GLSL
