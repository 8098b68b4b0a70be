// ReverseSequence in UNIT_T units (shaders/vulkan/reverse_sequence.comp):
// element e at batch b and step t reads step len[b] - 1 - t when t <
// len[b], else itself; lengths (i32, or i64 with IDX64) are clamped to
// [0, nt] so that nothing is read out of bounds.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define IDX64 (KILN_SPEC_3 != 0)

typedef struct {
  uint n, units, bstride, nb, tstride, nt;
} ReversePush;

__kernel void reverse_sequence(__global const UNIT_T* x, __global const uint* lens, __global UNIT_T* y, ReversePush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units, w = i - e * p.units;
  const uint b = e / p.bstride % p.nb, t = e / p.tstride % p.nt;
  const long v = IDX64 ? ((__global const long*)lens)[b] : (long)(int)lens[b];
  const uint len = v < 0 ? 0 : (uint)min(v, (long)p.nt);
  const uint src = t < len ? e + (len - 1 - t) * p.tstride - t * p.tstride : e;
  y[i] = x[src * p.units + w];
}
