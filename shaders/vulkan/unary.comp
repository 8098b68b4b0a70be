#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"

// y = f(x), elementwise. The function is a specialization constant: its code
// in UnaryFn's numbering (unary_fn.glsl), set by the GPU op layer
// (backends/gpu/ops/gpu_elementwise.cpp).
layout(constant_id = 3) const uint OP = 0;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };
layout(std430, binding = 0) readonly buffer X4 { STORE4_T x4[]; };
layout(std430, binding = 1) writeonly buffer Y4 { STORE4_T y4[]; };
// c != 0: X and Y are channel-packed with c channels, c not a multiple of
// four, over `plane` pixels; the lanes past c stay zero.
layout(push_constant) uniform P { uint n; float alpha; float beta; uint c, plane; } p;

// Elements an invocation: 1 on GPUs, 8 or more on CPU drivers (binary.comp's EPI).
layout(constant_id = 4) const uint EPI = 1u;

void main() {
  const uint base = KILN_GLOBAL_INDEX * EPI;
  if (EPI >= 4u && p.c == 0u && (p.n & 3u) == 0u) {  // vec4 accesses (binary.comp)
    [[dont_unroll]] for (uint e = 0u; e < EPI; e += 4u) {
      const uint q = (base + e) / 4u;
      if (q * 4u >= p.n) return;
      const vec4 v = vec4(x4[q]);
      vec4 r;
      [[unroll]] for (uint l = 0u; l < 4u; ++l) r[l] = UnaryFn(OP, v[l], p.alpha, p.beta);
      y4[q] = STORE4_T(r);
    }
    return;
  }
  [[dont_unroll]] for (uint e = 0u; e < EPI; ++e) {
    const uint i = base + e;
    if (i >= p.n) return;
    if (p.c != 0u && (i / 4u / p.plane) % ((p.c + 3u) / 4u) * 4u + i % 4u >= p.c)
      y[i] = STORE_T(0.0);
    else
      y[i] = STORE_T(UnaryFn(OP, float(x[i]), p.alpha, p.beta));
  }
}
