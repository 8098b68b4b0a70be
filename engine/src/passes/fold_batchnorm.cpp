// fold_batchnorm: y = (x - mean) * scale / sqrt(var + eps) + bias after a
// Conv or a Gemm with constant weights is a per-output-channel affine map,
// folded into the producer's weights (times s = scale / sqrt(var + eps)) and
// bias ((b - mean) * s + bias). So is a Mul, Div, Add or Sub of the output by
// a constant that is a scalar or one value an output channel (PP-LCNet's
// "learnable affine blocks", a scale and a shift after each conv; Keras'
// Rescaling). The folded weights are new constants; the old ones are left
// for dead_code (another op may share them).
#include <cmath>

#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

struct BnConsts {
  std::vector<double> s, shift;  // y = x * s + shift
};

// The BatchNormalization's per-channel factors, when all its params are
// constant f32 vectors of one length.
bool ReadBn(const fb::NetT& net, const fb::OpT& bn, BnConsts* c) {
  if (bn.inputs.size() != 5 || bn.outputs.size() != 1) return false;
  std::vector<float> scale, bias, mean, var;
  if (!ConstFloats(net, bn.inputs[1], &scale) || !ConstFloats(net, bn.inputs[2], &bias) ||
      !ConstFloats(net, bn.inputs[3], &mean) || !ConstFloats(net, bn.inputs[4], &var))
    return false;
  const size_t n = scale.size();
  if (n == 0 || bias.size() != n || mean.size() != n || var.size() != n) return false;
  const fb::NormParamsT* p = bn.params.AsNormParams();
  const double eps = p ? p->epsilon : 1e-5;
  c->s.resize(n);
  c->shift.resize(n);
  for (size_t m = 0; m < n; ++m) {
    c->s[m] = scale[m] / std::sqrt(static_cast<double>(var[m]) + eps);
    c->shift[m] = bias[m] - mean[m] * c->s[m];
  }
  return true;
}

// The channels and rank of the producer's output, and its channel axis
// (1 for both); false when its weights' shape is not static.
bool OutputGeometry(const fb::NetT& net, const fb::OpT& prod, int64_t* channels, size_t* rank) {
  std::vector<int64_t> wshape;
  if (prod.inputs.size() < 2 || !StaticShapeOf(*net.tensors[static_cast<size_t>(prod.inputs[1])], &wshape))
    return false;
  if (prod.type == fb::OpType::Conv) {
    if (wshape.size() < 3) return false;
    *channels = wshape[0];
    *rank = wshape.size();
    return true;
  }
  const fb::GemmParamsT* p = prod.params.AsGemmParams();
  if (wshape.size() != 2) return false;
  *channels = p && p->trans_b ? wshape[0] : wshape[1];
  *rank = 2;
  return true;
}

// Mul / Div / Add / Sub `op` of the producer's output x by a constant that
// broadcasts along the channel axis only (a scalar, or `channels` values on
// axis 1 of the output, ones elsewhere) as y = x * s + shift.
bool ReadAffine(const fb::NetT& net, const fb::OpT& op, int x, int64_t channels, size_t rank, BnConsts* c) {
  if (op.inputs.size() != 2 || op.outputs.size() != 1) return false;
  const bool x_first = op.inputs[0] == x;
  if (!x_first && op.inputs[1] != x) return false;
  if (!x_first && (op.type == fb::OpType::Div || op.type == fb::OpType::Sub)) return false;  // c / x, c - x
  const int k = x_first ? op.inputs[1] : op.inputs[0];
  std::vector<float> v;
  std::vector<int64_t> shape;
  if (k < 0 || !ConstFloats(net, k, &v) || !StaticShapeOf(*net.tensors[static_cast<size_t>(k)], &shape)) return false;
  if (shape.size() > rank) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const size_t axis = i + rank - shape.size();
    if (shape[i] != 1 && !(axis == 1 && shape[i] == channels)) return false;
  }
  if (v.size() != 1 && static_cast<int64_t>(v.size()) != channels) return false;
  const size_t M = static_cast<size_t>(channels);
  c->s.assign(M, 1.0);
  c->shift.assign(M, 0.0);
  for (size_t m = 0; m < M; ++m) {
    const double val = v[v.size() == 1 ? 0 : m];
    switch (op.type) {
      case fb::OpType::Mul: c->s[m] = val; break;
      case fb::OpType::Div:
        if (val == 0.0) return false;
        c->s[m] = 1.0 / val;
        break;
      case fb::OpType::Add: c->shift[m] = val; break;
      case fb::OpType::Sub: c->shift[m] = -val; break;
      default: return false;
    }
  }
  return true;
}

bool FoldIntoConv(fb::NetT& net, fb::OpT& conv, const BnConsts& c) {
  const fb::ConvParamsT* p = conv.params.AsConvParams();
  if (p && p->activation != fb::Activation::None) return false;
  if (conv.inputs.size() < 2 || conv.outputs.size() != 1) return false;
  std::vector<float> w, b;
  std::vector<int64_t> wshape;
  const int wt = conv.inputs[1];
  if (!ConstFloats(net, wt, &w) || !StaticShapeOf(*net.tensors[static_cast<size_t>(wt)], &wshape)) return false;
  if (wshape.size() < 3 || wshape[0] != static_cast<int64_t>(c.s.size())) return false;
  const size_t M = c.s.size(), per = w.size() / M;
  const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
  if (has_bias) {
    if (!ConstFloats(net, conv.inputs[2], &b) || b.size() != M) return false;
  } else {
    b.assign(M, 0.f);
  }
  for (size_t m = 0; m < M; ++m) {
    for (size_t k = 0; k < per; ++k) w[m * per + k] = static_cast<float>(w[m * per + k] * c.s[m]);
    b[m] = static_cast<float>(b[m] * c.s[m] + c.shift[m]);
  }
  const std::string wname = net.tensors[static_cast<size_t>(wt)]->name;
  int nw = AddConstantF32(net, wname + "/bn_folded", wshape, w);
  int nb = AddConstantF32(net, conv.name + "/bias_bn_folded", {static_cast<int64_t>(M)}, b);
  conv.inputs.resize(3);
  conv.inputs[1] = nw;
  conv.inputs[2] = nb;
  return true;
}

bool FoldIntoGemm(fb::NetT& net, fb::OpT& gemm, const BnConsts& c) {
  fb::GemmParamsT defaults;
  const fb::GemmParamsT* p = gemm.params.AsGemmParams();
  if (!p) p = &defaults;
  if (p->activation != fb::Activation::None || gemm.inputs.size() < 2 || gemm.outputs.size() != 1) return false;
  std::vector<float> w;
  std::vector<int64_t> wshape;
  const int wt = gemm.inputs[1];
  if (!ConstFloats(net, wt, &w) || !StaticShapeOf(*net.tensors[static_cast<size_t>(wt)], &wshape)) return false;
  if (wshape.size() != 2) return false;
  const int64_t N = p->trans_b ? wshape[0] : wshape[1], K = p->trans_b ? wshape[1] : wshape[0];
  if (N != static_cast<int64_t>(c.s.size())) return false;
  // The new bias: [N], or [rows, N] when C has rows of its own.
  std::vector<float> cv;
  std::vector<int64_t> cshape;
  const bool has_c = gemm.inputs.size() > 2 && gemm.inputs[2] >= 0 && p->beta != 0.f;
  int64_t rows = 1, ccols = 1;
  if (has_c) {
    if (!ConstFloats(net, gemm.inputs[2], &cv) ||
        !StaticShapeOf(*net.tensors[static_cast<size_t>(gemm.inputs[2])], &cshape))
      return false;
    if (cshape.size() > 2) return false;
    ccols = cshape.empty() ? 1 : cshape.back();
    rows = cshape.size() == 2 ? cshape[0] : 1;
    if (ccols != 1 && ccols != N) return false;
  }
  std::vector<float> nb(static_cast<size_t>(rows * N));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double cval = has_c ? p->beta * cv[static_cast<size_t>(i * ccols + (ccols == 1 ? 0 : j))] : 0.0;
      nb[static_cast<size_t>(i * N + j)] = static_cast<float>(cval * c.s[j] + c.shift[j]);
    }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      float& v = p->trans_b ? w[static_cast<size_t>(j * K + k)] : w[static_cast<size_t>(k * N + j)];
      v = static_cast<float>(v * c.s[j]);
    }
  std::vector<int64_t> nbshape =
      rows > 1 || cshape.size() == 2 ? std::vector<int64_t>{rows, N} : std::vector<int64_t>{N};
  const std::string wname = net.tensors[static_cast<size_t>(wt)]->name;
  int nw = AddConstantF32(net, wname + "/bn_folded", wshape, w);
  int nbt = AddConstantF32(net, gemm.name + "/bias_bn_folded", nbshape, nb);
  fb::GemmParamsT np = *p;
  np.beta = 1.f;
  gemm.params.Set(np);
  gemm.inputs.resize(3);
  gemm.inputs[1] = nw;
  gemm.inputs[2] = nbt;
  return true;
}

}  // namespace

StatusOr<int> FoldBatchNorm(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fold_batchnorm"));
  std::vector<uint8_t> removed(net.ops.size(), 0);
  NetIndex idx(net, removed);
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    fb::OpT& op = *net.ops[i];
    const bool bn = op.type == fb::OpType::BatchNormalization;
    const bool affine = op.type == fb::OpType::Mul || op.type == fb::OpType::Div || op.type == fb::OpType::Add ||
                        op.type == fb::OpType::Sub;
    if ((!bn && !affine) || op.inputs.empty()) continue;
    // The input a Conv or Gemm writes (either side of a Mul or an Add).
    for (size_t side = 0; side < (affine ? op.inputs.size() : 1); ++side) {
      const int x = op.inputs[side];
      const int p = idx.producerOf(x);
      if (p < 0 || !idx.singleUse(x)) continue;
      fb::OpT& prod = *net.ops[static_cast<size_t>(p)];
      if (prod.type != fb::OpType::Conv && prod.type != fb::OpType::Gemm) continue;
      if (prod.inputs.size() > 3) continue;  // a Conv with a fused residual: the affine would scale it too
      BnConsts c;
      int64_t channels = 0;
      size_t rank = 0;
      if (bn ? !ReadBn(net, op, &c)
             : !OutputGeometry(net, prod, &channels, &rank) || !ReadAffine(net, op, x, channels, rank, &c))
        continue;
      const bool ok = prod.type == fb::OpType::Conv ? FoldIntoConv(net, prod, c) : FoldIntoGemm(net, prod, c);
      if (!ok) continue;
      prod.outputs[0] = op.outputs[0];  // the producer now writes the folded op's output
      removed[i] = 1;
      ++n;
      idx = NetIndex(net, removed);
      break;
    }
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
