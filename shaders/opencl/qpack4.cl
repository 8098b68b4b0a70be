// Bytes [outer][c][sp] -> words [outer][c4][sp], four channels a word, as
// shaders/vulkan/qpack4.comp (spec 3 FILL: 0 zero, 1 fill[0], 2
// fill[outer % fill_mod]).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define FILL KILN_SPEC_3

typedef struct {
  uint n, c, c4, sp, fill_mod;
} QPackPush;

__kernel void qpack4(__global const uchar* src, __global const uchar* fill, __global uint* dst, QPackPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint s = i % p.sp, q = i / p.sp, c4 = q % p.c4, o = q / p.c4;
  const uint pad = FILL == 0 ? 0u : (uint)fill[FILL == 1 ? 0u : o % p.fill_mod];
  uint word = 0;
  for (uint j = 0; j < 4; ++j) {
    const uint c = 4 * c4 + j;
    word |= (c < p.c ? (uint)src[(o * p.c + c) * p.sp + s] : pad) << (8 * j);
  }
  dst[i] = word;
}
