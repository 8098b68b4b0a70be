// Host kernel: the phase planes of strided 2-D convs (nn_conv.h,
// PhaseGeometry): the input split once, then the GEMM's B panels copied
// from them run by run.
#include <algorithm>
#include <vector>

#include "ops/nn_conv.h"
#include "simd_clones.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace kiln::conv {

PhaseGeometry MakePhaseGeometry(int64_t h, int64_t w, int64_t ho, int64_t wo, int64_t kh, int64_t kw, int64_t sh,
                                int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl) {
  PhaseGeometry g;
  g.sh = sh, g.sw = sw;
  int64_t min_y = 0, max_y = 0, min_x = 0, max_x = 0;
  for (int64_t k = 0; k < kh; ++k) {
    const int64_t o = FloorDiv(k * dh - pt, sh);
    min_y = std::min(min_y, o), max_y = std::max(max_y, o);
  }
  for (int64_t k = 0; k < kw; ++k) {
    const int64_t o = FloorDiv(k * dw - pl, sw);
    min_x = std::min(min_x, o), max_x = std::max(max_x, o);
  }
  g.top = -min_y, g.left = -min_x;
  // Output column ox < wo of a tap reads column ox + off + left < wp (and
  // row oy likewise); the planes also hold the whole input.
  g.wp = std::max<int64_t>(wo + max_x + g.left, (w + sw - 1) / sw + g.left);
  g.hp = std::max<int64_t>(ho + max_y + g.top, (h + sh - 1) / sh + g.top);
  g.plane = g.hp * g.wp;
  for (int64_t ky = 0; ky < kh; ++ky)
    for (int64_t kx = 0; kx < kw; ++kx) {
      const int64_t ry = ky * dh - pt, rx = kx * dw - pl;
      const int64_t oy = FloorDiv(ry, sh), ox = FloorDiv(rx, sw);
      const int64_t py = ry - oy * sh, px = rx - ox * sw;
      g.tap_off.push_back((py * sw + px) * g.plane + (oy + g.top) * g.wp + ox + g.left);
    }
  return g;
}

KILN_SIMD_CLONES
void SplitPhases(const PhaseGeometry& g, const float* __restrict x, int64_t h, int64_t w, int64_t c0, int64_t c1,
                 float* __restrict dst) {
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t py = 0; py < g.sh; ++py)
      for (int64_t px = 0; px < g.sw; ++px) {
        float* __restrict d = dst + (c * g.sh * g.sw + py * g.sw + px) * g.plane;
        // Columns b whose input column sw * (b - left) + px lies in [0, w).
        const int64_t b_lo = g.left, b_hi = std::min(g.wp, g.left + (w - px + g.sw - 1) / g.sw);
        for (int64_t a = 0; a < g.hp; ++a, d += g.wp) {
          const int64_t iy = g.sh * (a - g.top) + py;
          if (iy < 0 || iy >= h || b_hi <= b_lo) {
            for (int64_t b = 0; b < g.wp; ++b) d[b] = 0.f;
            continue;
          }
          const float* __restrict xr = x + (c * h + iy) * w + px - g.sw * g.left;  // xr[sw * b]: column b
          for (int64_t b = 0; b < b_lo; ++b) d[b] = 0.f;
          if (g.sw == 2)
            for (int64_t b = b_lo; b < b_hi; ++b) d[b] = xr[2 * b];
          else if (g.sw == 1)
            for (int64_t b = b_lo; b < b_hi; ++b) d[b] = xr[b];
          else
            for (int64_t b = b_lo; b < b_hi; ++b) d[b] = xr[g.sw * b];
          for (int64_t b = b_hi; b < g.wp; ++b) d[b] = 0.f;
        }
      }
}

namespace {

// A panel's columns as runs of output rows: run r puts len[r] floats of
// the plane at src[r] (relative to a row's start) into columns dst[r]: at
// most one run a column.
struct PanelRuns {
  int n = 0;
  int64_t dst[kPhasedMaxPanel], src[kPhasedMaxPanel], len[kPhasedMaxPanel];
};

// The runs of panel columns [jb, jb + cols), cols <= kPhasedMaxPanel.
PanelRuns MakePanelRuns(int64_t jb, int64_t cols, int64_t wo, int64_t wp) {
  PanelRuns r;
  int64_t oy = jb / wo, ox = jb % wo;
  for (int64_t q = 0; q < cols; ++oy, ox = 0) {
    const int64_t run = std::min(cols - q, wo - ox);
    r.dst[r.n] = q, r.src[r.n] = oy * wp + ox, r.len[r.n] = run;
    ++r.n;
    q += run;
  }
  return r;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// Panels of 32 columns (the AVX-512 micro-kernel), row by row of the
// unfolded input and every panel of the block in turn: a row's runs lie one
// after another in its plane, so the reads stream. Masked 16-float moves.
__attribute__((target("avx512f"))) void PackPhasedAvx512(const PhasedCol& pc, int64_t k0, int64_t kc,
                                                         int64_t j0, int64_t nc, float* dst) {
  thread_local std::vector<PanelRuns> runs;
  const int64_t panels = (nc + 31) / 32;
  runs.resize(static_cast<size_t>(panels));
  for (int64_t p = 0; p < panels; ++p)
    runs[static_cast<size_t>(p)] = MakePanelRuns(j0 + p * 32, std::min<int64_t>(32, nc - p * 32), pc.wo, pc.wp);
  if (nc % 32 != 0)  // the last panel's columns past nc stay zero
    for (int64_t k = 0; k < kc; ++k) {
      float* dk = dst + (panels - 1) * 32 * kc + k * 32;
      _mm512_storeu_ps(dk, _mm512_setzero_ps());
      _mm512_storeu_ps(dk + 16, _mm512_setzero_ps());
    }
  for (int64_t k = 0; k < kc; ++k) {
    const float* row0 = pc.planes + pc.row_off[k0 + k];
    for (int64_t p = 0; p < panels; ++p) {
      float* dk = dst + p * 32 * kc + k * 32;
      const PanelRuns& r = runs[static_cast<size_t>(p)];
      for (int i = 0; i < r.n; ++i)
        for (int64_t q = 0; q < r.len[i]; q += 16) {
          const __mmask16 m = static_cast<__mmask16>((1u << std::min<int64_t>(16, r.len[i] - q)) - 1);
          _mm512_mask_storeu_ps(dk + r.dst[i] + q, m, _mm512_maskz_loadu_ps(m, row0 + r.src[i] + q));
        }
    }
  }
}
#endif

KILN_SIMD_CLONES
void PackPhasedGeneric(const PhasedCol& pc, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) {
  for (int64_t p = 0; p < nc; p += nr) {
    const int64_t cols = std::min<int64_t>(nr, nc - p);
    const PanelRuns r = MakePanelRuns(j0 + p, cols, pc.wo, pc.wp);
    float* d = dst + p * kc;
    for (int64_t k = 0; k < kc; ++k) {
      float* __restrict dk = d + k * nr;
      const float* row0 = pc.planes + pc.row_off[k0 + k];
      for (int i = 0; i < r.n; ++i) {
        const float* __restrict s = row0 + r.src[i];
        float* __restrict o = dk + r.dst[i];
        for (int64_t q = 0; q < r.len[i]; ++q) o[q] = s[q];
      }
      for (int64_t q = cols; q < nr; ++q) dk[q] = 0.f;
    }
  }
}

}  // namespace

void PackPhasedCol(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) {
  const PhasedCol& pc = *static_cast<const PhasedCol*>(ctx);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512 && nr == 32) return PackPhasedAvx512(pc, k0, kc, j0, nc, dst);
#endif
  PackPhasedGeneric(pc, k0, kc, j0, nc, nr, dst);
}

}  // namespace kiln::conv
