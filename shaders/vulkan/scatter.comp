#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// The scatter of ScatterElements (MODE 0) and ScatterND (MODE 1) without a
// reduction, in UNIT_T units, after y was filled with the data (a copy, or
// the data itself in place): one invocation a unit of the updates.
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

layout(std430, binding = 0) readonly buffer I { uint ind[]; };
layout(std430, binding = 1) readonly buffer U { UNIT_T upd[]; };
layout(std430, binding = 2) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P {
  uint n, units, rank, axis, depth, slice, axis_dim;  // axis_dim: y's length along the axis (MODE 0)
  uint dims[KILN_MAX_RANK];     // MODE 0: the updates' dims; MODE 1: y's leading `depth` dims
  uint ystrides[KILN_MAX_RANK]; // y's strides in elements
} p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  uint off = 0u;
  if (MODE == 0u) {
    uint rem = e;
    for (uint d = p.rank; d-- > 0u;) {
      const uint c = rem % p.dims[d];
      rem /= p.dims[d];
      if (d == p.axis) {
        const int v = KILN_INDEX(e, p.axis_dim);
        if (v < 0) return;
        off += uint(v) * p.ystrides[d];
      } else {
        off += c * p.ystrides[d];
      }
    }
  } else {
    const uint t = e / p.slice, s = e - t * p.slice;
    for (uint k = 0u; k < p.depth; ++k) {
      const int v = KILN_INDEX(t * p.depth + k, p.dims[k]);
      if (v < 0) return;
      off += uint(v) * p.ystrides[k];
    }
    off += s;
  }
  y[off * p.units + w] = upd[i];
}
