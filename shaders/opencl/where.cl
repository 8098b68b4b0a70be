// y = cond ? a : b with numpy broadcasting (shaders/vulkan/where.comp): dims
// of y, strides of cond, a and b in elements (0 where broadcast; at most
// KILN_MAX_RANK dims after collapsing). cond is bool bytes; a, b and y are
// moved as WORDS UNIT_T units an element (any 2-, 4- or 8-byte dtype).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 1
#endif
#define WORDS KILN_SPEC_3

typedef struct {
  uint n, rank;
  uint dims[KILN_MAX_RANK];
  uint sc[KILN_MAX_RANK];
  uint sa[KILN_MAX_RANK];
  uint sb[KILN_MAX_RANK];
} WherePush;

__kernel void where(__global const uchar* c, __global const UNIT_T* a, __global const UNIT_T* b, __global UNIT_T* y,
                    WherePush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint e = i / WORDS, w = i - e * WORDS;
  if (c[BroadcastOffset(e, p.rank, p.dims, p.sc)] != 0)
    y[i] = a[BroadcastOffset(e, p.rank, p.dims, p.sa) * WORDS + w];
  else
    y[i] = b[BroadcastOffset(e, p.rank, p.dims, p.sb) * WORDS + w];
}
