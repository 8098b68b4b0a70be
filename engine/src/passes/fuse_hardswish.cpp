// fuse_hardswish: x * relu6(x + 3) / 6 spelled out in elementwise ops, as
// Paddle's exporter (PP-OCR, PP-LCNet) and some TensorFlow converters write
// it, becomes one HardSwish, which fuse_activation can then put on the
// producing Conv. Matched from the Add:
//
//   a = Add(x, 3)   (either order);  c = Clip(a, 0, 6)
//   then one of
//     A: Div(Mul(x, c), 6) | Mul(Mul(x, c), 1/6)
//     B: Mul(x, Div(c, 6)) | Mul(x, Mul(c, 1/6))
//
// (Mul in either order). Every intermediate must have exactly one reader
// and not be a graph output; x may have others. The last op becomes the
// HardSwish, so its output tensor (and name) is kept.
#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

// Op `i` as t / 6 or t * (1/6) (Mul in either order): t, else -1.
int SixthOf(const fb::NetT& net, int i) {
  const fb::OpT& op = *net.ops[static_cast<size_t>(i)];
  if (op.inputs.size() != 2 || op.outputs.size() != 1) return -1;
  if (op.type == fb::OpType::Div) return IsScalarNear(net, op.inputs[1], 6.0) ? op.inputs[0] : -1;
  if (op.type != fb::OpType::Mul) return -1;
  if (IsScalarNear(net, op.inputs[1], 1.0 / 6.0)) return op.inputs[0];
  if (IsScalarNear(net, op.inputs[0], 1.0 / 6.0)) return op.inputs[1];
  return -1;
}

// The single reader of t, or -1.
int Reader(const NetIndex& idx, int t) { return idx.singleUse(t) ? idx.consumers[static_cast<size_t>(t)][0] : -1; }

// Matches the pattern at Add op `ai`; on success fills the ops to remove,
// the op that becomes the HardSwish and x.
bool MatchHardSwish(const fb::NetT& net, const NetIndex& idx, int ai, std::vector<int>* ops, int* last, int* x) {
  const fb::OpT& add = *net.ops[static_cast<size_t>(ai)];
  if (add.inputs.size() != 2 || add.outputs.size() != 1) return false;
  if (IsScalarNear(net, add.inputs[1], 3.0))
    *x = add.inputs[0];
  else if (IsScalarNear(net, add.inputs[0], 3.0))
    *x = add.inputs[1];
  else
    return false;
  if (*x < 0) return false;
  const int ci = OnlyReader(net, idx, add.outputs[0], fb::OpType::Clip);
  if (ci < 0) return false;
  double lo, hi;
  if (!ClipBounds(net, *net.ops[static_cast<size_t>(ci)], &lo, &hi) || lo != 0.0 || hi != 6.0) return false;
  const int c = net.ops[static_cast<size_t>(ci)]->outputs[0];
  const int r = Reader(idx, c);
  if (r < 0) return false;
  const fb::OpT& next = *net.ops[static_cast<size_t>(r)];
  if (next.type == fb::OpType::Mul && OtherInput(next, c) == *x) {  // A: Mul(x, c), then the sixth
    const int s = Reader(idx, next.outputs[0]);
    if (s < 0 || SixthOf(net, s) != next.outputs[0]) return false;
    *ops = {ai, ci, r, s};
    *last = s;
    return true;
  }
  if (SixthOf(net, r) != c) return false;  // B: the sixth of c, then Mul(x, .)
  const int m = OnlyReader(net, idx, next.outputs[0], fb::OpType::Mul);
  if (m < 0 || OtherInput(*net.ops[static_cast<size_t>(m)], next.outputs[0]) != *x) return false;
  *ops = {ai, ci, r, m};
  *last = m;
  return true;
}

}  // namespace

StatusOr<int> FuseHardSwish(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fuse_hardswish"));
  std::vector<uint8_t> removed(net.ops.size(), 0);
  NetIndex idx(net, removed);
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    if (removed[i] || net.ops[i]->type != fb::OpType::Add) continue;
    std::vector<int> ops;
    int last = -1, x = -1;
    if (!MatchHardSwish(net, idx, static_cast<int>(i), &ops, &last, &x)) continue;
    for (int o : ops) removed[static_cast<size_t>(o)] = 1;
    fb::OpT& h = *net.ops[static_cast<size_t>(last)];
    removed[static_cast<size_t>(last)] = 0;
    h.type = fb::OpType::HardSwish;
    h.inputs = {x};
    h.params.Reset();
    ++n;
    idx = NetIndex(net, removed);
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
