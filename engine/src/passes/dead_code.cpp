// dead_code: ops none of whose outputs reach a graph output are removed;
// then tensors that no op, graph input or graph output refers to (weights
// replaced by folding, intermediates of fused patterns) are removed and the
// rest renumbered, keeping their order.
#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

StatusOr<int> RemoveDeadCode(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "dead_code"));
  const size_t nt = net.tensors.size();
  std::vector<uint8_t> live(nt, 0), removed(net.ops.size(), 0);
  for (int t : net.outputs) live[static_cast<size_t>(t)] = 1;
  int n = 0;
  for (size_t i = net.ops.size(); i-- > 0;) {
    const fb::OpT& op = *net.ops[i];
    bool needed = false;
    for (int t : op.outputs) needed = needed || live[static_cast<size_t>(t)];
    if (!needed) {
      removed[i] = 1;
      ++n;
      continue;
    }
    for (int t : op.inputs)
      if (t >= 0) live[static_cast<size_t>(t)] = 1;
  }
  EraseOps(net, removed);

  std::vector<uint8_t> used(nt, 0);
  for (int t : net.inputs) used[static_cast<size_t>(t)] = 1;
  for (int t : net.outputs) used[static_cast<size_t>(t)] = 1;
  for (const auto& op : net.ops) {
    for (int t : op->inputs)
      if (t >= 0) used[static_cast<size_t>(t)] = 1;
    for (int t : op->outputs) used[static_cast<size_t>(t)] = 1;
  }
  std::vector<int> remap(nt, -1);
  size_t w = 0;
  for (size_t t = 0; t < nt; ++t) {
    if (!used[t]) continue;
    remap[t] = static_cast<int>(w);
    net.tensors[w++] = std::move(net.tensors[t]);
  }
  net.tensors.resize(w);
  auto fix = [&](int32_t& t) {
    if (t >= 0) t = remap[static_cast<size_t>(t)];
  };
  for (auto& op : net.ops) {
    for (auto& t : op->inputs) fix(t);
    for (auto& t : op->outputs) fix(t);
  }
  for (auto& t : net.inputs) fix(t);
  for (auto& t : net.outputs) fix(t);
  return n;
}

}  // namespace kiln
