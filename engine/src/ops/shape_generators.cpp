// Shape functions: generators (ConstantOfShape, Range, EyeLike, Size, OneHot)
// and ops whose output type is decided by something other than input 0
// (IsNaN/IsInf, CastLike).
#include <cmath>

#include "checked_math.h"
#include "elements.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

Status InferShapeToBool(ShapeContext& c) {
  if (!IsFloating(c.inType(0)))
    return InvalidArgument("%s needs a floating-point input, has %s", c.op().typeName(), DataTypeName(c.inType(0)));
  c.setOutput(0, c.inShape(0), fb::DataType::BOOL);
  return Status::Ok();
}

Status InferShapeCastLike(ShapeContext& c) {
  c.setOutput(0, c.inShape(0), c.inType(1));
  return Status::Ok();
}

Status InferShapeConstantOfShape(ShapeContext& c) {
  if (c.inRank(0) != 1) return InvalidArgument("ConstantOfShape: the shape input must be 1-D, is %s", ShapeToString(c.inShape(0)).c_str());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, c.inInts(0), "ConstantOfShape");
  for (int64_t d : shape)
    if (d < 0) return InvalidArgument("ConstantOfShape: negative dim in shape %s", ShapeToString(shape).c_str());
  fb::DataType t = fb::DataType::F32;
  if (c.hasInput(1)) {
    if (c.input(1).elementCount() != 1)
      return InvalidArgument("ConstantOfShape: value must have one element, has %lld",
                             static_cast<long long>(c.input(1).elementCount()));
    t = c.inType(1);
  }
  c.setOutput(0, std::move(shape), t);
  return Status::Ok();
}

// The element count of Range(start, limit, delta): max(ceil((limit - start) /
// delta), 0), computed in double (exact for counts up to 2^53; larger ones
// are refused by the session's size limit as kDimOverflow).
StatusOr<int64_t> RangeCount(double start, double limit, double delta) {
  if (delta == 0 || delta != delta) return InvalidArgument("Range: delta is %g", delta);
  if (start != start || limit != limit) return InvalidArgument("Range: start or limit is NaN");
  double n = std::ceil((limit - start) / delta);
  if (!(n > 0)) return int64_t{0};
  if (n >= 9.0e15) return kDimOverflow;
  return static_cast<int64_t>(n);
}

Status InferShapeRange(ShapeContext& c) {
  double v[3];
  for (int k = 0; k < 3; ++k) {
    const Tensor& t = c.input(k);
    if (t.elementCount() != 1)
      return InvalidArgument("Range: input %d must be a scalar, has shape %s", k, ShapeToString(t.shape()).c_str());
    if (!t.hostData()) return InvalidArgument("Range: input %d '%s': its value is not known at resize", k, t.name().c_str());
    if (c.inType(k) != c.inType(0))
      return InvalidArgument("Range: input %d is %s but input 0 is %s", k, DataTypeName(c.inType(k)), DataTypeName(c.inType(0)));
    v[k] = LoadDouble(t.hostData(), t.dtype(), 0);
  }
  KILN_ASSIGN_OR_RETURN(int64_t n, RangeCount(v[0], v[1], v[2]));
  c.setOutput(0, {n}, c.inType(0));
  return Status::Ok();
}

Status InferShapeEyeLike(ShapeContext& c) {
  if (c.inRank(0) != 2) return InvalidArgument("EyeLike: input must be 2-D, is %s", ShapeToString(c.inShape(0)).c_str());
  const fb::EyeLikeParams* p = c.params<fb::EyeLikeParams>();
  c.setOutput(0, c.inShape(0), p && p->has_dtype() ? p->dtype() : c.inType(0));
  return Status::Ok();
}

Status InferShapeSize(ShapeContext& c) {
  c.setOutput(0, {}, fb::DataType::I64);
  return Status::Ok();
}

Status InferShapeOneHot(ShapeContext& c) {
  const Tensor& depth = c.input(1);
  if (depth.elementCount() != 1) return InvalidArgument("OneHot: depth must have one element, has %lld", static_cast<long long>(depth.elementCount()));
  if (!depth.hostData()) return InvalidArgument("OneHot: depth '%s' is not known at resize", depth.name().c_str());
  double dv = LoadDouble(depth.hostData(), depth.dtype(), 0);
  if (!(dv >= 1) || dv >= 9.0e15) return InvalidArgument("OneHot: depth %g must be a positive count", dv);
  if (c.input(2).elementCount() != 2) return InvalidArgument("OneHot: values must have 2 elements [off, on], has %lld", static_cast<long long>(c.input(2).elementCount()));
  const int rank = c.inRank(0) + 1;
  const fb::AxisParams* p = c.params<fb::AxisParams>();
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : -1, rank), "OneHot");
  std::vector<int64_t> out = c.inShape(0);
  out.insert(out.begin() + axis, static_cast<int64_t>(dv));
  c.setOutput(0, std::move(out), c.inType(2));
  return Status::Ok();
}

}  // namespace kiln
