// The strided copy (common.cl) in bytes, for 1-byte dtypes (bool, u8, i8).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif

__kernel void copy_u8(__global const uchar* x, __global uchar* y, StridedCopy p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  y[DstOffset(&p, i, KILN_SPEC_4 != 0)] = x[SrcOffset(&p, i, KILN_SPEC_3 != 0)];
}
