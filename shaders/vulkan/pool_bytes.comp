#version 450
#extension GL_GOOGLE_include_directive : enable
#extension GL_EXT_shader_8bit_storage : require
#include "common.glsl"

// MaxPool of 8-bit integers (TYPE 0 u8, 1 i8), the quantized activations'
// (the max of quantized values is the quantized max): pool.comp's window
// walk over 1 to 3 spatial axes, planar tensors, no Indices. Tensors are
// addressed in bytes, so each invocation writes exactly its own element
// (needs storageBuffer8BitAccess). An empty window gives the type's lowest
// value, as on the host.
layout(constant_id = 3) const uint TYPE = 0;

layout(std430, binding = 0) readonly buffer X { uint8_t x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint8_t y[]; };
layout(push_constant) uniform P {
  uint total;  // output elements
  uint in_size[3], out_size[3], kernel[3], stride[3], dilation[3];
  int pad_begin[3], pad_end[3];
} p;

int LoadByte(uint v) { return TYPE == 1u ? int(v << 24) >> 24 : int(v); }

void main() {
  const uint o = KILN_GLOBAL_INDEX;
  if (o >= p.total) return;
  int start[3];
  uvec2 taps[3];
  uint rest = o;
  for (int j = 2; j >= 0; --j) {
    const uint q = rest / p.out_size[j];
    start[j] = int((rest - q * p.out_size[j]) * p.stride[j]) - p.pad_begin[j];
    rest = q;
    taps[j] = TapRange(start[j], p.kernel[j], p.dilation[j], 0, int(p.in_size[j]));
  }
  const uint xbase = rest * p.in_size[0] * p.in_size[1] * p.in_size[2];
  int best = TYPE == 1u ? -128 : 0;
  for (uint kd = taps[0].x; kd < taps[0].y; ++kd) {
    const uint zd = uint(start[0] + int(kd * p.dilation[0])) * p.in_size[1];
    for (uint kh = taps[1].x; kh < taps[1].y; ++kh) {
      const uint zh = (zd + uint(start[1] + int(kh * p.dilation[1]))) * p.in_size[2];
      for (uint kw = taps[2].x; kw < taps[2].y; ++kw)
        best = max(best, LoadByte(uint(x[xbase + zh + uint(start[2] + int(kw * p.dilation[2]))])));
    }
  }
  y[o] = uint8_t(uint(best) & 0xffu);
}
