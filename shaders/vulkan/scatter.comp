#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// The scatter of ScatterElements (MODE 0) and ScatterND (MODE 1), in UNIT_T
// units, after y was filled with the data (a copy, or the data itself in
// place). Without a reduction (REDUCE 0), one invocation a unit of the
// updates. With one (f32 only: 1 Add, 2 Mul, 3 Max, 4 Min), one invocation
// a lane that no other invocation's updates can reach, walking its updates
// in order as the host does: MODE 0, the update elements that differ only
// along the axis; MODE 1, element s of every slice.
//   MODE 0: update element e sits at the indices' coordinates c (dims of the
//     updates); it goes to c with c[axis] replaced by index[e].
//   MODE 1: update slice t (`slice` elements) goes where index tuple t
//     (`depth` indices into the leading dims of y) points.
// Indices are i32, or i64 (IDX64) as in gather.comp; negative ones count from
// the end. An update whose index is out of range (the host kernel reports
// it as an error) is not written. Repeated indices: one of the writes wins
// (ONNX leaves the order undefined).
layout(constant_id = 3) const uint MODE = 0;
layout(constant_id = 4) const bool IDX64 = false;
layout(constant_id = 5) const uint REDUCE = 0;

layout(std430, binding = 0) readonly buffer I { uint ind[]; };
layout(std430, binding = 1) readonly buffer U { UNIT_T upd[]; };
layout(std430, binding = 2) buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P {
  // n: the invocations; count: the updates' length along the axis (MODE 0)
  // or their slices (MODE 1) that a reducing invocation walks.
  uint n, units, rank, axis, depth, slice, axis_dim, count;  // axis_dim: y's length along the axis (MODE 0)
  uint dims[KILN_MAX_RANK];     // MODE 0: the updates' dims; MODE 1: y's leading `depth` dims
  uint ystrides[KILN_MAX_RANK]; // y's strides in elements
} p;

// The element of y that update element e (MODE 0) or slice t's element s
// (MODE 1) goes to, or -1 when its index is out of range.
int Target(uint e, uint t, uint s) {
  uint off = 0u;
  if (MODE == 0u) {
    uint rem = e;
    for (uint d = p.rank; d-- > 0u;) {
      const uint c = rem % p.dims[d];
      rem /= p.dims[d];
      if (d == p.axis) {
        const int v = KILN_INDEX(e, p.axis_dim);
        if (v < 0) return -1;
        off += uint(v) * p.ystrides[d];
      } else {
        off += c * p.ystrides[d];
      }
    }
    return int(off);
  }
  for (uint k = 0u; k < p.depth; ++k) {
    const int v = KILN_INDEX(t * p.depth + k, p.dims[k]);
    if (v < 0) return -1;
    off += uint(v) * p.ystrides[k];
  }
  return int(off + s);
}

float Reduce(float a, float b) {
  switch (REDUCE) {
    case 1: return a + b;
    case 2: return a * b;
    case 3: return max(a, b);
    default: return min(a, b);
  }
}

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  if (REDUCE == 0u) {
    const uint e = i / p.units, w = i - e * p.units;
    const uint t = MODE == 1u ? e / p.slice : 0u;
    const int off = Target(e, t, e - t * p.slice);
    if (off >= 0) y[uint(off) * p.units + w] = upd[i];
    return;
  }
  // Lane i: MODE 0, (outer, inner) around the axis of the updates' dims
  // (inner = the product of the dims after it, folded into p.slice); MODE
  // 1, slice element i.
  for (uint k = 0u; k < p.count; ++k) {
    uint e;
    if (MODE == 0u) {
      const uint o = i / p.slice, r = i - o * p.slice;
      e = (o * p.count + k) * p.slice + r;
    } else {
      e = k * p.slice + i;
    }
    const int off = MODE == 0u ? Target(e, 0u, 0u) : Target(e, k, i);
    if (off < 0) continue;
    y[off] = UNIT_T(floatBitsToUint(Reduce(uintBitsToFloat(uint(y[off])), uintBitsToFloat(uint(upd[e])))));
  }
}
