// GatherElements in UNIT_T units (shaders/vulkan/gather_elements.comp):
// output element e has the indices' coordinates c; it reads x at c with
// c[axis] replaced by index[e]. Indices are i32, or i64 (IDX64); negative
// ones count from the end. An index outside [-dim, dim) (the host kernel
// reports it as an error) writes 0 here instead of reading out of bounds.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define IDX64 (KILN_SPEC_3 != 0)

typedef struct {
  uint n, units, rank, axis, dim;
  uint dims[KILN_MAX_RANK];
  uint xstrides[KILN_MAX_RANK];
} GatherElementsPush;

__kernel void gather_elements(__global const UNIT_T* x, __global const uint* ind, __global UNIT_T* y,
                              GatherElementsPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  const int v = IndexIn(ind, e, p.dim, IDX64);
  UNIT_T unit = 0;
  if (v >= 0) {
    uint rem = e, off = 0;
    for (uint d = p.rank; d-- > 0;) {
      const uint c = rem % p.dims[d];
      rem /= p.dims[d];
      off += (d == p.axis ? (uint)v : c) * p.xstrides[d];
    }
    unit = x[off * p.units + w];
  }
  y[i] = unit;
}
