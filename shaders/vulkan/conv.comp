#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"
#include "gemm_tile.glsl"
#include "conv_common.glsl"

// Conv (1-D/2-D/3-D, any stride, padding, dilation, group) as an implicit
// GEMM. For group g: Y_g[m, col] = sum_k W_g[m, k] * X_col[k, col] +
// bias[g*mg + m] with k = (ci, kz, ky, kx) over cg x kd x kh x kw (W's NCHW
// layout is this row-major [mg, K] matrix already) and col = (n, oz, oy, ox)
// over the batch and the output volume. The im2col element X_col[k, col] is
// read from X during the shared B fill (0 in the padding), never
// materialised. One TM x TN tile of one
// group per work group (gemm_tile.glsl), tiles counted col fastest, then m,
// then group. NT is a multiple of TN (TM >= 16), so every invocation fills one
// fixed column of Bs and decodes its (n, oz, oy, ox) once. The push constants
// are conv_direct.comp's (one C++ struct), `total` unused.
layout(push_constant) uniform P {
  uint c, cg, mg, groups, batch;  // input channels (all groups); channels in and out per group
  CONV_WINDOW
  float lo, hi, slope;            // fused activation
  uint total;
} p;

void main() {
  const uint khw = p.kh * p.kw, kvol = p.kd * khw, K = p.cg * kvol;
  const uint ohw = p.oh * p.ow, ovol = p.od * ohw, cols = p.batch * ovol;
  const uint tiles_n = (cols + TN - 1u) / TN, tiles_m = (p.mg + TM - 1u) / TM;
  uint tile = TileIndex();
  if (tile >= tiles_n * tiles_m * p.groups) return;  // the whole group: before any barrier
  const uint col0 = (tile % tiles_n) * TN;
  tile /= tiles_n;
  const uint row0 = (tile % tiles_m) * TM, g = tile / tiles_m;
  const uint tid = gl_LocalInvocationIndex;

  // This invocation's column of Bs.
  const uint bcol = tid % TN, gcol = col0 + bcol;
  const bool col_ok = gcol < cols;
  const uint n = gcol / ovol, q = gcol - n * ovol, oz = q / ohw, r = q - oz * ohw, oy = r / p.ow, ox = r - oy * p.ow;
  const int iz0 = int(oz * p.sd) - p.pd, iy0 = int(oy * p.sh) - p.ph, ix0 = int(ox * p.sw) - p.pw;
  const uint x_base = (n * p.c + g * p.cg) * p.d * p.h * p.w;
  const uint w_base = g * p.mg * K;

  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  for (uint k0 = 0u; k0 < K; k0 += TK) {
    for (uint e = tid; e < TM * TK; e += NT) {
      const uint r = e / TK, kk = e % TK, gi = row0 + r, gk = k0 + kk;
      float v = 0.0;
      if (gi < p.mg && gk < K) v = float(w[w_base + gi * K + gk]);
      As[kk * AS_STRIDE + r] = v;
    }
    for (uint kk = tid / TN; kk < TK; kk += NT / TN) {
      const uint gk = k0 + kk;
      float v = 0.0;
      if (col_ok && gk < K) {
        const uint ci = gk / kvol, t = gk - ci * kvol, kz = t / khw, t2 = t - kz * khw, ky = t2 / p.kw,
                   kx = t2 - ky * p.kw;
        const int iz = iz0 + int(kz * p.dd), iy = iy0 + int(ky * p.dh), ix = ix0 + int(kx * p.dw);
        if (iz >= 0 && iz < int(p.d) && iy >= 0 && iy < int(p.h) && ix >= 0 && ix < int(p.w))
          v = float(x[x_base + ((ci * p.d + uint(iz)) * p.h + uint(iy)) * p.w + uint(ix)]);
      }
      Bs[kk * BS_STRIDE + bcol] = v;
    }
    barrier();
    MultiplyTile(acc);
    barrier();
  }

  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint m_total = p.groups * p.mg;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint gj = col0 + tx + j * LX;
    if (gj >= cols) break;
    const uint nj = gj / ovol, qj = gj - nj * ovol;
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      const uint gi = row0 + ty + i * LY;
      if (gi >= p.mg) break;
      const uint m = g * p.mg + gi;
      float v = acc[i][j];
      if (HAS_BIAS) v += float(bias[m]);
      y[(nj * m_total + m) * ovol + qj] = STORE_T(FusedActivation(ACT, v, p.lo, p.hi, p.slope));
    }
  }
}
