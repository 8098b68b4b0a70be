// fuse_attention: scaled dot-product attention spelled out in ops becomes
// one Attention op (schema/kiln.fbs):
//
//   [q = Div(q0, c) | Mul(q0, c)]          (a constant scalar: the scale on Q)
//   s = MatMul(q, kt)
//   [s = Div(s, c) | Mul(s, c)]            (or on the scores)
//   [s = Add(s, mask) | Add(mask, s) | Where(c, fill, s)]  (a constant c, fill -inf or <= -1e30:
//                                                             a constant mask c ? fill : 0)
//   p = Softmax(s, last axis)
//   y = MatMul(p, v)
//   ->  y = Attention(q0 | q, kt, v [, mask])  with scale = the product of the scales
//
// as torch exports nn.MultiheadAttention and scaled_dot_product_attention
// (K's transpose stays an op of its own: kt is what the MatMul reads). Every
// intermediate must have exactly one reader and not be a graph output; the
// shapes must be static and fit Attention's form: Q [..., L, D], KT [..., D,
// S], V [..., S, Dv] with the same batch dims, f32, a mask that broadcasts
// to the scores (InferShapeAttention, ops/attention_mask.h). The fused op takes the
// place of the last MatMul, where all its inputs are computed.
#include <algorithm>
#include <string>

#include "kiln/passes.h"
#include "ops/attention_mask.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

// Op `p` multiplies its other input by a constant scalar: Mul(x, c),
// Mul(c, x) or Div(x, c); `x` is the input of tensor `t`'s side. The factor
// goes to *factor.
bool ScalarFactor(const fb::NetT& net, const fb::OpT& op, int* x, double* factor) {
  if ((op.type != fb::OpType::Mul && op.type != fb::OpType::Div) || op.inputs.size() != 2 || op.outputs.size() != 1)
    return false;
  double c = 0;
  for (int side = 0; side < 2; ++side) {
    if (op.type == fb::OpType::Div && side == 0) continue;  // c / x is not a scale
    const int ct = op.inputs[static_cast<size_t>(side)];
    if (!ConstScalar(net, ct, &c) || net.tensors[static_cast<size_t>(ct)]->dtype != fb::DataType::F32) continue;
    if (op.type == fb::OpType::Div) {
      if (c == 0) return false;
      c = 1 / c;
    }
    *x = op.inputs[static_cast<size_t>(1 - side)];
    *factor = c;
    return true;
  }
  return false;
}

bool IsF32(const StaticShapes& s, int t) { return s.has(t) && s.dtype[static_cast<size_t>(t)] == fb::DataType::F32; }

// Q, KT, V (and a mask of that shape, f32) in Attention's form.
bool FitsAttention(const StaticShapes& s, int q, int kt, int v, const std::vector<int64_t>* mask) {
  if (!IsF32(s, q) || !IsF32(s, kt) || !IsF32(s, v)) return false;
  const auto &Q = s.shape[static_cast<size_t>(q)], &K = s.shape[static_cast<size_t>(kt)],
             &V = s.shape[static_cast<size_t>(v)];
  const size_t r = Q.size();
  if (r < 2 || K.size() != r || V.size() != r || !std::equal(Q.begin(), Q.end() - 2, K.begin()) ||
      !std::equal(Q.begin(), Q.end() - 2, V.begin()) || Q[r - 1] != K[r - 2] || K[r - 1] != V[r - 2])
    return false;
  if (!mask) return true;
  AttentionMask m;
  return MakeAttentionMask(std::vector<int64_t>(Q.begin(), Q.end() - 2), Q[r - 2], K[r - 1], *mask, &m);
}

// Where(cond, fill, x) with cond a constant and fill a constant scalar of
// -inf or at most -1e30 (torch's masked_fill of a causal mask, or of
// finfo.min): the same as Add(x, cond ? fill : 0) ahead of a softmax, as
// x + fill rounds to fill for any |x| below 1e23. The mask's values and
// shape; false for another Where.
bool WhereAsMask(const fb::NetT& net, const fb::OpT& op, std::vector<float>* mask, std::vector<int64_t>* shape) {
  if (op.type != fb::OpType::Where || op.inputs.size() != 3 || op.outputs.size() != 1) return false;
  std::vector<uint8_t> cond;
  double fill = 0;
  if (!ConstBools(net, op.inputs[0], &cond, shape) || !ConstScalar(net, op.inputs[1], &fill) ||
      net.tensors[static_cast<size_t>(op.inputs[1])]->dtype != fb::DataType::F32 || !(fill <= -1e30))
    return false;
  mask->resize(cond.size());
  for (size_t i = 0; i < cond.size(); ++i) (*mask)[i] = cond[i] ? static_cast<float>(fill) : 0.f;
  return true;
}

}  // namespace

StatusOr<int> FuseAttention(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fuse_attention"));
  const StaticShapes shapes = InferStaticShapes(net);
  std::vector<uint8_t> removed(net.ops.size(), 0);
  NetIndex idx(net, removed);
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    const fb::OpT& pv = *net.ops[i];
    if (removed[i] || pv.type != fb::OpType::MatMul || pv.inputs.size() != 2 || pv.outputs.size() != 1) continue;
    const int p = pv.inputs[0], v = pv.inputs[1];
    const int smi = idx.producerOf(p);
    if (smi < 0 || !idx.singleUse(p)) continue;
    const fb::OpT& sm = *net.ops[static_cast<size_t>(smi)];
    if (sm.type != fb::OpType::Softmax || sm.inputs.size() != 1 || !shapes.has(p)) continue;
    const fb::AxisParamsT* ap = sm.params.AsAxisParams();
    const int64_t rank = static_cast<int64_t>(shapes.shape[static_cast<size_t>(p)].size());
    const int64_t axis = ap ? ap->axis : -1;
    if (axis != -1 && axis != rank - 1) continue;
    // Back from the softmax's input: [Add mask] <- [scale] <- MatMul.
    std::vector<size_t> chain = {static_cast<size_t>(smi)};
    double scale = 1;
    int s = sm.inputs[0], mask = -1, qk = -1;
    bool where = false;  // a Where's mask, made a constant when the chain fuses
    std::vector<float> where_mask;
    std::vector<int64_t> where_shape;
    std::string where_name;
    for (int hop = 0; hop < 3 && qk < 0; ++hop) {
      const int pi = idx.producerOf(s);
      if (pi < 0 || !idx.singleUse(s)) break;
      const fb::OpT& o = *net.ops[static_cast<size_t>(pi)];
      int x = -1;
      double f = 1;
      if (o.type == fb::OpType::MatMul && o.inputs.size() == 2 && o.outputs.size() == 1) {
        qk = pi;
      } else if (o.type == fb::OpType::Add && hop == 0 && o.inputs.size() == 2) {
        // The scores' side is the one made by the chain (a MatMul or a scale).
        int side = -1;
        for (int k = 0; k < 2 && side < 0; ++k) {
          const int pk = idx.producerOf(o.inputs[static_cast<size_t>(k)]);
          int unused = -1;
          if (pk >= 0 && (net.ops[static_cast<size_t>(pk)]->type == fb::OpType::MatMul ||
                          ScalarFactor(net, *net.ops[static_cast<size_t>(pk)], &unused, &f)))
            side = k;
        }
        if (side < 0) break;
        mask = o.inputs[static_cast<size_t>(1 - side)];
        s = o.inputs[static_cast<size_t>(side)];
        chain.push_back(static_cast<size_t>(pi));
        continue;
      } else if (hop == 0 && WhereAsMask(net, o, &where_mask, &where_shape)) {
        where = true;
        where_name = o.name;
        s = o.inputs[2];
        chain.push_back(static_cast<size_t>(pi));
        continue;
      } else if (scale == 1 && ScalarFactor(net, o, &x, &f)) {
        scale *= f;
        s = x;
        chain.push_back(static_cast<size_t>(pi));
        continue;
      } else {
        break;
      }
    }
    if (qk < 0) continue;
    const std::vector<int64_t>* mask_shape = where ? &where_shape : nullptr;
    if (mask >= 0) {
      if (!shapes.has(mask) || !IsF32(shapes, mask)) continue;
      mask_shape = &shapes.shape[static_cast<size_t>(mask)];
    }
    chain.push_back(static_cast<size_t>(qk));
    int q = net.ops[static_cast<size_t>(qk)]->inputs[0];
    const int kt = net.ops[static_cast<size_t>(qk)]->inputs[1];
    if (mask == q || mask == kt || mask == v || mask == p) continue;
    // A scale on Q (read by this MatMul only).
    const int qi = idx.producerOf(q);
    int q0 = -1;
    double f = 1;
    if (qi >= 0 && idx.singleUse(q) && ScalarFactor(net, *net.ops[static_cast<size_t>(qi)], &q0, &f) &&
        FitsAttention(shapes, q0, kt, v, mask_shape)) {
      scale *= f;
      q = q0;
      chain.push_back(static_cast<size_t>(qi));
    }
    if (!FitsAttention(shapes, q, kt, v, mask_shape)) continue;
    if (where) mask = AddConstantF32(net, where_name + "_mask", where_shape, where_mask);

    auto fused = std::make_unique<fb::OpT>();
    fused->type = fb::OpType::Attention;
    fused->name = pv.name;
    fused->inputs = {q, kt, v};
    if (mask >= 0) fused->inputs.push_back(mask);
    fused->outputs = pv.outputs;
    fb::AttentionParamsT params;
    params.scale = static_cast<float>(scale);
    fused->params.Set(std::move(params));
    for (size_t c : chain) removed[c] = 1;
    net.ops[i] = std::move(fused);
    ++n;
    idx = NetIndex(net, removed);
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
