// Sequence ops: their results (ops/sequence_eval.h) and shape functions.
#include <cstring>

#include "elements.h"
#include "ops/sequence_eval.h"
#include "ops/shape_inference.h"

namespace kiln {

namespace {

StatusOr<int64_t> Position(const Tensor* t, int64_t n, bool insert, const char* op) {
  if (!t) return insert ? n : n - 1;
  if (t->elementCount() != 1) return InvalidArgument("%s: position has %lld elements, needs 1", op, (long long)t->elementCount());
  const int64_t p = static_cast<int64_t>(LoadDouble(t->hostData(), t->dtype(), 0));
  const int64_t hi = insert ? n : n - 1;
  if (p < -n || p > hi)
    return InvalidArgument("%s: position %lld is out of range for a sequence of %lld", op, (long long)p, (long long)n);
  return p < 0 ? p + n : p;
}

// A host copy (a sequence's or an optional's elements shared).
StatusOr<std::shared_ptr<Tensor>> CopyOf(const Tensor& t) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Tensor> c, Tensor::createHostTensorFromDevice(t));
  return std::shared_ptr<Tensor>(std::move(c));
}

const std::vector<std::shared_ptr<const Tensor>>& Items(const Tensor& t) { return t.sequence(); }

Status NeedSequence(const Tensor& t, const char* op) {
  if (!t.isSequence()) return InvalidArgument("%s: input '%s' is not a sequence", op, t.name().c_str());
  return Status::Ok();
}

StatusOr<SequenceResult> Split(const GraphOp& op, const std::vector<Tensor*>& in) {
  auto* p = op.params<fb::SequenceParams>();
  const Tensor& x = *in[0];
  const int rank = x.dimensions();
  int axis = p ? p->axis() : 0;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return InvalidArgument("SplitToSequence: axis %d for rank %d", p ? p->axis() : 0, rank);
  const int64_t len = x.shape()[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (in.size() < 2 || !in[1]) {
    sizes.assign(static_cast<size_t>(len), 1);
    squeeze = p ? !p->keepdims() : false;
  } else {
    const Tensor& s = *in[1];
    if (s.dimensions() == 0) {
      const int64_t chunk = static_cast<int64_t>(LoadDouble(s.hostData(), s.dtype(), 0));
      if (chunk <= 0) return InvalidArgument("SplitToSequence: split %lld must be positive", (long long)chunk);
      for (int64_t at = 0; at < len; at += chunk) sizes.push_back(std::min(chunk, len - at));
    } else {
      int64_t total = 0;
      for (int64_t i = 0; i < s.elementCount(); ++i) {
        sizes.push_back(static_cast<int64_t>(LoadDouble(s.hostData(), s.dtype(), i)));
        if (sizes.back() < 0) return InvalidArgument("SplitToSequence: split %lld is negative", (long long)sizes.back());
        total += sizes.back();
      }
      if (total != len)
        return InvalidArgument("SplitToSequence: splits sum to %lld, axis %d has %lld", (long long)total, axis, (long long)len);
    }
  }
  int64_t outer = 1, inner = static_cast<int64_t>(x.elementSize());
  for (int d = 0; d < axis; ++d) outer *= x.shape()[static_cast<size_t>(d)];
  for (int d = axis + 1; d < rank; ++d) inner *= x.shape()[static_cast<size_t>(d)];
  SequenceResult r;
  r.is_sequence = true;
  int64_t at = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> shape = x.shape();
    shape[static_cast<size_t>(axis)] = size;
    std::shared_ptr<Tensor> piece = Tensor::create(shape, x.dtype());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(piece->host<uint8_t>() + o * size * inner, x.host<uint8_t>() + (o * len + at) * inner,
                  static_cast<size_t>(size * inner));
    if (squeeze) {
      shape.erase(shape.begin() + axis);
      piece->setShape(shape);
    }
    r.items.push_back(piece);
    at += size;
  }
  return r;
}

StatusOr<SequenceResult> Concat(const GraphOp& op, const Tensor& seq, fb::DataType dtype) {
  auto* p = op.params<fb::SequenceParams>();
  const auto& items = Items(seq);
  if (items.empty()) return InvalidArgument("ConcatFromSequence: the sequence is empty");
  const bool stack = p && p->new_axis();
  const int rank = items[0]->dimensions() + (stack ? 1 : 0);
  int axis = p ? p->axis() : 0;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return InvalidArgument("ConcatFromSequence: axis %d for rank %d", p ? p->axis() : 0, rank);
  std::vector<int64_t> shape = items[0]->shape();
  if (stack) shape.insert(shape.begin() + axis, 1);
  int64_t total = 0;
  for (const auto& t : items) {
    std::vector<int64_t> s = t->shape();
    if (stack) s.insert(s.begin() + axis, 1);
    if (s.size() != shape.size()) return InvalidArgument("ConcatFromSequence: elements of different ranks");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int>(d) != axis && s[d] != shape[d])
        return InvalidArgument("ConcatFromSequence: element shapes %s and %s differ off the axis",
                               ShapeToString(items[0]->shape()).c_str(), ShapeToString(t->shape()).c_str());
    total += s[static_cast<size_t>(axis)];
  }
  int64_t outer = 1, inner = static_cast<int64_t>(DataTypeSize(dtype));
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  shape[static_cast<size_t>(axis)] = total;
  SequenceResult r;
  r.tensor = Tensor::create(shape, dtype);
  int64_t at = 0;
  for (const auto& t : items) {
    const int64_t len = stack ? 1 : t->shape()[static_cast<size_t>(axis)];
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(r.tensor->host<uint8_t>() + (o * total + at) * inner, t->host<uint8_t>() + o * len * inner,
                  static_cast<size_t>(len * inner));
    at += len;
  }
  return r;
}

Status SetFromResult(ShapeContext& c, fb::DataType dtype) {
  std::vector<Tensor*> ins;
  for (int i = 0; i < c.numInputs(); ++i) ins.push_back(c.hasInput(i) ? const_cast<Tensor*>(&c.input(i)) : nullptr);
  KILN_ASSIGN_OR_RETURN(SequenceResult r, EvalSequenceOp(c.op(), ins, dtype));
  if (r.is_sequence || r.is_optional)
    c.setOutput(0, {}, dtype);
  else
    c.setOutput(0, r.tensor->shape(), r.tensor->dtype());
  return Status::Ok();
}

}  // namespace

StatusOr<SequenceResult> EvalSequenceOp(const GraphOp& op, const std::vector<Tensor*>& in, fb::DataType out_dtype) {
  const char* name = op.typeName();
  SequenceResult r;
  switch (op.type) {
    case fb::OpType::SequenceEmpty: r.is_sequence = true; return r;
    case fb::OpType::SequenceConstruct:
      r.is_sequence = true;
      for (const Tensor* t : in) {
        if (t->dtype() != in[0]->dtype()) return InvalidArgument("SequenceConstruct: inputs of dtypes %s and %s",
                                                                 DataTypeName(in[0]->dtype()), DataTypeName(t->dtype()));
        KILN_ASSIGN_OR_RETURN(std::shared_ptr<Tensor> c, CopyOf(*t));
        r.items.push_back(std::move(c));
      }
      return r;
    case fb::OpType::SequenceLength:
      KILN_RETURN_IF_ERROR(NeedSequence(*in[0], name));
      r.tensor = Tensor::create({}, fb::DataType::I64);
      *r.tensor->host<int64_t>() = static_cast<int64_t>(Items(*in[0]).size());
      return r;
    case fb::OpType::SequenceAt: {
      KILN_RETURN_IF_ERROR(NeedSequence(*in[0], name));
      const auto& items = Items(*in[0]);
      KILN_ASSIGN_OR_RETURN(int64_t p, Position(in[1], static_cast<int64_t>(items.size()), false, name));
      KILN_ASSIGN_OR_RETURN(r.tensor, CopyOf(*items[static_cast<size_t>(p)]));
      return r;
    }
    case fb::OpType::SequenceInsert: {
      KILN_RETURN_IF_ERROR(NeedSequence(*in[0], name));
      if (in[1]->dtype() != in[0]->dtype())
        return InvalidArgument("SequenceInsert: a %s tensor into a sequence of %s", DataTypeName(in[1]->dtype()),
                               DataTypeName(in[0]->dtype()));
      r.is_sequence = true;
      r.items = Items(*in[0]);
      KILN_ASSIGN_OR_RETURN(int64_t p, Position(in.size() > 2 ? in[2] : nullptr, static_cast<int64_t>(r.items.size()), true, name));
      KILN_ASSIGN_OR_RETURN(std::shared_ptr<Tensor> c, CopyOf(*in[1]));
      r.items.insert(r.items.begin() + p, std::move(c));
      return r;
    }
    case fb::OpType::SequenceErase: {
      KILN_RETURN_IF_ERROR(NeedSequence(*in[0], name));
      r.is_sequence = true;
      r.items = Items(*in[0]);
      if (r.items.empty()) return InvalidArgument("SequenceErase: the sequence is empty");
      KILN_ASSIGN_OR_RETURN(int64_t p, Position(in.size() > 1 ? in[1] : nullptr, static_cast<int64_t>(r.items.size()), false, name));
      r.items.erase(r.items.begin() + p);
      return r;
    }
    case fb::OpType::SplitToSequence: return Split(op, in);
    case fb::OpType::Optional:
      r.is_optional = true;
      if (!in.empty() && in[0]) {
        KILN_ASSIGN_OR_RETURN(std::shared_ptr<Tensor> v, CopyOf(*in[0]));
        r.items.push_back(std::move(v));
      }
      return r;
    case fb::OpType::OptionalHasElement:
      r.tensor = Tensor::create({}, fb::DataType::BOOL);
      *r.tensor->host<uint8_t>() = !in[0]->isOptional() || in[0]->optionalValue() != nullptr;
      return r;
    case fb::OpType::OptionalGetElement: {
      const Tensor* v = in[0];
      if (v->isOptional()) {
        if (!v->optionalValue()) return InvalidArgument("OptionalGetElement: the optional '%s' is empty", v->name().c_str());
        v = v->optionalValue().get();
      }
      if (v->isSequence()) {
        r.is_sequence = true;
        r.items = v->sequence();
      } else {
        KILN_ASSIGN_OR_RETURN(r.tensor, CopyOf(*v));
      }
      return r;
    }
    case fb::OpType::ConcatFromSequence:
      KILN_RETURN_IF_ERROR(NeedSequence(*in[0], name));
      return Concat(op, *in[0], out_dtype);
    default: return Internal("%s is not a sequence op", name);
  }
}

Status InferShapeSequenceConstruct(ShapeContext& c) { return SetFromResult(c, c.inType(0)); }
Status InferShapeSequenceAt(ShapeContext& c) { return SetFromResult(c, c.inType(0)); }
Status InferShapeSequenceInsert(ShapeContext& c) { return SetFromResult(c, c.inType(0)); }
Status InferShapeSequenceErase(ShapeContext& c) { return SetFromResult(c, c.inType(0)); }
Status InferShapeSequenceLength(ShapeContext& c) { return SetFromResult(c, fb::DataType::I64); }
Status InferShapeSequenceEmpty(ShapeContext& c) {
  auto* p = c.params<fb::SequenceParams>();
  return SetFromResult(c, p ? p->dtype() : fb::DataType::F32);
}
Status InferShapeOptional(ShapeContext& c) {
  // Optional's dtype is declared by the importer (its `type` attribute when empty).
  return SetFromResult(c, c.hasInput(0) ? c.inType(0) : c.declaredOutType(0));
}
Status InferShapeOptionalHasElement(ShapeContext& c) { return SetFromResult(c, fb::DataType::BOOL); }
Status InferShapeOptionalGetElement(ShapeContext& c) { return SetFromResult(c, c.inType(0)); }
Status InferShapeSplitToSequence(ShapeContext& c) { return SetFromResult(c, c.inType(0)); }
Status InferShapeConcatFromSequence(ShapeContext& c) { return SetFromResult(c, c.inType(0)); }

}  // namespace kiln
