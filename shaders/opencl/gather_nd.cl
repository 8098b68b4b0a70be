// GatherND in UNIT_T units (shaders/vulkan/gather_nd.comp): output element e
// = (b * tuples + t) * slice + s reads element s of the slice index tuple t
// points to in batch b. A tuple out of range writes 0.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define IDX64 (KILN_SPEC_3 != 0)

typedef struct {
  uint n, units, tuples, depth, slice, batch_data;
  uint dims[KILN_MAX_RANK];
  uint strides[KILN_MAX_RANK];
} GatherNdPush;

__kernel void gather_nd(__global const UNIT_T* x, __global const uint* ind, __global UNIT_T* y, GatherNdPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  const uint bt = e / p.slice, s = e - bt * p.slice;
  const uint b = bt / p.tuples;
  uint off = b * p.batch_data + s;
  bool ok = true;
  for (uint k = 0; k < p.depth; ++k) {
    const int v = IndexIn(ind, bt * p.depth + k, p.dims[k], IDX64);
    if (v < 0) ok = false;
    else off += (uint)v * p.strides[k];
  }
  y[i] = ok ? x[off * p.units + w] : (UNIT_T)0;
}
