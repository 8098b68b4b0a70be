// The float functions of the binary ops (binary.comp, binary_bytes.comp):
// op codes 0 Add, 1 Sub, 2 Mul, 3 Div, 4 Pow, 5 Max, 6 Min, 7 PRelu, 8 Mod
// with fmod (the dividend's sign), 9 Mod (the divisor's sign).
float BinaryFloat(uint op, float x, float y) {
  switch (op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return DivRn(x, y);
    case 4: {  // Pow: negative bases with integral exponents keep their sign
      if (x >= 0.0) return pow(x, y);
      float r = pow(-x, y);
      return mod(y, 2.0) == 1.0 ? -r : (fract(y) == 0.0 ? r : 0.0 / 0.0);
    }
    case 5: return max(x, y);
    case 6: return min(x, y);
    case 8:
    case 9: {
      float r = x - y * trunc(DivRn(x, y));
      return op == 9u && r != 0.0 && ((r < 0.0) != (y < 0.0)) ? r + y : r;
    }
    default: return x >= 0.0 ? x : x * y;  // 7: PRelu
  }
}
