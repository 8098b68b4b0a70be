// The strided copy (common.cl) in UNIT_T units: Transpose, Slice, Concat,
// Split, Tile, Expand, DepthToSpace, SpaceToDepth (shaders/vulkan/copy.comp).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 1  // items a work item (copy_strided.glsl's EPI)
#endif
#ifndef KILN_SPEC_6
#define KILN_SPEC_6 0  // the push constants count groups of four units (copy.comp's QUADS)
#endif

__kernel void copy(__global const UNIT_T* x, __global UNIT_T* y, StridedCopy p) {
#define KILN_COPY_ONE(d, s) y[d] = x[s]
#define KILN_COPY_QUAD(d, s) vstore4(vload4((s), x), (d), y)
#if KILN_SPEC_6
  KILN_COPY_ITEMS(p, KILN_SPEC_5, KILN_SPEC_3 != 0, KILN_SPEC_4 != 0, KILN_COPY_QUAD)
#else
  KILN_COPY_ITEMS(p, KILN_SPEC_5, KILN_SPEC_3 != 0, KILN_SPEC_4 != 0, KILN_COPY_ONE)
#endif
}
