// Host kernels: Slice and Pad, for any dtype. Their parameters (starts,
// steps, pads) are value inputs: they are read at onResize, when constants
// and resize-computed values are bound, and kept, so run() reads none of them.
#include <cstring>

#include "elements.h"
#include "half.h"
#include "host_backend.h"
#include "ops/layout_copy.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {
namespace {

class SliceExecution final : public Execution {
 public:
  SliceExecution(HostBackend* b, const GraphOp& op) : Execution(b), op_(op) {}

  Status onResize(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    KILN_ASSIGN_OR_RETURN(std::vector<SliceDim> dims, ResolveSlice(op_, in[0]->shape(), TensorValues(in)));
    std::vector<int64_t> in_strides = ContiguousStrides(in[0]->shape());
    shape_.clear();
    strides_.clear();
    offset_ = 0;
    for (size_t d = 0; d < dims.size(); ++d) {
      shape_.push_back(dims[d].count);
      strides_.push_back(dims[d].step * in_strides[d]);
      offset_ += dims[d].start * in_strides[d];
    }
    if (shape_ != out[0]->shape())
      return Internal("Slice: resolved shape %s, inferred %s", ShapeToString(shape_).c_str(),
                      ShapeToString(out[0]->shape()).c_str());
    return Status::Ok();
  }

  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    StridedCopy(static_cast<HostBackend*>(backend())->pool(), static_cast<const uint8_t*>(in[0]->hostData()),
                static_cast<uint8_t*>(out[0]->hostData()), in[0]->elementSize(), shape_, strides_, offset_);
    return Status::Ok();
  }

 private:
  const GraphOp& op_;
  std::vector<int64_t> shape_, strides_;
  int64_t offset_ = 0;
};

// The fill value of a constant Pad as `dtype` bytes.
void FillBytes(float v, fb::DataType dtype, uint8_t* bytes) { StoreDouble(bytes, dtype, 0, v); }

class PadExecution final : public Execution {
 public:
  PadExecution(HostBackend* b, const GraphOp& op) : Execution(b), op_(op) {}

  Status onResize(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const std::vector<int64_t>& s = in[0]->shape();
    const size_t rank = s.size();
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ResolvePads(op_, s, TensorValues(in)));
    const fb::PadParams* p = op_.params<fb::PadParams>();
    fb::PadMode mode = p ? p->mode() : fb::PadMode::Constant;
    // Per dim, the source index of each output index (-1: the fill value).
    src_.assign(rank, {});
    for (size_t d = 0; d < rank; ++d) {
      const int64_t n = s[d], len = out[0]->shape()[d];
      for (int64_t o = 0; o < len; ++o) {
        int64_t i = o - pads[d];
        if (i < 0 || i >= n) {
          if (mode == fb::PadMode::Constant) {
            i = -1;
          } else if (mode == fb::PadMode::Edge) {
            i = i < 0 ? 0 : n - 1;
          } else if (n == 1) {
            i = 0;
          } else {  // reflect, repeatedly for pads past the edge
            const int64_t period = 2 * (n - 1);
            i %= period;
            if (i < 0) i += period;
            if (i >= n) i = period - i;
          }
        }
        src_[d].push_back(i);
      }
    }
    // The run of the innermost dim that maps one to one onto the input.
    copy_begin_ = copy_end_ = 0;
    if (rank > 0) {
      const std::vector<int64_t>& last = src_.back();
      const int64_t b = pads[rank - 1];
      copy_begin_ = std::max<int64_t>(0, b);
      copy_end_ = std::min<int64_t>(static_cast<int64_t>(last.size()), b + s[rank - 1]);
    }
    return Status::Ok();
  }

  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    Tensor& y = *out[0];
    const size_t es = x.elementSize();
    uint8_t fill[8] = {0};
    if (in.size() > 2 && in[2] && in[2]->elementCount() > 0) {
      std::memcpy(fill, in[2]->hostData(), es);
    } else {
      const fb::PadParams* p = op_.params<fb::PadParams>();
      FillBytes(p ? p->value() : 0.f, x.dtype(), fill);
    }
    const int64_t total = y.elementCount();
    if (total == 0) return Status::Ok();
    const uint8_t* src = static_cast<const uint8_t*>(x.hostData());
    uint8_t* dst = static_cast<uint8_t*>(y.hostData());
    const std::vector<int64_t>& os = y.shape();
    if (os.empty()) {
      std::memcpy(dst, src, es);
      return Status::Ok();
    }
    const size_t rank = os.size();
    const std::vector<int64_t> in_strides = ContiguousStrides(x.shape());
    const int64_t inner = os.back();
    const std::vector<int64_t>& last = src_.back();
    static_cast<HostBackend*>(backend())->pool().parallelFor(total / inner, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx(rank, 0);
      int64_t rem = b;
      for (size_t d = rank - 1; d-- > 0;) {
        idx[d] = rem % os[d];
        rem /= os[d];
      }
      for (int64_t r = b; r < e; ++r) {
        uint8_t* row = dst + static_cast<size_t>(r * inner) * es;
        int64_t off = 0;
        bool outside = false;
        for (size_t d = 0; d + 1 < rank; ++d) {
          int64_t i = src_[d][static_cast<size_t>(idx[d])];
          outside |= i < 0;
          off += i * in_strides[d];
        }
        for (int64_t k = 0; k < inner; ++k) {
          if (!outside && k == copy_begin_ && copy_end_ > copy_begin_) {  // the unpadded middle, in one copy
            std::memcpy(row + static_cast<size_t>(k) * es, src + static_cast<size_t>(off + last[static_cast<size_t>(k)]) * es,
                        static_cast<size_t>(copy_end_ - copy_begin_) * es);
            k = copy_end_ - 1;
            continue;
          }
          int64_t i = last[static_cast<size_t>(k)];
          const uint8_t* from = outside || i < 0 ? fill : src + static_cast<size_t>(off + i) * es;
          std::memcpy(row + static_cast<size_t>(k) * es, from, es);
        }
        for (size_t d = rank - 1; d-- > 0;) {
          if (++idx[d] < os[d]) break;
          idx[d] = 0;
        }
      }
    }, std::max<int64_t>(1, 16384 / inner));
    return Status::Ok();
  }

 private:
  const GraphOp& op_;
  std::vector<std::vector<int64_t>> src_;
  int64_t copy_begin_ = 0, copy_end_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostSlice(const GraphOp& op, const Graph&, HostBackend* b) {
  return std::unique_ptr<Execution>(new SliceExecution(b, op));
}
StatusOr<std::unique_ptr<Execution>> CreateHostPad(const GraphOp& op, const Graph&, HostBackend* b) {
  return std::unique_ptr<Execution>(new PadExecution(b, op));
}

}  // namespace kiln
