#include "ops/op_cost.h"

#include <set>

#include "ops/op_defs.h"

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
  if (const OpDef* def = FindOpDef(op.type)) c.flops = def->cost(op, in, out);
  return c;
}

// The cost functions op_defs.inc rows name. Inputs 0 and output 0 are
// present (checked above).
double CostConv(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  // weights [Cout, Cin/group, k...]: each output sums Cin/group * k... products
  const Tensor* w = in.size() > 1 ? in[1] : nullptr;
  return w && w->dimensions() > 0 && w->length(0) > 0 ? 2 * Elements(out[0]) * Elements(w) / w->length(0) : 0;
}

double CostConvTranspose(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>&) {
  // weights [Cin, Cout/group, k...]: each input scatters to Cout/group * k...
  const Tensor* w = in.size() > 1 ? in[1] : nullptr;
  return w && w->dimensions() > 0 && w->length(0) > 0 ? 2 * Elements(in[0]) * Elements(w) / w->length(0) : 0;
}

double CostMatMul(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  return in[0]->dimensions() > 0 ? 2 * Elements(out[0]) * in[0]->length(in[0]->dimensions() - 1) : 0;
}

double CostGemm(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  // A is M x K or K x M; M is the output's rows
  return out[0]->dimensions() == 2 && out[0]->length(0) > 0 ? 2 * Elements(out[0]) * Elements(in[0]) / out[0]->length(0)
                                                              : 0;
}

// Q KT and P V: 2 L S (D + Dv) a batch, the output being [..., L, Dv].
double CostAttention(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  if (in[0]->dimensions() < 2 || in[1]->dimensions() < 2 || out[0]->dimensions() < 2) return 0;
  const double d = static_cast<double>(in[0]->length(in[0]->dimensions() - 1));
  const double s = static_cast<double>(in[1]->length(in[1]->dimensions() - 1));
  const double dv = static_cast<double>(out[0]->length(out[0]->dimensions() - 1));
  return dv > 0 ? 2 * Elements(out[0]) / dv * s * (d + dv) : 0;
}

double CostElementwise(const GraphOp&, const std::vector<Tensor*>&, const std::vector<Tensor*>& out) {
  return Elements(out[0]);
}

double CostNone(const GraphOp&, const std::vector<Tensor*>&, const std::vector<Tensor*>&) { return 0; }

}  // namespace kiln
