// remove_identity: Identity ops (and ONNX Dropout, imported as Identity).
//
// One walk over the ops with an alias per removed output, and one pass
// rewriting every input at the end: linear in the graph's size (a chain of
// 200,000 Identities is removed in milliseconds).
#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

StatusOr<int> RemoveIdentity(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "remove_identity"));
  const std::vector<uint8_t> none;
  NetIndex idx(net, none);
  // alias[t]: the tensor readers of t read instead (t itself when none).
  std::vector<int> alias(net.tensors.size());
  for (size_t t = 0; t < alias.size(); ++t) alias[t] = static_cast<int>(t);
  auto resolve = [&](int t) {
    if (t < 0) return t;
    int r = t;
    while (alias[static_cast<size_t>(r)] != r) r = alias[static_cast<size_t>(r)];
    while (alias[static_cast<size_t>(t)] != r) {  // path compression
      int next = alias[static_cast<size_t>(t)];
      alias[static_cast<size_t>(t)] = r;
      t = next;
    }
    return r;
  };
  std::vector<uint8_t> removed(net.ops.size(), 0);
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    const fb::OpT& op = *net.ops[i];
    if (op.type != fb::OpType::Identity || op.inputs.size() != 1 || op.outputs.size() != 1) continue;
    const int x = resolve(op.inputs[0]), y = op.outputs[0];
    if (x < 0 || x == y) continue;
    if (!idx.is_output[static_cast<size_t>(y)]) {
      alias[static_cast<size_t>(y)] = x;  // readers of y read x
    } else {
      // y is a graph output and keeps its name: x's producer writes y instead.
      // Not possible when x is a graph input, a constant or an output itself.
      const int p = idx.producerOf(x);
      if (p < 0 || idx.is_output[static_cast<size_t>(x)] || idx.is_input[static_cast<size_t>(x)] || IsConstant(net, x))
        continue;
      for (auto& t : net.ops[static_cast<size_t>(p)]->outputs)
        if (t == x) t = y;
      idx.producer[static_cast<size_t>(y)] = p;
      idx.producer[static_cast<size_t>(x)] = -1;
      alias[static_cast<size_t>(x)] = y;  // readers of x read y
    }
    removed[i] = 1;
    ++n;
  }
  if (n == 0) return 0;
  for (size_t i = 0; i < net.ops.size(); ++i)
    if (!removed[i])
      for (auto& t : net.ops[i]->inputs) t = resolve(t);
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
