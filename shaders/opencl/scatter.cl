// The scatter of ScatterElements (MODE 0) and ScatterND (MODE 1) without a
// reduction, in UNIT_T units (shaders/vulkan/scatter.comp), after y was
// filled with the data: one work item a unit of the updates. An update whose
// index is out of range is not written.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define MODE KILN_SPEC_3
#define IDX64 (KILN_SPEC_4 != 0)

typedef struct {
  uint n, units, rank, axis, depth, slice, axis_dim;
  uint dims[KILN_MAX_RANK];
  uint ystrides[KILN_MAX_RANK];
} ScatterPush;

__kernel void scatter(__global const uint* ind, __global const UNIT_T* upd, __global UNIT_T* y, ScatterPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  uint off = 0;
  if (MODE == 0) {
    uint rem = e;
    for (uint d = p.rank; d-- > 0;) {
      const uint c = rem % p.dims[d];
      rem /= p.dims[d];
      if (d == p.axis) {
        const int v = IndexIn(ind, e, p.axis_dim, IDX64);
        if (v < 0) return;
        off += (uint)v * p.ystrides[d];
      } else {
        off += c * p.ystrides[d];
      }
    }
  } else {
    const uint t = e / p.slice, s = e - t * p.slice;
    for (uint k = 0; k < p.depth; ++k) {
      const int v = IndexIn(ind, t * p.depth + k, p.dims[k], IDX64);
      if (v < 0) return;
      off += (uint)v * p.ystrides[k];
    }
    off += s;
  }
  y[off * p.units + w] = upd[i];
}
