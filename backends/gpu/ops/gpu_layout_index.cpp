// Layout ops that compute where each element comes from, on GPU, in
// 32-bit words (any dtype of 4 or 8 bytes; f32 where they do arithmetic):
//   * Gather (gather.comp) and GatherElements (gather_elements.comp):
//     indices i32, or i64 read as two words;
//   * Trilu (trilu.comp): k is a value input, read at resize;
//   * Pad (pad.comp): constant, reflect and edge modes, negative pads; the
//     fill value is input 2 when given (bound as is), else PadParams.value
//     in a small buffer of the tensor's dtype;
//   * Resize (resize.comp): nearest (every nearest mode), N-d linear and
//     cubic, with the coordinate transforms the host supports. The per-axis
//     tap / weight tables (up to 4 taps) are built here at resize with the
//     host's arithmetic (ResizeAxisTap, ops/op_params.h) and uploaded, so
//     the shader only looks them up. tf_crop_and_resize is Unsupported, as
//     on the host;
//   * MaxUnpool (unpool.comp): f32 values, i64 indices, in three dispatches
//     (zero, claim with atomicMax, resolve) so repeated indices give the
//     host's answer.
// Value inputs (Pad's pads and axes, Resize's scales and sizes) are host
// tensors, read at resize through the host's parameter resolution.
#include <cmath>
#include <cstring>

#include "half.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"
#include "gpu_layout.h"

namespace kiln {
namespace {

constexpr size_t kMaxRank = 6;  // KILN_MAX_RANK of common.glsl

Status RequireRank(const GraphOp& op, size_t rank) {
  if (rank > kMaxRank) return Unsupported("GPU %s takes up to %zu dims, not %zu", op.typeName(), kMaxRank, rank);
  return Status::Ok();
}

// The element-wise indexing of GatherElements and ScatterElements on the
// kernels' at most kMaxRank dims: `dims` (the indices' or updates') walked
// over the strides of the indexed tensor, with the axis's index replaced.
// Dims of length 1 are dropped and neighbours merged where their offsets
// stay linear, so a rank-7 loss of shape [N, C, d1..d5] indexes in 3.
struct IndexedDims {
  uint32_t rank = 0, axis = 0;
  uint32_t dims[kMaxRank] = {}, strides[kMaxRank] = {};
};

StatusOr<IndexedDims> CollapseIndexed(const GraphOp& op, const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& strides, int axis) {
  struct Dim {
    int64_t len, stride;
    bool axis;
  };
  std::vector<Dim> kept;  // innermost first
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    const bool is_axis = d == axis;
    const int64_t len = dims[static_cast<size_t>(d)], st = strides[static_cast<size_t>(d)];
    if (len == 1 && !is_axis) continue;
    if (!is_axis && !kept.empty() && !kept.back().axis && st == kept.back().len * kept.back().stride) {
      kept.back().len *= len;  // offsets stay linear: merge into the inner neighbour
      continue;
    }
    kept.push_back({len, st, is_axis});
  }
  if (kept.size() > kMaxRank) return Unsupported("GPU %s indexes up to %zu dims, not %zu", op.typeName(), kMaxRank, kept.size());
  IndexedDims r;
  r.rank = static_cast<uint32_t>(kept.size());
  for (size_t k = 0; k < kept.size(); ++k) {
    const size_t d = kept.size() - 1 - k;
    r.dims[d] = static_cast<uint32_t>(kept[k].len);
    r.strides[d] = static_cast<uint32_t>(kept[k].stride);
    if (kept[k].axis) r.axis = static_cast<uint32_t>(d);
  }
  return r;
}

// ---------------------------------------------------------------- Gather

class GatherExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  GatherExecution(GpuBackend* b, int axis) : GpuExecution(b), axis_(axis) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(x), gpu()->gpuCaps(), "gather", nullptr));
    const uint32_t words = units.units;
    KILN_RETURN_IF_ERROR(RequireUnits32(x, words));
    KILN_RETURN_IF_ERROR(RequireUnits32(*out[0], words));
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x.dimensions()), "Gather");
    int64_t inner = words;
    for (int d = axis + 1; d < x.dimensions(); ++d) inner *= x.length(d);
    struct {
      uint32_t n, inner, count, dim;
    } push{static_cast<uint32_t>(out[0]->elementCount() * words), static_cast<uint32_t>(inner),
           static_cast<uint32_t>(in[1]->elementCount()), static_cast<uint32_t>(x.length(axis))};
    if (push.n == 0) return Status::Ok();
    const fb::DataType idx = in[1]->dtype();
    if (idx != fb::DataType::I64 && idx != fb::DataType::I32)
      return Unsupported("GPU Gather takes i32 or i64 indices, not %s", DataTypeName(idx));
    const uint32_t idx64 = idx == fb::DataType::I64;
    return add1D(units.shader.c_str(), {{in[0]}, {in[1]}, {out[0], nullptr, true}}, push, push.n, {idx64});
  }

  int axis_;
};

// -------------------------------------------------------- GatherElements

class GatherElementsExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  GatherElementsExecution(GpuBackend* b, const GraphOp& op, int axis) : GpuExecution(b), op_(op), axis_(axis) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(x), gpu()->gpuCaps(), "gather_elements", nullptr));
    KILN_RETURN_IF_ERROR(RequireUnits32(x, units.units));
    KILN_RETURN_IF_ERROR(RequireUnits32(*out[0], units.units));
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x.dimensions()), "GatherElements");
    if (idx.dimensions() != x.dimensions()) return InvalidArgument("GatherElements: indices and data ranks differ");
    if (idx.dtype() != fb::DataType::I64 && idx.dtype() != fb::DataType::I32)
      return Unsupported("GPU GatherElements takes i32 or i64 indices, not %s", DataTypeName(idx.dtype()));
    struct {
      uint32_t n, units, rank, axis, dim, dims[kMaxRank], xstrides[kMaxRank];
    } push{};
    push.units = units.units;
    push.n = static_cast<uint32_t>(out[0]->elementCount() * units.units);
    push.dim = static_cast<uint32_t>(x.length(axis));
    KILN_ASSIGN_OR_RETURN(IndexedDims walk, CollapseIndexed(op_, idx.shape(), ContiguousStrides(x.shape()), axis));
    push.rank = walk.rank;
    push.axis = walk.axis;
    std::copy(walk.dims, walk.dims + kMaxRank, push.dims);
    std::copy(walk.strides, walk.strides + kMaxRank, push.xstrides);
    if (push.n == 0) return Status::Ok();
    return add1D(units.shader.c_str(), {{in[0]}, {in[1]}, {out[0], nullptr, true}}, push, push.n,
                 {static_cast<uint32_t>(idx.dtype() == fb::DataType::I64)});
  }

  const GraphOp& op_;
  int axis_;
};

// --------------------------------------------- ScatterElements, ScatterND

// y = data (a copy unless in place), then the updates written where their
// indices point (scatter.comp): without a reduction one invocation a unit of
// the updates; with one (f32 storage) one invocation a lane of updates that
// only it can reach, applied in order.
class ScatterExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  ScatterExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    const Tensor& upd = *in[2];
    const fb::ScatterParams* p = op_.params<fb::ScatterParams>();
    const uint32_t reduce = static_cast<uint32_t>(p ? p->reduction() : fb::ScatterReduction::None);
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(x), gpu()->gpuCaps(), "scatter", nullptr));
    if (reduce != 0 && gpu()->storageType(x) != fb::DataType::F32)
      return Unsupported("GPU %s with a reduction takes f32 (stored as f32), not %s", op_.typeName(),
                         DataTypeName(gpu()->storageType(x)));
    KILN_RETURN_IF_ERROR(RequireUnits32(x, units.units));
    KILN_RETURN_IF_ERROR(RequireUnits32(upd, units.units));
    if (idx.dtype() != fb::DataType::I64 && idx.dtype() != fb::DataType::I32)
      return Unsupported("GPU %s takes i32 or i64 indices, not %s", op_.typeName(), DataTypeName(idx.dtype()));
    struct {
      uint32_t n, units, rank, axis, depth, slice, axis_dim, count, dims[kMaxRank], ystrides[kMaxRank];
    } push{};
    push.units = units.units;
    push.n = static_cast<uint32_t>(upd.elementCount() * units.units);
    const std::vector<int64_t> st = ContiguousStrides(x.shape());
    const bool elements = op_.type == fb::OpType::ScatterElements;
    if (elements) {
      KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 0, x.dimensions()), "ScatterElements");
      if (upd.dimensions() != x.dimensions()) return InvalidArgument("ScatterElements: updates and data ranks differ");
      push.axis_dim = static_cast<uint32_t>(x.length(axis));
      KILN_ASSIGN_OR_RETURN(IndexedDims walk, CollapseIndexed(op_, upd.shape(), st, axis));
      push.rank = walk.rank;
      push.axis = walk.axis;
      std::copy(walk.dims, walk.dims + kMaxRank, push.dims);
      std::copy(walk.strides, walk.strides + kMaxRank, push.ystrides);
      push.count = walk.dims[walk.axis];  // a lane's updates, along the axis
      push.slice = 1;                     // the lane's inner extent
      for (uint32_t d = walk.axis + 1; d < walk.rank; ++d) push.slice *= walk.dims[d];
    } else {
      const int64_t depth = idx.shape().back();
      if (depth > static_cast<int64_t>(kMaxRank)) return Unsupported("GPU ScatterND indexes up to %zu dims", kMaxRank);
      push.depth = static_cast<uint32_t>(depth);
      int64_t slice = 1;
      for (size_t d = static_cast<size_t>(depth); d < x.shape().size(); ++d) slice *= x.shape()[d];
      push.slice = static_cast<uint32_t>(std::max<int64_t>(slice, 1));
      push.count = static_cast<uint32_t>(upd.elementCount() / push.slice);  // the update slices
      for (int64_t d = 0; d < depth; ++d) {
        push.dims[d] = static_cast<uint32_t>(x.length(static_cast<int>(d)));
        push.ystrides[d] = static_cast<uint32_t>(st[static_cast<size_t>(d)]);
      }
    }
    addCopy(in[0], out[0]);
    if (push.n == 0) return Status::Ok();
    if (reduce != 0) push.n = push.count == 0 ? 0 : push.n / push.count;  // the lanes
    return add1D(units.shader.c_str(), {{in[1]}, {in[2]}, {out[0], nullptr, true}}, push, push.n,
                 {elements ? 0u : 1u, static_cast<uint32_t>(idx.dtype() == fb::DataType::I64), reduce});
  }

  const GraphOp& op_;
};

// -------------------------------------------------------------- GatherND

class GatherNDExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  GatherNDExecution(GpuBackend* b, int batch_dims) : GpuExecution(b), batch_dims_(batch_dims) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(x), gpu()->gpuCaps(), "gather_nd", nullptr));
    KILN_RETURN_IF_ERROR(RequireUnits32(x, units.units));
    KILN_RETURN_IF_ERROR(RequireUnits32(*out[0], units.units));
    if (idx.dtype() != fb::DataType::I64 && idx.dtype() != fb::DataType::I32)
      return Unsupported("GPU GatherND takes i32 or i64 indices, not %s", DataTypeName(idx.dtype()));
    const int64_t b = batch_dims_, depth = idx.shape().back();
    if (depth > static_cast<int64_t>(kMaxRank)) return Unsupported("GPU GatherND: index tuples of %lld", (long long)depth);
    const std::vector<int64_t> st = ContiguousStrides(x.shape());
    struct {
      uint32_t n, units, tuples, depth, slice, batch_data, dims[kMaxRank], strides[kMaxRank];
    } push{};
    int64_t tuples = 1, slice = 1, batch_data = 1;
    for (size_t d = static_cast<size_t>(b); d + 1 < idx.shape().size(); ++d) tuples *= idx.shape()[d];
    for (size_t d = static_cast<size_t>(b + depth); d < x.shape().size(); ++d) slice *= x.shape()[d];
    for (size_t d = static_cast<size_t>(b); d < x.shape().size(); ++d) batch_data *= x.shape()[d];
    push.units = units.units;
    push.n = static_cast<uint32_t>(out[0]->elementCount() * units.units);
    push.tuples = static_cast<uint32_t>(std::max<int64_t>(tuples, 1));
    push.depth = static_cast<uint32_t>(depth);
    push.slice = static_cast<uint32_t>(std::max<int64_t>(slice, 1));
    push.batch_data = static_cast<uint32_t>(batch_data);
    for (int64_t k = 0; k < depth; ++k) {
      push.dims[k] = static_cast<uint32_t>(x.shape()[static_cast<size_t>(b + k)]);
      push.strides[k] = static_cast<uint32_t>(st[static_cast<size_t>(b + k)]);
    }
    if (push.n == 0) return Status::Ok();
    return add1D(units.shader.c_str(), {{in[0]}, {in[1]}, {out[0], nullptr, true}}, push, push.n,
                 {static_cast<uint32_t>(idx.dtype() == fb::DataType::I64)});
  }

  int batch_dims_;
};

// ------------------------------------------------------- ReverseSequence

class ReverseSequenceExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  ReverseSequenceExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const Tensor& lens = *in[1];
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(x), gpu()->gpuCaps(), "reverse_sequence", nullptr));
    KILN_RETURN_IF_ERROR(RequireUnits32(x, units.units));
    if (lens.dtype() != fb::DataType::I64 && lens.dtype() != fb::DataType::I32)
      return Unsupported("GPU ReverseSequence takes i32 or i64 lengths, not %s", DataTypeName(lens.dtype()));
    const fb::ReverseSequenceParams* p = op_.params<fb::ReverseSequenceParams>();
    KILN_ASSIGN_OR_RETURN(int bax, NormalizeAxis(p ? p->batch_axis() : 1, x.dimensions()), "ReverseSequence batch_axis");
    KILN_ASSIGN_OR_RETURN(int tax, NormalizeAxis(p ? p->time_axis() : 0, x.dimensions()), "ReverseSequence time_axis");
    if (bax == tax) return InvalidArgument("ReverseSequence: batch_axis and time_axis are both %d", bax);
    if (lens.elementCount() != x.length(bax))
      return InvalidArgument("ReverseSequence: %lld lengths for a batch of %lld", (long long)lens.elementCount(),
                             (long long)x.length(bax));
    const std::vector<int64_t> st = ContiguousStrides(x.shape());
    struct {
      uint32_t n, units, bstride, nb, tstride, nt;
    } push{static_cast<uint32_t>(x.elementCount() * units.units), units.units,
           static_cast<uint32_t>(st[static_cast<size_t>(bax)]), static_cast<uint32_t>(x.length(bax)),
           static_cast<uint32_t>(st[static_cast<size_t>(tax)]), static_cast<uint32_t>(x.length(tax))};
    if (push.n == 0) return Status::Ok();
    return add1D(units.shader.c_str(), {{in[0]}, {in[1]}, {out[0], nullptr, true}}, push, push.n,
                 {static_cast<uint32_t>(lens.dtype() == fb::DataType::I64)});
  }

  const GraphOp& op_;
};

// ---------------------------------------------------------------- OneHot

class OneHotExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  OneHotExecution(GpuBackend* b, int axis) : GpuExecution(b), axis_(axis) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& idx = *in[0];
    Tensor& y = *out[0];
    if (idx.dtype() != fb::DataType::I64 && idx.dtype() != fb::DataType::I32 && idx.dtype() != fb::DataType::F32)
      return Unsupported("GPU OneHot takes i32, i64 or f32 indices, not %s", DataTypeName(idx.dtype()));
    if (idx.dtype() == fb::DataType::F32 && gpu()->halfStorage())
      return Unsupported("GPU OneHot reads f32 indices, which fp16 storage halves");
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(*in[2]), gpu()->gpuCaps(), "one_hot", nullptr));
    KILN_RETURN_IF_ERROR(RequireUnits32(y, units.units));
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, y.dimensions()), "OneHot");
    int64_t outer, depth, inner;
    AroundAxis(y.shape(), axis, &outer, &depth, &inner);
    struct {
      uint32_t n, units, depth, inner;
    } push{static_cast<uint32_t>(y.elementCount() * units.units), units.units, static_cast<uint32_t>(depth),
           static_cast<uint32_t>(inner)};
    if (push.n == 0) return Status::Ok();
    return add1D(units.shader.c_str(), {{in[0]}, {in[2]}, {out[0], nullptr, true}}, push, push.n,
                 {static_cast<uint32_t>(idx.dtype() == fb::DataType::I64),
                  static_cast<uint32_t>(idx.dtype() == fb::DataType::F32)});
  }

  int axis_;
};

// ----------------------------------------------------------------- Trilu

class TriluExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  TriluExecution(GpuBackend* b, bool upper) : GpuExecution(b), upper_(upper) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    if (x.dimensions() < 2) return InvalidArgument("Trilu: input must have rank 2 or more");
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(x), gpu()->gpuCaps(), "trilu", nullptr));
    KILN_RETURN_IF_ERROR(RequireUnits32(x, units.units));
    int64_t k = 0;
    if (in.size() > 1 && in[1]) {  // a value input: on the host at resize
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kv, TensorInts(*in[1]), "Trilu k");
      if (kv.size() != 1) return InvalidArgument("Trilu: k must have one element, has %zu", kv.size());
      k = std::max<int64_t>(INT32_MIN, std::min<int64_t>(INT32_MAX, kv[0]));
    }
    struct {
      uint32_t n, units, rows, cols;
      int32_t k;
    } push{static_cast<uint32_t>(x.elementCount() * units.units), units.units,
           static_cast<uint32_t>(x.length(x.dimensions() - 2)), static_cast<uint32_t>(x.length(x.dimensions() - 1)),
           static_cast<int32_t>(k)};
    if (push.n == 0) return Status::Ok();
    return add1D(units.shader.c_str(), {{in[0]}, {out[0], nullptr, true}}, push, push.n, {upper_ ? 1u : 0u});
  }

  bool upper_;
};

// ------------------------------------------------------------------- Pad

// PadParams.value as `dtype` (the host's FillBytes for the word dtypes).
StatusOr<std::vector<uint8_t>> FillValue(float v, fb::DataType dtype) {
  std::vector<uint8_t> bytes(DataTypeSize(dtype));
  switch (dtype) {
    case fb::DataType::F32: std::memcpy(bytes.data(), &v, 4); break;
    case fb::DataType::F16: { uint16_t h = FloatToHalf(v); std::memcpy(bytes.data(), &h, 2); break; }
    case fb::DataType::I32: { int32_t i = static_cast<int32_t>(v); std::memcpy(bytes.data(), &i, 4); break; }
    case fb::DataType::I64: { int64_t i = static_cast<int64_t>(v); std::memcpy(bytes.data(), &i, 8); break; }
    default: return Unsupported("GPU Pad: no fill value of dtype %s", fb::EnumNameDataType(dtype));
  }
  return bytes;
}

class PadExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  PadExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}
  ~PadExecution() override { gpu()->freeBuffer(&fill_); }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const std::vector<int64_t>& xs = x.shape();
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(x), gpu()->gpuCaps(), "pad", nullptr));
    const uint32_t words = units.units;
    KILN_RETURN_IF_ERROR(RequireRank(op_, xs.size()));
    KILN_RETURN_IF_ERROR(RequireUnits32(x, words));
    KILN_RETURN_IF_ERROR(RequireUnits32(*out[0], words));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ResolvePads(op_, xs, TensorValues(in)));
    const fb::PadParams* p = op_.params<fb::PadParams>();
    GpuBinding value{in.size() > 2 ? in[2] : nullptr};
    if (!value.tensor || value.tensor->elementCount() == 0) {
      if (!fill_.handle) {
        KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, FillValue(p ? p->value() : 0.f, gpu()->storageType(x)));
        KILN_ASSIGN_OR_RETURN(fill_, gpu()->createBuffer(bytes.size(), bytes.data()));
      }
      value = {nullptr, &fill_, false};
    }
    struct {
      uint32_t n, rank;
      uint32_t out_dims[kMaxRank], in_dims[kMaxRank];
      int32_t begin[kMaxRank];
    } push{};
    push.n = static_cast<uint32_t>(out[0]->elementCount() * words);
    push.rank = static_cast<uint32_t>(xs.size());
    for (size_t d = 0; d < xs.size(); ++d) {
      push.out_dims[d] = static_cast<uint32_t>(out[0]->shape()[d]);
      push.in_dims[d] = static_cast<uint32_t>(xs[d]);
      if (pads[d] > INT32_MAX || pads[d] < INT32_MIN) return Unsupported("Pad: pad %lld is over 32 bits", (long long)pads[d]);
      push.begin[d] = static_cast<int32_t>(pads[d]);
    }
    if (push.n == 0) return Status::Ok();
    const uint32_t mode = static_cast<uint32_t>(p ? p->mode() : fb::PadMode::Constant);
    return add1D(units.shader.c_str(), {{in[0]}, value, {out[0], nullptr, true}}, push, push.n, {mode, words});
  }

  const GraphOp& op_;
  GpuBuffer fill_;
};

// ---------------------------------------------------------------- Resize

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

class ResizeExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  ResizeExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}
  ~ResizeExecution() override { gpu()->freeBuffer(&taps_); }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const fb::ResizeParams* p = op_.params<fb::ResizeParams>();
    const fb::ResizeMode mode = p ? p->mode() : fb::ResizeMode::Nearest;
    const uint32_t ntaps = mode == fb::ResizeMode::Nearest ? 1 : mode == fb::ResizeMode::Linear ? 2 : 4;
    const auto tr = p ? p->coordinate_transform() : fb::CoordinateTransform::HalfPixel;
    const std::vector<int64_t>& is = in[0]->shape();
    if (ntaps > 1 && in[0]->dtype() != fb::DataType::F32)
      return Unsupported("GPU Resize: linear and cubic modes take f32, not %s", DataTypeName(in[0]->dtype()));
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(*in[0]), gpu()->gpuCaps(), "resize", nullptr));
    const uint32_t words = units.units;
    KILN_RETURN_IF_ERROR(RequireRank(op_, is.size()));
    KILN_RETURN_IF_ERROR(RequireUnits32(*in[0], words));
    KILN_RETURN_IF_ERROR(RequireUnits32(*out[0], words));
    KILN_ASSIGN_OR_RETURN(ResizeSpec spec, ResolveResize(op_, is, TensorValues(in)));
    if (spec.out_shape != out[0]->shape())
      return Internal("Resize: resolved %s, inferred %s", ShapeToString(spec.out_shape).c_str(),
                      ShapeToString(out[0]->shape()).c_str());
    struct {
      uint32_t n, rank, nact, act, act_mask;
      uint32_t dims[kMaxRank], tab[kMaxRank];
    } push{};
    push.n = static_cast<uint32_t>(out[0]->elementCount() * words);
    push.rank = static_cast<uint32_t>(is.size());
    if (push.n == 0) return Status::Ok();
    // Per dim, per output coordinate: 4 element offsets then 4 weights (float
    // bits), the host's taps (ResizeAxisTap).
    const std::vector<int64_t> strides = ContiguousStrides(is);
    std::vector<uint32_t> taps;
    for (size_t d = 0; d < is.size(); ++d) {
      const int64_t n = is[d], len = spec.out_shape[d];
      const bool same = len == n && spec.scales[d] == 1.f;
      bool active = false;
      push.dims[d] = static_cast<uint32_t>(len);
      push.tab[d] = static_cast<uint32_t>(taps.size() / 8);
      for (int64_t o = 0; o < len; ++o) {
        const float x = same ? static_cast<float>(o) : ResizeToInput(tr, static_cast<float>(o), spec.scales[d], n, len);
        const ResizeTap t = ResizeAxisTap(p, x, o, n);
        for (int k = 0; k < 4; ++k) taps.push_back(static_cast<uint32_t>(t.index[k] * strides[d]));
        for (int k = 0; k < 4; ++k) taps.push_back(FloatBits(k < t.count ? t.weight[k] : 0.f));
        active = active || (ntaps > 1 && t.moves);
      }
      if (active) {
        push.act |= static_cast<uint32_t>(d) << (4 * push.nact++);
        push.act_mask |= 1u << d;
      }
    }
    gpu()->freeBuffer(&taps_);
    KILN_ASSIGN_OR_RETURN(taps_, gpu()->createBuffer(taps.size() * 4, taps.data()));
    return add1D(units.shader.c_str(), {{in[0]}, {nullptr, &taps_, false}, {out[0], nullptr, true}}, push, push.n,
                 {ntaps, words});
  }

  const GraphOp& op_;
  GpuBuffer taps_;
};

// ------------------------------------------------------------- MaxUnpool

class MaxUnpoolExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  MaxUnpoolExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const Tensor& y = *out[0];
    const size_t rank = x.shape().size();
    if (x.dtype() != fb::DataType::F32 || in[1]->dtype() != fb::DataType::I64)
      return Unsupported("GPU MaxUnpool takes f32 values and i64 indices");
    KILN_RETURN_IF_ERROR(RequireRank(op_, rank));
    KILN_RETURN_IF_ERROR(Require32Bit(x));
    KILN_RETURN_IF_ERROR(Require32Bit(y));
    if (in[1]->elementCount() != x.elementCount())
      return InvalidArgument("MaxUnpool: %lld indices for %lld input values", (long long)in[1]->elementCount(),
                             (long long)x.elementCount());
    struct {
      uint32_t n, total, rank;
      uint32_t def_dims[kMaxRank], out_dims[kMaxRank];
    } push{};
    push.n = static_cast<uint32_t>(x.elementCount());
    push.total = static_cast<uint32_t>(y.elementCount());
    push.rank = static_cast<uint32_t>(rank);
    // The host's remapping: indices into the default-size output, moved to
    // the same coordinates of a larger output_shape.
    bool remap = false;
    const auto* p = op_.params<fb::MaxUnpoolParams>();
    if (p && !p->indices_in_output_shape() && rank >= 3) {
      std::vector<int64_t> def = x.shape();
      const size_t n_sp = rank - 2;
      auto at = [](const flatbuffers::Vector<int32_t>* v, size_t i, int64_t d) {
        return v && i < v->size() ? static_cast<int64_t>(v->Get(static_cast<flatbuffers::uoffset_t>(i))) : d;
      };
      for (size_t i = 0; i < n_sp; ++i)
        def[2 + i] = (x.shape()[2 + i] - 1) * at(p->strides(), i, 1) - at(p->pads(), i, 0) -
                     at(p->pads(), i + n_sp, 0) + at(p->kernel_shape(), i, 1);
      remap = def != y.shape();
      int64_t def_total = 1;
      for (size_t d = 0; d < rank; ++d) {
        if (def[d] <= 0) return InvalidArgument("MaxUnpool: default output size %s", ShapeToString(def).c_str());
        def_total *= def[d];
        push.def_dims[d] = static_cast<uint32_t>(def[d]);
        push.out_dims[d] = static_cast<uint32_t>(y.shape()[d]);
      }
      if (remap && def_total > INT32_MAX)
        return Unsupported("MaxUnpool: a default output of %lld elements is over 32 bits", (long long)def_total);
    }
    if (push.total == 0) return Status::Ok();
    const std::vector<GpuBinding> bindings = {{in[0]}, {in[1]}, {out[0], nullptr, true}};
    KILN_RETURN_IF_ERROR(add1D("unpool", bindings, push, push.total, {0u, 0u}));
    KILN_RETURN_IF_ERROR(add1D("unpool", bindings, push, push.n, {1u, remap ? 1u : 0u}));
    return add1D("unpool", bindings, push, push.total, {2u, 0u});
  }

  const GraphOp& op_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuGather(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(UnitsFor(b->storageType(DeclaredInputDtype(op, graph, 0)), b->gpuCaps(), "gather", nullptr).status());
  const fb::DataType idx = DeclaredInputDtype(op, graph, 1);
  if (idx != fb::DataType::I64 && idx != fb::DataType::I32)
    return Unsupported("GPU Gather takes i32 or i64 indices, not %s", fb::EnumNameDataType(idx));
  const fb::AxisParams* p = op.params<fb::AxisParams>();
  return Make(std::make_unique<GatherExecution>(b, p ? p->axis() : 0));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuGatherElements(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(
      UnitsFor(b->storageType(DeclaredInputDtype(op, graph, 0)), b->gpuCaps(), "gather_elements", nullptr).status());
  const fb::AxisParams* p = op.params<fb::AxisParams>();
  return Make(std::make_unique<GatherElementsExecution>(b, op, p ? p->axis() : 0));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuScatter(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  const fb::ScatterParams* p = op.params<fb::ScatterParams>();
  if (p && p->reduction() != fb::ScatterReduction::None && DeclaredInputDtype(op, graph, 0) != fb::DataType::F32)
    return Unsupported("GPU %s reduces f32 only (%s on %s accumulates on the host)", op.typeName(),
                       fb::EnumNameScatterReduction(p->reduction()),
                       fb::EnumNameDataType(DeclaredInputDtype(op, graph, 0)));
  KILN_RETURN_IF_ERROR(UnitsFor(b->storageType(DeclaredInputDtype(op, graph, 0)), b->gpuCaps(), "scatter", nullptr).status());
  return Make(std::make_unique<ScatterExecution>(b, op));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuGatherND(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(UnitsFor(b->storageType(DeclaredInputDtype(op, graph, 0)), b->gpuCaps(), "gather_nd", nullptr).status());
  const fb::GatherNDParams* p = op.params<fb::GatherNDParams>();
  return Make(std::make_unique<GatherNDExecution>(b, p ? p->batch_dims() : 0));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuReverseSequence(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(
      UnitsFor(b->storageType(DeclaredInputDtype(op, graph, 0)), b->gpuCaps(), "reverse_sequence", nullptr).status());
  return Make(std::make_unique<ReverseSequenceExecution>(b, op));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuOneHot(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  const fb::DataType idx = DeclaredInputDtype(op, graph, 0);
  if (idx != fb::DataType::I64 && idx != fb::DataType::I32 && idx != fb::DataType::F32)
    return Unsupported("GPU OneHot takes i32, i64 or f32 indices, not %s", fb::EnumNameDataType(idx));
  KILN_RETURN_IF_ERROR(UnitsFor(b->storageType(DeclaredInputDtype(op, graph, 2)), b->gpuCaps(), "one_hot", nullptr).status());
  const fb::AxisParams* p = op.params<fb::AxisParams>();
  return Make(std::make_unique<OneHotExecution>(b, p ? p->axis() : -1));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuTrilu(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(UnitsFor(b->storageType(DeclaredInputDtype(op, graph, 0)), b->gpuCaps(), "trilu", nullptr).status());
  const fb::TriluParams* p = op.params<fb::TriluParams>();
  return Make(std::make_unique<TriluExecution>(b, !p || p->upper()));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuPad(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  const fb::DataType dtype = DeclaredInputDtype(op, graph, 0);
  if (dtype != fb::DataType::F32 && dtype != fb::DataType::I32 && dtype != fb::DataType::I64)
    return Unsupported("GPU Pad takes f32, i32 and i64, not %s", fb::EnumNameDataType(dtype));
  return Make(std::make_unique<PadExecution>(b, op));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuResize(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  const fb::ResizeParams* p = op.params<fb::ResizeParams>();
  if (p && p->coordinate_transform() == fb::CoordinateTransform::TfCropAndResize)
    return Unsupported("Resize: the tf_crop_and_resize coordinate transform is not supported");
  const fb::DataType dtype = DeclaredInputDtype(op, graph, 0);
  if (p && p->mode() != fb::ResizeMode::Nearest && dtype != fb::DataType::F32)
    return Unsupported("GPU Resize: linear and cubic modes take f32, not %s", fb::EnumNameDataType(dtype));
  KILN_RETURN_IF_ERROR(UnitsFor(b->storageType(dtype), b->gpuCaps(), "resize", nullptr).status());
  return Make(std::make_unique<ResizeExecution>(b, op));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuMaxUnpool(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  if (DeclaredInputDtype(op, graph, 0) != fb::DataType::F32)
    return Unsupported("GPU MaxUnpool takes f32 values, not %s", fb::EnumNameDataType(DeclaredInputDtype(op, graph, 0)));
  if (DeclaredInputDtype(op, graph, 1) != fb::DataType::I64)
    return Unsupported("GPU MaxUnpool takes i64 indices, not %s", fb::EnumNameDataType(DeclaredInputDtype(op, graph, 1)));
  if (b->halfStorage())
    return Unsupported("GPU MaxUnpool claims outputs with 32-bit atomics, so it takes no fp16 storage");
  return Make(std::make_unique<MaxUnpoolExecution>(b, op));
}

}  // namespace kiln
