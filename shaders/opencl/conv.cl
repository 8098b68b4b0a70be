// Conv (1-D/2-D/3-D, any stride, padding, dilation, group) as an implicit
// GEMM for GPUs (shaders/vulkan/conv.comp, same push constants as
// conv_direct.cl): Y_g[m, col] = sum_k W_g[m, k] * X_col[k, col] + bias,
// k = (ci, kz, ky, kx), col = (n, oz, oy, ox); the im2col element is read
// from X while filling the local B slice, never materialised. One TM x TN
// tile of one group per work group, tiles counted col fastest, m, group.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define ACT KILN_SPEC_3
#define HAS_BIAS (KILN_SPEC_4 != 0)

__kernel void conv(__global const STORE_T* x, __global const STORE_T* w, __global const STORE_T* bias,
                   __global STORE_T* y, ConvPush p) {
  __local float As[TK * (TILE_MAX + 1u)];
  __local float Bs[TK * (TILE_MAX + 1u)];
  const uint khw = p.kh * p.kw, kvol = p.kd * khw, K = p.cg * kvol;
  const uint ohw = p.oh * p.ow, ovol = p.od * ohw, cols = p.batch * ovol;
  const uint tiles_n = (cols + TN - 1u) / TN, tiles_m = (p.mg + TM - 1u) / TM;
  uint tile = TILE_INDEX;
  if (tile >= tiles_n * tiles_m * p.groups) return;  // the whole group: before any barrier
  const uint col0 = (tile % tiles_n) * TN;
  tile /= tiles_n;
  const uint row0 = (tile % tiles_m) * TM, g = tile / tiles_m;
  const uint tid = LOCAL_INDEX;
  // This work item's column of Bs (NT is a multiple of TN).
  const uint bcol = tid % TN, gcol = col0 + bcol;
  const bool col_ok = gcol < cols;
  const uint n = gcol / ovol, q = gcol - n * ovol, oz = q / ohw, r = q - oz * ohw, oy = r / p.ow, ox = r - oy * p.ow;
  const int iz0 = (int)(oz * p.sd) - p.pd, iy0 = (int)(oy * p.sh) - p.ph, ix0 = (int)(ox * p.sw) - p.pw;
  const uint x_base = (n * p.c + g * p.cg) * p.d * p.h * p.w;
  const uint w_base = g * p.mg * K;
  float acc[16];
  for (uint i = 0u; i < 16u; ++i) acc[i] = 0.0f;
  for (uint k0 = 0u; k0 < K; k0 += TK) {
    for (uint e = tid; e < TM * TK; e += NT) {
      const uint rr = e / TK, kk = e % TK, gi = row0 + rr, gk = k0 + kk;
      float v = 0.0f;
      if (gi < p.mg && gk < K) v = LOAD(w, w_base + gi * K + gk);
      As[kk * AS_STRIDE + rr] = v;
    }
    for (uint kk = tid / TN; kk < TK; kk += NT / TN) {
      const uint gk = k0 + kk;
      float v = 0.0f;
      if (col_ok && gk < K) {
        const uint ci = gk / kvol, t = gk - ci * kvol, kz = t / khw, t2 = t - kz * khw, ky = t2 / p.kw,
                   kx = t2 - ky * p.kw;
        const int iz = iz0 + (int)(kz * p.dd), iy = iy0 + (int)(ky * p.dh), ix = ix0 + (int)(kx * p.dw);
        if (iz >= 0 && iz < (int)p.d && iy >= 0 && iy < (int)p.h && ix >= 0 && ix < (int)p.w)
          v = LOAD(x, x_base + ((ci * p.d + (uint)iz) * p.h + (uint)iy) * p.w + (uint)ix);
      }
      Bs[kk * BS_STRIDE + bcol] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    MultiplyTile(As, Bs, acc);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const uint tx = get_local_id(0), ty = get_local_id(1);
  const uint m_total = p.groups * p.mg;
  for (uint j = 0u; j < 4u; ++j) {
    const uint gj = col0 + tx + j * LX;
    if (gj >= cols) break;
    const uint nj = gj / ovol, qj = gj - nj * ovol;
    for (uint i = 0u; i < 4u; ++i) {
      const uint gi = row0 + ty + i * LY;
      if (gi >= p.mg) break;
      const uint m = g * p.mg + gi;
      float v = acc[i * 4u + j];
      if (HAS_BIAS) v += LOAD(bias, m);
      STORE(y, (nj * m_total + m) * ovol + qj, FusedActivation(ACT, v, p.lo, p.hi, p.slope));
    }
  }
}
