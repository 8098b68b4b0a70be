// Host kernels: generators (ConstantOfShape, Range, EyeLike, Size, OneHot)
// and Trilu. Every element type; the values are written element by element
// through elements.h (these ops are small or run once at resize).
#include <cstring>

#include "elements.h"
#include "host_backend.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

namespace {

// Fills y with the (one-element) `value`, or zeros.
Status RunConstantOfShape(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                          HostBackend&) {
  Tensor& y = *out[0];
  const int64_t n = y.elementCount();
  const size_t es = y.elementSize();
  uint8_t* dst = y.host<uint8_t>();
  if (in.size() < 2 || !in[1]) {
    std::memset(dst, 0, y.byteSize());
    return Status::Ok();
  }
  const uint8_t* v = in[1]->host<uint8_t>();
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + static_cast<size_t>(i) * es, v, es);
  return Status::Ok();
}

Status RunRange(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  Tensor& y = *out[0];
  const fb::DataType t = y.dtype();
  if (IsFloating(t)) {
    const double start = LoadDouble(in[0]->hostData(), t, 0), delta = LoadDouble(in[2]->hostData(), t, 0);
    // Computed in the output's type, as ONNX's reference (start + i * delta
    // accumulates the same rounding for f32).
    VisitDataType(t, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point<T>::value) {
        T* dst = y.host<T>();
        for (int64_t i = 0; i < y.elementCount(); ++i) dst[i] = static_cast<T>(start) + static_cast<T>(i) * static_cast<T>(delta);
      }
      return 0;
    });
    return Status::Ok();
  }
  const int64_t start = LoadInt64(in[0]->hostData(), t, 0), delta = LoadInt64(in[2]->hostData(), t, 0);
  // start + i * delta on uint64 (wrapping, never undefined; the count was
  // bounded at resize, so real ranges never wrap).
  VisitDataType(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral<T>::value) {
      T* dst = y.host<T>();
      for (int64_t i = 0; i < y.elementCount(); ++i)
        dst[i] = static_cast<T>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(delta));
    }
    return 0;
  });
  return Status::Ok();
}

Status RunEyeLike(const GraphOp& op, const std::vector<Tensor*>&, const std::vector<Tensor*>& out, HostBackend&) {
  Tensor& y = *out[0];
  auto* p = op.params<fb::EyeLikeParams>();
  const int64_t k = p ? p->k() : 0;
  const int64_t rows = y.shape()[0], cols = y.shape()[1];
  std::memset(y.hostData(), 0, y.byteSize());
  if (k >= cols || k <= -rows) return Status::Ok();  // the diagonal misses the matrix (and r + k cannot overflow)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t c = r + k;
    if (c >= 0 && c < cols) StoreDouble(y.hostData(), y.dtype(), r * cols + c, 1.0);
  }
  return Status::Ok();
}

Status RunSize(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  out[0]->host<int64_t>()[0] = in[0]->elementCount();
  return Status::Ok();
}

// OneHot(indices, depth, values [off, on]): negative indices count from the
// end of depth; an index outside [-depth, depth) gives a row of `off`
// (ONNX).
Status RunOneHot(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& idx = *in[0];
  Tensor& y = *out[0];
  auto* p = op.params<fb::AxisParams>();
  const int rank = y.dimensions();
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : -1, rank), "OneHot");
  int64_t outer, depth, inner;
  AroundAxis(y.shape(), axis, &outer, &depth, &inner);
  const size_t es = y.elementSize();
  const uint8_t* off = in[2]->host<uint8_t>();
  const uint8_t* on = off + es;
  uint8_t* dst = y.host<uint8_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t d = 0; d < depth; ++d)
      for (int64_t i = 0; i < inner; ++i) {
        const double v = LoadDouble(idx.hostData(), idx.dtype(), o * inner + i);
        // Outside [-depth, depth) (NaN included) is a row of `off`.
        int64_t k = v >= -static_cast<double>(depth) && v < static_cast<double>(depth) ? static_cast<int64_t>(v) : depth;
        if (k < 0) k += depth;
        std::memcpy(dst + static_cast<size_t>((o * depth + d) * inner + i) * es, k == d ? on : off, es);
      }
  return Status::Ok();
}

// Trilu(x, k?): keeps the upper (j - i >= k) or lower (j - i <= k) triangle
// of each matrix of the last two dims, zeros the rest.
Status RunTrilu(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  if (x.dimensions() < 2) return InvalidArgument("Trilu: input must have rank 2 or more, is %s", ShapeToString(x.shape()).c_str());
  int64_t k = 0;
  if (in.size() > 1 && in[1]) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kv, TensorInts(*in[1]), "Trilu k");
    if (kv.size() != 1) return InvalidArgument("Trilu: k must have one element, has %zu", kv.size());
    k = kv[0];
  }
  auto* p = op.params<fb::TriluParams>();
  const bool upper = !p || p->upper();
  const int64_t rows = x.shape()[x.shape().size() - 2], cols = x.shape().back();
  const int64_t mats = rows * cols == 0 ? 0 : x.elementCount() / (rows * cols);
  const size_t es = x.elementSize();
  const uint8_t* src = x.host<uint8_t>();
  uint8_t* dst = y.host<uint8_t>();
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t off = static_cast<size_t>((m * rows + r) * cols + c) * es;
        const int64_t diag = c - r;
        const bool keep = upper ? diag >= k : diag <= k;
        if (keep) {
          if (src != dst) std::memcpy(dst + off, src + off, es);
        } else {
          std::memset(dst + off, 0, es);
        }
      }
  return Status::Ok();
}

}  // namespace

KILN_HOST_FN_FACTORY(ConstantOfShape)
KILN_HOST_FN_FACTORY(Range)
KILN_HOST_FN_FACTORY(EyeLike)
KILN_HOST_FN_FACTORY(Size)
KILN_HOST_FN_FACTORY(OneHot)
KILN_HOST_FN_FACTORY(Trilu)

}  // namespace kiln
