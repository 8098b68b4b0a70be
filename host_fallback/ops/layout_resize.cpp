// Host kernel: Resize. Nearest (every nearest mode; any dtype, elements are
// copied), N-d linear and cubic (f32; cubic with its coefficient and
// exclude_outside) with the half_pixel, pytorch_half_pixel, align_corners,
// asymmetric and tf_half_pixel_for_nn coordinate transforms.
// tf_crop_and_resize is not supported. Per-axis index and weight tables (up
// to 4 taps an output index) are built at onResize, when the scales / sizes
// values are bound.
#include <cmath>
#include <cstring>

#include "host_backend.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

namespace {

// The input elements an output index reads along one axis: element offsets
// (index * stride) and weights; 1 tap for nearest, 2 for linear, 4 for cubic.
struct Tap {
  int64_t off[4];
  float w[4];
  int n;
};

class ResizeExecution final : public Execution {
 public:
  ResizeExecution(HostBackend* b, const GraphOp& op) : Execution(b), op_(op) {}

  Status onResize(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const fb::ResizeParams* p = op_.params<fb::ResizeParams>();
    mode_ = p ? p->mode() : fb::ResizeMode::Nearest;
    auto tr = p ? p->coordinate_transform() : fb::CoordinateTransform::HalfPixel;
    if (mode_ != fb::ResizeMode::Nearest && in[0]->dtype() != fb::DataType::F32)
      return Unsupported("host Resize: linear and cubic modes support f32, not %s", DataTypeName(in[0]->dtype()));
    const std::vector<int64_t>& is = in[0]->shape();
    if (out[0]->elementCount() == 0) return Status::Ok();  // nothing to compute: no tap tables either
    KILN_ASSIGN_OR_RETURN(ResizeSpec spec, ResolveResize(op_, is, TensorValues(in)));
    if (spec.out_shape != out[0]->shape())
      return Internal("Resize: resolved shape %s, inferred %s", ShapeToString(spec.out_shape).c_str(),
                      ShapeToString(out[0]->shape()).c_str());
    const std::vector<int64_t> strides = ContiguousStrides(is);
    const size_t rank = is.size();
    taps_.assign(rank, {});
    active_.assign(rank, false);
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = is[d], len = spec.out_shape[d];
      // An axis that is not resized maps to itself (tf_half_pixel_for_nn
      // would otherwise shift it by half a pixel).
      const bool same = len == n && spec.scales[d] == 1.f;
      for (int64_t o = 0; o < len; ++o) {
        float x = same ? static_cast<float>(o) : ResizeToInput(tr, static_cast<float>(o), spec.scales[d], n, len);
        const ResizeTap r = ResizeAxisTap(p, x, o, n);
        Tap t{};
        t.n = r.count;
        for (int k = 0; k < 4; ++k) {
          t.off[k] = r.index[k] * strides[d];
          t.w[k] = r.weight[k];
        }
        active_[d] = active_[d] || r.moves;
        taps_[d].push_back(t);
      }
    }
    return Status::Ok();
  }

  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    Tensor& y = *out[0];
    const std::vector<int64_t>& os = y.shape();
    const int64_t total = y.elementCount();
    if (total == 0) return Status::Ok();
    const size_t rank = os.size();
    if (rank == 0) {
      std::memcpy(y.hostData(), x.hostData(), x.elementSize());
      return Status::Ok();
    }
    const int64_t inner = os.back();
    const bool weighted = mode_ != fb::ResizeMode::Nearest;
    const size_t es = x.elementSize();
    const uint8_t* src = static_cast<const uint8_t*>(x.hostData());
    uint8_t* dst = static_cast<uint8_t*>(y.hostData());
    static_cast<HostBackend*>(backend())->pool().parallelFor(total / inner, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(rank, 0);
      std::vector<const Tap*> act;
      std::vector<int> pick;
      int64_t rem = b;
      for (size_t d = rank - 1; d-- > 0;) {
        idx[d] = rem % os[d];
        rem /= os[d];
      }
      for (int64_t r = b; r < e; ++r) {
        int64_t base = 0;
        act.clear();
        for (size_t d = 0; d + 1 < rank; ++d) {
          const Tap& t = taps_[d][static_cast<size_t>(idx[d])];
          if (weighted && active_[d])
            act.push_back(&t);
          else
            base += t.off[0];
        }
        const std::vector<Tap>& last = taps_[rank - 1];
        if (!weighted) {
          for (int64_t k = 0; k < inner; ++k)
            std::memcpy(dst + static_cast<size_t>(r * inner + k) * es,
                        src + static_cast<size_t>(base + last[static_cast<size_t>(k)].off[0]) * es, es);
        } else {
          const float* xs = reinterpret_cast<const float*>(src);
          float* ys = reinterpret_cast<float*>(dst) + r * inner;
          const size_t na = act.size();
          for (int64_t k = 0; k < inner; ++k) ys[k] = 0.f;
          // Every combination of the outer axes' taps (pick: one tap each),
          // then the last axis' taps inline.
          pick.assign(na, 0);
          while (true) {
            int64_t off = base;
            float w = 1.f;
            for (size_t j = 0; j < na; ++j) {
              off += act[j]->off[pick[j]];
              w *= act[j]->w[pick[j]];
            }
            if (w != 0.f)
              for (int64_t k = 0; k < inner; ++k) {
                const Tap& lt = last[static_cast<size_t>(k)];
                float acc = 0.f;
                for (int m = 0; m < lt.n; ++m) acc += lt.w[m] * xs[off + lt.off[m]];
                ys[k] += w * acc;
              }
            size_t j = 0;
            for (; j < na; ++j) {
              if (++pick[j] < act[j]->n) break;
              pick[j] = 0;
            }
            if (j == na) break;
          }
        }
        for (size_t d = rank - 1; d-- > 0;) {
          if (++idx[d] < os[d]) break;
          idx[d] = 0;
        }
      }
    }, std::max<int64_t>(1, 4096 / inner));
    return Status::Ok();
  }

 private:
  const GraphOp& op_;
  fb::ResizeMode mode_ = fb::ResizeMode::Nearest;
  std::vector<std::vector<Tap>> taps_;
  std::vector<bool> active_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostResize(const GraphOp& op, const Graph& g, HostBackend* b) {
  const fb::ResizeParams* p = op.params<fb::ResizeParams>();
  if (p && p->coordinate_transform() == fb::CoordinateTransform::TfCropAndResize)
    return Unsupported("host Resize: the tf_crop_and_resize coordinate transform is not supported");
  // An intermediate's dtype is known only after shape inference: onResize checks it.
  const GraphTensor* x = op.inputs.empty() || op.inputs[0] < 0 ? nullptr : &g.tensors[static_cast<size_t>(op.inputs[0])];
  if (p && p->mode() != fb::ResizeMode::Nearest && x && x->producer < 0 && x->dtype != fb::DataType::F32)
    return Unsupported("host Resize: linear and cubic modes support f32, not %s", DataTypeName(x->dtype));
  return std::unique_ptr<Execution>(new ResizeExecution(b, op));
}

}  // namespace kiln
