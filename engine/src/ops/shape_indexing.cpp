// Shape functions: indexing (GatherElements, GatherND, ScatterElements,
// ScatterND, TopK) and the losses.
#include "checked_math.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

namespace {

Status NeedIndices(const ShapeContext& c, int k) {
  if (c.inType(k) != fb::DataType::I64 && c.inType(k) != fb::DataType::I32)
    return InvalidArgument("%s: indices (input %d) must be i32 or i64, are %s", c.op().typeName(), k,
                           DataTypeName(c.inType(k)));
  return Status::Ok();
}

}  // namespace

Status InferShapeGatherElements(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(NeedIndices(c, 1));
  const int rank = c.inRank(0);
  if (rank == 0 || c.inRank(1) != rank)
    return InvalidArgument("GatherElements: data %s and indices %s must have the same rank, at least 1",
                           ShapeToString(c.inShape(0)).c_str(), ShapeToString(c.inShape(1)).c_str());
  const fb::AxisParams* p = c.params<fb::AxisParams>();
  KILN_RETURN_IF_ERROR(NormalizeAxis(p ? p->axis() : 0, rank, "GatherElements axis").status());
  c.setOutput(0, c.inShape(1), c.inType(0));
  return Status::Ok();
}

Status InferShapeGatherND(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(NeedIndices(c, 1));
  const auto& data = c.inShape(0);
  const auto& idx = c.inShape(1);
  const fb::GatherNDParams* p = c.params<fb::GatherNDParams>();
  const int64_t b = p ? p->batch_dims() : 0;
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.size());
  if (q < 1 || b < 0 || b >= q || b >= r)
    return InvalidArgument("GatherND: batch_dims %lld does not fit data %s and indices %s", static_cast<long long>(b),
                           ShapeToString(data).c_str(), ShapeToString(idx).c_str());
  const int64_t last = idx.back();
  if (last < 1 || last > r - b)
    return InvalidArgument("GatherND: the indices' last dim %lld must be 1 to %lld (data %s, batch_dims %lld)",
                           static_cast<long long>(last), static_cast<long long>(r - b), ShapeToString(data).c_str(),
                           static_cast<long long>(b));
  for (int64_t d = 0; d < b; ++d)
    if (data[static_cast<size_t>(d)] != idx[static_cast<size_t>(d)])
      return InvalidArgument("GatherND: batch dim %lld differs: data %s, indices %s", static_cast<long long>(d),
                             ShapeToString(data).c_str(), ShapeToString(idx).c_str());
  std::vector<int64_t> out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + last, data.end());
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeScatter(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(NeedIndices(c, 1));
  if (c.inType(2) != c.inType(0))
    return InvalidArgument("%s: updates are %s but data is %s", c.op().typeName(), DataTypeName(c.inType(2)),
                           DataTypeName(c.inType(0)));
  const auto& data = c.inShape(0);
  const auto& idx = c.inShape(1);
  const auto& upd = c.inShape(2);
  if (c.op().type == fb::OpType::ScatterElements) {
    if (data.empty() || idx.size() != data.size() || upd != idx)
      return InvalidArgument("ScatterElements: data %s, indices %s and updates %s must have one rank; indices and "
                             "updates one shape",
                             ShapeToString(data).c_str(), ShapeToString(idx).c_str(), ShapeToString(upd).c_str());
    const fb::ScatterParams* p = c.params<fb::ScatterParams>();
    KILN_RETURN_IF_ERROR(NormalizeAxis(p ? p->axis() : 0, static_cast<int>(data.size()), "ScatterElements axis").status());
  } else {  // ScatterND: updates = indices[:-1] + data[k:]
    if (idx.empty() || idx.back() < 1 || idx.back() > static_cast<int64_t>(data.size()))
      return InvalidArgument("ScatterND: indices %s do not fit data %s", ShapeToString(idx).c_str(),
                             ShapeToString(data).c_str());
    std::vector<int64_t> want(idx.begin(), idx.end() - 1);
    want.insert(want.end(), data.begin() + idx.back(), data.end());
    if (upd != want)
      return InvalidArgument("ScatterND: updates are %s, must be %s for data %s and indices %s",
                             ShapeToString(upd).c_str(), ShapeToString(want).c_str(), ShapeToString(data).c_str(),
                             ShapeToString(idx).c_str());
  }
  c.setOutputLike(0, 0);
  return Status::Ok();
}

Status InferShapeTopK(ShapeContext& c) {
  const int rank = c.inRank(0);
  if (rank == 0) return InvalidArgument("TopK: input is a scalar");
  const fb::TopKParams* p = c.params<fb::TopKParams>();
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : -1, rank), "TopK");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> k, c.inInts(1), "TopK k");
  if (k.size() != 1) return InvalidArgument("TopK: k must have one element, has %zu", k.size());
  std::vector<int64_t> out = c.inShape(0);
  if (k[0] < 0 || k[0] > out[static_cast<size_t>(axis)])
    return InvalidArgument("TopK: k %lld is out of range for axis %d of %s", static_cast<long long>(k[0]), axis,
                           ShapeToString(out).c_str());
  out[static_cast<size_t>(axis)] = k[0];
  c.setOutput(0, out, c.inType(0));
  c.setOutput(1, out, fb::DataType::I64);
  return Status::Ok();
}

// NegativeLogLikelihoodLoss(input [N, C, d...], target [N, d...], weight [C]?)
// and SoftmaxCrossEntropyLoss(scores [N, C, d...], labels [N, d...],
// weights [C]?) -> loss (scalar, or [N, d...] without reduction) and, for
// the latter, log_prob like scores.
Status InferShapeLoss(ShapeContext& c) {
  const auto& x = c.inShape(0);
  const auto& t = c.inShape(1);
  if (x.size() < 2 || t.size() + 1 != x.size())
    return InvalidArgument("%s: input %s and target %s: input must be [N, C, d...], target [N, d...]",
                           c.op().typeName(), ShapeToString(x).c_str(), ShapeToString(t).c_str());
  for (size_t d = 0; d < t.size(); ++d)
    if (t[d] != x[d == 0 ? 0 : d + 1])
      return InvalidArgument("%s: target %s does not match input %s", c.op().typeName(), ShapeToString(t).c_str(),
                             ShapeToString(x).c_str());
  KILN_RETURN_IF_ERROR(NeedIndices(c, 1));
  if (c.hasInput(2) && (c.inRank(2) != 1 || c.inShape(2)[0] != x[1]))
    return InvalidArgument("%s: weight %s must be [C] = [%lld]", c.op().typeName(), ShapeToString(c.inShape(2)).c_str(),
                           static_cast<long long>(x[1]));
  const fb::LossParams* p = c.params<fb::LossParams>();
  const bool none = p && p->reduction() == fb::LossReduction::None;
  c.setOutput(0, none ? t : std::vector<int64_t>{}, c.inType(0));
  if (c.numOutputs() > 1) c.setOutput(1, x, c.inType(0));
  return Status::Ok();
}

}  // namespace kiln
