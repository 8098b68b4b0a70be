#include "ops/shape_inference.h"

#include "checked_math.h"
#include "ops/op_params.h"

namespace kiln {

ShapeDef FindShapeDef(fb::OpType type) {
  const OpDef* def = FindOpDef(type);
  if (!def || !def->shape) return {};
  return {def->shape, def->value_inputs};
}

// The values of input i, read as the kernels read them (TensorInts and
// TensorFloats, ops/op_params.h), once they are known at resize.
StatusOr<std::vector<int64_t>> ShapeContext::inInts(int i) const {
  if (!hasInput(i)) return InvalidArgument("input %d is not given", i);
  const Tensor& t = input(i);
  if (!t.hostData()) return InvalidArgument("input %d '%s': its values are not known at resize", i, t.name().c_str());
  auto v = TensorInts(t);
  if (!v.ok()) return v.status().WithContext(StrFormat("input %d", i));
  return v;
}

StatusOr<std::vector<float>> ShapeContext::inFloats(int i) const {
  if (!hasInput(i)) return InvalidArgument("input %d is not given", i);
  const Tensor& t = input(i);
  if (!t.hostData()) return InvalidArgument("input %d '%s': its values are not known at resize", i, t.name().c_str());
  auto v = TensorFloats(t);
  if (!v.ok()) return v.status().WithContext(StrFormat("input %d", i));
  return v;
}

void ShapeContext::setOutput(int i, std::vector<int64_t> shape, fb::DataType dtype) {
  Tensor* t = outputs_[static_cast<size_t>(i)];
  t->setShape(std::move(shape));
  t->setDtype(dtype);
}

fb::DataType ShapeContext::declaredOutType(int i) const { return outputs_[static_cast<size_t>(i)]->dtype(); }

StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return InvalidArgument("shapes %s and %s do not broadcast (dim %zu: %lld vs %lld)", ShapeToString(a).c_str(),
                             ShapeToString(b).c_str(), k, static_cast<long long>(da), static_cast<long long>(db));
    out[k] = da == 1 ? db : da;
  }
  return out;
}

int64_t ShapeElementCount(const std::vector<int64_t>& shape) {
  int64_t n;
  return CheckedElementCount(shape, &n) ? n : kDimOverflow;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace kiln
