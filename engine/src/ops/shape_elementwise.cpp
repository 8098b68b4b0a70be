// Shape functions: elementwise ops (unary, broadcasting binary, variadic,
// comparisons, Where, Cast).
#include "ops/shape_inference.h"

namespace kiln {

Status InferShapeUnary(ShapeContext& c) {
  c.setOutputLike(0, 0);
  return Status::Ok();
}

Status InferShapeNot(ShapeContext& c) {
  if (c.inType(0) != fb::DataType::BOOL) return InvalidArgument("Not needs a bool input, has %s", DataTypeName(c.inType(0)));
  c.setOutputLike(0, 0);
  return Status::Ok();
}

static Status BroadcastAll(ShapeContext& c, int first, fb::DataType out_type) {
  std::vector<int64_t> shape = c.inShape(first);
  for (int i = first + 1; i < c.numInputs(); ++i) {
    if (!c.hasInput(i)) continue;
    KILN_ASSIGN_OR_RETURN(shape, BroadcastShapes(shape, c.inShape(i)), "inputs %d and %d", first, i);
  }
  c.setOutput(0, shape, out_type);
  return Status::Ok();
}

static Status SameTypes(ShapeContext& c, int first, int last) {
  for (int i = first + 1; i <= last && i < c.numInputs(); ++i)
    if (c.hasInput(i) && c.inType(i) != c.inType(first))
      return InvalidArgument("input %d is %s but input %d is %s", first, DataTypeName(c.inType(first)), i,
                             DataTypeName(c.inType(i)));
  return Status::Ok();
}

Status InferShapeBroadcast(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(SameTypes(c, 0, c.numInputs() - 1));
  return BroadcastAll(c, 0, c.inType(0));
}

// Pow and PRelu: the exponent / slope may have its own type, broadcast to input 0.
Status InferShapeBroadcastFirstType(ShapeContext& c) { return BroadcastAll(c, 0, c.inType(0)); }

Status InferShapeCompare(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(SameTypes(c, 0, 1));
  return BroadcastAll(c, 0, fb::DataType::BOOL);
}

Status InferShapeWhere(ShapeContext& c) {
  if (c.inType(0) != fb::DataType::BOOL)
    return InvalidArgument("Where condition must be bool, is %s", DataTypeName(c.inType(0)));
  KILN_RETURN_IF_ERROR(SameTypes(c, 1, 2));
  KILN_RETURN_IF_ERROR(BroadcastAll(c, 0, c.inType(1)));
  return Status::Ok();
}

Status InferShapeCast(ShapeContext& c) {
  const fb::CastParams* p = c.params<fb::CastParams>();
  c.setOutput(0, c.inShape(0), p->to());
  return Status::Ok();
}

}  // namespace kiln
