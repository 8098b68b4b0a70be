// Shared by qconv.comp and qconv_dot.comp (ConvInteger and QLinearConv):
// the types and flags (spec constants, as qconv.comp describes), the
// bindings after X and W (which each shader declares as it reads them),
// the push constants, and the store of one output element.
#ifndef KILN_QCONV_GLSL
#define KILN_QCONV_GLSL
#include "quant.glsl"

layout(constant_id = 3) const uint XT = 0;
layout(constant_id = 4) const uint WT = 0;
layout(constant_id = 5) const uint YT = 0;
layout(constant_id = 6) const uint FLAGS = 0;

layout(std430, binding = 2) readonly buffer XZ { uint8_t zx[]; };
layout(std430, binding = 3) readonly buffer WZ { uint8_t zw[]; };
layout(std430, binding = 4) readonly buffer SX { float sx[]; };
layout(std430, binding = 5) readonly buffer SW { float sw[]; };
layout(std430, binding = 6) readonly buffer SY { float sy[]; };
layout(std430, binding = 7) readonly buffer YZ { uint8_t zy[]; };
layout(std430, binding = 8) readonly buffer BIAS { int bias[]; };
layout(std430, binding = 9) writeonly buffer Y { uint8_t y[]; };
layout(push_constant) uniform P {
  uint n, cin, cout, cg, mg;
  uint in_dims[3];
  uint out_dims[3];
  uint ksize[3];
  uint stride[3];
  uint dil[3];
  uint pad[3];
  float act_lo, act_hi;
} p;

// Output element i (of channel m) from its int32 sum: ConvInteger's sum
// itself, QLinearConv's requantized byte.
void QConvStore(uint i, uint m, int acc) {
  if ((FLAGS & 64u) != 0u) acc += bias[m];
  if (YT == 2u) {
    const uint v = uint(acc);
    y[4u * i] = uint8_t(v & 0xffu);
    y[4u * i + 1u] = uint8_t((v >> 8) & 0xffu);
    y[4u * i + 2u] = uint8_t((v >> 16) & 0xffu);
    y[4u * i + 3u] = uint8_t(v >> 24);
  } else {
    const float mult = QDIV(sx[0] * sw[(FLAGS & 32u) != 0u ? m : 0u], sy[0]);
    const int zyv = LoadQ(uint(zy[0]), YT);
    int lo = QLo(YT), hi = QHi(YT);
    // A fused Relu / Relu6 / Clip: the bounds' quantized images (the host's ActivationRange).
    if ((FLAGS & 256u) != 0u) lo = max(lo, zyv + int(clamp(roundEven(QDIV(p.act_lo, sy[0])), -1e9, 1e9)));
    if ((FLAGS & 512u) != 0u) hi = min(hi, zyv + int(clamp(roundEven(QDIV(p.act_hi, sy[0])), -1e9, 1e9)));
    const int v = Requantize(acc, mult, zyv, lo, max(lo, hi));
    y[i] = uint8_t(uint(v) & 0xffu);
  }
}

#endif
