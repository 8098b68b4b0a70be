// Gather along an axis in UNIT_T units (shaders/vulkan/gather.comp): output
// item i, as (o, k, r) over [outer, count, inner] (inner counts units: an
// 8-byte element is 2 words), reads x[(o * dim + index[k]) * inner + r].
// Indices are i32, or i64 (IDX64). Negative indices count from the end. An
// index outside [-dim, dim) (the host kernel reports it as an error) writes
// 0 here instead of reading out of bounds.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define IDX64 (KILN_SPEC_3 != 0)

typedef struct {
  uint n, inner, count, dim;
} GatherPush;

__kernel void gather(__global const UNIT_T* x, __global const uint* ind, __global UNIT_T* y, GatherPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint t = i / p.inner, r = i - t * p.inner;
  uint o = t / p.count, k = t - o * p.count;
  const int v = IndexIn(ind, k, p.dim, IDX64);
  UNIT_T unit = 0;
  if (v >= 0) unit = x[(o * p.dim + (uint)v) * p.inner + r];
  y[i] = unit;
}
