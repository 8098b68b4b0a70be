// Depthwise Conv on blocks of four channels (shaders/vulkan/conv_dw_c4.comp,
// which documents the layouts): one work item per output pixel and channel
// block; X and Y each channel-packed (X_PACKED, Y_PACKED) or NCHW (LoadX4,
// StoreY4 in common.cl).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#ifndef KILN_SPEC_6
#define KILN_SPEC_6 0
#endif
#define ACT KILN_SPEC_3
#define HAS_BIAS (KILN_SPEC_4 != 0)
#define X_PACKED (KILN_SPEC_5 != 0)
#define Y_PACKED (KILN_SPEC_6 != 0)

typedef struct {
  uint total, c, c4, bias_at;
  CONV_WINDOW
  float lo, hi, slope;
} ConvDwC4Push;

#ifndef KILN_SPEC_7
#define KILN_SPEC_7 1
#endif
#define XB KILN_SPEC_7  // output columns a work item (GpuCaps::conv_tile_cols)
// RS, RK (gpu_nn_conv.cpp): a 2-D square window of RK taps a side with unit
// dilations and column stride RS (0: anything else).
#ifndef KILN_SPEC_8
#define KILN_SPEC_8 0
#endif
#ifndef KILN_SPEC_9
#define KILN_SPEC_9 3
#endif
#define RK KILN_SPEC_9
// RB (CPU drivers; gpu_nn_conv.cpp): output rows a work item. With RB > 1
// the host guarantees X packed, a 2-D RK x RK window (RS = 1), unit strides
// and dilations, XB a multiple of 4, at least RB output rows and 4 input
// columns: each input row is read once for the RB output rows it feeds,
// and the work item's index arithmetic (divisions) serves RB rows.
#ifndef KILN_SPEC_10
#define KILN_SPEC_10 1
#endif
#define RB KILN_SPEC_10
#if KILN_SPEC_8 == 1
#define DW_KD 1u
#define DW_KH RK
#define DW_KW RK
#else
#define DW_KD p.kd
#define DW_KH p.kh
#define DW_KW p.kw
#endif
#ifdef KILN_FP16
#define LOAD16_AT(p, i) vload_half16(0u, (p) + (i))
#else
#define LOAD16_AT(p, i) vload16(0u, (p) + (i))
#endif

// Packed X's pixels ix .. ix + 3 of the row starting at pixel `row`
// (zeros outside the row's w pixels): one 16-float load where all four lie
// inside, else pixel by pixel.
float16 FourPixels(__global const STORE_T* x, uint row, int ix, uint w) {
  if (ix >= 0 && ix + 3 < (int)w) return LOAD16_AT(x, (row + (uint)ix) * 4u);
  float4 t[4];
  for (uint e = 0u; e < 4u; ++e)
    t[e] = ix + (int)e >= 0 && ix + (int)e < (int)w ? LOAD4(x, row + (uint)(ix + (int)e)) : (float4)(0.0f);
  return (float16)(t[0], t[1], t[2], t[3]);
}

// Output q (0 to 3) of a float16 of four outputs, picked at run time.
float4 Quarter(float16 a, uint q) { return q == 0u ? a.s0123 : q == 1u ? a.s4567 : q == 2u ? a.s89ab : a.scdef; }

// Four outputs' float16 (pixels at, at + 1, ... of channel block cb) through
// the activation into Y.
#define STORE_FOUR(a16, at)                                                                           \
  do {                                                                                                \
    StoreY4(y, Y_PACKED, ACT, p.c, n, cb, ovol, (at), (a16).s0123, p.lo, p.hi, p.slope);          \
    StoreY4(y, Y_PACKED, ACT, p.c, n, cb, ovol, (at) + 1u, (a16).s4567, p.lo, p.hi, p.slope);     \
    StoreY4(y, Y_PACKED, ACT, p.c, n, cb, ovol, (at) + 2u, (a16).s89ab, p.lo, p.hi, p.slope);     \
    StoreY4(y, Y_PACKED, ACT, p.c, n, cb, ovol, (at) + 3u, (a16).scdef, p.lo, p.hi, p.slope);     \
  } while (0)

__kernel void conv_dw_c4(__global const STORE_T* x, __global const STORE_T* w4, __global STORE_T* y,
                         ConvDwC4Push p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
#if RB > 1 && XB % 4 == 0 && KILN_SPEC_8 == 1
  {
    const uint owb = (p.ow + XB - 1u) / XB, rowb = (p.oh + RB - 1u) / RB;
    const uint xb = i % owb, rest = i / owb, yb = rest % rowb, ncb = rest / rowb;
    const uint cb = ncb % p.c4, n = ncb / p.c4;
    // The last blocks of columns and rows end at the plane's end (they
    // overlap the blocks before and write the same values there).
    const uint ox0 = p.ow >= XB ? min(xb * XB, p.ow - XB) : 0u, oy0 = min(yb * RB, p.oh - RB);
    const float4 bias = HAS_BIAS ? LOAD4(w4, p.bias_at + cb) : (float4)(0.0f);
    float4 wk[RK * RK];
#pragma unroll
    for (uint t = 0u; t < RK * RK; ++t) wk[t] = LOAD4(w4, cb * RK * RK + t);
    float16 acc[RB][XB / 4];
#pragma unroll
    for (uint r = 0u; r < RB; ++r)
#pragma unroll
      for (uint g = 0u; g < XB / 4u; ++g) acc[r][g] = (float16)(bias, bias, bias, bias);
    const uint plane = (n * p.c4 + cb) * p.h * p.w;
#pragma unroll
    for (uint j = 0u; j < RK + RB - 1u; ++j) {  // input rows: j feeds output row r through tap row j - r
      const int iy = (int)oy0 - p.ph + (int)j;
      if (iy < 0 || iy >= (int)p.h) continue;
      const uint row = plane + (uint)iy * p.w;
#pragma unroll
      for (uint kx = 0u; kx < RK; ++kx) {
#pragma unroll
        for (uint g = 0u; g < XB / 4u; ++g) {
          const float16 xv = FourPixels(x, row, (int)(ox0 + 4u * g + kx) - p.pw, p.w);
#pragma unroll
          for (uint r = 0u; r < RB; ++r) {
            if (j < r || j - r >= RK) continue;
            const float4 wv = wk[(j - r) * RK + kx];
            acc[r][g] = fma((float16)(wv, wv, wv, wv), xv, acc[r][g]);
          }
        }
      }
    }
    const uint ovol = p.oh * p.ow;
#pragma unroll
    for (uint r = 0u; r < RB; ++r) {
      const uint at = (oy0 + r) * p.ow + ox0;
      if (p.ow >= XB) {  // the whole block inside the row: lanes picked at compile time
#pragma unroll
        for (uint g = 0u; g < XB / 4u; ++g) STORE_FOUR(acc[r][g], at + 4u * g);
      } else {
        for (uint b = 0u; b < p.ow; ++b)
          StoreY4(y, Y_PACKED, ACT, p.c, n, cb, ovol, at + b, Quarter(acc[r][b / 4u], b % 4u), p.lo, p.hi, p.slope);
      }
    }
    return;
  }
#endif
  const uint ovol = p.od * p.oh * p.ow, vol = p.d * p.h * p.w, kvol = p.kd * p.kh * p.kw;
  const uint owb = (p.ow + XB - 1u) / XB, rows = p.od * p.oh;
  const uint xb = i % owb, rest = i / owb, orow = rest % rows, ncb = rest / rows;
  const uint cb = ncb % p.c4, n = ncb / p.c4;
  const uint oz = orow / p.oh, oy = orow - oz * p.oh, ox0 = xb * XB;
  const int iz0 = (int)(oz * p.sd) - p.pd, iy0 = (int)(oy * p.sh) - p.ph;
  const float4 bias = HAS_BIAS ? LOAD4(w4, p.bias_at + cb) : (float4)(0.0f);
#if XB % 4 == 0
  // Packed X, unit stride and dilation along x: four adjacent outputs read
  // four adjacent pixels, 16 floats in a row, so a tap is one vload16 and
  // one 16-wide multiply-add for four outputs (PoCL runs a work item on one
  // lane; the float4 form used a quarter of an AVX-512 register).
  // With RS = 1 (a 2-D RK x RK window, unit strides and dilations: the
  // spec constants Vulkan's row reader takes) the window's extents are
  // compile-time and the taps unroll.
  if (X_PACKED && p.sw == 1u && p.dw == 1u) {
    // A row's last block ends at the row's end (it overlaps the block
    // before and writes the same values there): no lanes past the row, and
    // fewer reads that straddle its end.
    const uint ox0 = p.ow >= XB ? min(xb * XB, p.ow - XB) : 0u;
    float16 acc16[XB / 4];
    for (uint g = 0u; g < XB / 4u; ++g) acc16[g] = (float16)(bias, bias, bias, bias);
    const uint plane = (n * p.c4 + cb) * vol;
    for (uint kz = 0u; kz < DW_KD; ++kz) {
      const int iz = iz0 + (int)(kz * p.dd);
      if (iz < 0 || iz >= (int)p.d) continue;
#pragma unroll
      for (uint ky = 0u; ky < DW_KH; ++ky) {
        const int iy = iy0 + (int)(ky * p.dh);
        if (iy < 0 || iy >= (int)p.h) continue;
        const uint row = plane + ((uint)iz * p.h + (uint)iy) * p.w, wrow = cb * kvol + (kz * DW_KH + ky) * DW_KW;
#pragma unroll
        for (uint kx = 0u; kx < DW_KW; ++kx) {
          const float4 wv = LOAD4(w4, wrow + kx);
          const float16 w16 = (float16)(wv, wv, wv, wv);
#pragma unroll
          for (uint g = 0u; g < XB / 4u; ++g) {
            acc16[g] = fma(w16, FourPixels(x, row, (int)(ox0 + 4u * g + kx) - p.pw, p.w), acc16[g]);
          }
        }
      }
    }
    if (p.ow >= XB) {  // the whole block inside the row: lanes picked at compile time
      const uint at = orow * p.ow + ox0;
#pragma unroll
      for (uint g = 0u; g < XB / 4u; ++g) STORE_FOUR(acc16[g], at + 4u * g);
      return;
    }
    for (uint b = 0u; b < XB && ox0 + b < p.ow; ++b)
      StoreY4(y, Y_PACKED, ACT, p.c, n, cb, ovol, orow * p.ow + ox0 + b, Quarter(acc16[b / 4u], b % 4u), p.lo, p.hi,
              p.slope);
    return;
  }
#endif
  float4 acc[XB];
  for (uint b = 0u; b < XB; ++b) acc[b] = bias;
  for (uint kz = 0u; kz < p.kd; ++kz) {
    const int iz = iz0 + (int)(kz * p.dd);
    if (iz < 0 || iz >= (int)p.d) continue;
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const int iy = iy0 + (int)(ky * p.dh);
      if (iy < 0 || iy >= (int)p.h) continue;
      const uint row = ((uint)iz * p.h + (uint)iy) * p.w, wrow = cb * kvol + (kz * p.kh + ky) * p.kw;
      for (uint kx = 0u; kx < p.kw; ++kx) {
        const float4 wv = LOAD4(w4, wrow + kx);
        for (uint b = 0u; b < XB; ++b) {
          const int ix = (int)((ox0 + b) * p.sw + kx * p.dw) - p.pw;
          if (ix >= 0 && ix < (int)p.w) acc[b] += wv * LoadX4(x, X_PACKED, p.c, n, cb, vol, row + (uint)ix);
        }
      }
    }
  }
  for (uint b = 0u; b < XB && ox0 + b < p.ow; ++b)
    StoreY4(y, Y_PACKED, ACT, p.c, n, cb, ovol, orow * p.ow + ox0 + b, acc[b], p.lo, p.hi, p.slope);
}
