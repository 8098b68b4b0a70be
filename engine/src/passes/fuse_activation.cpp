// fuse_activation: an activation right after a Conv or Gemm becomes the
// producer's fused activation, applied by the kernel as it writes its output
// (host: nn_common.cpp ApplyFusedActivation). Supported there: Relu, Relu6
// ([0, 6]), Clip [min, max], LeakyRelu (alpha), Sigmoid, HardSwish, Gelu
// (the exact erf form only) and Silu. The producer's output must have
// exactly one reader (the activation) and not be a graph output; the
// producer then writes the activation's output tensor. A Gemm followed by a
// Reshape (matmul_to_gemm's N-D form) takes the activation after the
// Reshape the same way; the Reshape then writes its output.
// Gated forms, y * gate(y) as two ops, count as one activation: Mul(y,
// Sigmoid(y)) is Silu and Mul(y, HardSigmoid(y)) with alpha 1/6 and beta 1/2
// is HardSwish (how torch exports them below opset 14); then y has exactly
// the two readers, and the gate only the Mul.
#include <cmath>

#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

struct Act {
  fb::Activation type = fb::Activation::None;
  float lo = -INFINITY, hi = INFINITY, alpha = 0.01f;
};

// The fused form of activation op `op`; None when it has none.
Act ReadActivation(const fb::NetT& net, const fb::OpT& op) {
  Act a;
  if (op.inputs.empty() || op.outputs.size() != 1) return a;
  switch (op.type) {
    case fb::OpType::Relu:
      a.type = fb::Activation::Relu;
      break;
    case fb::OpType::Sigmoid:
      a.type = fb::Activation::Sigmoid;
      break;
    case fb::OpType::HardSwish:
      a.type = fb::Activation::HardSwish;
      break;
    case fb::OpType::LeakyRelu: {
      const fb::LeakyReluParamsT* p = op.params.AsLeakyReluParams();
      a.type = fb::Activation::LeakyRelu;
      a.alpha = p ? p->alpha : 0.01f;
      break;
    }
    case fb::OpType::Gelu: {
      const fb::GeluParamsT* p = op.params.AsGeluParams();
      if (!p || p->approximate == fb::GeluApproximation::None) a.type = fb::Activation::Gelu;
      break;
    }
    case fb::OpType::Clip: {
      double lo, hi;
      if (!ClipBounds(net, op, &lo, &hi)) return a;
      a.lo = static_cast<float>(lo);
      a.hi = static_cast<float>(hi);
      if (lo == 0 && hi == 6)
        a.type = fb::Activation::Relu6;
      else if (lo == 0 && std::isinf(hi) && hi > 0)
        a.type = fb::Activation::Relu;
      else
        a.type = fb::Activation::Clip;
      break;
    }
    default:
      break;
  }
  return a;
}

template <typename P>
bool SetActivation(P* p, const Act& a) {
  if (p->activation != fb::Activation::None) return false;
  p->activation = a.type;
  if (a.type == fb::Activation::Clip) {
    p->activation_min = a.lo;
    p->activation_max = a.hi;
  } else if (a.type == fb::Activation::Relu6) {
    p->activation_min = 0.f;
    p->activation_max = 6.f;
  }
  if (a.type == fb::Activation::LeakyRelu) p->activation_alpha = a.alpha;
  return true;
}

// Mul `op` as y * gate(y) (either order): the gate's op index and the
// activation it makes with the Mul, or -1.
int GatedActivation(const fb::NetT& net, const NetIndex& idx, const fb::OpT& op, int* y, Act* a) {
  if (op.type != fb::OpType::Mul || op.inputs.size() != 2 || op.outputs.size() != 1) return -1;
  for (int side = 0; side < 2; ++side) {
    const int g = op.inputs[static_cast<size_t>(side)], x = op.inputs[static_cast<size_t>(1 - side)];
    const int gp = idx.producerOf(g);
    if (gp < 0 || !idx.singleUse(g) || x < 0) continue;
    const fb::OpT& gate = *net.ops[static_cast<size_t>(gp)];
    if (gate.inputs.size() != 1 || gate.inputs[0] != x || gate.outputs.size() != 1) continue;
    if (gate.type == fb::OpType::Sigmoid) {
      a->type = fb::Activation::Silu;
    } else if (gate.type == fb::OpType::HardSigmoid) {
      const fb::HardSigmoidParamsT* p = gate.params.AsHardSigmoidParams();
      const float alpha = p ? p->alpha : 0.2f, beta = p ? p->beta : 0.5f;
      if (std::fabs(alpha - 1.f / 6.f) > 1e-6f || beta != 0.5f) continue;
      a->type = fb::Activation::HardSwish;
    } else {
      continue;
    }
    *y = x;
    return gp;
  }
  return -1;
}

}  // namespace

StatusOr<int> FuseActivation(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fuse_activation"));
  std::vector<uint8_t> removed(net.ops.size(), 0);
  NetIndex idx(net, removed);
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    const fb::OpT& act = *net.ops[i];
    Act a = ReadActivation(net, act);
    int x = act.inputs.empty() ? -1 : act.inputs[0];
    const int gate = a.type == fb::Activation::None ? GatedActivation(net, idx, act, &x, &a) : -1;
    if (a.type == fb::Activation::None) continue;
    const int p = idx.producerOf(x);
    if (p < 0 || x < 0 || idx.is_output[static_cast<size_t>(x)] || idx.uses(x) != (gate >= 0 ? 2 : 1)) continue;
    // Through a Reshape of a Gemm's output (matmul_to_gemm's N-D form): the
    // activation is elementwise, so the Gemm applies it and the Reshape
    // writes the activation's output.
    int reshape = -1, q = p;
    if (net.ops[static_cast<size_t>(p)]->type == fb::OpType::Reshape && gate < 0) {
      const fb::OpT& r = *net.ops[static_cast<size_t>(p)];
      const int g = r.inputs.empty() ? -1 : r.inputs[0];
      const int gp = g < 0 ? -1 : idx.producerOf(g);
      if (gp < 0 || idx.is_output[static_cast<size_t>(g)] || idx.uses(g) != 1 || r.outputs.size() != 1 ||
          net.ops[static_cast<size_t>(gp)]->type != fb::OpType::Gemm)
        continue;
      reshape = p;
      q = gp;
    }
    fb::OpT& prod = *net.ops[static_cast<size_t>(q)];
    if (prod.outputs.size() != 1) continue;
    if (prod.type == fb::OpType::Conv && reshape < 0) {
      // A fused residual (fuse_residual) takes Relu only: the GPU backends
      // apply it after the residual's Add.
      if (prod.inputs.size() > 3 && a.type != fb::Activation::Relu) continue;
      if (!prod.params.AsConvParams()) prod.params.Set(fb::ConvParamsT());
      if (!SetActivation(prod.params.AsConvParams(), a)) continue;
    } else if (prod.type == fb::OpType::Gemm) {
      if (!prod.params.AsGemmParams()) prod.params.Set(fb::GemmParamsT());
      if (!SetActivation(prod.params.AsGemmParams(), a)) continue;
    } else {
      continue;
    }
    if (reshape >= 0)
      net.ops[static_cast<size_t>(reshape)]->outputs[0] = act.outputs[0];
    else
      prod.outputs[0] = act.outputs[0];
    removed[i] = 1;
    if (gate >= 0) removed[static_cast<size_t>(gate)] = 1;
    ++n;
    idx = NetIndex(net, removed);
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
