// fuse_residual: a residual block's Add (and the Relu after it) becomes part
// of the Conv that computes one of its operands:
//
//   c = Conv(x, W, B)            (no activation)
//   y = Add(c, r) | Add(r, c)    [z = Relu(y)]
//   ->  y | z = Conv(x, W, B, r)  with activation None | Relu
//
// Kiln's Conv computes act(conv(x) + B + r) (schema/kiln.fbs, ConvParams):
// the host adds r in the GEMM's epilogue, so the sum is never written and
// read again on its own. c and y must each have exactly one reader and not
// be graph outputs; r and c must have the same static shape and dtype (no
// broadcast), and r must not be c. The fused op takes the place of the last
// op it replaces (the Add or the Relu), where r and the Conv's inputs are all
// computed: ResNet's projection shortcut is often exported after the conv
// whose output it meets.
#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

StatusOr<int> FuseResidual(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fuse_residual"));
  const StaticShapes shapes = InferStaticShapes(net);
  std::vector<uint8_t> removed(net.ops.size(), 0);
  NetIndex idx(net, removed);
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    const fb::OpT& add = *net.ops[i];
    if (removed[i] || add.type != fb::OpType::Add || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    // The Conv operand: the first input made by a Conv this can take.
    int ci = -1, c = -1, r = -1;
    for (int side = 0; side < 2 && ci < 0; ++side) {
      const int t = add.inputs[static_cast<size_t>(side)], p = idx.producerOf(t);
      if (p < 0 || !idx.singleUse(t)) continue;
      const fb::OpT& conv = *net.ops[static_cast<size_t>(p)];
      const fb::ConvParamsT* cp = conv.params.AsConvParams();
      if (conv.type != fb::OpType::Conv || conv.inputs.size() > 3 || conv.outputs.size() != 1 ||
          (cp && cp->activation != fb::Activation::None))
        continue;
      ci = p, c = t, r = add.inputs[static_cast<size_t>(1 - side)];
    }
    if (ci < 0 || r < 0 || r == c || !shapes.has(r) || !shapes.has(c)) continue;
    if (shapes.shape[static_cast<size_t>(r)] != shapes.shape[static_cast<size_t>(c)] ||
        shapes.dtype[static_cast<size_t>(r)] != fb::DataType::F32 ||
        shapes.dtype[static_cast<size_t>(c)] != fb::DataType::F32)
      continue;
    // A Relu reading only the sum joins too.
    const int y = add.outputs[0];
    const int relu = idx.singleUse(y) ? OnlyReader(net, idx, y, fb::OpType::Relu) : -1;
    const size_t last = relu >= 0 ? static_cast<size_t>(relu) : i;
    // The Conv moves to `last` (its output had one reader, the Add, so
    // nothing between reads it), with r as its fourth input.
    std::unique_ptr<fb::OpT> fused = std::move(net.ops[static_cast<size_t>(ci)]);
    net.ops[static_cast<size_t>(ci)] = std::make_unique<fb::OpT>();  // an empty placeholder, removed below
    fused->inputs.resize(3, -1);
    fused->inputs.push_back(r);
    fused->outputs = net.ops[last]->outputs;
    if (relu >= 0) {
      if (!fused->params.AsConvParams()) fused->params.Set(fb::ConvParamsT());
      fused->params.AsConvParams()->activation = fb::Activation::Relu;
      removed[i] = 1;
    }
    removed[static_cast<size_t>(ci)] = 1;
    net.ops[last] = std::move(fused);
    removed[last] = 0;
    ++n;
    idx = NetIndex(net, removed);
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
