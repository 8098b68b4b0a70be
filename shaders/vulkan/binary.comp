#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// c = a (op) b on float tensors with numpy broadcasting: dims of c, strides
// of a and b (0 where broadcast), at most KILN_MAX_RANK dims after
// collapsing. Integer tensors: binary_int.comp (same push constants).
layout(constant_id = 3) const uint OP = 0;

layout(std430, binding = 0) readonly buffer A { STORE_T a[]; };
layout(std430, binding = 1) readonly buffer B { STORE_T b[]; };
layout(std430, binding = 2) writeonly buffer C { STORE_T c[]; };
layout(push_constant) uniform P {
  uint n, rank;
  uint dims[KILN_MAX_RANK];
  uint sa[KILN_MAX_RANK];
  uint sb[KILN_MAX_RANK];
} p;

float Apply(float x, float y) {
  switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
    case 4: {  // Pow: negative bases with integral exponents keep their sign
      if (x >= 0.0) return pow(x, y);
      float r = pow(-x, y);
      return mod(y, 2.0) == 1.0 ? -r : (fract(y) == 0.0 ? r : 0.0 / 0.0);
    }
    case 5: return max(x, y);
    case 6: return min(x, y);
    case 8:    // Mod, fmod: the dividend's sign
    case 9: {  // Mod: the divisor's sign
      float r = x - y * trunc(x / y);
      return OP == 9u && r != 0.0 && ((r < 0.0) != (y < 0.0)) ? r + y : r;
    }
    default: return x >= 0.0 ? x : x * y;  // PRelu
  }
}

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint dims[KILN_MAX_RANK] = p.dims, sa[KILN_MAX_RANK] = p.sa, sb[KILN_MAX_RANK] = p.sb;
  const float x = float(a[BroadcastOffset(i, p.rank, dims, sa)]);
  const float y = float(b[BroadcastOffset(i, p.rank, dims, sb)]);
  c[i] = STORE_T(Apply(x, y));
}
