// Shape functions: the quantized ops' elementwise members (QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear); MatMulInteger, ConvInteger and
// the QLinear ops are in shape_nn.cpp (they share MatMul's and Conv's).
// Errors name the op and the offending input: a scale whose length does not
// match the axis, a zero point of another type than its operand.
#include <string>

#include "elements.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

namespace {

bool IsQuant8(fb::DataType t) { return t == fb::DataType::I8 || t == fb::DataType::U8; }

// "'name' (input k)": errors name the tensor.
std::string Named(ShapeContext& c, int k) { return "'" + c.input(k).name() + "' (input " + std::to_string(k) + ")"; }

// Scale (input 1) and zero point (input 2, optional): one value for the whole
// tensor (a scalar or a 1-element 1-D tensor), or a 1-D tensor of x's length
// along `axis` (per axis).
Status CheckScaleShape(ShapeContext& c) {
  const char* op = c.op().typeName();
  const auto& x = c.inShape(0);
  const auto& s = c.inShape(1);
  const int64_t n = ShapeElementCount(s);
  if (!IsFloating(c.inType(1)))
    return InvalidArgument("%s: scale %s must be a float tensor, is %s", op, Named(c, 1).c_str(), DataTypeName(c.inType(1)));
  if (s.size() > 1)
    return InvalidArgument("%s: scale %s must be a scalar or 1-D, is %s", op, Named(c, 1).c_str(), ShapeToString(s).c_str());
  if (!(s.empty() || n == 1)) {
    const auto* p = c.params<fb::AxisParams>();
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 1, static_cast<int>(x.size())), "%s", op);
    if (s[0] != x[static_cast<size_t>(axis)])
      return InvalidArgument("%s: per-axis scale %s has %lld values but x %s has %lld along axis %d", op, Named(c, 1).c_str(),
                             static_cast<long long>(s[0]), ShapeToString(x).c_str(),
                             static_cast<long long>(x[static_cast<size_t>(axis)]), axis);
  }
  if (c.hasInput(2) && c.inShape(2) != s && !(ShapeElementCount(c.inShape(2)) == 1 && n == 1))
    return InvalidArgument("%s: zero point %s has shape %s but the scale %s", op, Named(c, 2).c_str(),
                           ShapeToString(c.inShape(2)).c_str(), ShapeToString(s).c_str());
  return Status::Ok();
}

}  // namespace

// QuantizeLinear(x, y_scale, [y_zero_point]) -> y like y_zero_point (u8
// without one); DequantizeLinear(x, x_scale, [x_zero_point]) -> y like
// x_scale.
Status InferShapeQuantize(ShapeContext& c) {
  const char* op = c.op().typeName();
  KILN_RETURN_IF_ERROR(CheckScaleShape(c));
  if (c.op().type == fb::OpType::QuantizeLinear) {
    if (!IsFloating(c.inType(0)) && c.inType(0) != fb::DataType::I32)
      return InvalidArgument("%s: x %s must be a float or int32 tensor, is %s", op, Named(c, 0).c_str(), DataTypeName(c.inType(0)));
    fb::DataType out = c.hasInput(2) ? c.inType(2) : fb::DataType::U8;
    if (!IsQuant8(out))
      return InvalidArgument("%s: y_zero_point %s must be int8 or uint8, is %s", op, Named(c, 2).c_str(), DataTypeName(out));
    c.setOutput(0, c.inShape(0), out);
    return Status::Ok();
  }
  if (!IsQuant8(c.inType(0)) && c.inType(0) != fb::DataType::I32)
    return InvalidArgument("%s: x %s must be int8, uint8 or int32, is %s", op, Named(c, 0).c_str(), DataTypeName(c.inType(0)));
  if (c.hasInput(2) && c.inType(2) != c.inType(0))
    return InvalidArgument("%s: x_zero_point %s is %s but x %s is %s", op, Named(c, 2).c_str(), DataTypeName(c.inType(2)),
                           Named(c, 0).c_str(), DataTypeName(c.inType(0)));
  c.setOutput(0, c.inShape(0), c.inType(1));
  return Status::Ok();
}

// DynamicQuantizeLinear(x) -> y (u8, x's shape), y_scale (f32 scalar),
// y_zero_point (u8 scalar).
Status InferShapeDynamicQuantize(ShapeContext& c) {
  if (c.inType(0) != fb::DataType::F32)
    return InvalidArgument("DynamicQuantizeLinear: x %s must be float32, is %s", Named(c, 0).c_str(), DataTypeName(c.inType(0)));
  c.setOutput(0, c.inShape(0), fb::DataType::U8);
  c.setOutput(1, {}, fb::DataType::F32);
  c.setOutput(2, {}, fb::DataType::U8);
  return Status::Ok();
}

}  // namespace kiln
