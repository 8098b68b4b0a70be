// y = f(x), elementwise; the function is spec constant 3 (shaders/vulkan/unary.comp).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define OP KILN_SPEC_3

// c != 0: X and Y are channel-packed with c channels, c not a multiple of
// four, over `plane` pixels; the lanes past c stay zero.
typedef struct {
  uint n;
  float alpha, beta;
  uint c, plane;
} UnaryPush;

float Apply(float v, float alpha, float beta) {
  switch (OP) {
    case 0: return fmax(v, 0.0f);                                  // Relu
    case 1: return v >= 0.0f ? v : v * alpha;                      // LeakyRelu
    case 2: return fmin(fmax(v, alpha), beta);                     // Clip
    case 3: return 1.0f / (1.0f + exp(-v));                        // Sigmoid
    case 4: return tanh(clamp(v, -15.0f, 15.0f));                  // Tanh
    case 5: return clamp(alpha * v + beta, 0.0f, 1.0f);            // HardSigmoid
    case 6: return v * clamp(v / 6.0f + 0.5f, 0.0f, 1.0f);         // HardSwish
    case 7: return v >= 0.0f ? v : alpha * (exp(v) - 1.0f);        // Elu
    case 8: return erf(v);                                         // Erf
    case 9: return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));  // Gelu
    case 10: {                                                     // Gelu, tanh approximation
      float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      return 0.5f * v * (1.0f + tanh(clamp(u, -15.0f, 15.0f)));
    }
    case 11: return exp(v);                                        // Exp
    case 12: return log(v);                                        // Log
    case 13: return sqrt(v);                                       // Sqrt
    case 14: return -v;                                            // Neg
    case 15: return fabs(v);                                       // Abs
    case 16: return 1.0f / v;                                      // Reciprocal
    default: return v;                                             // Identity
  }
}

__kernel void unary(__global const STORE_T* x, __global STORE_T* y, UnaryPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  if (p.c != 0u && (i / 4u / p.plane) % ((p.c + 3u) / 4u) * 4u + i % 4u >= p.c) {
    STORE(y, i, 0.0f);
    return;
  }
  STORE(y, i, Apply(LOAD(x, i), p.alpha, p.beta));
}
