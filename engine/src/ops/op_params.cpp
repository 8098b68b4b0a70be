// Op semantics shared by the shape functions, the host kernels and the GPU op
// layer (see op_params.h).
#include "ops/op_params.h"

#include <cmath>
#include <cstring>

#include "checked_math.h"
#include "elements.h"
#include "ops/shape_inference.h"

namespace kiln {

StatusOr<std::vector<int64_t>> TensorInts(const Tensor& t) {
  int64_t n = t.elementCount();
  std::vector<int64_t> v(static_cast<size_t>(n));
  if (n == 0) return v;
  if (!t.hostData()) return InvalidArgument("'%s': its values are not on the host", t.name().c_str());
  if (IsFloating(t.dtype()))
    return InvalidArgument("'%s' must be an integer tensor, is %s", t.name().c_str(), DataTypeName(t.dtype()));
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = LoadInt64(t.hostData(), t.dtype(), k);
  return v;
}

StatusOr<std::vector<float>> TensorFloats(const Tensor& t) {
  int64_t n = t.elementCount();
  std::vector<float> v(static_cast<size_t>(n));
  if (n == 0) return v;
  if (!t.hostData()) return InvalidArgument("'%s': its values are not on the host", t.name().c_str());
  for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = static_cast<float>(LoadDouble(t.hostData(), t.dtype(), k));
  return v;
}

ValueSource TensorValues(const std::vector<Tensor*>& in) {
  ValueSource v;
  v.has = [&in](int k) { return k >= 0 && static_cast<size_t>(k) < in.size() && in[static_cast<size_t>(k)]; };
  v.ints = [&in](int k) { return TensorInts(*in[static_cast<size_t>(k)]); };
  v.floats = [&in](int k) { return TensorFloats(*in[static_cast<size_t>(k)]); };
  return v;
}

StatusOr<int> NormalizeAxis(int64_t axis, int rank, const char* what) {
  if (axis < -rank || axis >= rank)
    return InvalidArgument("%s %lld out of range for rank %d", what, static_cast<long long>(axis), rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

namespace {


std::string ListToString(const std::vector<int64_t>& v) { return ShapeToString(v); }

// Normalizes and checks a list of distinct axes.
StatusOr<std::vector<int>> DistinctAxes(const std::vector<int64_t>& axes, int rank, const char* op) {
  std::vector<int> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int n, NormalizeAxis(a, rank), "%s", op);
    if (seen[static_cast<size_t>(n)])
      return InvalidArgument("%s: axis %lld appears twice in axes %s", op, static_cast<long long>(a),
                             ListToString(axes).c_str());
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

}  // namespace

// ---- Slice ----

StatusOr<std::vector<SliceDim>> ResolveSlice(const GraphOp& op, const std::vector<int64_t>& shape,
                                             const ValueSource& v) {
  const fb::SliceParams* p = op.params<fb::SliceParams>();
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (v.has(1)) {
    KILN_ASSIGN_OR_RETURN(starts, v.ints(1), "Slice starts (input 1)");
  } else if (p && p->starts()) {
    starts = ToI64(p->starts());
  } else {
    return InvalidArgument("Slice: no starts (neither input 1 nor SliceParams.starts)");
  }
  if (v.has(2)) {
    KILN_ASSIGN_OR_RETURN(ends, v.ints(2), "Slice ends (input 2)");
  } else if (p && p->ends()) {
    ends = ToI64(p->ends());
  } else {
    return InvalidArgument("Slice: no ends (neither input 2 nor SliceParams.ends)");
  }
  if (v.has(3)) {
    KILN_ASSIGN_OR_RETURN(axes, v.ints(3), "Slice axes (input 3)");
  } else if (!v.has(1) && p && p->axes() && p->axes()->size() > 0) {
    axes = ToI64(p->axes());
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (v.has(4)) {
    KILN_ASSIGN_OR_RETURN(steps, v.ints(4), "Slice steps (input 4)");
  } else if (!v.has(1) && p && p->steps() && p->steps()->size() > 0) {
    steps = ToI64(p->steps());
  } else {
    steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return InvalidArgument("Slice: starts %s, ends %s, axes %s and steps %s must have the same length",
                           ListToString(starts).c_str(), ListToString(ends).c_str(), ListToString(axes).c_str(),
                           ListToString(steps).c_str());
  KILN_ASSIGN_OR_RETURN(std::vector<int> ax, DistinctAxes(axes, rank, "Slice"));
  std::vector<SliceDim> dims(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) dims[static_cast<size_t>(d)] = {0, 1, shape[static_cast<size_t>(d)]};
  for (size_t i = 0; i < ax.size(); ++i) {
    const int64_t dim = shape[static_cast<size_t>(ax[i])];
    int64_t step = steps[i], start = starts[i], end = ends[i];
    if (step == 0) return InvalidArgument("Slice: step 0 on axis %d", ax[i]);
    if (start < 0) start += dim;  // no overflow: dim >= 0
    if (end < 0) end += dim;
    int64_t count;
    if (step > 0) {
      start = std::max<int64_t>(0, std::min(start, dim));
      end = std::max<int64_t>(0, std::min(end, dim));
      count = end > start ? (end - start - 1) / step + 1 : 0;  // no overflow for any step
    } else {
      start = std::max<int64_t>(-1, std::min(start, dim - 1));
      end = std::max<int64_t>(-1, std::min(end, dim - 1));
      const uint64_t back = static_cast<uint64_t>(-(step + 1)) + 1;  // -step, also for INT64_MIN
      count = start > end ? static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / back) + 1 : 0;
    }
    dims[static_cast<size_t>(ax[i])] = {count > 0 ? start : 0, step, count};
  }
  return dims;
}

// ---- Pad ----

StatusOr<std::vector<int64_t>> ResolvePads(const GraphOp& op, const std::vector<int64_t>& shape,
                                           const ValueSource& v) {
  const fb::PadParams* p = op.params<fb::PadParams>();
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> pads;
  if (v.has(1)) {
    KILN_ASSIGN_OR_RETURN(pads, v.ints(1), "Pad pads (input 1)");
  } else if (p && p->pads()) {
    pads = ToI64(p->pads());
  } else {
    return InvalidArgument("Pad: no pads (neither input 1 nor PadParams.pads)");
  }
  std::vector<int> axes;
  if (v.has(3)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> a, v.ints(3), "Pad axes (input 3)");
    KILN_ASSIGN_OR_RETURN(axes, DistinctAxes(a, rank, "Pad"));
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size())
    return InvalidArgument("Pad: pads %s has %zu values; %zu axes need %zu", ListToString(pads).c_str(), pads.size(),
                           axes.size(), 2 * axes.size());
  std::vector<int64_t> full(2 * static_cast<size_t>(rank), 0);
  const size_t n = axes.size();
  fb::PadMode mode = p ? p->mode() : fb::PadMode::Constant;
  for (size_t i = 0; i < n; ++i) {
    size_t a = static_cast<size_t>(axes[i]);
    full[a] = pads[i];
    full[a + static_cast<size_t>(rank)] = pads[i + n];
    int64_t out = SatAdd(SatAdd(shape[a], pads[i]), pads[i + n]);
    if (out < 0)
      return InvalidArgument("Pad: pads %lld and %lld on axis %zu of size %lld give a negative size",
                             static_cast<long long>(pads[i]), static_cast<long long>(pads[i + n]), a,
                             static_cast<long long>(shape[a]));
    if (mode != fb::PadMode::Constant && shape[a] == 0 && out > 0)
      return InvalidArgument("Pad: %s mode cannot pad axis %zu of size 0", fb::EnumNamePadMode(mode), a);
  }
  return full;
}

// ---- Resize ----

StatusOr<ResizeSpec> ResolveResize(const GraphOp& op, const std::vector<int64_t>& shape, const ValueSource& v) {
  const fb::ResizeParams* p = op.params<fb::ResizeParams>();
  const size_t rank = shape.size();
  ResizeSpec s;
  std::vector<int64_t> sizes;
  std::vector<float> scales;
  if (v.has(3)) {
    KILN_ASSIGN_OR_RETURN(sizes, v.ints(3), "Resize sizes (input 3)");
  }
  if (sizes.empty() && v.has(2)) {
    KILN_ASSIGN_OR_RETURN(scales, v.floats(2), "Resize scales (input 2)");
  }
  if (sizes.empty() && scales.empty() && p && p->scales())
    for (float f : *p->scales()) scales.push_back(f);
  auto from_empty = [&](const std::vector<int64_t>& out) -> Status {
    for (size_t d = 0; d < rank && d < out.size(); ++d)
      if (shape[d] == 0 && out[d] != 0)
        return InvalidArgument("Resize: axis %zu of the input is empty; it cannot be resized to %lld", d,
                               static_cast<long long>(out[d]));
    return Status::Ok();
  };
  if (!sizes.empty()) {
    if (sizes.size() != rank)
      return InvalidArgument("Resize: sizes %s has %zu values for an input of rank %zu", ListToString(sizes).c_str(),
                             sizes.size(), rank);
    for (size_t d = 0; d < rank; ++d) {
      if (sizes[d] < 0) return InvalidArgument("Resize: sizes %s has a negative size", ListToString(sizes).c_str());
      s.scales.push_back(shape[d] == 0 ? 1.f : static_cast<float>(sizes[d]) / static_cast<float>(shape[d]));
    }
    s.out_shape = sizes;
    KILN_RETURN_IF_ERROR(from_empty(s.out_shape));
    return s;
  }
  if (scales.empty())
    return InvalidArgument("Resize: needs scales (input 2 or ResizeParams.scales) or sizes (input 3)");
  if (scales.size() != rank)
    return InvalidArgument("Resize: %zu scales for an input of rank %zu", scales.size(), rank);
  for (size_t d = 0; d < rank; ++d) {
    if (!(scales[d] > 0.f)) return InvalidArgument("Resize: scale %g on axis %zu must be > 0", scales[d], d);
    s.out_shape.push_back(DimFromDouble(std::floor(static_cast<double>(shape[d]) * scales[d])));
  }
  s.scales = scales;
  KILN_RETURN_IF_ERROR(from_empty(s.out_shape));
  return s;
}

// ---- Reduce* ----

StatusOr<ReduceSpec> ResolveReduce(const GraphOp& op, const std::vector<int64_t>& shape, const ValueSource& v) {
  const fb::ReduceParams* p = op.params<fb::ReduceParams>();
  const int rank = static_cast<int>(shape.size());
  ReduceSpec s;
  s.keepdims = p ? p->keepdims() : true;
  std::vector<int64_t> axes;
  if (v.has(1)) {
    KILN_ASSIGN_OR_RETURN(axes, v.ints(1), "%s axes (input 1)", op.typeName());
  } else if (p && p->axes()) {
    axes = ToI64(p->axes());
  }
  s.reduce.assign(static_cast<size_t>(rank), axes.empty());
  if (axes.empty() && p && p->noop_with_empty_axes()) {
    s.noop = true;
    s.reduce.assign(static_cast<size_t>(rank), false);
    s.out_shape = shape;
    return s;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int> ax, DistinctAxes(axes, rank, op.typeName()));
  for (int a : ax) s.reduce[static_cast<size_t>(a)] = true;
  for (int d = 0; d < rank; ++d) {
    if (!s.reduce[static_cast<size_t>(d)])
      s.out_shape.push_back(shape[static_cast<size_t>(d)]);
    else if (s.keepdims)
      s.out_shape.push_back(1);
  }
  return s;
}

// ---- Split ----

StatusOr<std::vector<int64_t>> ResolveSplit(const GraphOp& op, const std::vector<int64_t>& shape, int num_outputs,
                                            const ValueSource& v, int* axis) {
  const fb::SplitParams* p = op.params<fb::SplitParams>();
  const int rank = static_cast<int>(shape.size());
  KILN_ASSIGN_OR_RETURN(*axis, NormalizeAxis(p ? p->axis() : 0, rank), "Split");
  const int64_t dim = shape[static_cast<size_t>(*axis)];
  std::vector<int64_t> sizes;
  if (v.has(1)) {
    KILN_ASSIGN_OR_RETURN(sizes, v.ints(1), "Split sizes (input 1)");
  }
  if (sizes.empty() && p && p->split()) sizes = ToI64(p->split());
  if (sizes.empty()) {
    int64_t n = num_outputs;
    int64_t chunk = (dim + n - 1) / n;
    int64_t last = dim - chunk * (n - 1);
    if (last < 0)
      return InvalidArgument("Split: axis %d of size %lld cannot be split into %lld parts", *axis,
                             static_cast<long long>(dim), static_cast<long long>(n));
    sizes.assign(static_cast<size_t>(n), chunk);
    sizes.back() = last;
    return sizes;
  }
  if (static_cast<int>(sizes.size()) != num_outputs)
    return InvalidArgument("Split: %zu sizes %s for %d outputs", sizes.size(), ListToString(sizes).c_str(),
                           num_outputs);
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) return InvalidArgument("Split: negative size in %s", ListToString(sizes).c_str());
    sum = SatAdd(sum, s);
  }
  if (sum != dim)
    return InvalidArgument("Split: sizes %s add up to %lld, but axis %d has %lld", ListToString(sizes).c_str(),
                           static_cast<long long>(sum), *axis, static_cast<long long>(dim));
  return sizes;
}

// ---- Resize coordinates ----

float ResizeToInput(fb::CoordinateTransform t, float x, float scale, int64_t in_len, int64_t out_len) {
  switch (t) {
    case fb::CoordinateTransform::HalfPixel: return (x + 0.5f) / scale - 0.5f;
    case fb::CoordinateTransform::PytorchHalfPixel: return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
    case fb::CoordinateTransform::AlignCorners:
      // ONNX: the resized length is in_len * scale, unrounded (equal to
      // out_len when sizes are given), so downsampling by scales differs.
      return out_len == 1 ? 0.f : x * static_cast<float>(in_len - 1) / (static_cast<float>(in_len) * scale - 1.f);
    case fb::CoordinateTransform::Asymmetric: return x / scale;
    case fb::CoordinateTransform::TfHalfPixelForNn: return (x + 0.5f) / scale;
    case fb::CoordinateTransform::TfCropAndResize: break;
  }
  return 0.f;
}

float CubicWeight(float s, float a) {
  s = std::fabs(s);
  if (s <= 1.f) return ((a + 2.f) * s - (a + 3.f)) * s * s + 1.f;
  if (s < 2.f) return ((a * s - 5.f * a) * s + 8.f * a) * s - 4.f * a;
  return 0.f;
}

ResizeTap ResizeAxisTap(const fb::ResizeParams* p, float x, int64_t o, int64_t n) {
  ResizeTap t;
  const fb::ResizeMode mode = p ? p->mode() : fb::ResizeMode::Nearest;
  if (mode == fb::ResizeMode::Nearest) {
    t.index[0] = std::max<int64_t>(0, std::min<int64_t>(ResizeNearest(p ? p->nearest_mode() : fb::NearestMode::RoundPreferFloor, x), n - 1));
  } else if (mode == fb::ResizeMode::Linear) {
    x = std::max(0.f, std::min(x, static_cast<float>(n - 1)));
    const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(x), n - 1), i1 = std::min<int64_t>(i0 + 1, n - 1);
    const float w1 = i1 == i0 ? 0.f : x - static_cast<float>(i0);
    t.count = w1 == 0.f ? 1 : 2;
    t.index[0] = i0;
    t.index[1] = i1;
    t.weight[0] = 1.f - w1;
    t.weight[1] = w1;
  } else {  // cubic: taps floor(x) - 1 .. floor(x) + 2, clamped to the edge
    const float a = p->cubic_coeff_a();
    const bool exclude = p->exclude_outside();
    // Past 2 pixels out, every tap is the edge (or excluded): the same
    // result with x clamped there, and no huge value cast to an index.
    x = std::min(std::max(x, -3.f), static_cast<float>(n) + 2.f);
    const float fl = std::floor(x);
    float sum = 0.f;
    t.count = 4;
    for (int k = 0; k < 4; ++k) {
      const int64_t i = static_cast<int64_t>(fl) - 1 + k;
      float w = CubicWeight(x - static_cast<float>(i), a);
      if (exclude && (i < 0 || i >= n)) w = 0.f;
      t.index[k] = std::max<int64_t>(0, std::min<int64_t>(i, n - 1));
      t.weight[k] = w;
      sum += w;
    }
    if (exclude && sum != 0.f)
      for (float& w : t.weight) w /= sum;
  }
  bool identity = false;
  for (int k = 0; k < t.count; ++k) {
    if (t.weight[k] != 0.f && (t.index[k] != o || t.weight[k] != 1.f)) t.moves = true;
    identity = identity || (t.index[k] == o && t.weight[k] == 1.f);
  }
  // A tap that does not move is o itself, first: kernels read only the
  // first tap of an axis that does not move (a cubic tap at an integer
  // position is o - 1, o, o + 1, o + 2 with weights 0, 1, 0, 0).
  if (!t.moves && identity) {
    t = ResizeTap();
    t.index[0] = o;
  }
  return t;
}

int64_t ResizeNearest(fb::NearestMode m, float x) {
  float f = std::floor(x);
  switch (m) {
    case fb::NearestMode::RoundPreferFloor: return static_cast<int64_t>(x == f + 0.5f ? f : std::round(x));
    case fb::NearestMode::RoundPreferCeil: return static_cast<int64_t>(x == f + 0.5f ? f + 1.f : std::round(x));
    case fb::NearestMode::Floor: return static_cast<int64_t>(f);
    case fb::NearestMode::Ceil: return static_cast<int64_t>(std::ceil(x));
  }
  return 0;
}

// ---- strides ----

Status CheckHostWork(const char* op, double work) {
  if (!(work <= kMaxHostOpWork))
    return InvalidArgument("%s: %.3g multiply-adds, over the host's bound of %.3g for one op", op, work, kMaxHostOpWork);
  return Status::Ok();
}

void AroundAxis(const std::vector<int64_t>& shape, int axis, int64_t* outer, int64_t* n, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int d = 0; d < axis; ++d) *outer *= shape[static_cast<size_t>(d)];
  *n = shape[static_cast<size_t>(axis)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) *inner *= shape[d];
}

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

namespace nn {

std::vector<int64_t> WindowPads(fb::AutoPad auto_pad, const std::vector<int64_t>& pads,
                                const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                                const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                const std::vector<int64_t>& dilations) {
  const size_t n = in.size();
  std::vector<int64_t> result(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (auto_pad == fb::AutoPad::SameUpper || auto_pad == fb::AutoPad::SameLower) {
      int64_t ek = (kernel[i] - 1) * dilations[i] + 1;
      int64_t total = (out[i] - 1) * strides[i] + ek - in[i];
      if (total < 0) total = 0;
      result[i] = auto_pad == fb::AutoPad::SameUpper ? total / 2 : total - total / 2;
      result[i + n] = total - result[i];
    } else if (auto_pad == fb::AutoPad::NotSet && pads.size() == 2 * n) {
      result[i] = pads[i];
      result[i + n] = pads[i + n];
    }
  }
  return result;
}

std::vector<int64_t> IntsOr(const flatbuffers::Vector<int32_t>* v, size_t n, int64_t dflt) {
  if (!v || v->size() == 0) return std::vector<int64_t>(n, dflt);
  return std::vector<int64_t>(v->begin(), v->end());
}

}  // namespace nn

}  // namespace kiln
