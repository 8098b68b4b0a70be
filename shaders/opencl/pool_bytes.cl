// MaxPool of 8-bit integers (spec constant 3 TYPE: 0 u8, 1 i8), as
// shaders/vulkan/pool_bytes.comp: pool.cl's window walk over 1 to 3 spatial
// axes, planar tensors, no Indices; an empty window gives the type's lowest
// value.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define TYPE KILN_SPEC_3

int LoadByte(uchar v) { return TYPE == 1 ? (int)as_char(v) : (int)v; }

__kernel void pool_bytes(__global const uchar* x, __global uchar* y, PoolPush p) {
  const uint o = KILN_GLOBAL_INDEX;
  if (o >= p.total) return;
  int start[3];
  uint2 taps[3];
  uint rest = o;
  for (int j = 2; j >= 0; --j) {
    const uint q = rest / p.out_size[j];
    start[j] = (int)((rest - q * p.out_size[j]) * p.stride[j]) - p.pad_begin[j];
    rest = q;
    taps[j] = TapRange(start[j], p.ksize[j], p.dilation[j], 0, (int)p.in_size[j]);
  }
  const uint xbase = rest * p.in_size[0] * p.in_size[1] * p.in_size[2];
  int best = TYPE == 1 ? -128 : 0;
  for (uint kd = taps[0].x; kd < taps[0].y; ++kd) {
    const uint zd = (uint)(start[0] + (int)(kd * p.dilation[0])) * p.in_size[1];
    for (uint kh = taps[1].x; kh < taps[1].y; ++kh) {
      const uint zh = (zd + (uint)(start[1] + (int)(kh * p.dilation[1]))) * p.in_size[2];
      for (uint kw = taps[2].x; kw < taps[2].y; ++kw)
        best = max(best, LoadByte(x[xbase + zh + (uint)(start[2] + (int)(kw * p.dilation[2]))]));
    }
  }
  y[o] = (uchar)(best & 0xff);
}
