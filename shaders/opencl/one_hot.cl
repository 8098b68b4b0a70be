// OneHot in UNIT_T units (shaders/vulkan/one_hot.comp): output element e =
// (o, d, r) over [outer, depth, inner] is values[1] where index[o * inner +
// r] is d (negative indices from the end), else values[0].
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define IDX64 (KILN_SPEC_3 != 0)

typedef struct {
  uint n, units, depth, inner;
} OneHotPush;

__kernel void one_hot(__global const uint* ind, __global const UNIT_T* vals, __global UNIT_T* y, OneHotPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  const uint t = e / p.inner, r = e - t * p.inner;
  const uint o = t / p.depth, d = t - o * p.depth;
  const uint k = o * p.inner + r;
  const int v = IndexIn(ind, k, p.depth, IDX64);  // -1 (out of range) matches no d: off
  y[i] = vals[(v == (int)d ? p.units : 0u) + w];
}
