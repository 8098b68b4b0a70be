// Cast (CastBits in common.cl) where a side is f16, bool, u8 or i8
// (shaders/vulkan/cast_u8.comp): both sides are addressed in bytes
// (little-endian), so each item writes exactly its own element's bytes.
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

uint Bytes(uint kind) { return kind == KIND_BOOL || kind == KIND_U8 || kind == KIND_I8 ? 1u : (kind == KIND_F16 ? 2u : (kind == KIND_I64 ? 8u : 4u)); }

__kernel void cast_u8(__global const uchar* x, __global uchar* y, CastPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint sb = Bytes(SRC), db = Bytes(DST);
  ulong v = 0ul;
  for (uint b = 0u; b < sb; ++b) v |= (ulong)x[i * sb + b] << (8u * b);
  const ulong r = CastBits(v, SRC, DST);
  for (uint b = 0u; b < db; ++b) y[i * db + b] = (uchar)(r >> (8u * b));
}
