// Cast (CastBits in common.cl) between dtypes of whole 32-bit words: f32,
// i32, i64 (shaders/vulkan/cast.comp). SRC and DST (spec constants 3, 4) are
// the kinds.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define SRC KILN_SPEC_3
#define DST KILN_SPEC_4

typedef struct {
  uint n;
} CastPush;

__kernel void cast(__global const uint* x, __global uint* y, CastPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const ulong v = SRC == KIND_I64 ? ((__global const ulong*)x)[i] : (ulong)x[i];
  const ulong r = CastBits(v, SRC, DST);
  if (DST == KIND_I64)
    ((__global ulong*)y)[i] = r;
  else
    y[i] = (uint)r;
}
