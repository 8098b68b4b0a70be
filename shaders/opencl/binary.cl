// c = a (op) b on float tensors with numpy broadcasting (shaders/vulkan/binary.comp).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define OP KILN_SPEC_3

typedef struct {
  uint n, rank;
  uint dims[KILN_MAX_RANK];
  uint sa[KILN_MAX_RANK];
  uint sb[KILN_MAX_RANK];
} BinaryPush;

float Apply(float x, float y) {
  switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
    case 4: {  // Pow: negative bases with integral exponents keep their sign
      if (x >= 0.0f) return pow(x, y);
      float r = pow(-x, y);
      return fmod(y, 2.0f) == 1.0f ? -r : (y == floor(y) ? r : NAN);
    }
    case 5: return fmax(x, y);
    case 6: return fmin(x, y);
    case 8:    // Mod, fmod: the dividend's sign
    case 9: {  // Mod: the divisor's sign
      const float r = fmod(x, y);
      return OP == 9 && r != 0.0f && ((r < 0.0f) != (y < 0.0f)) ? r + y : r;
    }
    default: return x >= 0.0f ? x : x * y;  // PRelu
  }
}

__kernel void binary(__global const STORE_T* a, __global const STORE_T* b, __global STORE_T* c, BinaryPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const float x = LOAD(a, BroadcastOffset(i, p.rank, p.dims, p.sa));
  const float y = LOAD(b, BroadcastOffset(i, p.rank, p.dims, p.sb));
  STORE(c, i, Apply(x, y));
}
