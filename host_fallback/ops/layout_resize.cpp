// Host kernel: Resize. Nearest (every nearest mode; any dtype, elements are
// copied), N-d linear and cubic (f32; cubic with its coefficient and
// exclude_outside) with the half_pixel, pytorch_half_pixel, align_corners,
// asymmetric and tf_half_pixel_for_nn coordinate transforms.
// tf_crop_and_resize is not supported. Per-axis index and weight tables (up
// to 4 taps an output index) are built at onResize, when the scales / sizes
// values are bound.
//
// The work goes a row (last axis) at a time. Nearest: a row is a gather of
// the source row by an index table, or, for an integer upscale that repeats
// each element f times, a broadcast; an output row whose source row is the
// previous output row's is a copy of it. Linear and cubic with only the last
// two axes moving (images): each source row is interpolated along the last
// axis once into a small per-thread cache, and an output row is a weighted
// sum of the two (cubic: four) cached rows it needs; other layouts take
// every combination of the moving axes' taps element by element.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "host_backend.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"
#include "simd_clones.h"

namespace kiln {

namespace {

// The input elements an output index reads along one axis: element offsets
// (index * stride) and weights; 1 tap for nearest, 2 for linear, 4 for cubic.
struct Tap {
  int64_t off[4];
  float w[4];
  int n;
};

// The last axis' taps as arrays (what the row loops vectorize over): tap m
// of output column k reads source column idx[m][k] with weight w[m][k];
// columns with fewer taps than n read weight 0.
struct RowTaps {
  int n = 1;
  std::vector<int32_t> idx[4];
  std::vector<float> w[4];
  int repeat = 0;  // nearest: each source element repeated this many times in order, or 0
};

template <typename T>
KILN_SIMD_CLONES_TEMPLATE void GatherRow(const T* __restrict src, const int32_t* __restrict idx, int64_t n,
                                         T* __restrict dst) {
  for (int64_t k = 0; k < n; ++k) dst[k] = src[idx[k]];
}

// dst[i * f + j] = src[i] for i < n, j < f; f = 2 spelled out so the
// compiler interleaves in registers.
template <typename T>
KILN_SIMD_CLONES_TEMPLATE void RepeatRow(const T* __restrict src, int64_t n, int f, T* __restrict dst) {
  if (f == 2) {
    for (int64_t i = 0; i < n; ++i) {
      dst[2 * i] = src[i];
      dst[2 * i + 1] = src[i];
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    for (int j = 0; j < f; ++j) dst[i * f + j] = src[i];
}

// One nearest row of elements of `es` bytes.
template <typename T>
void NearestRowT(const void* src, const RowTaps& t, int64_t src_w, int64_t n, void* dst) {
  if (t.repeat)
    RepeatRow(static_cast<const T*>(src), src_w, t.repeat, static_cast<T*>(dst));
  else
    GatherRow(static_cast<const T*>(src), t.idx[0].data(), n, static_cast<T*>(dst));
}
void NearestRow(size_t es, const uint8_t* src, const RowTaps& t, int64_t src_w, int64_t n, uint8_t* dst) {
  switch (es) {
    case 1: return NearestRowT<uint8_t>(src, t, src_w, n, dst);
    case 2: return NearestRowT<uint16_t>(src, t, src_w, n, dst);
    case 4: return NearestRowT<uint32_t>(src, t, src_w, n, dst);
    case 8: return NearestRowT<uint64_t>(src, t, src_w, n, dst);
    default:
      for (int64_t k = 0; k < n; ++k)
        std::memcpy(dst + static_cast<size_t>(k) * es, src + static_cast<size_t>(t.idx[0][static_cast<size_t>(k)]) * es,
                    es);
  }
}

// out[k] = sum over taps m of w[m][k] * src[idx[m][k]]: one source row
// interpolated along the last axis.
KILN_SIMD_CLONES
void InterpRow(const float* __restrict src, const RowTaps& t, int64_t n, float* __restrict out) {
  const int32_t* __restrict i0 = t.idx[0].data();
  const float* __restrict w0 = t.w[0].data();
  if (t.n == 1) {
    for (int64_t k = 0; k < n; ++k) out[k] = w0[k] * src[i0[k]];
    return;
  }
  const int32_t* __restrict i1 = t.idx[1].data();
  const float* __restrict w1 = t.w[1].data();
  if (t.n == 2) {
    for (int64_t k = 0; k < n; ++k) out[k] = w0[k] * src[i0[k]] + w1[k] * src[i1[k]];
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    float acc = 0.f;
    for (int m = 0; m < t.n; ++m) acc += t.w[m][static_cast<size_t>(k)] * src[t.idx[m][static_cast<size_t>(k)]];
    out[k] = acc;
  }
}

// Source rows interpolated along the last axis (InterpRow), four at a time,
// keyed by the source row's offset: consecutive output rows of a 2x
// upscale read the same two source rows, which are interpolated once.
class RowCache {
 public:
  // Source row `key` interpolated; a row is evicted only when no tap of
  // output row `th` (rows base + th.off[i]) needs it.
  const float* row(int64_t key, const Tap& th, int64_t base, const float* src, const RowTaps& last, int64_t inner) {
    if (data_.empty()) data_.resize(static_cast<size_t>(4 * inner));
    for (int c = 0; c < 4; ++c)
      if (keys_[c] == key) return data_.data() + c * inner;
    int slot = 0;
    for (int c = 0; c < 4; ++c) {
      bool needed = false;
      for (int i = 0; i < th.n; ++i) needed = needed || keys_[c] == base + th.off[i];
      if (!needed) {
        slot = c;
        break;
      }
    }
    keys_[slot] = key;
    InterpRow(src + key, last, inner, data_.data() + slot * inner);
    return data_.data() + slot * inner;
  }

 private:
  std::vector<float> data_;
  int64_t keys_[4] = {-1, -1, -1, -1};
};

// y[k] = sum over j < n of w[j] * rows[j][k].
KILN_SIMD_CLONES
void BlendRows(const float* const* rows, const float* w, int n, int64_t len, float* __restrict y) {
  const float* __restrict r0 = rows[0];
  if (n == 1) {
    for (int64_t k = 0; k < len; ++k) y[k] = w[0] * r0[k];
    return;
  }
  const float* __restrict r1 = rows[1];
  if (n == 2) {
    for (int64_t k = 0; k < len; ++k) y[k] = w[0] * r0[k] + w[1] * r1[k];
    return;
  }
  for (int64_t k = 0; k < len; ++k) {
    float acc = 0.f;
    for (int j = 0; j < n; ++j) acc += w[j] * rows[j][k];
    y[k] = acc;
  }
}

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
    // The last axis as arrays (its stride is 1: offsets are indices).
    const std::vector<Tap>& lt = taps_[rank - 1];
    const int64_t in_w = is[rank - 1], out_w = spec.out_shape[rank - 1];
    last_ = RowTaps();
    for (const Tap& t : lt) last_.n = std::max(last_.n, t.n);
    for (int m = 0; m < last_.n; ++m) {
      last_.idx[m].resize(lt.size());
      last_.w[m].resize(lt.size());
      for (size_t k = 0; k < lt.size(); ++k) {
        last_.idx[m][k] = static_cast<int32_t>(m < lt[k].n ? lt[k].off[m] : lt[k].off[0]);
        last_.w[m][k] = m < lt[k].n ? lt[k].w[m] : 0.f;
      }
    }
    if (mode_ == fb::ResizeMode::Nearest && in_w > 0 && out_w % in_w == 0 && out_w / in_w >= 2) {
      const int64_t f = out_w / in_w;
      bool repeats = true;
      for (int64_t k = 0; k < out_w && repeats; ++k) repeats = last_.idx[0][static_cast<size_t>(k)] == k / f;
      last_.repeat = repeats ? static_cast<int>(f) : 0;
    }
    separable_ = mode_ != fb::ResizeMode::Nearest && rank >= 2;
    for (size_t d = 0; d + 2 < rank; ++d) separable_ = separable_ && !active_[d];
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
    const int64_t in_w = x.shape().back();
    static_cast<HostBackend*>(backend())->pool().parallelFor(total / inner, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(rank, 0);
      int64_t rem = b;
      for (size_t d = rank - 1; d-- > 0;) {
        idx[d] = rem % os[d];
        rem /= os[d];
      }
      RowCache cache;
      int64_t prev_base = -1;  // nearest: the source row of output row r - 1 (in this range)
      std::vector<const Tap*> act;
      std::vector<int> pick;
      for (int64_t r = b; r < e; ++r) {
        uint8_t* yrow = dst + static_cast<size_t>(r * inner) * es;
        if (!weighted) {
          int64_t base = 0;
          for (size_t d = 0; d + 1 < rank; ++d) base += taps_[d][static_cast<size_t>(idx[d])].off[0];
          if (base == prev_base)
            std::memcpy(yrow, yrow - static_cast<size_t>(inner) * es, static_cast<size_t>(inner) * es);
          else
            NearestRow(es, src + static_cast<size_t>(base) * es, last_, in_w, inner, yrow);
          prev_base = base;
        } else if (separable_) {
          int64_t base = 0;
          for (size_t d = 0; d + 2 < rank; ++d) base += taps_[d][static_cast<size_t>(idx[d])].off[0];
          const Tap& th = taps_[rank - 2][static_cast<size_t>(idx[rank - 2])];
          const float* rows[4];
          for (int j = 0; j < th.n; ++j)
            rows[j] = cache.row(base + th.off[j], th, base, reinterpret_cast<const float*>(src), last_, inner);
          BlendRows(rows, th.w, th.n, inner, reinterpret_cast<float*>(yrow));
        } else {
          WeightedRow(idx, reinterpret_cast<const float*>(src), reinterpret_cast<float*>(yrow), inner, act, pick);
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
  // One output row of a layout where axes before the last two move too
  // (3-D volumes, resized channels): every combination of the outer axes'
  // taps (pick: one tap each), then the last axis' taps inline.
  void WeightedRow(const std::vector<int64_t>& idx, const float* xs, float* ys, int64_t inner,
                   std::vector<const Tap*>& act, std::vector<int>& pick) const {
    const size_t rank = taps_.size();
    int64_t base = 0;
    act.clear();
    for (size_t d = 0; d + 1 < rank; ++d) {
      const Tap& t = taps_[d][static_cast<size_t>(idx[d])];
      if (active_[d])
        act.push_back(&t);
      else
        base += t.off[0];
    }
    const std::vector<Tap>& last = taps_[rank - 1];
    const size_t na = act.size();
    for (int64_t k = 0; k < inner; ++k) ys[k] = 0.f;
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

  const GraphOp& op_;
  fb::ResizeMode mode_ = fb::ResizeMode::Nearest;
  std::vector<std::vector<Tap>> taps_;
  std::vector<bool> active_;
  RowTaps last_;            // the last axis' taps as arrays
  bool separable_ = false;  // weighted, and no axis before the last two moves
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
