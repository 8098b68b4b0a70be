// DequantizeLinear, as shaders/vulkan/dequantize.comp: y[i] = (float)(x[i]
// - z[c]) * s[c], c = (i / inner) % axis_n. TYPE (spec 3): x's type (0 u8,
// 1 i8); HAS_ZP (spec 4) 0: zero point 0.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define TYPE KILN_SPEC_3
#define HAS_ZP KILN_SPEC_4

typedef struct {
  uint n, axis_n, inner;
} QuantizePush;

__kernel void dequantize(__global const uchar* x, __global const float* s, __global const uchar* z, __global float* y,
                         QuantizePush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint c = (i / p.inner) % p.axis_n;
  const int zp = HAS_ZP != 0 ? LoadQ(z[c], TYPE) : 0;
  y[i] = (float)(LoadQ(x[i], TYPE) - zp) * s[c];
}
