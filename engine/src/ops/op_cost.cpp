#include "ops/op_cost.h"

#include <set>

#include "session_impl.h"  // MayRunInPlace: the elementwise ops

namespace kiln {
namespace {

double Elements(const Tensor* t) { return t ? static_cast<double>(t->elementCount()) : 0; }

}  // namespace

OpCost EstimateOpCost(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  OpCost c;
  std::set<const Tensor*> seen;
  for (const std::vector<Tensor*>* list : {&in, &out})
    for (const Tensor* t : *list)
      if (t && seen.insert(t).second) c.bytes += static_cast<double>(t->byteSize());
  if (in.empty() || out.empty() || !in[0] || !out[0]) return c;
  const Tensor* w = in.size() > 1 ? in[1] : nullptr;
  switch (op.type) {
    case fb::OpType::Conv:  // weights [Cout, Cin/group, k...]: each output sums Cin/group * k... products
      if (w && w->dimensions() > 0 && w->length(0) > 0) c.flops = 2 * Elements(out[0]) * Elements(w) / w->length(0);
      break;
    case fb::OpType::ConvTranspose:  // weights [Cin, Cout/group, k...]: each input scatters to Cout/group * k...
      if (w && w->dimensions() > 0 && w->length(0) > 0) c.flops = 2 * Elements(in[0]) * Elements(w) / w->length(0);
      break;
    case fb::OpType::MatMul:
      if (in[0]->dimensions() > 0) c.flops = 2 * Elements(out[0]) * in[0]->length(in[0]->dimensions() - 1);
      break;
    case fb::OpType::Gemm:  // A is M x K or K x M; M is the output's rows
      if (out[0]->dimensions() == 2 && out[0]->length(0) > 0)
        c.flops = 2 * Elements(out[0]) * Elements(in[0]) / out[0]->length(0);
      break;
    default:
      if (MayRunInPlace(op.type) && op.type != fb::OpType::Identity && op.type != fb::OpType::Reshape &&
          op.type != fb::OpType::Flatten && op.type != fb::OpType::Squeeze && op.type != fb::OpType::Unsqueeze)
        c.flops = Elements(out[0]);
      break;
  }
  return c;
}

}  // namespace kiln
