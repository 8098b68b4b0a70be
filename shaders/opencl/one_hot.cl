// OneHot in UNIT_T units (shaders/vulkan/one_hot.comp): output element e =
// (o, d, r) over [outer, depth, inner] is values[1] where index[o * inner +
// r] is d (negative indices from the end), else values[0]. Indices are i32,
// i64 (IDX64) or f32 (FLOAT_IDX, truncated toward zero as the host's).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define IDX64 (KILN_SPEC_3 != 0)
#define FLOAT_IDX (KILN_SPEC_4 != 0)

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
  int v;  // -1 (out of range) matches no d: off
  if (FLOAT_IDX) {
    const float f = as_float(ind[k]), dim = (float)p.depth;
    const int t = f >= -dim && f < dim ? (int)f : 0;  // NaN fails both
    v = f >= -dim && f < dim ? (t < 0 ? t + (int)p.depth : t) : -1;
  } else {
    v = IndexIn(ind, k, p.depth, IDX64);
  }
  y[i] = vals[(v == (int)d ? p.units : 0u) + w];
}
