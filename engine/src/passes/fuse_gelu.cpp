// fuse_gelu: the exact GELU, x * 0.5 * (1 + Erf(x / sqrt(2))), as torch
// exports it before opset 20, becomes one Gelu op. Matched from the Erf:
//
//   d = Div(x, 1.4142135) | Mul(x, 0.70710678)     (Mul in either order)
//   e = Erf(d);  a = Add(e, 1)                      (either order)
//   then one of
//     A: Mul(Mul(x, a), 0.5)       (torch's F.gelu / nn.GELU export)
//     B: Mul(Mul(x, 0.5), a)
//     C: Mul(x, Mul(a, 0.5))
//
// Every intermediate must have exactly one reader and not be a graph
// output; x may have others. The last op of the pattern becomes the Gelu,
// so its output tensor (and name) is kept.
#include <cmath>

#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

constexpr double kSqrt2 = 1.4142135623730951;

// Matches the pattern at Erf op `e`; on success fills the ops to remove, the
// op that becomes the Gelu and x.
bool MatchGelu(const fb::NetT& net, const NetIndex& idx, int e, std::vector<int>* ops, int* last, int* x) {
  const fb::OpT& erf = *net.ops[static_cast<size_t>(e)];
  if (erf.inputs.size() != 1 || erf.outputs.size() != 1) return false;
  const int d = erf.inputs[0];
  const int pd = idx.producerOf(d);
  if (pd < 0 || !idx.singleUse(d)) return false;
  const fb::OpT& scale = *net.ops[static_cast<size_t>(pd)];
  if (scale.inputs.size() != 2) return false;
  if (scale.type == fb::OpType::Div && IsScalarNear(net, scale.inputs[1], kSqrt2)) {
    *x = scale.inputs[0];
  } else if (scale.type == fb::OpType::Mul && IsScalarNear(net, scale.inputs[1], 1 / kSqrt2)) {
    *x = scale.inputs[0];
  } else if (scale.type == fb::OpType::Mul && IsScalarNear(net, scale.inputs[0], 1 / kSqrt2)) {
    *x = scale.inputs[1];
  } else {
    return false;
  }
  if (*x < 0) return false;
  const int ai = OnlyReader(net, idx, erf.outputs[0], fb::OpType::Add);
  if (ai < 0) return false;
  const fb::OpT& add = *net.ops[static_cast<size_t>(ai)];
  if (!IsScalarNear(net, OtherInput(add, erf.outputs[0]), 1.0)) return false;
  const int a = add.outputs[0];
  const int m1 = OnlyReader(net, idx, a, fb::OpType::Mul);
  if (m1 < 0) return false;
  const fb::OpT& mul1 = *net.ops[static_cast<size_t>(m1)];
  const int other = OtherInput(mul1, a);
  *ops = {pd, e, ai, m1};
  if (other == *x || IsScalarNear(net, other, 0.5)) {  // A or C: one more Mul
    const int m2 = OnlyReader(net, idx, mul1.outputs[0], fb::OpType::Mul);
    if (m2 < 0) return false;
    const int rest = OtherInput(*net.ops[static_cast<size_t>(m2)], mul1.outputs[0]);
    if (other == *x ? !IsScalarNear(net, rest, 0.5) : rest != *x) return false;
    ops->push_back(m2);
    *last = m2;
    return true;
  }
  // B: the other factor is Mul(x, 0.5), read only here.
  const int h = idx.producerOf(other);
  if (h < 0 || !idx.singleUse(other)) return false;
  const fb::OpT& half = *net.ops[static_cast<size_t>(h)];
  if (half.type != fb::OpType::Mul || OtherInput(half, *x) == -2 || !IsScalarNear(net, OtherInput(half, *x), 0.5))
    return false;
  ops->push_back(h);
  *last = m1;
  return true;
}

}  // namespace

StatusOr<int> FuseGelu(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fuse_gelu"));
  std::vector<uint8_t> removed(net.ops.size(), 0);
  NetIndex idx(net, removed);
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    if (removed[i] || net.ops[i]->type != fb::OpType::Erf) continue;
    std::vector<int> ops;
    int last = -1, x = -1;
    if (!MatchGelu(net, idx, static_cast<int>(i), &ops, &last, &x)) continue;
    for (int o : ops) removed[static_cast<size_t>(o)] = 1;
    fb::OpT& g = *net.ops[static_cast<size_t>(last)];
    removed[static_cast<size_t>(last)] = 0;
    g.type = fb::OpType::Gelu;
    g.inputs = {x};
    g.params.Set(fb::GeluParamsT());
    ++n;
    idx = NetIndex(net, removed);
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
