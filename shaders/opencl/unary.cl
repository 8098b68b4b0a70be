// y = f(x), elementwise; the function is spec constant 3, its code in
// UnaryFn's numbering (common.cl; shaders/vulkan/unary.comp).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 1
#endif
#define OP KILN_SPEC_3
#define EPI KILN_SPEC_4  // elements a work item (unary.comp)

// c != 0: X and Y are channel-packed with c channels, c not a multiple of
// four, over `plane` pixels; the lanes past c stay zero.
typedef struct {
  uint n;
  float alpha, beta;
  uint c, plane;
} UnaryPush;

__kernel void unary(__global const STORE_T* x, __global STORE_T* y, UnaryPush p) {
  const uint base = KILN_GLOBAL_INDEX * EPI;
  for (uint e = 0u; e < EPI; ++e) {
    const uint i = base + e;
    if (i >= p.n) return;
    if (p.c != 0u && (i / 4u / p.plane) % ((p.c + 3u) / 4u) * 4u + i % 4u >= p.c)
      STORE(y, i, 0.0f);
    else
      STORE(y, i, UnaryFn(OP, LOAD(x, i), p.alpha, p.beta));
  }
}
