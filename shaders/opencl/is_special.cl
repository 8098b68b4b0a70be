// IsNaN (MODE 0) and IsInf (MODE 1; DETECT bit 0: +inf, bit 1: -inf) of a
// float tensor, as bool bytes (shaders/vulkan/is_special.comp).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 3
#endif
#define MODE KILN_SPEC_3
#define DETECT KILN_SPEC_4

typedef struct {
  uint n;
} IsSpecialPush;

__kernel void is_special(__global const STORE_T* x, __global uchar* y, IsSpecialPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const float v = LOAD(x, i);
  const bool pos = (DETECT & 1) != 0, neg = (DETECT & 2) != 0;
  bool r;
  if (MODE == 0) r = isnan(v);
  else r = isinf(v) && (v > 0.0f ? pos : neg);
  y[i] = r ? 1 : 0;
}
