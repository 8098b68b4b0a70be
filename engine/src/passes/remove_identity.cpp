// remove_identity: Identity ops (and ONNX Dropout, imported as Identity).
#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

StatusOr<int> RemoveIdentity(fb::NetT& net) {
  RETURN_IF_ERROR(CheckIndices(net, "remove_identity"));
  std::vector<uint8_t> removed(net.ops.size(), 0);
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    const fb::OpT& op = *net.ops[i];
    if (op.type != fb::OpType::Identity || op.inputs.size() != 1 || op.outputs.size() != 1) continue;
    const int x = op.inputs[0], y = op.outputs[0];
    if (x < 0 || x == y) continue;
    NetIndex idx(net, removed);
    if (!idx.is_output[static_cast<size_t>(y)]) {
      ReplaceInputs(net, y, x);  // readers of y read x
    } else {
      // y is a graph output and keeps its name: x's producer writes y instead.
      // Not possible when x is a graph input, a constant or an output itself.
      const int p = idx.producerOf(x);
      if (p < 0 || idx.is_output[static_cast<size_t>(x)] || idx.is_input[static_cast<size_t>(x)] || IsConstant(net, x))
        continue;
      for (auto& t : net.ops[static_cast<size_t>(p)]->outputs)
        if (t == x) t = y;
      ReplaceInputs(net, x, y);
    }
    removed[i] = 1;
    ++n;
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
