// The scatter of ScatterElements (MODE 0) and ScatterND (MODE 1), in UNIT_T
// units (shaders/vulkan/scatter.comp), after y was filled with the data:
// without a reduction (REDUCE 0), one work item a unit of the updates; with
// one (f32: 1 Add, 2 Mul, 3 Max, 4 Min), one work item a lane no other's
// updates reach, walking its updates in order. An update whose index is out
// of range is not written.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#define MODE KILN_SPEC_3
#define IDX64 (KILN_SPEC_4 != 0)
#define REDUCE KILN_SPEC_5

typedef struct {
  uint n, units, rank, axis, depth, slice, axis_dim, count;
  uint dims[KILN_MAX_RANK];
  uint ystrides[KILN_MAX_RANK];
} ScatterPush;

// The element of y that update element e (MODE 0) or slice t's element s
// (MODE 1) goes to, or -1 when its index is out of range.
int Target(__global const uint* ind, const ScatterPush* p, uint e, uint t, uint s) {
  uint off = 0;
  if (MODE == 0) {
    uint rem = e;
    for (uint d = p->rank; d-- > 0;) {
      const uint c = rem % p->dims[d];
      rem /= p->dims[d];
      if (d == p->axis) {
        const int v = IndexIn(ind, e, p->axis_dim, IDX64);
        if (v < 0) return -1;
        off += (uint)v * p->ystrides[d];
      } else {
        off += c * p->ystrides[d];
      }
    }
    return (int)off;
  }
  for (uint k = 0; k < p->depth; ++k) {
    const int v = IndexIn(ind, t * p->depth + k, p->dims[k], IDX64);
    if (v < 0) return -1;
    off += (uint)v * p->ystrides[k];
  }
  return (int)(off + s);
}

float Reduce(float a, float b) {
  switch (REDUCE) {
    case 1: return a + b;
    case 2: return a * b;
    case 3: return fmax(a, b);
    default: return fmin(a, b);
  }
}

__kernel void scatter(__global const uint* ind, __global const UNIT_T* upd, __global UNIT_T* y, ScatterPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  if (REDUCE == 0) {
    const uint e = i / p.units, w = i - e * p.units;
    const uint t = MODE == 1 ? e / p.slice : 0;
    const int off = Target(ind, &p, e, t, e - t * p.slice);
    if (off >= 0) y[(uint)off * p.units + w] = upd[i];
    return;
  }
  for (uint k = 0; k < p.count; ++k) {  // lane i, as in scatter.comp
    uint e;
    if (MODE == 0) {
      const uint o = i / p.slice, r = i - o * p.slice;
      e = (o * p.count + k) * p.slice + r;
    } else {
      e = k * p.slice + i;
    }
    const int off = MODE == 0 ? Target(ind, &p, e, 0, 0) : Target(ind, &p, e, k, i);
    if (off < 0) continue;
    y[off] = (UNIT_T)as_uint(Reduce(as_float((uint)y[off]), as_float((uint)upd[e])));
  }
}
