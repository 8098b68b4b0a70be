// fuse_layernorm: LayerNorm as torch exports it before opset 17,
//
//   m = ReduceMean(x, axes=[-1]);  d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2), axes=[-1]);  s = Sqrt(Add(v, eps))
//   y = Add(Mul(Div(d, s), scale), bias)      (Mul / Add in either order)
//
// becomes LayerNormalization(x, scale, bias) with axis -1 and epsilon eps.
// The trailing Add is optional (no bias). The axis may also be written as
// rank - 1 when x's rank is statically known. d is read by exactly the Pow
// and the Div; every other intermediate by exactly one op, and none is a
// graph output. scale and bias must be constant f32 vectors over the axis.
#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

// A ReduceMean over only the last axis of its input, keeping dims.
bool IsLastAxisMean(const fb::NetT& net, const StaticShapes& s, const fb::OpT& op) {
  if (op.type != fb::OpType::ReduceMean || op.inputs.empty() || op.outputs.size() != 1) return false;
  const fb::ReduceParamsT* p = op.params.AsReduceParams();
  if (p && !p->keepdims) return false;
  std::vector<int64_t> axes;
  if (op.inputs.size() > 1 && op.inputs[1] >= 0) {
    if (!ConstInts(net, op.inputs[1], &axes)) return false;
  } else if (p) {
    axes.assign(p->axes.begin(), p->axes.end());
  }
  if (axes.size() != 1) return false;
  if (axes[0] == -1) return true;
  const int x = op.inputs[0];
  return s.has(x) && axes[0] == static_cast<int64_t>(s.shape[static_cast<size_t>(x)].size()) - 1;
}

// A constant f32 vector of `n` elements (n < 0: any length > 1).
bool IsVector(const fb::NetT& net, int t, int64_t n, std::vector<float>* v) {
  if (t < 0 || net.tensors[static_cast<size_t>(t)]->shape.size() != 1 || !ConstFloats(net, t, v)) return false;
  return n < 0 ? v->size() > 1 : static_cast<int64_t>(v->size()) == n;
}

struct Match {
  std::vector<int> ops;
  int last = -1, x = -1, scale = -1, bias = -1;
  double eps = 0;
};

bool MatchLayerNorm(const fb::NetT& net, const NetIndex& idx, const StaticShapes& s, int r1, Match* m) {
  const fb::OpT& mean = *net.ops[static_cast<size_t>(r1)];
  if (!IsLastAxisMean(net, s, mean)) return false;
  const int x = mean.inputs[0];
  const int si = OnlyReader(net, idx, mean.outputs[0], fb::OpType::Sub);
  if (si < 0) return false;
  const fb::OpT& sub = *net.ops[static_cast<size_t>(si)];
  if (sub.inputs.size() != 2 || sub.inputs[0] != x || sub.inputs[1] != mean.outputs[0]) return false;
  const int d = sub.outputs[0];
  if (idx.uses(d) != 2 || idx.is_output[static_cast<size_t>(d)]) return false;
  int pi = -1, di = -1;
  for (int c : idx.consumers[static_cast<size_t>(d)]) {
    const fb::OpT& op = *net.ops[static_cast<size_t>(c)];
    if (op.type == fb::OpType::Pow && op.inputs.size() == 2 && op.inputs[0] == d &&
        IsScalarNear(net, op.inputs[1], 2.0))
      pi = c;
    else if (op.type == fb::OpType::Div && op.inputs.size() == 2 && op.inputs[0] == d && op.inputs[1] != d)
      di = c;
  }
  if (pi < 0 || di < 0) return false;
  const int r2 = OnlyReader(net, idx, net.ops[static_cast<size_t>(pi)]->outputs[0], fb::OpType::ReduceMean);
  if (r2 < 0 || !IsLastAxisMean(net, s, *net.ops[static_cast<size_t>(r2)])) return false;
  const int v = net.ops[static_cast<size_t>(r2)]->outputs[0];
  const int ai = OnlyReader(net, idx, v, fb::OpType::Add);
  if (ai < 0) return false;
  const fb::OpT& add = *net.ops[static_cast<size_t>(ai)];
  double eps = 0;
  const int eps_t = OtherInput(add, v);
  if (eps_t < 0 || net.tensors[static_cast<size_t>(eps_t)]->shape.size() > 1 || !ConstScalar(net, eps_t, &eps) ||
      !(eps >= 0))
    return false;
  const int qi = OnlyReader(net, idx, add.outputs[0], fb::OpType::Sqrt);
  if (qi < 0) return false;
  const int q = net.ops[static_cast<size_t>(qi)]->outputs[0];
  if (!idx.singleUse(q) || idx.consumers[static_cast<size_t>(q)][0] != di) return false;
  const fb::OpT& div = *net.ops[static_cast<size_t>(di)];
  if (div.inputs[1] != q) return false;
  const int mi = OnlyReader(net, idx, div.outputs[0], fb::OpType::Mul);
  if (mi < 0) return false;
  const fb::OpT& mul = *net.ops[static_cast<size_t>(mi)];
  const int scale = OtherInput(mul, div.outputs[0]);
  const int64_t C = s.has(x) && !s.shape[static_cast<size_t>(x)].empty() ? s.shape[static_cast<size_t>(x)].back() : -1;
  std::vector<float> sv, bv;
  if (!IsVector(net, scale, C, &sv)) return false;
  m->ops = {r1, si, pi, r2, ai, qi, di, mi};
  m->last = mi;
  m->x = x;
  m->scale = scale;
  m->eps = eps;
  const int y = mul.outputs[0];
  const int bi = OnlyReader(net, idx, y, fb::OpType::Add);
  if (bi >= 0) {
    const int bias = OtherInput(*net.ops[static_cast<size_t>(bi)], y);
    if (IsVector(net, bias, static_cast<int64_t>(sv.size()), &bv)) {
      m->ops.push_back(bi);
      m->last = bi;
      m->bias = bias;
    }
  }
  return true;
}

}  // namespace

StatusOr<int> FuseLayerNorm(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fuse_layernorm"));
  std::vector<uint8_t> removed(net.ops.size(), 0);
  NetIndex idx(net, removed);
  StaticShapes s = InferStaticShapes(net);
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    if (removed[i] || net.ops[i]->type != fb::OpType::ReduceMean) continue;
    Match m;
    if (!MatchLayerNorm(net, idx, s, static_cast<int>(i), &m)) continue;
    for (int o : m.ops) removed[static_cast<size_t>(o)] = 1;
    removed[static_cast<size_t>(m.last)] = 0;
    fb::OpT& ln = *net.ops[static_cast<size_t>(m.last)];
    ln.type = fb::OpType::LayerNormalization;
    ln.inputs = {m.x, m.scale};
    if (m.bias >= 0) ln.inputs.push_back(m.bias);
    fb::NormParamsT p;
    p.epsilon = static_cast<float>(m.eps);
    p.axis = -1;
    ln.params.Set(p);
    ++n;
    idx = NetIndex(net, removed);
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
