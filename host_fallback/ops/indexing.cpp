// Host kernels: indexing (GatherElements, GatherND, ScatterElements,
// ScatterND), TopK and CumSum. Indices are i32 or i64, negative ones count
// from the end; one out of range is an error naming it, never a read or a
// write out of bounds.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "elements.h"
#include "host_backend.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

namespace {

// Index i of `t` (i32 or i64) normalized into [0, n), or an error.
StatusOr<int64_t> IndexAt(const GraphOp& op, const Tensor& t, int64_t i, int64_t n) {
  int64_t v = t.dtype() == fb::DataType::I32 ? t.host<int32_t>()[i] : t.host<int64_t>()[i];
  const int64_t orig = v;
  if (v < 0) v += n;
  if (v < 0 || v >= n)
    return InvalidArgument("%s: index %lld is out of range for a dim of %lld", op.typeName(),
                           static_cast<long long>(orig), static_cast<long long>(n));
  return v;
}

// Coordinates of flat index i in `shape`.
void Unflatten(int64_t i, const std::vector<int64_t>& shape, std::vector<int64_t>& coord) {
  coord.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coord[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
}

// GatherElements' and ScatterElements' walk: the element offset in x of
// index element i, at i's coordinates with the axis' one from the index.
StatusOr<int64_t> ElementOffset(const GraphOp& op, const Tensor& x, const Tensor& idx, int64_t i, int axis,
                                const std::vector<int64_t>& xs, std::vector<int64_t>& c) {
  Unflatten(i, idx.shape(), c);
  KILN_ASSIGN_OR_RETURN(c[static_cast<size_t>(axis)], IndexAt(op, idx, i, x.shape()[static_cast<size_t>(axis)]));
  int64_t off = 0;
  for (size_t d = 0; d < c.size(); ++d) {
    if (c[d] >= x.shape()[d])
      return InvalidArgument("%s: indices %s exceed data %s on dim %zu", op.typeName(), ShapeToString(idx.shape()).c_str(),
                             ShapeToString(x.shape()).c_str(), d);
    off += c[d] * xs[d];
  }
  return off;
}

Status RunGatherElements(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                         HostBackend&) {
  const Tensor& x = *in[0];
  const Tensor& idx = *in[1];
  Tensor& y = *out[0];
  auto* p = op.params<fb::AxisParams>();
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 0, x.dimensions()), "GatherElements");
  const std::vector<int64_t> xs = ContiguousStrides(x.shape());
  const size_t es = x.elementSize();
  std::vector<int64_t> c;
  for (int64_t i = 0; i < y.elementCount(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t off, ElementOffset(op, x, idx, i, axis, xs, c));
    std::memcpy(y.host<uint8_t>() + static_cast<size_t>(i) * es, x.host<uint8_t>() + static_cast<size_t>(off) * es, es);
  }
  return Status::Ok();
}

// GatherND and ScatterND share the walk: for each index tuple (after the
// batch dims), the offset of the slice it names in data.
struct NdWalk {
  int64_t batch = 1;       // product of the batch dims
  int64_t tuples = 1;      // index tuples per batch
  int64_t depth = 0;       // the indices' last dim
  int64_t slice = 1;       // elements per slice
  int64_t batch_data = 1;  // data elements per batch
  std::vector<int64_t> dims, strides;  // the indexed dims of data and their strides
};

NdWalk MakeNdWalk(const std::vector<int64_t>& data, const std::vector<int64_t>& idx, int64_t b) {
  NdWalk w;
  w.depth = idx.back();
  for (int64_t d = 0; d < b; ++d) w.batch *= data[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(b); d + 1 < idx.size(); ++d) w.tuples *= idx[d];
  for (size_t d = static_cast<size_t>(b + w.depth); d < data.size(); ++d) w.slice *= data[d];
  for (size_t d = static_cast<size_t>(b); d < data.size(); ++d) w.batch_data *= data[d];
  std::vector<int64_t> st = ContiguousStrides(data);
  for (int64_t k = 0; k < w.depth; ++k) {
    w.dims.push_back(data[static_cast<size_t>(b + k)]);
    w.strides.push_back(st[static_cast<size_t>(b + k)]);
  }
  return w;
}

// Element offset in data of tuple t of batch n (t counts all tuples).
StatusOr<int64_t> NdOffset(const GraphOp& op, const NdWalk& w, const Tensor& idx, int64_t n, int64_t t) {
  int64_t off = n * w.batch_data;
  for (int64_t k = 0; k < w.depth; ++k) {
    KILN_ASSIGN_OR_RETURN(int64_t v, IndexAt(op, idx, t * w.depth + k, w.dims[static_cast<size_t>(k)]));
    off += v * w.strides[static_cast<size_t>(k)];
  }
  return off;
}

Status RunGatherND(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  const Tensor& idx = *in[1];
  Tensor& y = *out[0];
  auto* p = op.params<fb::GatherNDParams>();
  const NdWalk w = MakeNdWalk(x.shape(), idx.shape(), p ? p->batch_dims() : 0);
  const size_t es = x.elementSize(), bytes = static_cast<size_t>(w.slice) * es;
  for (int64_t n = 0; n < w.batch; ++n)
    for (int64_t t = 0; t < w.tuples; ++t) {
      KILN_ASSIGN_OR_RETURN(int64_t off, NdOffset(op, w, idx, n, n * w.tuples + t));
      std::memcpy(y.host<uint8_t>() + static_cast<size_t>(n * w.tuples + t) * bytes,
                  x.host<uint8_t>() + static_cast<size_t>(off) * es, bytes);
    }
  return Status::Ok();
}

// dst = dst (reduction) src for one element of type T.
template <typename T>
void Combine(fb::ScatterReduction r, T* dst, const T* src) {
  switch (r) {
    case fb::ScatterReduction::None: *dst = *src; break;
    case fb::ScatterReduction::Add: *dst = WrapAdd(*dst, *src); break;
    case fb::ScatterReduction::Mul: *dst = WrapMul(*dst, *src); break;
    case fb::ScatterReduction::Max: *dst = std::max(*dst, *src); break;
    case fb::ScatterReduction::Min: *dst = std::min(*dst, *src); break;
  }
}

// Applies `reduction` of n elements at src onto dst, in data's type.
Status CombineElements(fb::DataType t, fb::ScatterReduction r, uint8_t* dst, const uint8_t* src, int64_t n) {
  if (r == fb::ScatterReduction::None) {
    std::memcpy(dst, src, static_cast<size_t>(n) * DataTypeSize(t));
    return Status::Ok();
  }
  return VisitDataType(t, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic<T>::value) {
      for (int64_t i = 0; i < n; ++i) Combine(r, reinterpret_cast<T*>(dst) + i, reinterpret_cast<const T*>(src) + i);
      return Status::Ok();
    }
    return Unsupported("host scatter reductions do not support %s", DataTypeName(t));
  });
}

Status RunScatter(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  const Tensor& idx = *in[1];
  const Tensor& upd = *in[2];
  Tensor& y = *out[0];
  if (x.hostData() != y.hostData()) std::memcpy(y.hostData(), x.hostData(), x.byteSize());
  auto* p = op.params<fb::ScatterParams>();
  const fb::ScatterReduction red = p ? p->reduction() : fb::ScatterReduction::None;
  const size_t es = x.elementSize();
  uint8_t* dst = y.host<uint8_t>();
  const uint8_t* src = upd.host<uint8_t>();
  if (op.type == fb::OpType::ScatterND) {
    const NdWalk w = MakeNdWalk(x.shape(), idx.shape(), 0);
    for (int64_t t = 0; t < w.tuples; ++t) {
      KILN_ASSIGN_OR_RETURN(int64_t off, NdOffset(op, w, idx, 0, t));
      KILN_RETURN_IF_ERROR(CombineElements(x.dtype(), red, dst + static_cast<size_t>(off) * es,
                                           src + static_cast<size_t>(t * w.slice) * es, w.slice));
    }
    return Status::Ok();
  }
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 0, x.dimensions()), "ScatterElements");
  const std::vector<int64_t> xs = ContiguousStrides(x.shape());
  std::vector<int64_t> c;
  for (int64_t i = 0; i < idx.elementCount(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t off, ElementOffset(op, x, idx, i, axis, xs, c));
    KILN_RETURN_IF_ERROR(CombineElements(x.dtype(), red, dst + static_cast<size_t>(off) * es,
                                         src + static_cast<size_t>(i) * es, 1));
  }
  return Status::Ok();
}

// TopK: the k largest (or smallest) along the axis, ties to the lower index
// (ONNX), sorted.
Status RunTopK(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  auto* p = op.params<fb::TopKParams>();
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : -1, x.dimensions()), "TopK");
  const bool largest = !p || p->largest();
  int64_t outer, n, inner;
  AroundAxis(x.shape(), axis, &outer, &n, &inner);
  const int64_t k = out[0]->shape()[static_cast<size_t>(axis)];
  if (!IsArithmetic(x.dtype())) return Unsupported("host TopK does not support %s", DataTypeName(x.dtype()));
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::vector<double> vals(static_cast<size_t>(n));
  const size_t es = x.elementSize();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) vals[static_cast<size_t>(j)] = LoadDouble(x.hostData(), x.dtype(), (o * n + j) * inner + i);
      std::iota(order.begin(), order.end(), 0);
      auto better = [&](int64_t a, int64_t b) {  // NaN is the largest (TotalCompare)
        const int c = TotalCompare(vals[static_cast<size_t>(a)], vals[static_cast<size_t>(b)]);
        if (c != 0) return largest ? c > 0 : c < 0;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), better);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t src = (o * n + order[static_cast<size_t>(j)]) * inner + i, dst = (o * k + j) * inner + i;
        std::memcpy(out[0]->host<uint8_t>() + static_cast<size_t>(dst) * es, x.host<uint8_t>() + static_cast<size_t>(src) * es, es);
        out[1]->host<int64_t>()[dst] = order[static_cast<size_t>(j)];
      }
    }
  return Status::Ok();
}

// CumSum(x, axis): running sums, exclusive and/or reversed.
Status RunCumSum(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> av, TensorInts(*in[1]), "CumSum axis");
  if (av.size() != 1) return InvalidArgument("CumSum: axis must have one element, has %zu", av.size());
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(av[0], x.dimensions()), "CumSum");
  auto* p = op.params<fb::CumSumParams>();
  const bool exclusive = p && p->exclusive(), reverse = p && p->reverse();
  int64_t outer, n, inner;
  AroundAxis(x.shape(), axis, &outer, &n, &inner);
  return VisitDataType(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic<T>::value) {
      const T* src = x.host<T>();
      T* dst = y.host<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          T acc = T(0);
          for (int64_t jj = 0; jj < n; ++jj) {
            const int64_t j = reverse ? n - 1 - jj : jj;
            const int64_t at = (o * n + j) * inner + i;
            const T v = src[at];
            if (exclusive) {
              dst[at] = acc;
              acc = WrapAdd(acc, v);
            } else {
              acc = WrapAdd(acc, v);
              dst[at] = acc;
            }
          }
        }
      return Status::Ok();
    }
    return Unsupported("host CumSum does not support %s", DataTypeName(x.dtype()));
  });
}

}  // namespace

KILN_HOST_FN_FACTORY(GatherElements)
KILN_HOST_FN_FACTORY(GatherND)
KILN_HOST_FN_FACTORY(Scatter)
KILN_HOST_FN_FACTORY(TopK)
KILN_HOST_FN_FACTORY(CumSum)

}  // namespace kiln
