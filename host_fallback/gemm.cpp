// Sgemm (gemm.h): the panel layouts and packing, cache blocking, threading
// and ISA dispatch; the portable scalar micro-kernel. Per-ISA micro-kernels:
// gemm_avx512.cpp, gemm_avx2.cpp, gemm_neon.cpp; operands packed once
// (PackA / PackB and their views): gemm_packed.cpp.
#include "gemm.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cpu_features.h"
#include "half.h"
#include "scratch.h"
#include "simd_clones.h"
#include "thread_pool.h"

namespace kiln {
namespace gemm_detail {
namespace {

constexpr int kScalarMr = 4, kScalarNr = 8;

void MicroScalar(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, bool load_c,
                 const TileEpilogue* ep) {
  float acc[kScalarMr][kScalarNr] = {};
  for (int64_t k = 0; k < kc; ++k) {
    for (int i = 0; i < kScalarMr; ++i) {
      const float av = a[i];
      for (int j = 0; j < kScalarNr; ++j) acc[i][j] += av * b[j];
    }
    a += kScalarMr;
    b += ldb;
  }
  for (int i = 0; i < kScalarMr; ++i)
    for (int j = 0; j < kScalarNr; ++j) {
      float v = (load_c ? c[i * ldc + j] : 0.f) + acc[i][j];
      if (ep) {
        v += (ep->row_bias ? ep->row_bias[i] : 0.f) + (ep->col_bias ? ep->col_bias[j] : 0.f);
        if (ep->clamp) v = v > ep->lo ? (v < ep->hi ? v : ep->hi) : ep->lo;
      }
      c[i * ldc + j] = v;
    }
}

float FmaLoopScalar(int64_t iters) {
  // Distinct starts: identical chains would be computed once (see FmaLoopAvx512).
  float a[8] = {1.f, 1.01f, 1.02f, 1.03f, 1.04f, 1.05f, 1.06f, 1.07f};
  for (int64_t i = 0; i < iters; ++i)
    for (float& v : a) v = std::fma(v, 0.999999f, 1e-7f);
  return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

void GemvScalar(int64_t K, int64_t KC, const float* a, const float* packed, int64_t n_pad, int64_t p0, int64_t panels,
                float* y) {
  for (int64_t p = 0; p < panels; ++p) {
    float acc[kScalarNr] = {};
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = std::min(KC, K - pc);
      const float* b = packed + pc * n_pad + (p0 + p) * kScalarNr * kc;
      for (int64_t k = 0; k < kc; ++k)
        for (int c = 0; c < kScalarNr; ++c) acc[c] += a[pc + k] * b[k * kScalarNr + c];
    }
    for (int c = 0; c < kScalarNr; ++c) y[p * kScalarNr + c] = acc[c];
  }
}

const GemmKernel kScalarKernel = {kScalarMr, kScalarNr, 64, 256, 2048, &MicroScalar, &FmaLoopScalar, 8 * 2,
                                  &GemvScalar, nullptr, nullptr};

thread_local ScratchBuffer tl_pack_a, tl_pack_b;  // one per thread and operand

struct Problem {
  bool ta, tb;
  int64_t K;
  float alpha;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float beta;
  float* C;
  int64_t ldc;
  const float* packed_a = nullptr;  // PackA's panels (then A, lda, alpha are unused)
  const uint16_t* packed_half = nullptr;  // or its fp16 panels
  int64_t m_pad = 0;
  const float* packed_b = nullptr;  // PackB's panels (then B, ldb are unused)
  const uint16_t* packed_b_half = nullptr;  // or its fp16 panels
  const BPacker* b_packer = nullptr;  // or B packed on the fly
  bool direct_b = false;  // or B read where it lies (not transposed), its last partial panel packed
  int64_t n_pad = 0;
  const GemmEpilogue* ep = nullptr;
};

// The epilogue (gemm.h) on rows x cols of C at c; rb, cb: the biases of its
// first row and column (or null).
KILN_SIMD_CLONES
void EpilogueTile(float* c, int64_t ldc, int64_t rows, int64_t cols, const float* rb, const float* cb, bool clamp,
                  float lo, float hi) {
  for (int64_t i = 0; i < rows; ++i) {
    float* __restrict r = c + i * ldc;
    const float b = rb ? rb[i] : 0.f;
    if (cb)
      for (int64_t j = 0; j < cols; ++j) r[j] += b + cb[j];
    else if (b != 0.f)
      for (int64_t j = 0; j < cols; ++j) r[j] += b;
    if (clamp)
      for (int64_t j = 0; j < cols; ++j) r[j] = r[j] > lo ? (r[j] < hi ? r[j] : hi) : lo;
  }
}

// with_act: and tile_act (GemmRange calls it once a row of tiles instead).
void ApplyEpilogue(const Problem& pr, int64_t i0, int64_t rows, int64_t j0, int64_t cols, bool with_act = true) {
  const GemmEpilogue& e = *pr.ep;
  EpilogueTile(pr.C + i0 * pr.ldc + j0, pr.ldc, rows, cols, e.row_bias ? e.row_bias + i0 : nullptr,
               e.col_bias ? e.col_bias + j0 : nullptr, e.clamp, e.lo, e.hi);
  if (with_act && e.tile_act) e.tile_act(e.tile_ctx, pr.C + i0 * pr.ldc + j0, pr.ldc, rows, cols);
}

// Rows [i0, i0 + mc) x cols [k0, k0 + kc) of alpha * op(A) as mr-tall
// panels: panel p holds a[k * mr + r] = A(i0 + p * mr + r, k0 + k), zero past mc.
void PackAPanels(const GemmKernel& kr, const Problem& pr, int64_t i0, int64_t mc, int64_t k0, int64_t kc, float* dst) {
  const int mr = kr.mr;
  for (int64_t p = 0; p < mc; p += mr) {
    const int64_t rows = std::min<int64_t>(mr, mc - p);
    float* d = dst + p * kc;
    if (!pr.ta && rows == mr && kr.pack_a) {
      kr.pack_a(pr.A + (i0 + p) * pr.lda + k0, pr.lda, kc, pr.alpha, d);
      continue;
    }
    if (!pr.ta) {  // A(i, k) = A[i * lda + k]
      for (int64_t r = 0; r < rows; ++r) {
        const float* s = pr.A + (i0 + p + r) * pr.lda + k0;
        for (int64_t k = 0; k < kc; ++k) d[k * mr + r] = pr.alpha * s[k];
      }
    } else {  // A(i, k) = A[k * lda + i]
      for (int64_t k = 0; k < kc; ++k) {
        const float* s = pr.A + (k0 + k) * pr.lda + i0 + p;
        for (int64_t r = 0; r < rows; ++r) d[k * mr + r] = pr.alpha * s[r];
      }
    }
    if (rows < mr)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t r = rows; r < mr; ++r) d[k * mr + r] = 0.f;
  }
}

// Rows [k0, k0 + kc) x cols [j0, j0 + nc) of op(B) as nr-wide panels:
// panel p holds b[k * nr + c] = B(k0 + k, j0 + p * nr + c), zero past nc.
void PackBPanels(const Problem& pr, int nr, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t p = 0; p < nc; p += nr) {
    const int64_t cols = std::min<int64_t>(nr, nc - p);
    float* d = dst + p * kc;
    if (!pr.tb) {  // B(k, j) = B[k * ldb + j]
      for (int64_t k = 0; k < kc; ++k) {
        const float* s = pr.B + (k0 + k) * pr.ldb + j0 + p;
        float* dk = d + k * nr;
        if (cols == nr) {
          for (int c = 0; c < nr; ++c) dk[c] = s[c];
        } else {
          for (int64_t c = 0; c < cols; ++c) dk[c] = s[c];
          for (int64_t c = cols; c < nr; ++c) dk[c] = 0.f;
        }
      }
    } else {  // B(k, j) = B[j * ldb + k]
      for (int64_t c = 0; c < cols; ++c) {
        const float* s = pr.B + (j0 + p + c) * pr.ldb + k0;
        for (int64_t k = 0; k < kc; ++k) d[k * nr + c] = s[k];
      }
      if (cols < nr)
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t c = cols; c < nr; ++c) d[k * nr + c] = 0.f;
    }
  }
}

// The columns of a block of B (NC): its kc x NC floats stay in a quarter of
// the L2 while every row of A's panels runs over them. A pointwise conv
// reads its B (the input planes) in place, kc rows a block; 256 -> 64
// channels on 56x56 (K 256, N 3136) took 1.29 ms with the kernel's fixed
// 2048 columns (a 2 MiB block, Emerald Rapids, 1 thread), 0.88 with 1024
// and 0.82 with 512; ResNet-50's three such convs 2.57 / 1.39 / 1.25 ->
// 1.42 / 0.84 / 0.77 ms in the model. kr.nc bounds it where L2 is unknown;
// KILN_HOST_GEMM_NC=N forces N columns (for measuring).
int64_t BlockColumns(const GemmKernel& kr, int64_t kc) {
  static const int64_t env = [] { const char* e = std::getenv("KILN_HOST_GEMM_NC"); return e ? std::atoll(e) : 0; }();
  if (env) return std::max<int64_t>(kr.nr, env / kr.nr * kr.nr);
  const int64_t l2 = HostCaches().l2;
  if (l2 <= 0 || kc <= 0) return kr.nc;
  const int64_t cols = l2 / 4 / (kc * static_cast<int64_t>(sizeof(float))) / kr.nr * kr.nr;
  return std::clamp<int64_t>(cols, 4 * kr.nr, kr.nc);
}

}  // namespace

bool PrefetchWeights() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_HOST_PREFETCH");
    return !(e && e[0] == '0');
  }();
  return on;
}

namespace {

// C[m0, m1) x [n0, n1) = alpha * op(A) op(B) + beta * C on the calling thread.
void GemmRange(const GemmKernel& kr, const Problem& pr, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  if (m1 <= m0 || n1 <= n0) return;
  const float* residual = pr.ep ? pr.ep->residual : nullptr;
  if (pr.beta != 0.f && pr.beta != 1.f && !residual)
    for (int64_t i = m0; i < m1; ++i)
      for (int64_t j = n0; j < n1; ++j) pr.C[i * pr.ldc + j] *= pr.beta;
  if (pr.K == 0) {
    if (residual)
      for (int64_t i = m0; i < m1; ++i)
        std::copy(residual + i * pr.ep->ld_residual + n0, residual + i * pr.ep->ld_residual + n1, pr.C + i * pr.ldc + n0);
    else if (pr.beta == 0.f)
      for (int64_t i = m0; i < m1; ++i) std::fill(pr.C + i * pr.ldc + n0, pr.C + i * pr.ldc + n1, 0.f);
    if (pr.ep) ApplyEpilogue(pr, m0, m1 - m0, n0, n1 - n0);
    return;
  }
  const int mr = kr.mr, nr = kr.nr;
  const int64_t KC = std::min(kr.kc, pr.K);
  const int64_t NC = std::min<int64_t>(BlockColumns(kr, KC), (n1 - n0 + nr - 1) / nr * nr);
  const int64_t MC = std::min<int64_t>(kr.mc, (m1 - m0 + mr - 1) / mr * mr);
  float* pack_b = pr.packed_b ? nullptr : tl_pack_b.get(static_cast<size_t>(KC * NC));
  if (pr.packed_b_half) pack_b = tl_pack_b.get(static_cast<size_t>(KC * NC));
  float* pack_a = pr.packed_a ? nullptr : tl_pack_a.get(static_cast<size_t>(KC * MC));
  const bool prepacked = pr.packed_a || pr.packed_half;
  // A transposed (A(i, k) = A[k * lda + i]) and unscaled is read where it
  // lies by micro_a: its step-k values of a tile are mr consecutive floats.
  const bool direct_a = pr.ta && !prepacked && pr.alpha == 1.f && kr.micro_a;
  alignas(64) float tmp[16 * 64];  // an edge tile (mr * nr <= 1024)
  for (int64_t jc = n0; jc < n1; jc += NC) {
    const int64_t nc = std::min(NC, n1 - jc);
    for (int64_t pc = 0; pc < pr.K; pc += KC) {
      const int64_t kc = std::min(KC, pr.K - pc);
      const bool load = pc > 0 || pr.beta != 0.f || residual;
      const bool last = pc + kc == pr.K;
      const int64_t full = nc / nr * nr;  // direct B: the columns of whole panels
      if (pr.direct_b) {
        if (full < nc) PackBPanels(pr, nr, pc, kc, jc + full, nc - full, pack_b);
      } else if (pr.b_packer)
        pr.b_packer->pack(pr.b_packer->ctx, pc, kc, jc, nc, nr, pack_b);
      else if (pr.packed_b_half)
        WidenHalf(pr.packed_b_half + pc * pr.n_pad + jc * kc, pack_b, (nc + nr - 1) / nr * nr * kc);
      else if (!pr.packed_b)
        PackBPanels(pr, nr, pc, kc, jc, nc, pack_b);
      // Pre-packed B: block pc holds n_pad columns of kc, panel by panel.
      const float* block_b = pr.packed_b ? pr.packed_b + pc * pr.n_pad + jc * kc : pack_b;
      for (int64_t ic = m0; ic < m1; ic += MC) {
        const int64_t mc = std::min(MC, m1 - ic);
        // Pre-packed A: block pc holds m_pad rows of kc, panel by panel.
        const float* block_a = pr.packed_a ? pr.packed_a + pc * pr.m_pad + ic * kc : pack_a;
        if (pr.packed_half)
          WidenHalf(pr.packed_half + pc * pr.m_pad + ic * kc, pack_a, (mc + mr - 1) / mr * mr * kc);
        else if (!prepacked && !direct_a)
          PackAPanels(kr, pr, ic, mc, pc, kc, pack_a);
        // One mr x nr tile of C.
        auto tile = [&](int64_t ir, int64_t jr, const char* pf = nullptr, int64_t pf_lines = 0) {
          const int64_t mrr = std::min<int64_t>(mr, mc - ir);
          const float* pa = direct_a ? pr.A + pc * pr.lda + ic + ir : block_a + ir * kc;
          const int64_t lda = direct_a ? pr.lda : mr;
          const int64_t nrr = std::min<int64_t>(nr, nc - jr);
          const float* pb = block_b + jr * kc;
          int64_t ldb = nr;
          if (pr.direct_b) {
            pb = jr < full ? pr.B + pc * pr.ldb + jc + jr : pack_b;
            ldb = jr < full ? pr.ldb : nr;
          }
          float* c = pr.C + (ic + ir) * pr.ldc + jc + jr;
          if (residual && pc == 0) {
            const float* r = residual + (ic + ir) * pr.ep->ld_residual + jc + jr;
            for (int64_t i = 0; i < mrr; ++i)
              std::memcpy(c + i * pr.ldc, r + i * pr.ep->ld_residual, static_cast<size_t>(nrr) * sizeof(float));
          }
          // A last panel of at most nr / 2 columns takes the half tile (on
          // packed A).
          const bool half = kr.micro_half && !direct_a && 2 * nrr <= nr;
          const MicroKernel micro = half ? kr.micro_half : kr.micro;
          // Full-width tiles of fewer rows than mr, and every tile of a
          // direct A, take micro_a.
          const bool by_rows = nrr == nr && kr.micro_a && (direct_a || (!half && mrr < mr));
          const bool whole = by_rows || (mrr == mr && nrr == (half ? nr / 2 : nr));
          // The prefetches ride in the k loop of a whole full-width tile;
          // a half or edge tile asks for its share now.
          const bool pf_inside = pf && whole && !half;
          if (pf && !pf_inside) PrefetchLines(pf, pf_lines);
          if (whole) {
            const GemmEpilogue* e = last ? pr.ep : nullptr;
            const TileEpilogue te = e ? TileEpilogue{e->row_bias ? e->row_bias + ic + ir : nullptr,
                                                     e->col_bias ? e->col_bias + jc + jr : nullptr, e->clamp, e->lo,
                                                     e->hi}
                                      : TileEpilogue{};
            if (by_rows)
              kr.micro_a(static_cast<int>(mrr), kc, pa, lda, pb, ldb, c, pr.ldc, load, e ? &te : nullptr,
                         pf_inside ? pf : nullptr, pf_lines);
            else if (pf_inside) kr.micro_pf(kc, pa, pb, ldb, c, pr.ldc, load, e ? &te : nullptr, pf, pf_lines);
            else micro(kc, pa, pb, ldb, c, pr.ldc, load, e ? &te : nullptr);
          } else {
            // An edge tile: computed whole into tmp (B's panels are zero
            // past N), its valid part added to C.
            if (direct_a) kr.micro_a(static_cast<int>(mrr), kc, pa, lda, pb, ldb, tmp, nr, false, nullptr, nullptr, 0);
            else micro(kc, pa, pb, ldb, tmp, nr, false, nullptr);
            for (int64_t i = 0; i < mrr; ++i)
              for (int64_t j = 0; j < nrr; ++j)
                c[i * pr.ldc + j] = (load ? c[i * pr.ldc + j] : 0.f) + tmp[i * nr + j];
            if (last && pr.ep) ApplyEpilogue(pr, ic + ir, mrr, jc + jr, nrr, false);
          }
        };
        // The activation on a row of tiles once it is finished (mrr x nc, in
        // L2): one call a row of nc values, where one a tile row of nr
        // cost more in calls than the activation itself.
        auto activate = [&](int64_t ir) {
          if (last && pr.ep && pr.ep->tile_act)
            pr.ep->tile_act(pr.ep->tile_ctx, pr.C + (ic + ir) * pr.ldc + jc, pr.ldc, std::min<int64_t>(mr, mc - ir),
                            nc);
        };
        if (pr.packed_b) {
          // Pre-packed weights as B (small planes, y^T = x^T w^T; MatMul
          // weights): each panel of B comes from memory once a run and
          // serves every panel of A (the block of A stays in L2) before the
          // next one is read. Each tile also asks for its share of the next
          // panel, spread over its k loop (micro_pf), so that the stream of
          // weights runs beside the arithmetic instead of stalling the first
          // tile of each panel: 8 convs 512 -> 512 3x3 on 7x7 without
          // Winograd 25.5 -> 18.4 ms; ResNet-50's 7x7 1x1 convs 1.27-1.39 ->
          // 0.89-0.99 ms (Emerald Rapids, 1 thread). KILN_HOST_PREFETCH=0
          // turns it off.
          const bool pf_on = PrefetchWeights() && kr.micro_pf;
          const int64_t tiles = (mc + mr - 1) / mr, panel_bytes = kc * nr * static_cast<int64_t>(sizeof(float));
          for (int64_t jr = 0; jr < nc; jr += nr) {
            // The next panel of weights: this block's, or the next block's first.
            const float* next = !pf_on           ? nullptr
                                : jr + nr < nc   ? block_b + (jr + nr) * kc
                                : pc + kc < pr.K ? pr.packed_b + (pc + kc) * pr.n_pad + jc * std::min(KC, pr.K - pc - kc)
                                                 : nullptr;
            for (int64_t ir = 0, t = 0; ir < mc; ir += mr, ++t) {
              const PanelShare share = ShareOfNext(next, panel_bytes, tiles, t);
              tile(ir, jr, share.at, share.lines);
            }
          }
          for (int64_t ir = 0; ir < mc; ir += mr) activate(ir);
          continue;
        }
        for (int64_t ir = 0; ir < mc; ir += mr) {
          // Pre-packed weights stream from memory once a run (a model's
          // weights outgrow the caches): the row's tiles ask for the next
          // panel, each its share spread over its k loop (micro_pf), or,
          // without it, all of it now. Spread: ResNet-50's sum of per-op
          // minimums 52.0 -> 46.8 ms (Emerald Rapids, 1 thread; the 3x3
          // stride-2 and large-plane 1x1 convs).
          const char* next = pr.packed_a && ic + ir + mr < m1 ? reinterpret_cast<const char*>(block_a + (ir + mr) * kc)
                                                              : nullptr;
          const int64_t panel_bytes = mr * kc * static_cast<int64_t>(sizeof(float));
          if (next && (!kr.micro_pf || !PrefetchWeights())) {
            PrefetchLines(next, (panel_bytes + 63) / 64);
            next = nullptr;
          }
          const int64_t row_tiles = (nc + nr - 1) / nr;
          for (int64_t jr = 0, t = 0; jr < nc; jr += nr, ++t) {
            const PanelShare share = ShareOfNext(next, panel_bytes, row_tiles, t);
            tile(ir, jr, share.at, share.lines);
          }
          activate(ir);
        }
      }
    }
  }
}

const GemmKernel* KernelFor(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return Avx512Kernel();
    case Isa::kAvx2: return Avx2Kernel();
    case Isa::kNeon: return NeonKernel();
    case Isa::kScalar: return &kScalarKernel;
  }
  return &kScalarKernel;
}

}  // namespace
}  // namespace gemm_detail

bool GemmIsaSupported(Isa isa) {
  if (isa == Isa::kScalar) return true;
  if (!gemm_detail::KernelFor(isa)) return false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (isa == Isa::kAvx512) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  if (isa == Isa::kAvx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  if (isa == Isa::kNeon) return CpuHasNeon();
  return false;
}

Isa GemmBestIsa() {
  static const Isa best = GemmIsaSupported(Isa::kAvx512) ? Isa::kAvx512
                          : GemmIsaSupported(Isa::kAvx2) ? Isa::kAvx2
                          : GemmIsaSupported(Isa::kNeon) ? Isa::kNeon
                                                         : Isa::kScalar;
  return best;
}

const char* GemmIsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kNeon: return "neon";
    case Isa::kScalar: return "scalar";
  }
  return "?";
}

std::string GemmBlockingText() {
  const gemm_detail::GemmKernel& k = gemm_detail::KernelForIsa(GemmBestIsa());
  const int64_t l2 = HostCaches().l2;
  return std::string(GemmIsaName(GemmBestIsa())) + " " + std::to_string(k.mr) + "x" + std::to_string(k.nr) +
         " tiles, K blocks of " + std::to_string(k.kc) + ", column blocks of " +
         std::to_string(gemm_detail::BlockColumns(k, k.kc)) +
         (l2 > 0 ? " (a quarter of the " + std::to_string(l2 >> 10) + "K L2)" : " (L2 unknown: the kernel's own)");
}

namespace gemm_detail {
namespace {

// y[j] (j in [j0, j1)) = sum_k a[k] * B(k, j), B(k, j) = B[j * ldb + k] when
// tb, else B[k * ldb + j]. When tb, four rows of B at a time (each read of
// a[k] serves four dot products, four independent accumulators), sixteen
// partial sums a row so that the loop vectorizes without reassociating one
// sum, and the partial sums folded in halving steps.
inline float FoldLanes(float* part) {
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) part[l] += part[l + w];
  return part[0];
}

KILN_SIMD_CLONES
void GemvRange(const float* a, int64_t K, bool tb, const float* B, int64_t ldb, int64_t j0, int64_t j1, float* y) {
  if (tb) {
    // Columns four at a time, a last group of fewer repeating its first
    // column's row: every column is summed by the same code wherever a
    // thread's range starts (a loop of its own for the odd columns summed
    // them in another order where the compiler fused multiply-adds, arm64).
    for (int64_t j = j0; j < j1; j += 4) {
      const int64_t n = std::min<int64_t>(4, j1 - j);
      const float* __restrict b0 = B + j * ldb;
      const float* __restrict b1 = n > 1 ? b0 + ldb : b0;
      const float* __restrict b2 = n > 2 ? b0 + 2 * ldb : b0;
      const float* __restrict b3 = n > 3 ? b0 + 3 * ldb : b0;
      float p0[16] = {}, p1[16] = {}, p2[16] = {}, p3[16] = {};
      int64_t k = 0;
      for (; k + 16 <= K; k += 16)
        for (int l = 0; l < 16; ++l) {
          const float av = a[k + l];
          p0[l] += av * b0[k + l];
          p1[l] += av * b1[k + l];
          p2[l] += av * b2[k + l];
          p3[l] += av * b3[k + l];
        }
      float s[4] = {FoldLanes(p0), FoldLanes(p1), FoldLanes(p2), FoldLanes(p3)};
      for (; k < K; ++k) {
        s[0] += a[k] * b0[k];
        s[1] += a[k] * b1[k];
        s[2] += a[k] * b2[k];
        s[3] += a[k] * b3[k];
      }
      for (int64_t c = 0; c < n; ++c) y[j - j0 + c] = s[c];
    }
  } else {
    float* __restrict out = y;
    for (int64_t j = j0; j < j1; ++j) out[j - j0] = 0.f;
    for (int64_t k = 0; k < K; ++k) {
      const float av = a[k];
      const float* __restrict b = B + k * ldb + j0;
      for (int64_t j = 0; j < j1 - j0; ++j) out[j] += av * b[j];
    }
  }
}

// What row 0's product is added to at column j (M == 1): the epilogue's
// residual, or beta * C.
inline float RowStart(const Problem& pr, int64_t j) {
  if (pr.ep && pr.ep->residual) return pr.ep->residual[j];
  return pr.beta == 0.f ? 0.f : pr.beta * pr.C[j];
}

// alpha * op(A)'s single row (M == 1), contiguous, in the calling thread's
// scratch (the pool's threads only read it while the call lasts).
thread_local ScratchBuffer tl_row;
const float* ScaledRow(const Problem& pr) {
  float* a = tl_row.get(static_cast<size_t>(pr.K));
  for (int64_t k = 0; k < pr.K; ++k) a[k] = pr.alpha * (pr.ta ? pr.A[k * pr.lda] : pr.A[k]);
  return a;
}

// M == 1: a matrix-vector product (FC layers at batch 1), streamed over B
// once instead of packing it for a 1-row tile.
void Gemv(ThreadPool& pool, const Problem& pr, int64_t N) {
  const float* a = ScaledRow(pr);
  pool.parallelFor(N, [&](int64_t b, int64_t e) {
    for (int64_t j0 = b; j0 < e; j0 += 256) {
      const int64_t j1 = std::min(e, j0 + 256);
      float y[256];
      GemvRange(a, pr.K, pr.tb, pr.B, pr.ldb, j0, j1, y);
      for (int64_t j = j0; j < j1; ++j) pr.C[j] = RowStart(pr, j) + y[j - j0];
      if (pr.ep) ApplyEpilogue(pr, 0, 1, j0, j1 - j0);
    }
  }, 64);
}

// M == 1 on a PackedB: the panels are one sequential stream, read once,
// with no horizontal sums (each output column is a lane of an accumulator).
// Threads take contiguous runs of panels.
void GemvPacked(const GemmKernel& kr, ThreadPool& pool, const Problem& pr, int64_t N) {
  const float* a = ScaledRow(pr);
  const int64_t KC = std::min(kr.kc, pr.K), nr = kr.nr, panels = pr.n_pad / nr;
  // 256 columns a step keeps y on the stack; the grain (in panels) keeps
  // about 64 KiB of B per chunk, below which a second thread costs more
  // than it saves.
  const int64_t step = 256 / nr;
  pool.parallelFor(panels, [&](int64_t b, int64_t e) {
    alignas(64) float y[256];
    for (int64_t p0 = b; p0 < e; p0 += step) {
      const int64_t np = std::min(step, e - p0);
      if (pr.packed_b_half) {
        // Widen the chunk's panels, block by block, into a layout of np
        // panels (the same walk with n_pad = np * nr).
        float* wide = tl_pack_b.get(static_cast<size_t>(pr.K * np * nr));
        for (int64_t pc = 0; pc < pr.K; pc += KC) {
          const int64_t kc = std::min(KC, pr.K - pc);
          WidenHalf(pr.packed_b_half + pc * pr.n_pad + p0 * nr * kc, wide + pc * np * nr, np * nr * kc);
        }
        kr.gemv(pr.K, KC, a, wide, np * nr, 0, np, y);
      } else {
        kr.gemv(pr.K, KC, a, pr.packed_b, pr.n_pad, p0, np, y);
      }
      const int64_t j0 = p0 * nr, j1 = std::min(N, (p0 + np) * nr);
      for (int64_t j = j0; j < j1; ++j) pr.C[j] = RowStart(pr, j) + y[j - j0];
      if (pr.ep) ApplyEpilogue(pr, 0, 1, j0, j1 - j0);
    }
  }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, pr.K * nr)));
}

// How Run splits an M x N x K product over `threads`: 0 not at all (too
// little work), 1 by columns, 2 by rows: over the dimension whose panels
// spread more evenly over the threads.
int RunSplit(const GemmKernel& kr, int threads, int64_t M, int64_t N, int64_t K) {
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(std::max<int64_t>(K, 1));
  if (threads <= 1 || work < 64.0 * 1024.0) return 0;
  const int64_t pn = (N + kr.nr - 1) / kr.nr, pm = (M + kr.mr - 1) / kr.mr;
  auto balance = [threads](int64_t panels) {
    const int64_t per = (panels + threads - 1) / threads;
    return static_cast<double>(panels) / static_cast<double>(per * threads);
  };
  return pn >= 8 * threads || balance(pn) >= balance(pm) ? 1 : 2;
}

// Splits C over the pool's threads and runs GemmRange on each part.
void Run(const GemmKernel& kr, ThreadPool& pool, const Problem& pr, int64_t M, int64_t N) {
  const int split = RunSplit(kr, pool.threads(), M, N, pr.K);
  if (split == 0) {
    GemmRange(kr, pr, 0, M, 0, N);
    return;
  }
  const int64_t pn = (N + kr.nr - 1) / kr.nr, pm = (M + kr.mr - 1) / kr.mr;
  if (split == 1) {
    pool.parallelFor(pn, [&](int64_t b, int64_t e) {
      GemmRange(kr, pr, 0, M, b * kr.nr, std::min<int64_t>(N, e * kr.nr));
    });
  } else {
    pool.parallelFor(pm, [&](int64_t b, int64_t e) {
      GemmRange(kr, pr, b * kr.mr, std::min<int64_t>(M, e * kr.mr), 0, N);
    });
  }
}

}  // namespace

const GemmKernel& KernelForIsa(Isa isa) {
  const GemmKernel* kp = KernelFor(isa);
  return kp ? *kp : kScalarKernel;
}

void PackPanelsA(const GemmKernel& kr, bool trans_a, float alpha, const float* A, int64_t lda, int64_t K, int64_t i0,
                 int64_t mc, int64_t k0, int64_t kc, float* dst) {
  const Problem pr{trans_a, false, K, alpha, A, lda, nullptr, 0, 0.f, nullptr, 0};
  PackAPanels(kr, pr, i0, mc, k0, kc, dst);
}

void PackPanelsB(int nr, bool trans_b, const float* B, int64_t ldb, int64_t K, int64_t k0, int64_t kc, int64_t j0,
                 int64_t nc, float* dst) {
  const Problem pr{false, trans_b, K, 1.f, nullptr, 0, B, ldb, 0.f, nullptr, 0};
  PackBPanels(pr, nr, k0, kc, j0, nc, dst);
}

}  // namespace gemm_detail

void SgemmWithIsa(Isa isa, ThreadPool& pool, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc, const GemmEpilogue* epilogue) {
  using namespace gemm_detail;
  if (M <= 0 || N <= 0) return;
  Problem pr{trans_a, trans_b, K, alpha, A, lda, B, ldb, beta, C, ldc};
  pr.ep = epilogue;
  if (M == 1 && K > 0) return Gemv(pool, pr, N);
  Run(KernelForIsa(isa), pool, pr, M, N);
}

ThreadPool& SerialPool() {
  static ThreadPool serial(1);
  return serial;
}

void Sgemm(ThreadPool& pool, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           const GemmEpilogue* epilogue) {
  SgemmWithIsa(GemmBestIsa(), pool, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, epilogue);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// F16C through cpuid (leaf 1, ECX bit 29): clang's __builtin_cpu_supports
// does not know "f16c".
static bool HasF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
#endif

void WidenHalf(const uint16_t* src, float* dst, int64_t n) {
  static const gemm_detail::WidenFn fast = [] {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (GemmIsaSupported(Isa::kAvx512)) return gemm_detail::Avx512Kernel()->widen;
    if (GemmIsaSupported(Isa::kAvx2) && HasF16c()) return gemm_detail::Avx2Kernel()->widen;
#endif
    if (GemmIsaSupported(Isa::kNeon)) return gemm_detail::NeonKernel()->widen;
    return gemm_detail::WidenFn{nullptr};
  }();
  if (fast) return fast(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = HalfToFloat(src[i]);
}

namespace gemm_detail {
namespace {
// The product alpha * op(A) * b + beta * C on a PackedB (SgemmPackedB and
// SgemmPackedBColumns).
Problem PackedBProblem(bool trans_a, float alpha, const float* A, int64_t lda, const PackedB& b, float beta, float* C,
                       int64_t ldc, const GemmEpilogue* epilogue) {
  Problem pr{trans_a, false, b.K, alpha, A, lda, nullptr, 0, beta, C, ldc};
  pr.packed_b = b.f32();
  pr.packed_b_half = b.f16();
  pr.n_pad = b.n_pad;
  pr.ep = epilogue;
  return pr;
}
}  // namespace
}  // namespace gemm_detail

void SgemmPackedB(ThreadPool& pool, bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                  const PackedB& b, float beta, float* C, int64_t ldc, const GemmEpilogue* epilogue) {
  using namespace gemm_detail;
  if (M <= 0 || b.N <= 0) return;
  const Problem pr = PackedBProblem(trans_a, alpha, A, lda, b, beta, C, ldc, epilogue);
  const GemmKernel& kr = KernelForIsa(b.isa);
  if (M == 1 && b.K > 0) return GemvPacked(kr, pool, pr, b.N);
  Run(kr, pool, pr, M, b.N);
}

int PackedBPanelWidth(const PackedB& b) { return gemm_detail::KernelForIsa(b.isa).nr; }

bool PackedBSplitsColumns(const PackedB& b, int64_t M, int threads) {
  return M > 1 && gemm_detail::RunSplit(gemm_detail::KernelForIsa(b.isa), threads, M, b.N, b.K) == 1;
}

void SgemmPackedBColumns(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda, const PackedB& b,
                         int64_t n0, int64_t n1, float beta, float* C, int64_t ldc, const GemmEpilogue* epilogue) {
  using namespace gemm_detail;
  if (M <= 0 || n1 <= n0) return;
  const Problem pr = PackedBProblem(trans_a, alpha, A, lda, b, beta, C, ldc, epilogue);
  GemmRange(KernelForIsa(b.isa), pr, 0, M, n0, std::min(n1, b.N));
}

namespace {

// C = a * B + beta * C, B given (trans_b, B, ldb) or packed on the fly (b_packer).
void RunPackedA(ThreadPool& pool, const PackedA& a, int64_t N, bool trans_b, const float* B, int64_t ldb,
                const BPacker* b_packer, float beta, float* C, int64_t ldc, const GemmEpilogue* epilogue) {
  using namespace gemm_detail;
  if (a.M <= 0 || N <= 0) return;
  Problem pr{false, trans_b, a.K, 1.f, nullptr, 0, B, ldb, beta, C, ldc};
  pr.packed_a = a.f32();
  pr.packed_half = a.f16();
  pr.m_pad = a.m_pad;
  pr.b_packer = b_packer;
  pr.ep = epilogue;
  // An explicit B (pointwise Conv: the input planes) is read where it lies
  // when its rows start on cache lines: packing it cost more than the
  // strided rows do (128 -> 16 channels on 55x55: 0.169 -> 0.116 ms; 64 ->
  // 256 on 56x56: 0.956 -> 0.925 ms). Rows off the lines (a 14x14 plane is
  // 784 bytes) split a panel's vector loads over three lines each; packed,
  // ResNet-50's 1x1 convs on 14x14 run 0.86-0.92 -> 0.80-0.85 ms (Emerald
  // Rapids, 1 thread). But the packing serves only M / mr panels of A, and
  // each thread of a split by rows packs all of B: with few rows in place
  // again (1x1 convs on 14x14 in alternating runs, 1 / 2 threads: 384 -> 64
  // 0.078 -> 0.064 / 0.094 -> 0.069 ms, 576 -> 96 0.139 -> 0.127 / 0.160
  // -> 0.138, 672 -> 112 0.183 -> 0.170 / 0.237 -> 0.195; 256 -> 1024 and
  // 1024 -> 256 stay packed: 0.63 against 0.73 and 0.68 against 0.70 ms
  // at 2 threads).
  constexpr int64_t kLine = 64 / sizeof(float), kInPlaceRows = 128;
  const bool on_lines = ldb % kLine == 0 && reinterpret_cast<uintptr_t>(B) % 64 == 0;
  pr.direct_b = !trans_b && B && (on_lines || a.M <= kInPlaceRows);
  Run(KernelForIsa(a.isa), pool, pr, a.M, N);
}

}  // namespace

void SgemmPackedImplicitB(ThreadPool& pool, const PackedA& a, int64_t N, const BPacker& b, float beta, float* C,
                          int64_t ldc, const GemmEpilogue* epilogue) {
  RunPackedA(pool, a, N, false, nullptr, 0, &b, beta, C, ldc, epilogue);
}

void SgemmPacked(ThreadPool& pool, const PackedA& a, bool trans_b, int64_t N, const float* B, int64_t ldb, float beta,
                 float* C, int64_t ldc, const GemmEpilogue* epilogue) {
  RunPackedA(pool, a, N, trans_b, B, ldb, nullptr, beta, C, ldc, epilogue);
}

double MeasureFmaGflops(Isa isa, double seconds) {
  const gemm_detail::GemmKernel* k = gemm_detail::KernelFor(isa);
  using Clock = std::chrono::steady_clock;
  int64_t iters = 1 << 16;
  volatile float sink = 0;
  for (;;) {
    auto t0 = Clock::now();
    sink = sink + k->fma_loop(iters);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s >= seconds || iters >= (int64_t{1} << 40)) return static_cast<double>(iters) * k->fma_flops_per_iter / s / 1e9;
    iters = s > 0 ? static_cast<int64_t>(static_cast<double>(iters) * std::min(16.0, 1.2 * seconds / s)) : iters * 16;
  }
}

}  // namespace kiln
