// Host kernel: Conv (f32, any number of spatial axes,
// groups, dilations, strides, pads / auto_pad, optional bias, fused
// activation). Conv with more than one input channel a group is a GEMM
// (gemm.h): 1x1 stride-1 unpadded convs multiply the weights by the input
// planes directly; others first unfold the input (im2col, one group of one
// batch at a time, into a per-thread buffer grown at resize). Constant weights
// are packed for the GEMM once; bias and a clamp activation ride on its stores.
// Depthwise Conv is direct (nn_conv_direct.cpp, RunDirectConv).
// ConvTranspose (GEMM + col2im) is in nn_conv_transpose.cpp; the phase
// planes of strided convs in nn_conv_phased.cpp.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "checked_math.h"
#include "cpu_features.h"
#include "gemm.h"
#include "host_backend.h"
#include "ops/nn_common.h"
#include "ops/nn_conv.h"
#include "ops/nn_depthwise.h"
#include "ops/nn_winograd.h"
#include "scratch.h"
#include "simd_clones.h"

namespace kiln {
namespace conv {
namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return -FloorDiv(-a, b); }
}  // namespace

Taps MakeTaps(const IntVec& a, const IntVec& b, const IntVec& kernel, const IntVec& strides, const IntVec& pads,
              const IntVec& dilations) {
  const size_t n = a.size(), last = n - 1;
  Taps t;
  t.a_rows = Prod(a.begin(), a.end() - 1);
  t.a_w = a[last];
  t.b_w = b[last];
  t.k_rows = Prod(kernel.begin(), kernel.end() - 1);
  t.k_w = kernel[last];
  t.stride_w = strides[last];
  t.row_off.assign(static_cast<size_t>(t.k_rows * t.a_rows), -1);
  IntVec kidx(n, 0), aidx(n, 0);
  for (int64_t kr = 0; kr < t.k_rows; ++kr) {
    // kernel row multi-index over axes [0, last)
    for (size_t j = last, rem = static_cast<size_t>(kr); j-- > 0;) {
      kidx[j] = static_cast<int64_t>(rem) % kernel[j];
      rem /= static_cast<size_t>(kernel[j]);
    }
    for (int64_t ar = 0; ar < t.a_rows; ++ar) {
      int64_t rem = ar, off = 0, mul = t.b_w;
      bool inside = true;
      for (size_t j = last; j-- > 0;) {
        int64_t ai = rem % a[j];
        rem /= a[j];
        int64_t bi = ai * strides[j] - pads[j] + kidx[j] * dilations[j];
        if (bi < 0 || bi >= b[j]) inside = false;
        off += bi * mul;
        mul *= b[j];
      }
      if (inside) t.row_off[static_cast<size_t>(kr * t.a_rows + ar)] = off;
    }
  }
  for (int64_t kx = 0; kx < t.k_w; ++kx) {
    int64_t shift = kx * dilations[last] - pads[last];  // b = a * s + shift
    int64_t lo = std::max<int64_t>(0, CeilDiv(-shift, t.stride_w));
    int64_t hi = std::min<int64_t>(t.a_w, FloorDiv(t.b_w - 1 - shift, t.stride_w) + 1);
    if (hi < lo) hi = lo;
    t.lo.push_back(lo);
    t.hi.push_back(hi);
    t.b_start.push_back(lo * t.stride_w + shift);
  }
  return t;
}

ConvAttrs ReadConvAttrs(const fb::ConvParams* p, const Tensor& w) {
  ConvAttrs a;
  size_t n = static_cast<size_t>(w.dimensions() - 2);
  a.kernel.assign(w.shape().begin() + 2, w.shape().end());
  a.strides = nn::IntsOr(p ? p->strides() : nullptr, n, 1);
  a.dilations = nn::IntsOr(p ? p->dilations() : nullptr, n, 1);
  a.group = p ? p->group() : 1;
  a.act = p ? p->activation() : fb::Activation::None;
  a.act_min = p ? p->activation_min() : -INFINITY;
  a.act_max = p ? p->activation_max() : INFINITY;
  a.act_alpha = p ? p->activation_alpha() : 0.01f;
  return a;
}

void FillBias(float* y, int64_t n, const Tensor* bias, int64_t m) {
  float v = bias ? bias->host<float>()[m] : 0.f;
  std::fill(y, y + n, v);
}

void PlaneActivation(const void* ctx, float* y, int64_t n) {
  const ConvAttrs& a = *static_cast<const ConvAttrs*>(ctx);
  nn::ApplyFusedActivation(a.act, a.act_min, a.act_max, a.act_alpha, y, n);
}

void ActivatePlanes(ThreadPool& pool, const ConvAttrs& a, float* y, int64_t planes, int64_t plane) {
  pool.parallelFor(planes, [&](int64_t begin, int64_t end) {
    PlaneActivation(&a, y + begin * plane, (end - begin) * plane);
  }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane)));
}

void TileActivation(const void* ctx, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) PlaneActivation(ctx, c + r * ldc, cols);
}

bool PathEnabled(const char* var) {
  const char* e = std::getenv(var);
  return !(e && e[0] == '0');
}

}  // namespace conv

namespace {

using namespace conv;

// y[i] += r[i] for i in [0, n).
KILN_SIMD_CLONES
void AddRows(const float* __restrict r, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += r[i];
}

// The unfolded input of one group (the im2col matrix, rows c * ksize + tap,
// columns output positions), packed straight into the GEMM's B panels a
// cache block at a time instead of being written whole and packed again
// (BPacker, gemm.h). Each panel row is a run or two of one input row: zeros
// where the tap falls in the padding, a contiguous or strided copy inside.
// One row of the unfolded input (input channel c, tap kr, kx), worked out at
// resize so packing divides nothing.
struct ColRow {
  int64_t x_off;          // c * in_plane + b_start[kx]
  const int64_t* row_off;  // taps' row offsets for kernel row kr
  int64_t lo, hi;          // output columns whose tap kx is inside the input
};

struct ImplicitCol {
  const Taps* t;
  const ColRow* rows;
  const float* xg;
};

// A whole panel row inside one input row: NR values at stride s, with NR
// known to the compiler so the copy is a few vector loads and permutes
// instead of a loop with a tail (3-channel first layers spent a quarter of
// their time packing before this).
template <int NR>
inline void CopyPanelRow(const float* __restrict src, int64_t s, float* __restrict dk) {
  if (s == 1)
    for (int i = 0; i < NR; ++i) dk[i] = src[i];
  else if (s == 2)
    for (int i = 0; i < NR; ++i) dk[i] = src[2 * i];
  else
    for (int i = 0; i < NR; ++i) dk[i] = src[i * s];
}

KILN_SIMD_CLONES
void PackImplicitCol(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) {
  const ImplicitCol& ic = *static_cast<const ImplicitCol*>(ctx);
  const Taps& t = *ic.t;
  const int64_t s = t.stride_w;
  for (int64_t p = 0; p < nc; p += nr) {
    const int64_t cols = std::min<int64_t>(nr, nc - p), jb = j0 + p;
    const int64_t oy0 = jb / t.a_w, ox0 = jb % t.a_w;
    float* d = dst + p * kc;
    const bool one_row = cols == nr && ox0 + nr <= t.a_w;  // the panel's columns lie in output row oy0
    for (int64_t k = 0; k < kc; ++k) {
      const ColRow& cr = ic.rows[k0 + k];
      const float* xp = ic.xg + cr.x_off;
      const int64_t* row_off = cr.row_off;
      const int64_t lo = cr.lo, hi = cr.hi;
      float* __restrict dk = d + k * nr;
      if (one_row && row_off[oy0] >= 0 && lo <= ox0 && ox0 + nr <= hi) {
        const float* src = xp + row_off[oy0] + (ox0 - lo) * s;
        switch (nr) {
          case 32: CopyPanelRow<32>(src, s, dk); continue;
          case 16: CopyPanelRow<16>(src, s, dk); continue;
          case 12: CopyPanelRow<12>(src, s, dk); continue;
          case 8: CopyPanelRow<8>(src, s, dk); continue;
          default: break;
        }
      }
      int64_t q = 0, oy = oy0, ox = ox0;
      while (q < cols) {
        const int64_t run = std::min(cols - q, t.a_w - ox);  // the columns left in output row oy
        const int64_t off = row_off[oy];
        const int64_t a = std::max(ox, lo), b = std::min(ox + run, hi);
        if (off < 0 || a >= b) {
          for (int64_t i = 0; i < run; ++i) dk[q + i] = 0.f;
        } else {
          float* __restrict o = dk + q - ox;  // o[x]: output column x of this run
          for (int64_t x = ox; x < a; ++x) o[x] = 0.f;
          const float* __restrict src = xp + off + (a - lo) * s;
          if (s == 1)
            for (int64_t i = 0; i < b - a; ++i) o[a + i] = src[i];
          else if (s == 2)
            for (int64_t i = 0; i < b - a; ++i) o[a + i] = src[2 * i];
          else
            for (int64_t i = 0; i < b - a; ++i) o[a + i] = src[i * s];
          for (int64_t x = b; x < ox + run; ++x) o[x] = 0.f;
        }
        q += run;
        ox += run;
        if (ox == t.a_w) {
          ox = 0;
          ++oy;
        }
      }
      for (int64_t i = cols; i < nr; ++i) dk[i] = 0.f;
    }
  }
}

// y[m * rows + r] = yt[r * cols + m] for channels m in [m0, m1): whole 8 x 8
// blocks as eight 8-float rows transposed by three rounds of shuffles (the
// scalar loop cost about as much as 66 multiply-adds an element), the edges
// element by element.
typedef float V8 __attribute__((vector_size(32)));
typedef float V8u __attribute__((vector_size(32), aligned(4)));
typedef int V8i __attribute__((vector_size(32)));
#if defined(__clang__)
#define KILN_SHUF8(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define KILN_SHUF8(a, b, ...) __builtin_shuffle(a, b, V8i{__VA_ARGS__})
#endif

KILN_SIMD_CLONES
void TransposeBlocks(const float* __restrict yt, int64_t rows, int64_t cols, int64_t m0, int64_t m1,
                     float* __restrict y) {
  const int64_t rows8 = rows / 8 * 8;
  int64_t m = m0;
  for (; m + 8 <= m1; m += 8) {
    for (int64_t r = 0; r < rows8; r += 8) {
      V8 a[8];
      for (int i = 0; i < 8; ++i) a[i] = *reinterpret_cast<const V8u*>(yt + (r + i) * cols + m);
      V8 t[8], u[8];
      for (int i = 0; i < 8; i += 2) {
        t[i] = KILN_SHUF8(a[i], a[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = KILN_SHUF8(a[i], a[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
      }
      for (int i = 0; i < 8; i += 4) {
        u[i] = KILN_SHUF8(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 1] = KILN_SHUF8(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[i + 2] = KILN_SHUF8(t[i + 1], t[i + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[i + 3] = KILN_SHUF8(t[i + 1], t[i + 3], 2, 3, 10, 11, 6, 7, 14, 15);
      }
      // u[0..3]: channels (0, 4), (1, 5), (2, 6), (3, 7) of rows 0-3; u[4..7] of rows 4-7.
      for (int i = 0; i < 4; ++i) {
        *reinterpret_cast<V8u*>(y + (m + i) * rows + r) = KILN_SHUF8(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        *reinterpret_cast<V8u*>(y + (m + i + 4) * rows + r) = KILN_SHUF8(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
      }
    }
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t r = rows8; r < rows; ++r) y[(m + i) * rows + r] = yt[r * cols + m + i];
  }
  for (; m < m1; ++m)
    for (int64_t r = 0; r < rows; ++r) y[m * rows + r] = yt[r * cols + m];
}
#undef KILN_SHUF8

// The im2col buffer (convs whose weights are not constant, and the
// transposed product's unfolded input) and the transposed product: one per
// thread, shared by every Conv that thread runs (a session resizes and runs
// on its caller's thread, one op at a time), so a model needs the largest
// rather than the sum. Grown at resize.
thread_local ScratchBuffer tl_col, tl_yt;  // tl_yt: the transposed product of small planes

// Conv as im2col + GEMM, or as Winograd F(4x4, 3x3) for 3x3 stride-1 convs
// with constant weights where that wins (WinogradConv::Tile); depthwise
// (one input channel a group, several groups) stays on RunDirectConv.
class ConvExecution final : public Execution {
 public:
  ConvExecution(HostBackend* b, const GraphOp& op, int index, bool constant_weights)
      : Execution(b), op_(op), index_(index), constant_weights_(constant_weights) {}

  void prepacked(std::vector<Prepacked>* out) const override {
    if (wino_.ready())
      out->push_back({"winograd", WinogradMeta(wino_.isa(), wino_.tile()), wino_.transformed(),
                      wino_.transformedFloats() * sizeof(float)});
    if (packed_b_.K)
      out->push_back({"panels_b", PackedMeta(true, packed_b_.f16() != nullptr, packed_b_), packed_b_.panels(),
                      packed_b_.panelBytes()});
    for (size_t g = 0; g < packed_.size(); ++g)
      out->push_back({"panels_a." + std::to_string(g), PackedMeta(false, packed_[g].f16() != nullptr, packed_[g]),
                      packed_[g].panels(), packed_[g].panelBytes()});
  }

  Status onResize(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    prepared_ = false;
    if (!nn::NeedF32(op_, in).ok()) return Status::Ok();  // onExecute reports it
    if (out[0]->elementCount() == 0) return Status::Ok();  // nothing to compute: no tables either
    return prepare(in, out);
  }

  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    HostBackend& be = *static_cast<HostBackend*>(backend());
    KILN_RETURN_IF_ERROR(nn::NeedF32(op_, in));
    if (out[0]->elementCount() == 0) return Status::Ok();
    if (!prepared_ || in[0]->shape() != x_shape_ || out[0]->shape() != y_shape_) KILN_RETURN_IF_ERROR(prepare(in, out));
    // A fused residual (input 3, fuse_residual): y = act(conv + bias + r).
    // The GEMM paths take r as their epilogue's residual (each tile starts
    // from its part of r), so that it is added before the activation; the
    // others compute conv + bias and add it afterwards (AddResidual), the
    // activation with it.
    const Tensor* R = in.size() > 3 ? in[3] : nullptr;
    // (The transposed product adds r as it moves its part of the output
    // back into channel planes: runPlain.)
    const bool gemm_path = !direct_ && !narrow_ && !winograd_;
    if (R && !gemm_path) {
      if (direct_) KILN_RETURN_IF_ERROR(RunDirectConv(op_, in, out, be, channels16_on_, true));
      else KILN_RETURN_IF_ERROR(runPlain(be, in, out, /*no_activation=*/true));
      AddResidual(be, R->host<float>(), out[0]->host<float>(), out[0]->elementCount());
      return Status::Ok();
    }
    if (direct_) return RunDirectConv(op_, in, out, be, channels16_on_, false);
    return runPlain(be, in, out, false, R ? R->host<float>() : nullptr);
  }

 private:
  // Every path but the direct one: y = act(conv(x) + bias + residual)
  // (residual: the GEMM paths only; y's shape), without the activation when
  // no_activation.
  Status runPlain(HostBackend& be, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                  bool no_activation, const float* residual = nullptr) {
    ConvAttrs a = a_;
    if (no_activation) a.act = fb::Activation::None;
    const Tensor* B = in.size() > 2 ? in[2] : nullptr;
    if (narrow_) return runNarrow(be, a, in[0]->host<float>(), B, out[0]->host<float>());
    const float* x = in[0]->host<float>();
    const float* w = in[1]->host<float>();
    float* y = out[0]->host<float>();
    if (out_plane_ == 0) return Status::Ok();
    const int64_t kdim = Cg_ * ksize_;
    // Bias and a clamp activation ride on the GEMM's stores; others on each
    // finished tile (TileActivation) or, after Winograd, on the output.
    GemmEpilogue ep;
    float lo = 0, hi = 0;
    const bool fused = nn::ActivationAsClamp(a.act, a.act_min, a.act_max, &lo, &hi);
    ep.clamp = fused && a.act != fb::Activation::None;
    ep.lo = lo;
    ep.hi = hi;
    if (!fused) {
      ep.tile_act = &TileActivation;
      ep.tile_ctx = &a;
    }
    const float* bias = B ? B->host<float>() : nullptr;
    for (int64_t n = 0; n < N_; ++n) {
      if (winograd_) {
        wino_.run(be.pool(), x + n * C_ * in_plane_, x_shape_[2], x_shape_[3], a.pads[0], a.pads[1],
                  y + n * M_ * out_plane_, y_shape_[2], y_shape_[3], bias, ep.clamp, lo, hi);
        continue;
      }
      for (int64_t g = 0; g < a_.group; ++g) {
        const float* xg = x + (n * C_ + g * Cg_) * in_plane_;
        const float* bmat = xg;
        ep.residual = residual ? residual + (n * M_ + g * Mg_) * out_plane_ : nullptr;
        ep.ld_residual = out_plane_;
        if (phased_) {
          KILN_RETURN_IF_ERROR(runPhased(be, xg, g, bias, &ep, y + (n * M_ + g * Mg_) * out_plane_));
          continue;
        }
        if (!pointwise_ && !transposed_ && !subsampled_ && !packed_.empty()) {
          ep.row_bias = bias ? bias + g * Mg_ : nullptr;
          const ImplicitCol ic{&taps_, col_rows_.data(), xg};
          SgemmPackedImplicitB(be.pool(), packed_[static_cast<size_t>(g)], out_plane_, BPacker{&PackImplicitCol, &ic},
                               0.f, y + (n * M_ + g * Mg_) * out_plane_, out_plane_, &ep);
          continue;
        }
        if (!pointwise_) {
          float* col = tl_col.get(col_size_);
          if (!col) return Status(StatusCode::kOutOfMemory, "Conv: cannot allocate the im2col buffer");
          Im2col(be, xg, col);
          bmat = col;
        }
        float* yg = y + (n * M_ + g * Mg_) * out_plane_;
        if (transposed_) {
          // y^T [out_plane x M] = bmat^T * w^T into scratch (bias a column
          // now), then transposed into the output planes, and a residual
          // added there (before the activation, which then follows it).
          const float* r = ep.residual;
          ep.residual = nullptr;
          if (r) ep.clamp = false, ep.tile_act = nullptr;
          float* yt = tl_yt.get(static_cast<size_t>(out_plane_ * M_));
          if (!yt) return Status(StatusCode::kOutOfMemory, "Conv: cannot allocate the transposed output");
          ep.col_bias = bias;
          // Each thread moves back the channels it computed, while they are
          // in its cache, in the same pass over the pool (where the GEMM
          // splits by channels: it does unless they are few).
          auto back = [&](int64_t m0, int64_t m1) {
            TransposeBlocks(yt, out_plane_, M_, m0, m1, yg);
            if (!r) return;
            for (int64_t m = m0; m < m1; ++m) {
              AddRows(r + m * out_plane_, yg + m * out_plane_, out_plane_);
              PlaneActivation(&a, yg + m * out_plane_, out_plane_);
            }
          };
          if (PackedBSplitsColumns(packed_b_, out_plane_, be.pool().threads())) {
            const int64_t nr = PackedBPanelWidth(packed_b_);
            be.pool().parallelFor((M_ + nr - 1) / nr, [&](int64_t p0, int64_t p1) {
              const int64_t m0 = p0 * nr, m1 = std::min(M_, p1 * nr);
              SgemmPackedBColumns(true, out_plane_, 1.f, bmat, out_plane_, packed_b_, m0, m1, 0.f, yt, M_, &ep);
              back(m0, m1);
            });
          } else {
            SgemmPackedB(be.pool(), true, out_plane_, 1.f, bmat, out_plane_, packed_b_, 0.f, yt, M_, &ep);
            be.pool().parallelFor((M_ + 7) / 8, [&](int64_t begin, int64_t end) {
              back(begin * 8, std::min(M_, end * 8));
            }, 8);
          }
          continue;
        }
        ep.row_bias = bias ? bias + g * Mg_ : nullptr;
        if (!packed_.empty())
          SgemmPacked(be.pool(), packed_[static_cast<size_t>(g)], false, out_plane_, bmat, out_plane_, 0.f, yg,
                      out_plane_, &ep);
        else
          Sgemm(be.pool(), false, false, Mg_, out_plane_, kdim, 1.f, w + g * Mg_ * kdim, kdim, bmat, out_plane_, 0.f,
                yg, out_plane_, &ep);
      }
    }
    if (!fused && winograd_) ActivatePlanes(be.pool(), a, y, N_ * M_, out_plane_);
    return Status::Ok();
  }

  // y = act(y + r) over n elements.
  void AddResidual(HostBackend& be, const float* r, float* y, int64_t n) const {
    be.pool().parallelFor(n, [&](int64_t begin, int64_t end) {
      AddRows(r + begin, y + begin, end - begin);
      PlaneActivation(&a_, y + begin, end - begin);
    }, 16384);
  }

  Status prepare(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
    const Tensor& X = *in[0];
    const Tensor& W = *in[1];
    const Tensor& Y = *out[0];
    x_shape_ = X.shape();
    y_shape_ = Y.shape();
    const fb::ConvParams* p = op_.params<fb::ConvParams>();
    a_ = ReadConvAttrs(p, W);
    const IntVec xin(X.shape().begin() + 2, X.shape().end());
    const IntVec yout(Y.shape().begin() + 2, Y.shape().end());
    const IntVec pads = nn::WindowPads(p ? p->auto_pad() : fb::AutoPad::NotSet,
                                       nn::IntsOr(p ? p->pads() : nullptr, 0, 0), xin, yout, a_.kernel, a_.strides,
                                       a_.dilations);
    a_.pads = pads;
    N_ = X.length(0);
    C_ = X.length(1);
    M_ = Y.length(1);
    Cg_ = C_ / a_.group;
    Mg_ = M_ / a_.group;
    in_plane_ = Prod(xin.begin(), xin.end());
    out_plane_ = Prod(yout.begin(), yout.end());
    ksize_ = Prod(a_.kernel.begin(), a_.kernel.end());
    direct_ = Cg_ == 1 && a_.group > 1;
    pointwise_ = xin == yout;
    for (size_t i = 0; i < a_.kernel.size(); ++i)
      if (a_.kernel[i] != 1 || a_.strides[i] != 1) pointwise_ = false;
    for (int64_t v : pads)
      if (v != 0) pointwise_ = false;
    // 1x1 kernels with strides and no padding: the im2col matrix is the
    // input subsampled, [C, out_plane], a fraction of the input. Written
    // once, it is a pointwise product's B, read where it lies; the implicit
    // packing gathered it again for every block of output channels.
    subsampled_ = !pointwise_ && Prod(a_.kernel.begin(), a_.kernel.end()) == 1 &&
                  std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v == 0; });
    HostBackend& be = *static_cast<HostBackend*>(backend());
    // Few input channels: the direct kernel, whose weights are laid out once.
    narrow_ = !direct_ && constant_weights_ && narrow_on_ && xin.size() == 2 &&
              NarrowConv::Suits(Cg_, M_, a_.kernel, a_.strides, a_.dilations, a_.group);
    if (narrow_) {
      if (!narrow_conv_.ready()) {
        narrow_conv_.prepare(W.host<float>(), M_, C_, a_.kernel[0], a_.kernel[1], be.halfWeights());
        be.countWeightBytes(narrow_conv_.bytes());
      }
      col_size_ = 0;
      prepared_ = true;
      return Status::Ok();
    }
    const bool k3 = a_.kernel == IntVec{3, 3};  // 2-D, so Y has 4 axes
    const int wino_tile =
        k3 ? WinogradConv::Tile(GemmBestIsa(), C_, M_, Y.length(2), Y.length(3), be.pool().threads(), HostCaches().l2)
           : 0;
    winograd_ = !direct_ && constant_weights_ && a_.group == 1 && k3 && a_.strides == IntVec{1, 1} &&
                 a_.dilations == IntVec{1, 1} && winograd_on_ && wino_tile != 0;
    // Constant weights are transformed (Winograd) or packed for the GEMM
    // once (they never change), and only for the path a shape takes.
    if (winograd_ && wino_.ready() && wino_.tile() != wino_tile) {  // resized to the other tile: these go
      be.uncountWeightBytes(wino_.bytes());
      wino_ = WinogradConv();
    }
    if (winograd_ && !wino_.ready() && !adoptWinograd(be, wino_tile)) {
      // fp32 even at precision low: fp16 transformed weights put errors of
      // about 3% on the outputs (F(4x4, 3x3) amplifies their rounding).
      wino_.prepare(be.pool(), GemmBestIsa(), W.host<float>(), M_, C_, wino_tile);
      be.countWeightBytes(wino_.bytes());
    }
    // Small planes: a GEMM's N (the plane) pads to the micro-kernel's nr
    // (32 on AVX-512), so 7x7 = 49 runs as 64 and 14x14 = 196 as 208; as
    // y^T = x^T w^T the plane pads to mr (8: 56, 200), or not at all where
    // the kernel has tiles of fewer rows (micro_a), and the channels to nr.
    // It costs a transpose back (about 24 multiply-adds an output element)
    // and, without micro_a (which reads x^T where it lies), a transposed
    // packing of the input (about 10 an input element, K x N). Fitted to the
    // 1x1 convs of ResNet-50 and MobileNetV2 (Zen 5, one thread / two): 7x7
    // planes take it (960 -> 160 0.082 -> 0.065 ms / 0.055 -> 0.045, 160 ->
    // 960 0.082 -> 0.066); 14x14 ones only where it saves 1.5 times its
    // cost: 1024 -> 256 does (0.453 -> 0.407 / 0.243 -> 0.225), 576 -> 96
    // does not (0.092 -> 0.086 / 0.052 -> 0.059), nor the expansions (256 ->
    // 1024 0.441 against 0.449).
    transposed_ = false;
    if (!direct_ && !winograd_ && constant_weights_ && a_.group == 1) {
      const gemm_detail::GemmKernel& k = gemm_detail::KernelForIsa(GemmBestIsa());
      auto pad = [](int64_t n, int64_t tile) { return static_cast<double>((n + tile - 1) / tile * tile); };
      // Columns as computed: a last panel of at most nr / 2 takes the half tile.
      auto cols = [&](int64_t n) {
        const int64_t whole = n / k.nr * k.nr, rest = n - whole;
        return static_cast<double>(whole + (rest == 0 ? 0 : k.micro_half && 2 * rest <= k.nr ? k.nr / 2 : k.nr));
      };
      // Rows as computed: a last tile of fewer rows costs about two more
      // with micro_a, a whole tile without.
      auto rows = [&](int64_t n) {
        return k.micro_a ? static_cast<double>(n + (n % k.mr ? 2 : 0)) : pad(n, k.mr);
      };
      const double saved = (pad(M_, k.mr) * cols(out_plane_) - rows(out_plane_) * cols(M_)) *
                           static_cast<double>(Cg_ * ksize_);
      const double pack = k.micro_a ? 0.0 : 10.0 * static_cast<double>(Cg_ * ksize_ * out_plane_);
      transposed_ = transposed_on_ && saved > 1.5 * (24.0 * static_cast<double>(M_ * out_plane_) + pack);
    }
    if (transposed_ && packed_b_.K == 0)
      packed_b_ = nn::BundledOrPackB(be, index_, "panels_b", true, Cg_ * ksize_, M_, W.host<float>(), Cg_ * ksize_);
    if (!direct_ && !winograd_ && !transposed_ && constant_weights_ && packed_.empty()) {
      const int64_t kdim = Cg_ * ksize_;
      for (int64_t g = 0; g < a_.group; ++g)
        packed_.push_back(nn::BundledOrPackA(be, index_, "panels_a." + std::to_string(g), false, Mg_, kdim,
                                             W.host<float>() + g * Mg_ * kdim, kdim));
    }
    // Strided 2-D convs of constant weights on the implicit GEMM: through
    // phase planes, when they hold little more than the input (they hold it
    // padded by the taps' reach: pads or dilations far wider than the input
    // would make them many times its size, where the implicit packing needs
    // no scratch at all).
    phased_ = phased_on_ && !direct_ && !winograd_ && !transposed_ && !subsampled_ && !pointwise_ &&
              !packed_.empty() && xin.size() == 2 && (a_.strides[0] > 1 || a_.strides[1] > 1) &&
              gemm_detail::KernelForIsa(packed_[0].isa).nr <= kPhasedMaxPanel;
    if (phased_) {
      phase_ = MakePhaseGeometry(xin[0], xin[1], yout[0], yout[1], a_.kernel[0], a_.kernel[1], a_.strides[0],
                                 a_.strides[1], a_.dilations[0], a_.dilations[1], a_.pads[0], a_.pads[1]);
      // (Saturating: strides and pads past the int64 product are possible in a model.)
      const int64_t planes = SatMul(SatMul(phase_.sh, phase_.sw), SatMul(phase_.hp, phase_.wp));
      phased_ = planes <= kPhasedMaxGrowth * std::max<int64_t>(in_plane_, 256);
    }
    if (phased_) {
      phase_rows_.resize(static_cast<size_t>(Cg_ * ksize_));
      for (int64_t row = 0; row < Cg_ * ksize_; ++row)
        phase_rows_[static_cast<size_t>(row)] =
            row / ksize_ * phase_.sh * phase_.sw * phase_.plane + phase_.tap_off[static_cast<size_t>(row % ksize_)];
      KILN_RETURN_IF_ERROR(be.checkScratch(phase_.floats(Cg_) * sizeof(float), "the phase planes"));
      tl_col.get(phase_.floats(Cg_));
      col_size_ = 0;
      prepared_ = true;
      return Status::Ok();
    }
    if (!direct_ && !pointwise_ && !winograd_) {
      taps_ = MakeTaps(yout, xin, a_.kernel, a_.strides, a_.pads, a_.dilations);
      col_rows_.resize(static_cast<size_t>(Cg_ * ksize_));
      for (int64_t row = 0; row < Cg_ * ksize_; ++row) {
        const int64_t c = row / ksize_, tap = row % ksize_;
        const size_t kx = static_cast<size_t>(tap % taps_.k_w);
        col_rows_[static_cast<size_t>(row)] = {c * in_plane_ + taps_.b_start[kx],
                                               taps_.row_off.data() + tap / taps_.k_w * taps_.a_rows, taps_.lo[kx],
                                               taps_.hi[kx]};
      }
      col_size_ = static_cast<size_t>(Cg_ * ksize_ * out_plane_);
      if (transposed_ || subsampled_ || packed_.empty()) {  // else packed on the fly (PackImplicitCol)
        const int64_t bytes = SatMul(SatMul(Cg_ * ksize_, out_plane_), int64_t{sizeof(float)});
        KILN_RETURN_IF_ERROR(be.checkScratch(static_cast<size_t>(bytes), "the unfolded input"));
        tl_col.get(col_size_);
      }
    } else {
      col_size_ = 0;
    }
    prepared_ = true;
    return Status::Ok();
  }

  // One group of one image through its phase planes (PhaseGeometry).
  Status runPhased(HostBackend& be, const float* xg, int64_t g, const float* bias, GemmEpilogue* ep, float* yg) {
    const PhaseGeometry& ph = phase_;
    float* planes = tl_col.get(ph.floats(Cg_));
    if (!planes) return Status(StatusCode::kOutOfMemory, "Conv: cannot allocate the phase planes");
    const int64_t h = x_shape_[2], w = x_shape_[3];
    be.pool().parallelFor(Cg_, [&](int64_t begin, int64_t end) { SplitPhases(ph, xg, h, w, begin, end, planes); },
                          std::max<int64_t>(1, 16384 / std::max<int64_t>(1, in_plane_)));
    ep->row_bias = bias ? bias + g * Mg_ : nullptr;
    const PhasedCol pc{phase_rows_.data(), planes, y_shape_[3], ph.wp};
    SgemmPackedImplicitB(be.pool(), packed_[static_cast<size_t>(g)], out_plane_, BPacker{&PackPhasedCol, &pc}, 0.f,
                         yg, out_plane_, ep);
    return Status::Ok();
  }

  Status runNarrow(HostBackend& be, const ConvAttrs& a, const float* x, const Tensor* B, float* y) const {
    NarrowConvArgs na;
    na.n = N_, na.h = x_shape_[2], na.w = x_shape_[3], na.oh = y_shape_[2], na.ow = y_shape_[3];
    na.sh = a.strides[0], na.sw = a.strides[1], na.pt = a.pads[0], na.pl = a.pads[1];
    const bool fused = nn::ActivationAsClamp(a.act, a.act_min, a.act_max, &na.lo, &na.hi);
    na.clamp = fused && a.act != fb::Activation::None;
    if (!fused) {
      na.row_act = &PlaneActivation;
      na.act_ctx = &a;
    }
    if (!narrow_conv_.run(be.pool(), na, x, B ? B->host<float>() : nullptr, y))
      return Status(StatusCode::kOutOfMemory, "Conv: cannot allocate the input rows");
    return Status::Ok();
  }

  // col[(c * ksize + tap) * out_plane + o] = the input under tap `tap` of
  // output position o in channel c of the group at xg (0 in the padding).
  void Im2col(HostBackend& be, const float* xg, float* col) {
    const Taps& t = taps_;
    const int64_t rows = Cg_ * ksize_;
    be.pool().parallelFor(rows, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t c = row / ksize_, tap = row % ksize_, kr = tap / t.k_w, kx = tap % t.k_w;
        const float* xp = xg + c * in_plane_;
        const int64_t* row_off = t.row_off.data() + kr * t.a_rows;
        const int64_t lo = t.lo[static_cast<size_t>(kx)], hi = t.hi[static_cast<size_t>(kx)];
        const int64_t bs = t.b_start[static_cast<size_t>(kx)], s = t.stride_w;
        float* dst = col + row * out_plane_;
        for (int64_t r = 0; r < t.a_rows; ++r, dst += t.a_w) {
          if (row_off[r] < 0 || hi <= lo) {
            std::fill(dst, dst + t.a_w, 0.f);
            continue;
          }
          std::fill(dst, dst + lo, 0.f);
          const float* xr = xp + row_off[r] + bs;
          if (s == 1)
            std::memcpy(dst + lo, xr, static_cast<size_t>(hi - lo) * sizeof(float));
          else
            for (int64_t i = 0; i < hi - lo; ++i) dst[lo + i] = xr[i * s];
          std::fill(dst + hi, dst + t.a_w, 0.f);
        }
      }
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_plane_)));
  }

  std::vector<int64_t> WinogradMeta(Isa isa, int tile) const { return {static_cast<int64_t>(isa), M_, C_, tile}; }
  static std::vector<int64_t> Meta(const fb::PrepackedBlob& b) {
    return b.meta() ? std::vector<int64_t>(b.meta()->begin(), b.meta()->end()) : std::vector<int64_t>{};
  }
  // The bundle's transformed filters for this conv, when made for it.
  bool adoptWinograd(HostBackend& be, int tile) {
    const fb::PrepackedBlob* blob = be.bundled(index_, "winograd");
    if (!blob) return false;
    const bool fits = Meta(*blob) == WinogradMeta(GemmBestIsa(), tile) &&
                      reinterpret_cast<uintptr_t>(blob->data()->data()) % 64 == 0;
    if (fits) {
      wino_.adopt(GemmBestIsa(), M_, C_, tile, reinterpret_cast<const float*>(blob->data()->data()));
      if (wino_.transformedFloats() * sizeof(float) != blob->data()->size()) wino_ = WinogradConv();
    }
    be.noteBundled(index_, "winograd", wino_.ready());
    return wino_.ready();
  }

  const GraphOp& op_;
  const int index_;  // the op's index in its graph (its bundle key)
  const bool constant_weights_;
  std::vector<PackedA> packed_;  // a group each; empty when the weights are not constant
  PackedB packed_b_;             // w^T, once a shape takes the transposed product
  WinogradConv wino_;            // transformed weights, once a shape takes the Winograd path
  NarrowConv narrow_conv_;       // the weights in channel blocks, once a shape takes the narrow path
  bool prepared_ = false, direct_ = false, pointwise_ = false, winograd_ = false, transposed_ = false,
       subsampled_ = false, narrow_ = false, phased_ = false;
  // Read once, when the session creates the op.
  const bool winograd_on_ = PathEnabled("KILN_HOST_WINOGRAD"), transposed_on_ = PathEnabled("KILN_HOST_TRANSPOSED"),
             channels16_on_ = PathEnabled("KILN_HOST_DW16"), narrow_on_ = PathEnabled("KILN_HOST_NARROW"),
             phased_on_ = PathEnabled("KILN_HOST_PHASED");
  IntVec x_shape_, y_shape_;
  ConvAttrs a_;
  int64_t N_ = 0, C_ = 0, M_ = 0, Cg_ = 0, Mg_ = 0, in_plane_ = 0, out_plane_ = 0, ksize_ = 0;
  Taps taps_;
  std::vector<ColRow> col_rows_;  // the unfolded input's rows (PackImplicitCol)
  PhaseGeometry phase_;              // phased_: the planes' geometry
  std::vector<int64_t> phase_rows_;  // phased_: each unfolded row's run in the planes (PackPhasedCol)
  size_t col_size_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostConv(const GraphOp& op, const Graph& graph, HostBackend* b) {
  const int w = op.inputs.size() > 1 ? op.inputs[1] : -1;
  const bool constant = w >= 0 && static_cast<size_t>(w) < graph.tensors.size() &&
                        graph.tensors[static_cast<size_t>(w)].isConstant();
  return std::unique_ptr<Execution>(new ConvExecution(b, op, static_cast<int>(&op - graph.ops.data()), constant));
}

}  // namespace kiln
