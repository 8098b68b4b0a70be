// The strided copy (common.cl) in UNIT_T units: Transpose, Slice, Concat,
// Split, Tile, Expand, DepthToSpace, SpaceToDepth (shaders/vulkan/copy.comp).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif

__kernel void copy(__global const UNIT_T* x, __global UNIT_T* y, StridedCopy p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  y[DstOffset(&p, i, KILN_SPEC_4 != 0)] = x[SrcOffset(&p, i, KILN_SPEC_3 != 0)];
}
