#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// y = f(x), elementwise. The function is a specialization constant (see
// VkUnaryOp in backends/vulkan/ops/vk_elementwise.cpp).
layout(constant_id = 3) const uint OP = 0;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };
// c != 0: X and Y are channel-packed with c channels, c not a multiple of
// four, over `plane` pixels; the lanes past c stay zero.
layout(push_constant) uniform P { uint n; float alpha; float beta; uint c, plane; } p;

float Apply(float v) {
  switch (OP) {
    case 0: return max(v, 0.0);                                   // Relu
    case 1: return v >= 0.0 ? v : v * p.alpha;                    // LeakyRelu
    case 2: return min(max(v, p.alpha), p.beta);                  // Clip
    case 3: return 1.0 / (1.0 + exp(-v));                         // Sigmoid
    case 4: return tanh(clamp(v, -15.0, 15.0));                   // Tanh
    case 5: return clamp(p.alpha * v + p.beta, 0.0, 1.0);         // HardSigmoid
    case 6: return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);            // HardSwish
    case 7: return v >= 0.0 ? v : p.alpha * (exp(v) - 1.0);       // Elu
    case 8: return Erf(v);                                        // Erf
    case 9: return 0.5 * v * (1.0 + Erf(v * 0.70710678118654752)); // Gelu
    case 10: {                                                    // Gelu, tanh approximation
      float u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
      return 0.5 * v * (1.0 + tanh(clamp(u, -15.0, 15.0)));
    }
    case 11: return exp(v);                                       // Exp
    case 12: return log(v);                                       // Log
    case 13: return sqrt(v);                                      // Sqrt
    case 14: return -v;                                           // Neg
    case 15: return abs(v);                                       // Abs
    case 16: return 1.0 / v;                                      // Reciprocal
    default: return v;                                            // Identity
  }
}

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  if (p.c != 0u && (i / 4u / p.plane) % ((p.c + 3u) / 4u) * 4u + i % 4u >= p.c) {
    y[i] = STORE_T(0.0);
    return;
  }
  y[i] = STORE_T(Apply(float(x[i])));
}
