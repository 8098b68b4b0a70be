#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// GatherND in UNIT_T units: output element e is element s of the slice that
// index tuple t (`depth` indices into data's dims after the batch dims)
// points to in batch b: e = (b * tuples + t) * slice + s. Indices are i32 or
// i64 (IDX64); negative ones count from the end; a tuple out of range (the
// host kernel reports it as an error) writes 0.
layout(constant_id = 3) const bool IDX64 = false;

layout(std430, binding = 0) readonly buffer X { UNIT_T x[]; };
layout(std430, binding = 1) readonly buffer I { uint ind[]; };
layout(std430, binding = 2) writeonly buffer Y { UNIT_T y[]; };
layout(push_constant) uniform P {
  uint n, units, tuples, depth, slice, batch_data;
  uint dims[KILN_MAX_RANK];     // the indexed dims of data
  uint strides[KILN_MAX_RANK];  // their strides in elements
} p;

void main() {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  const uint bt = e / p.slice, s = e - bt * p.slice;  // bt = b * tuples + t
  const uint b = bt / p.tuples;
  uint off = b * p.batch_data + s;
  uint word = 0u;
  bool ok = true;
  for (uint k = 0u; k < p.depth; ++k) {
    const int v = KILN_INDEX(bt * p.depth + k, p.dims[k]);
    if (v < 0) ok = false;
    else off += uint(v) * p.strides[k];
  }
  if (ok) word = uint(x[off * p.units + w]);
  y[i] = UNIT_T(word);
}
