// Shape functions: layout ops (Reshape, Flatten, Squeeze, Unsqueeze,
// Transpose, Concat, Split, Slice, Gather, Tile, Pad, Resize, DepthToSpace,
// SpaceToDepth, Expand, Shape, Constant). Params and value inputs that the
// host kernels read too are resolved in ops/op_params.cpp.
#include <algorithm>

#include "checked_math.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

// A ValueSource over a shape function's inputs (empty tensors give no values).
ValueSource ShapeValues(const ShapeContext& c) {
  ValueSource v;
  v.has = [&c](int k) { return c.hasInput(k); };
  v.ints = [&c](int k) -> StatusOr<std::vector<int64_t>> {
    if (c.input(k).elementCount() == 0) return std::vector<int64_t>{};
    return c.inInts(k);
  };
  v.floats = [&c](int k) -> StatusOr<std::vector<float>> {
    if (c.input(k).elementCount() == 0) return std::vector<float>{};
    return c.inFloats(k);
  };
  return v;
}

namespace {

StatusOr<std::vector<int64_t>> Ints(const ShapeContext& c, int k) {
  if (c.input(k).elementCount() == 0) return std::vector<int64_t>{};
  return c.inInts(k);
}


}  // namespace

Status InferShapeReshape(ShapeContext& c) {
  const fb::ReshapeParams* p = c.params<fb::ReshapeParams>();
  const bool allowzero = p && p->allowzero();
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> target, Ints(c, 1), "Reshape shape (input 1)");
  const std::vector<int64_t>& in = c.inShape(0);
  const int64_t total = ShapeElementCount(in);
  std::vector<int64_t> out;
  int infer = -1;
  bool has_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == -1) {
      if (infer >= 0) return InvalidArgument("Reshape: more than one -1 in shape %s", ShapeToString(target).c_str());
      infer = static_cast<int>(i);
      out.push_back(1);
    } else if (t == 0 && !allowzero) {
      if (i >= in.size())
        return InvalidArgument("Reshape: shape %s copies dim %zu (0) but the input %s has rank %zu",
                               ShapeToString(target).c_str(), i, ShapeToString(in).c_str(), in.size());
      out.push_back(in[i]);
    } else if (t < 0) {
      return InvalidArgument("Reshape: invalid dim %lld in shape %s", static_cast<long long>(t),
                             ShapeToString(target).c_str());
    } else {
      has_zero |= t == 0;
      out.push_back(t);
    }
  }
  if (infer >= 0 && has_zero)
    return InvalidArgument("Reshape: shape %s has both -1 and 0 with allowzero", ShapeToString(target).c_str());
  int64_t known = ShapeElementCount(out);
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      return InvalidArgument("Reshape: cannot reshape %lld elements (input %s) into %s", static_cast<long long>(total),
                             ShapeToString(in).c_str(), ShapeToString(target).c_str());
    out[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    return InvalidArgument("Reshape: cannot reshape %lld elements (input %s) into %s", static_cast<long long>(total),
                           ShapeToString(in).c_str(), ShapeToString(target).c_str());
  }
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeFlatten(ShapeContext& c) {
  const fb::AxisParams* p = c.params<fb::AxisParams>();
  const int rank = c.inRank(0);
  int64_t axis = p ? p->axis() : 1;
  if (axis < -rank || axis > rank)
    return InvalidArgument("Flatten: axis %lld out of range for rank %d", static_cast<long long>(axis), rank);
  if (axis < 0) axis += rank;
  const auto& in = c.inShape(0);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < rank; ++d) (d < axis ? outer : inner) *= in[static_cast<size_t>(d)];
  c.setOutput(0, {outer, inner}, c.inType(0));
  return Status::Ok();
}

static StatusOr<std::vector<int64_t>> SqueezeAxes(const ShapeContext& c, const char* op) {
  if (c.hasInput(1)) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> a, Ints(c, 1), "%s axes (input 1)", op);
    return a;
  }
  const fb::AxesParams* p = c.params<fb::AxesParams>();
  return p ? ToI64(p->axes()) : std::vector<int64_t>{};
}

Status InferShapeSqueeze(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, SqueezeAxes(c, "Squeeze"));
  const auto& in = c.inShape(0);
  const int rank = c.inRank(0);
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) drop[static_cast<size_t>(d)] = in[static_cast<size_t>(d)] == 1;
  } else {
    for (int64_t a : axes) {
      KILN_ASSIGN_OR_RETURN(int n, NormalizeAxis(a, rank), "Squeeze");
      if (in[static_cast<size_t>(n)] != 1)
        return InvalidArgument("Squeeze: axis %lld of input %s has size %lld, not 1", static_cast<long long>(a),
                               ShapeToString(in).c_str(), static_cast<long long>(in[static_cast<size_t>(n)]));
      drop[static_cast<size_t>(n)] = true;
    }
  }
  std::vector<int64_t> out;
  for (int d = 0; d < rank; ++d)
    if (!drop[static_cast<size_t>(d)]) out.push_back(in[static_cast<size_t>(d)]);
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeUnsqueeze(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, SqueezeAxes(c, "Unsqueeze"));
  if (axes.empty()) return InvalidArgument("Unsqueeze: no axes (neither input 1 nor AxesParams.axes)");
  const auto& in = c.inShape(0);
  const int out_rank = c.inRank(0) + static_cast<int>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int n, NormalizeAxis(a, out_rank), "Unsqueeze");
    if (inserted[static_cast<size_t>(n)])
      return InvalidArgument("Unsqueeze: axis %lld appears twice in axes %s", static_cast<long long>(a),
                             ShapeToString(axes).c_str());
    inserted[static_cast<size_t>(n)] = true;
  }
  std::vector<int64_t> out;
  size_t k = 0;
  for (int d = 0; d < out_rank; ++d) out.push_back(inserted[static_cast<size_t>(d)] ? 1 : in[k++]);
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeTranspose(ShapeContext& c) {
  const fb::TransposeParams* p = c.params<fb::TransposeParams>();
  const int rank = c.inRank(0);
  std::vector<int64_t> perm = p ? ToI64(p->perm()) : std::vector<int64_t>{};
  if (perm.empty())
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  if (static_cast<int>(perm.size()) != rank)
    return InvalidArgument("Transpose: perm %s has %zu entries for an input of rank %d", ShapeToString(perm).c_str(),
                           perm.size(), rank);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  std::vector<int64_t> out;
  for (int64_t a : perm) {
    if (a < 0 || a >= rank || seen[static_cast<size_t>(a)])
      return InvalidArgument("Transpose: perm %s is not a permutation of 0..%d", ShapeToString(perm).c_str(), rank - 1);
    seen[static_cast<size_t>(a)] = true;
    out.push_back(c.inShape(0)[static_cast<size_t>(a)]);
  }
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeConcat(ShapeContext& c) {
  const fb::AxisParams* p = c.params<fb::AxisParams>();
  for (int i = 0; i < c.numInputs(); ++i)
    if (!c.hasInput(i)) return InvalidArgument("Concat: input %d is missing", i);
  const int rank = c.inRank(0);
  if (rank == 0) return InvalidArgument("Concat: input 0 is a scalar");
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 0, rank), "Concat");
  std::vector<int64_t> out = c.inShape(0);
  for (int i = 1; i < c.numInputs(); ++i) {
    if (c.inType(i) != c.inType(0))
      return InvalidArgument("Concat: input %d is %s but input 0 is %s", i, DataTypeName(c.inType(i)),
                             DataTypeName(c.inType(0)));
    const auto& s = c.inShape(i);
    bool ok = static_cast<int>(s.size()) == rank;
    for (int d = 0; ok && d < rank; ++d)
      ok = d == axis || s[static_cast<size_t>(d)] == out[static_cast<size_t>(d)];
    if (!ok)
      return InvalidArgument("Concat: input %d has shape %s but input 0 has %s off axis %d", i,
                             ShapeToString(s).c_str(), ShapeToString(c.inShape(0)).c_str(), axis);
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeSplit(ShapeContext& c) {
  if (c.inRank(0) == 0) return InvalidArgument("Split: input 0 is a scalar");
  int axis = 0;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ResolveSplit(c.op(), c.inShape(0), c.numOutputs(), ShapeValues(c), &axis));
  for (int i = 0; i < c.numOutputs(); ++i) {
    std::vector<int64_t> s = c.inShape(0);
    s[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(i)];
    c.setOutput(i, std::move(s), c.inType(0));
  }
  return Status::Ok();
}

Status InferShapeSlice(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<SliceDim> dims, ResolveSlice(c.op(), c.inShape(0), ShapeValues(c)));
  std::vector<int64_t> out;
  for (const SliceDim& d : dims) out.push_back(d.count);
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeGather(ShapeContext& c) {
  const fb::AxisParams* p = c.params<fb::AxisParams>();
  const int rank = c.inRank(0);
  if (c.inType(1) != fb::DataType::I64 && c.inType(1) != fb::DataType::I32)
    return InvalidArgument("Gather: indices must be i32 or i64, are %s", DataTypeName(c.inType(1)));
  if (rank == 0) return InvalidArgument("Gather: data is a scalar");
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 0, rank), "Gather");
  const auto& data = c.inShape(0);
  std::vector<int64_t> out(data.begin(), data.begin() + axis);
  for (int64_t d : c.inShape(1)) out.push_back(d);
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeTile(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> reps, Ints(c, 1), "Tile repeats (input 1)");
  const auto& in = c.inShape(0);
  if (reps.size() != in.size())
    return InvalidArgument("Tile: repeats %s has %zu values for an input of rank %zu", ShapeToString(reps).c_str(),
                           reps.size(), in.size());
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reps[d] < 0) return InvalidArgument("Tile: negative repeat in %s", ShapeToString(reps).c_str());
    out.push_back(SatMul(in[d], reps[d]));
  }
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapePad(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ResolvePads(c.op(), c.inShape(0), ShapeValues(c)));
  const auto& in = c.inShape(0);
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d) out.push_back(SatAdd(SatAdd(in[d], pads[d]), pads[d + in.size()]));
  if (c.hasInput(2) && c.inType(2) != c.inType(0))
    return InvalidArgument("Pad: constant value (input 2) is %s but the data is %s", DataTypeName(c.inType(2)),
                           DataTypeName(c.inType(0)));
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeResize(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(ResizeSpec s, ResolveResize(c.op(), c.inShape(0), ShapeValues(c)));
  c.setOutput(0, std::move(s.out_shape), c.inType(0));
  return Status::Ok();
}

static Status SpaceDepth(ShapeContext& c, bool to_space) {
  const char* name = to_space ? "DepthToSpace" : "SpaceToDepth";
  const fb::SpaceDepthParams* p = c.params<fb::SpaceDepthParams>();
  const int64_t b = p ? p->blocksize() : 0;
  if (b <= 0) return InvalidArgument("%s: blocksize %lld must be > 0", name, static_cast<long long>(b));
  if (c.inRank(0) != 4)
    return InvalidArgument("%s: input must be 4-D (NCHW), is %s", name, ShapeToString(c.inShape(0)).c_str());
  const auto& s = c.inShape(0);
  if (to_space) {
    if (s[1] % (b * b) != 0)
      return InvalidArgument("DepthToSpace: %lld channels are not a multiple of blocksize^2 = %lld",
                             static_cast<long long>(s[1]), static_cast<long long>(b * b));
    c.setOutput(0, {s[0], s[1] / (b * b), SatMul(s[2], b), SatMul(s[3], b)}, c.inType(0));
  } else {
    if (s[2] % b != 0 || s[3] % b != 0)
      return InvalidArgument("SpaceToDepth: spatial size %lldx%lld is not a multiple of blocksize %lld",
                             static_cast<long long>(s[2]), static_cast<long long>(s[3]), static_cast<long long>(b));
    c.setOutput(0, {s[0], SatMul(SatMul(s[1], b), b), s[2] / b, s[3] / b}, c.inType(0));
  }
  return Status::Ok();
}

Status InferShapeDepthToSpace(ShapeContext& c) { return SpaceDepth(c, true); }
Status InferShapeSpaceToDepth(ShapeContext& c) { return SpaceDepth(c, false); }

Status InferShapeExpand(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, Ints(c, 1), "Expand shape (input 1)");
  for (int64_t d : shape)
    if (d < 0) return InvalidArgument("Expand: negative dim in shape %s", ShapeToString(shape).c_str());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out, BroadcastShapes(c.inShape(0), shape), "Expand");
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeShape(ShapeContext& c) {
  const fb::ShapeParams* p = c.params<fb::ShapeParams>();
  const int64_t rank = c.inRank(0);
  int64_t start = p ? p->start() : 0, end = p ? p->end() : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::max<int64_t>(0, std::min(start, rank));
  end = std::max<int64_t>(0, std::min(end, rank));
  c.setOutput(0, {std::max<int64_t>(0, end - start)}, fb::DataType::I64);
  return Status::Ok();
}

// The session binds a Constant's output to the model's data and sets its
// shape before shape inference; there is nothing to infer.
Status InferShapeConstant(ShapeContext&) { return Status::Ok(); }

}  // namespace kiln
