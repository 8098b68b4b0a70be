// The strided copy (common.cl) in bytes, for 1-byte dtypes (bool, u8, i8).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 1  // items a work item (copy_strided.glsl's EPI)
#endif

__kernel void copy_u8(__global const uchar* x, __global uchar* y, StridedCopy p) {
#define KILN_COPY_ONE(d, s) y[d] = x[s]
  KILN_COPY_ITEMS(p, KILN_SPEC_5, KILN_SPEC_3 != 0, KILN_SPEC_4 != 0, KILN_COPY_ONE)
}
