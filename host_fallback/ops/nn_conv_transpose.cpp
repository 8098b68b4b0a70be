// Host kernel: ConvTranspose (f32, any number of spatial axes, groups,
// dilations, strides, pads / output_padding / output_shape / auto_pad,
// optional bias, fused activation) as a GEMM and a col2im.
//
// For one group of one batch, col = W_g^T * X_g: W_g^T is [Mg * ksize, Cg]
// (the weights [C, Mg, k...] read transposed, packed once when constant),
// X_g the input planes [Cg, in_plane]; row (m, tap) of col holds what input
// position p adds to output position p * stride - pad + tap * dilation of
// channel m. col2im then adds every row into the output planes. The product
// runs a few input rows at a time, so a block of col stays in L2 between the
// GEMM that writes it and the col2im that reads it (col whole is ksize times
// the output).
//
// Where every output position receives exactly one tap (stride = kernel,
// no dilation, no padding, output = input * stride: the 2x2 stride-2
// upsampling of U-Nets and text detectors) the col2im is a copy: bias and
// activation then ride on the GEMM's stores and the output is written once.
// Otherwise the output starts as the bias, col2im adds, and the activation
// is a last pass.
#include <algorithm>
#include <cstring>
#include <vector>

#include "gemm.h"
#include "host_backend.h"
#include "ops/nn_common.h"
#include "ops/nn_conv.h"
#include "ops/shape_inference.h"
#include "scratch.h"

namespace kiln {
namespace {

using namespace conv;

// The block of col one GEMM writes: about 512 KiB, inside a Zen / Intel L2.
constexpr int64_t kColBlockFloats = 128 * 1024;

thread_local ScratchBuffer tl_convt_col;

// Begin pads of ConvTranspose (ONNX): explicit pads, or, when output_shape
// or SAME_* set the output size, a split of the total padding
// stride * (in - 1) + output_padding + extent - out (clamped at 0): SAME_UPPER
// puts the odd element at the end, SAME_LOWER and NotSet at the beginning.
IntVec TransposePadBegin(const fb::ConvParams* p, const IntVec& in, const IntVec& out, const ConvAttrs& a) {
  const size_t n = in.size();
  fb::AutoPad ap = p ? p->auto_pad() : fb::AutoPad::NotSet;
  bool has_output_shape = p && p->output_shape() && p->output_shape()->size() > 0;
  bool same = ap == fb::AutoPad::SameUpper || ap == fb::AutoPad::SameLower;
  IntVec begin(n, 0);
  if (!has_output_shape && !same) {
    if (ap == fb::AutoPad::NotSet) {
      IntVec pads = nn::IntsOr(p ? p->pads() : nullptr, 2 * n, 0);
      for (size_t i = 0; i < n; ++i) begin[i] = pads[i];
    }
    return begin;
  }
  IntVec out_pad = nn::IntsOr(p ? p->output_padding() : nullptr, n, 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t extent = (a.kernel[i] - 1) * a.dilations[i] + 1;
    int64_t total = std::max<int64_t>(0, a.strides[i] * (in[i] - 1) + out_pad[i] + extent - out[i]);
    begin[i] = ap == fb::AutoPad::SameUpper ? total / 2 : total - total / 2;
  }
  return begin;
}

// One output row of the one-tap-each case: d[i * S + kx] = src[kx][i] for
// i < n, kx < S (S = stride = kernel width), the taps interleaved.
template <int S>
inline void InterleaveRow(const float* const* src, int64_t n, float* __restrict d) {
  for (int64_t i = 0; i < n; ++i)
    for (int kx = 0; kx < S; ++kx) d[i * S + kx] = src[kx][i];
}
inline void InterleaveRow(const float* const* src, int64_t s, int64_t n, float* __restrict d) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t kx = 0; kx < s; ++kx) d[i * s + kx] = src[kx][i];
}

class ConvTransposeExecution final : public Execution {
 public:
  ConvTransposeExecution(HostBackend* b, const GraphOp& op, int index, bool constant_weights)
      : Execution(b), op_(op), index_(index), constant_weights_(constant_weights) {}

  void prepacked(std::vector<Prepacked>* out) const override {
    for (size_t g = 0; g < packed_.size(); ++g)
      out->push_back({"panels_a." + std::to_string(g), PackedMeta(true, packed_[g].f16() != nullptr, packed_[g]),
                      packed_[g].panels(), packed_[g].panelBytes()});
  }

  Status onResize(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    prepared_ = false;
    if (!nn::NeedF32(op_, in).ok()) return Status::Ok();  // onExecute reports it
    if (out[0]->elementCount() == 0) return Status::Ok();
    return prepare(in, out);
  }

  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    HostBackend& be = *static_cast<HostBackend*>(backend());
    KILN_RETURN_IF_ERROR(nn::NeedF32(op_, in));
    if (out[0]->elementCount() == 0) return Status::Ok();
    if (!prepared_ || in[0]->shape() != x_shape_ || out[0]->shape() != y_shape_) KILN_RETURN_IF_ERROR(prepare(in, out));
    const Tensor* B = in.size() > 2 ? in[2] : nullptr;
    const float* x = in[0]->host<float>();
    const float* w = in[1]->host<float>();
    float* y = out[0]->host<float>();
    const int64_t rows = Mg_ * ksize_;  // the GEMM's M: (output channel, tap)
    float lo = 0, hi = 0;
    const bool clamp_act = nn::ActivationAsClamp(a_.act, a_.act_min, a_.act_max, &lo, &hi);
    GemmEpilogue ep;
    if (one_tap_) {
      // Each output is one element of col: bias and activation on the stores.
      if (B) {
        bias_rows_.resize(static_cast<size_t>(M_ * ksize_));
        for (int64_t m = 0; m < M_; ++m)
          std::fill_n(bias_rows_.begin() + m * ksize_, ksize_, B->host<float>()[m]);
      }
      ep.clamp = clamp_act && a_.act != fb::Activation::None;
      ep.lo = lo;
      ep.hi = hi;
      if (!clamp_act) {
        ep.tile_act = &TileActivation;
        ep.tile_ctx = &a_;
      }
    } else {
      be.pool().parallelFor(N_ * M_, [&](int64_t begin, int64_t end) {
        for (int64_t nm = begin; nm < end; ++nm) FillBias(y + nm * out_plane_, out_plane_, B, nm % M_);
      }, std::max<int64_t>(1, 16384 / out_plane_));
    }
    if (in_plane_ > 0) {
      float* col = tl_convt_col.get(static_cast<size_t>(rows * block_rows_ * taps_.a_w));
      if (!col) return Status(StatusCode::kOutOfMemory, "ConvTranspose: cannot allocate the col buffer");
      for (int64_t n = 0; n < N_; ++n)
        for (int64_t g = 0; g < a_.group; ++g) {
          const float* xg = x + (n * C_ + g * Cg_) * in_plane_;
          float* yg = y + (n * M_ + g * Mg_) * out_plane_;
          ep.row_bias = one_tap_ && B ? bias_rows_.data() + g * rows : nullptr;
          for (int64_t r0 = 0; r0 < taps_.a_rows; r0 += block_rows_) {
            const int64_t r1 = std::min(taps_.a_rows, r0 + block_rows_), cols = (r1 - r0) * taps_.a_w;
            const float* bg = xg + r0 * taps_.a_w;
            if (!packed_.empty())
              SgemmPacked(be.pool(), packed_[static_cast<size_t>(g)], false, cols, bg, in_plane_, 0.f, col, cols,
                          &ep);
            else
              Sgemm(be.pool(), true, false, rows, cols, Cg_, 1.f, w + g * Cg_ * rows, rows, bg, in_plane_, 0.f, col,
                    cols, &ep);
            Col2im(be, col, cols, r0, r1, yg);
          }
        }
    }
    if (!one_tap_ && a_.act != fb::Activation::None) ActivatePlanes(be.pool(), a_, y, N_ * M_, out_plane_);
    return Status::Ok();
  }

 private:
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
    a_.pads = TransposePadBegin(p, xin, yout, a_);
    N_ = X.length(0);
    C_ = X.length(1);
    M_ = Y.length(1);
    Cg_ = C_ / a_.group;
    Mg_ = M_ / a_.group;
    if (W.length(0) != C_ || W.length(1) != Mg_)
      return InvalidArgument("ConvTranspose '%s': weights %s do not fit %lld input channels and %lld outputs a group",
                             op_.name.c_str(), ShapeToString(W.shape()).c_str(), static_cast<long long>(C_),
                             static_cast<long long>(Mg_));
    in_plane_ = Prod(xin.begin(), xin.end());
    out_plane_ = Prod(yout.begin(), yout.end());
    ksize_ = Prod(a_.kernel.begin(), a_.kernel.end());
    taps_ = MakeTaps(xin, yout, a_.kernel, a_.strides, a_.pads, a_.dilations);
    one_tap_ = true;
    for (size_t i = 0; i < xin.size(); ++i)
      if (a_.strides[i] != a_.kernel[i] || a_.dilations[i] != 1 || a_.pads[i] != 0 || yout[i] != xin[i] * a_.strides[i])
        one_tap_ = false;
    const int64_t rows = Mg_ * ksize_;
    block_rows_ = std::clamp<int64_t>(kColBlockFloats / std::max<int64_t>(1, rows * taps_.a_w), 1, taps_.a_rows);
    if (constant_weights_ && packed_.empty()) {
      HostBackend& be = *static_cast<HostBackend*>(backend());
      for (int64_t g = 0; g < a_.group; ++g)
        packed_.push_back(nn::BundledOrPackA(be, index_, "panels_a." + std::to_string(g), true, rows, Cg_,
                                             W.host<float>() + g * Cg_ * rows, rows));
    }
    if (in_plane_ > 0 && !tl_convt_col.get(static_cast<size_t>(rows * block_rows_ * taps_.a_w)))
      return Status(StatusCode::kOutOfMemory, "ConvTranspose: cannot allocate the col buffer");
    prepared_ = true;
    return Status::Ok();
  }

  // The col block of input rows [r0, r1) (rows (m, tap), `cols` columns)
  // into the group's output planes yg: copied where each output takes one
  // tap (threads split output rows), else added (threads split channels,
  // whose taps may meet on one output).
  void Col2im(HostBackend& be, const float* col, int64_t cols, int64_t r0, int64_t r1, float* yg) const {
    const Taps& t = taps_;
    const int64_t nr = r1 - r0;
    if (one_tap_) {
      const int64_t s = t.stride_w;  // = k_w; every tap covers the whole row (lo 0, hi a_w, b_start kx)
      be.pool().parallelFor(Mg_ * t.k_rows * nr, [&](int64_t begin, int64_t end) {
        const float* src[16];
        std::vector<const float*> wide;
        const float** sp = s <= 16 ? src : (wide.resize(static_cast<size_t>(s)), wide.data());
        for (int64_t item = begin; item < end; ++item) {
          const int64_t m = item / (t.k_rows * nr), kr = item / nr % t.k_rows, r = item % nr;
          const int64_t q = (m * t.k_rows + kr) * t.k_w;  // col row of tap (kr, 0)
          for (int64_t kx = 0; kx < s; ++kx) sp[kx] = col + (q + kx) * cols + r * t.a_w;
          float* d = yg + m * out_plane_ + t.row_off[static_cast<size_t>(kr * t.a_rows + r0 + r)];
          if (s == 2)
            InterleaveRow<2>(sp, t.a_w, d);
          else if (s == 1)
            std::memcpy(d, sp[0], static_cast<size_t>(t.a_w) * sizeof(float));
          else
            InterleaveRow(sp, s, t.a_w, d);
        }
      }, std::max<int64_t>(1, 4096 / (t.a_w * s)));
      return;
    }
    be.pool().parallelFor(Mg_, [&](int64_t begin, int64_t end) {
      for (int64_t m = begin; m < end; ++m) {
        float* yp = yg + m * out_plane_;
        for (int64_t kr = 0; kr < t.k_rows; ++kr)
          for (int64_t kx = 0; kx < t.k_w; ++kx) {
            const float* crow = col + ((m * t.k_rows + kr) * t.k_w + kx) * cols;
            const int64_t lo = t.lo[static_cast<size_t>(kx)], len = t.hi[static_cast<size_t>(kx)] - lo;
            const int64_t bs = t.b_start[static_cast<size_t>(kx)], s = t.stride_w;
            if (len <= 0) continue;
            for (int64_t r = r0; r < r1; ++r) {
              const int64_t off = t.row_off[static_cast<size_t>(kr * t.a_rows + r)];
              if (off < 0) continue;
              const float* __restrict src = crow + (r - r0) * t.a_w + lo;
              float* __restrict d = yp + off + bs;
              if (s == 1)
                for (int64_t i = 0; i < len; ++i) d[i] += src[i];
              else
                for (int64_t i = 0; i < len; ++i) d[i * s] += src[i];
            }
          }
      }
    });
  }

  const GraphOp& op_;
  const int index_;  // the op's index in its graph (its bundle key)
  const bool constant_weights_;
  std::vector<PackedA> packed_;  // W_g^T a group; empty when the weights are not constant
  bool prepared_ = false, one_tap_ = false;
  IntVec x_shape_, y_shape_;
  ConvAttrs a_;
  int64_t N_ = 0, C_ = 0, M_ = 0, Cg_ = 0, Mg_ = 0, in_plane_ = 0, out_plane_ = 0, ksize_ = 0;
  int64_t block_rows_ = 1;  // input rows a GEMM block
  Taps taps_;
  std::vector<float> bias_rows_;  // one_tap_: the bias of each col row
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostConvTranspose(const GraphOp& op, const Graph& graph, HostBackend* b) {
  const int w = op.inputs.size() > 1 ? op.inputs[1] : -1;
  const bool constant = w >= 0 && static_cast<size_t>(w) < graph.tensors.size() &&
                        graph.tensors[static_cast<size_t>(w)].isConstant();
  return std::unique_ptr<Execution>(
      new ConvTransposeExecution(b, op, static_cast<int>(&op - graph.ops.data()), constant));
}

}  // namespace kiln
