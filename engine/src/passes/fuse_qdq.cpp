// fuse_qdq: QDQ-format convolutions become integer ones.
//
//   xq -> DequantizeLinear -> Conv(w = DequantizeLinear(wq), b) -> QuantizeLinear -> yq
//     becomes  QLinearConv(xq, x_scale, x_zero, wq, w_scale, w_zero, y_scale, y_zero, bq) -> yq
//
// so the activations stay 8-bit from one quantized convolution to the next
// and the host runs them through QGemm. Conditions, so that the result is
// the QDQ graph's up to the rounding of the Conv's float sum:
//  - x's DequantizeLinear is per tensor with constant scale and zero point;
//  - w's is a constant int8 / uint8 tensor, per tensor or per output
//    channel (axis 0), constant scale and zero point;
//  - the bias is absent, an f32 constant, or a DequantizeLinear of an int32
//    constant; it becomes int32 at scale x_scale * w_scale[m] (taken as it
//    is when the file's scale is that product, re-rounded otherwise);
//  - the Conv's only reader is a per-tensor QuantizeLinear with constant
//    scale and zero point, and its fused activation (fuse_activation runs
//    first) is None, Relu, Relu6 or Clip, which QLinearConv applies as a
//    clamp of the quantized output.
// DequantizeLinear(x) -> MatMul(DequantizeLinear(w), w a constant 2-D 8-bit
// matrix, per tensor or per column) -> QuantizeLinear becomes QLinearMatMul
// (the host runs it on QGemm as B^T X^T); so does the same Gemm (no transA,
// alpha 1, beta 1), its bias becoming QLinearMatMul's int32 input 8.
// Likewise DequantizeLinear(a), DequantizeLinear(b) -> Add [-> Relu] ->
// QuantizeLinear, all per tensor and of one 8-bit type, becomes QLinearAdd
// (the residual additions of quantized ResNets and MobileNets), whose
// kernels compute each f32 step of the chain, so the result is the same.
// The DequantizeLinear ops stay for their other readers; dead_code removes
// those left without one. FoldDequantize then folds the DequantizeLinear
// of constants that no fusion took (kiln/passes.h).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

bool IsQuantType(fb::DataType t) { return t == fb::DataType::U8 || t == fb::DataType::I8; }

const fb::TensorT& T(const fb::NetT& net, int t) { return *net.tensors[static_cast<size_t>(t)]; }

// A DequantizeLinear / QuantizeLinear's scale and zero point (the zero
// point made a constant of `type` when the op has none).
struct QuantArgs {
  int scale = -1, zero = -1;
  std::vector<float> scales;
  int64_t axis = 1;
};

bool ReadArgs(fb::NetT& net, const fb::OpT& op, fb::DataType type, QuantArgs* q) {
  if (op.inputs.size() < 2 || op.inputs[1] < 0 || !ConstFloats(net, op.inputs[1], &q->scales) || q->scales.empty())
    return false;
  for (float s : q->scales)
    if (!(s > 0) || !std::isfinite(s)) return false;  // the kernels name the problem
  q->scale = op.inputs[1];
  if (op.inputs.size() > 2 && op.inputs[2] >= 0) {
    if (!IsConstant(net, op.inputs[2]) || T(net, op.inputs[2]).dtype != type) return false;
    q->zero = op.inputs[2];
  } else {
    const std::vector<uint8_t> zeros(q->scales.size(), 0);
    const std::vector<int64_t> shape = q->scales.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(q->scales.size())};
    q->zero = AddConstant(net, T(net, op.inputs[1]).name + "_zero", type, shape, zeros.data(), zeros.size());
  }
  if (const fb::AxisParamsT* p = op.params.AsAxisParams()) q->axis = p->axis;
  return true;
}

// The op producing `t` if it is a DequantizeLinear, else -1.
int DequantizeOf(const fb::NetT& net, const NetIndex& idx, int t) {
  const int p = idx.producerOf(t);
  if (p < 0) return -1;
  const fb::OpT& op = *net.ops[static_cast<size_t>(p)];
  if (op.type != fb::OpType::DequantizeLinear || op.inputs.empty() || op.inputs[0] < 0) return -1;
  return p;
}

// The Conv's bias as int32 at scale x_scale * w_scale[m], or false.
bool QuantizedBias(fb::NetT& net, const NetIndex& idx, int b, float sx, const std::vector<float>& sw, int64_t M,
                   std::vector<int32_t>* out, int* reuse) {
  *reuse = -1;
  std::vector<float> real;
  const int dq = DequantizeOf(net, idx, b);
  if (dq >= 0) {
    const fb::OpT& op = *net.ops[static_cast<size_t>(dq)];
    const int bq = op.inputs[0];
    if (!IsConstant(net, bq) || T(net, bq).dtype != fb::DataType::I32) return false;
    std::vector<int64_t> q;
    std::vector<float> sb;
    if (!ConstInts(net, bq, &q) || static_cast<int64_t>(q.size()) != M) return false;
    if (op.inputs.size() < 2 || !ConstFloats(net, op.inputs[1], &sb) || (sb.size() != 1 && static_cast<int64_t>(sb.size()) != M))
      return false;
    std::vector<int64_t> zb(1, 0);
    if (op.inputs.size() > 2 && op.inputs[2] >= 0 && !ConstInts(net, op.inputs[2], &zb)) return false;
    bool same = true;
    for (int64_t m = 0; m < M; ++m) {
      const float want = sx * sw[sw.size() == 1 ? 0 : static_cast<size_t>(m)];
      const float have = sb[sb.size() == 1 ? 0 : static_cast<size_t>(m)];
      same = same && std::fabs(have - want) <= 1e-6f * want;
      for (int64_t z : zb) same = same && z == 0;
    }
    if (same) {
      *reuse = bq;
      return true;
    }
    for (int64_t m = 0; m < M; ++m) {
      const int64_t z = zb[zb.size() == 1 ? 0 : static_cast<size_t>(m)];
      real.push_back(static_cast<float>(q[static_cast<size_t>(m)] - z) * sb[sb.size() == 1 ? 0 : static_cast<size_t>(m)]);
    }
  } else if (!ConstFloats(net, b, &real) || static_cast<int64_t>(real.size()) != M) {
    return false;
  }
  out->resize(static_cast<size_t>(M));
  for (int64_t m = 0; m < M; ++m) {
    const double v = std::nearbyint(static_cast<double>(real[static_cast<size_t>(m)]) /
                                    static_cast<double>(sx * sw[sw.size() == 1 ? 0 : static_cast<size_t>(m)]));
    if (!(std::fabs(v) < 2147483647.0)) return false;
    (*out)[static_cast<size_t>(m)] = static_cast<int32_t>(v);
  }
  return true;
}

// Add's DequantizeLinear -> Add [-> Relu] -> QuantizeLinear -> QLinearAdd,
// all per tensor and of one 8-bit type; true when it rewrote. `removed`
// marks the QuantizeLinear and Relu it took.
bool FuseAdd(fb::NetT& net, const NetIndex& idx, size_t i, std::vector<uint8_t>* removed) {
  fb::OpT& add = *net.ops[i];
  if (add.inputs.size() != 2 || add.outputs.size() != 1) return false;
  int y = add.outputs[0];
  if (!idx.singleUse(y)) return false;
  int relu = -1;
  int next = idx.consumers[static_cast<size_t>(y)][0];
  if (net.ops[static_cast<size_t>(next)]->type == fb::OpType::Relu) {
    relu = next;
    y = net.ops[static_cast<size_t>(relu)]->outputs[0];
    if (!idx.singleUse(y)) return false;
    next = idx.consumers[static_cast<size_t>(y)][0];
  }
  const fb::OpT& qop = *net.ops[static_cast<size_t>(next)];
  if (qop.type != fb::OpType::QuantizeLinear || qop.inputs[0] != y || qop.outputs.size() != 1) return false;
  const int da = DequantizeOf(net, idx, add.inputs[0]), db = DequantizeOf(net, idx, add.inputs[1]);
  if (da < 0 || db < 0) return false;
  const fb::OpT& dqa = *net.ops[static_cast<size_t>(da)];
  const fb::OpT& dqb = *net.ops[static_cast<size_t>(db)];
  const int aq = dqa.inputs[0], bq = dqb.inputs[0], cq = qop.outputs[0];
  const fb::DataType t = T(net, aq).dtype;
  if (!IsQuantType(t) || T(net, bq).dtype != t || T(net, cq).dtype != t) return false;
  QuantArgs qa, qb, qc;
  if (!ReadArgs(net, dqa, t, &qa) || qa.scales.size() != 1) return false;
  if (!ReadArgs(net, dqb, t, &qb) || qb.scales.size() != 1) return false;
  if (!ReadArgs(net, qop, t, &qc) || qc.scales.size() != 1) return false;
  add.type = fb::OpType::QLinearAdd;
  add.inputs = {aq, qa.scale, qa.zero, bq, qb.scale, qb.zero, qc.scale, qc.zero};
  fb::QuantActivationParamsT p;
  if (relu >= 0) p.activation = fb::Activation::Relu;
  add.params.Set(std::move(p));
  add.outputs[0] = cq;
  (*removed)[static_cast<size_t>(next)] = 1;
  if (relu >= 0) (*removed)[static_cast<size_t>(relu)] = 1;
  return true;
}

// DequantizeLinear(x) -> op(DequantizeLinear(w: a constant 8-bit tensor,
// per tensor or per channel along `channel_axis`)) -> QuantizeLinear, the
// shape the Conv and MatMul fusions share: x and y per tensor; op's output
// read by the QuantizeLinear only.
struct WeightedQdq {
  int xq = -1, wq = -1, yq = -1, quantize = -1;  // the 8-bit tensors; the QuantizeLinear op
  QuantArgs ax, aw, ay;
  std::vector<int64_t> wshape;
};

bool MatchWeighted(fb::NetT& net, const NetIndex& idx, const fb::OpT& op, size_t rank_min, size_t rank_max,
                   int channel_axis, WeightedQdq* m) {
  if (op.inputs.size() < 2 || op.outputs.size() != 1 || !idx.singleUse(op.outputs[0])) return false;
  m->quantize = idx.consumers[static_cast<size_t>(op.outputs[0])][0];
  const fb::OpT& qop = *net.ops[static_cast<size_t>(m->quantize)];
  if (qop.type != fb::OpType::QuantizeLinear || qop.inputs[0] != op.outputs[0] || qop.outputs.size() != 1) return false;
  const int dxi = DequantizeOf(net, idx, op.inputs[0]), dwi = DequantizeOf(net, idx, op.inputs[1]);
  if (dxi < 0 || dwi < 0) return false;
  const fb::OpT& dx = *net.ops[static_cast<size_t>(dxi)];
  const fb::OpT& dw = *net.ops[static_cast<size_t>(dwi)];
  m->xq = dx.inputs[0], m->wq = dw.inputs[0], m->yq = qop.outputs[0];
  const fb::DataType xt = T(net, m->xq).dtype, wt = T(net, m->wq).dtype, yt = T(net, m->yq).dtype;
  if (!IsQuantType(xt) || !IsQuantType(wt) || !IsQuantType(yt) || !IsConstant(net, m->wq)) return false;
  if (!StaticShapeOf(T(net, m->wq), &m->wshape) || m->wshape.size() < rank_min || m->wshape.size() > rank_max)
    return false;
  if (!ReadArgs(net, dx, xt, &m->ax) || m->ax.scales.size() != 1) return false;
  if (!ReadArgs(net, dw, wt, &m->aw)) return false;
  const int64_t rank = static_cast<int64_t>(m->wshape.size());
  const int64_t axis = m->aw.axis < 0 ? m->aw.axis + rank : m->aw.axis;
  if (m->aw.scales.size() != 1 && (static_cast<int64_t>(m->aw.scales.size()) != m->wshape[static_cast<size_t>(channel_axis)] ||
                                   axis != channel_axis))
    return false;
  return ReadArgs(net, qop, yt, &m->ay) && m->ay.scales.size() == 1;
}

// The op's bias b (n values) as an int32 tensor at x_scale * w_scale
// (QuantizedBias: the file's own where it already is one) in *out, or false.
bool Int32Bias(fb::NetT& net, const NetIndex& idx, int b, const WeightedQdq& m, int64_t n, int* out) {
  std::vector<int32_t> bq;
  int reuse = -1;
  if (!QuantizedBias(net, idx, b, m.ax.scales[0], m.aw.scales, n, &bq, &reuse)) return false;
  *out = reuse >= 0 ? reuse
                    : AddConstant(net, T(net, b).name + "_i32", fb::DataType::I32, {n}, bq.data(),
                                  bq.size() * sizeof(int32_t));
  return true;
}

// ... -> MatMul(w [K, N], per tensor or per column) -> ... becomes
// QLinearMatMul; true when it rewrote.
bool FuseMatMul(fb::NetT& net, const NetIndex& idx, size_t i, std::vector<uint8_t>* removed) {
  fb::OpT& mm = *net.ops[i];
  WeightedQdq m;
  if (mm.inputs.size() != 2 || !MatchWeighted(net, idx, mm, 2, 2, 1, &m)) return false;
  mm.type = fb::OpType::QLinearMatMul;
  mm.inputs = {m.xq, m.ax.scale, m.ax.zero, m.wq, m.aw.scale, m.aw.zero, m.ay.scale, m.ay.zero};
  mm.params.Reset();
  mm.outputs[0] = m.yq;
  (*removed)[static_cast<size_t>(m.quantize)] = 1;
  return true;
}

// ... -> Gemm(x, w, bias) -> ... with w per tensor or per output column
// (axis 0 of a transposed w), no transA, alpha 1, beta 1 where there is a
// bias, no fused activation: QLinearMatMul on w as [K, N] (transposed here
// when transB) with the bias as its input 8, int32 at x_scale * w_scale[n]
// (the quantized classifiers at the end of CNNs); true when it rewrote.
bool FuseGemm(fb::NetT& net, const NetIndex& idx, size_t i, std::vector<uint8_t>* removed) {
  fb::OpT& gemm = *net.ops[i];
  const fb::GemmParamsT defaults;
  const fb::GemmParamsT* p = gemm.params.AsGemmParams() ? gemm.params.AsGemmParams() : &defaults;
  const bool has_bias = gemm.inputs.size() > 2 && gemm.inputs[2] >= 0;
  if (gemm.inputs.size() > 3 || p->trans_a || p->alpha != 1.0f || (has_bias && p->beta != 1.0f) ||
      p->activation != fb::Activation::None)
    return false;
  WeightedQdq m;
  if (!MatchWeighted(net, idx, gemm, 2, 2, p->trans_b ? 0 : 1, &m)) return false;
  const int64_t N = m.wshape[p->trans_b ? 0 : 1], K = m.wshape[p->trans_b ? 1 : 0];
  if (static_cast<int64_t>(T(net, m.wq).data.size()) != N * K) return false;  // not in memory
  int bias = -1;
  if (has_bias && !Int32Bias(net, idx, gemm.inputs[2], m, N, &bias)) return false;
  int w = m.wq;
  if (p->trans_b) {
    const fb::TensorT& wt = T(net, m.wq);
    std::vector<uint8_t> kn(wt.data.size());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) kn[static_cast<size_t>(k * N + n)] = wt.data[static_cast<size_t>(n * K + k)];
    w = AddConstant(net, wt.name + "_kn", wt.dtype, {K, N}, kn.data(), kn.size());
  }
  gemm.type = fb::OpType::QLinearMatMul;
  gemm.inputs = {m.xq, m.ax.scale, m.ax.zero, w, m.aw.scale, m.aw.zero, m.ay.scale, m.ay.zero};
  if (bias >= 0) gemm.inputs.push_back(bias);
  gemm.params.Reset();
  gemm.outputs[0] = m.yq;
  (*removed)[static_cast<size_t>(m.quantize)] = 1;
  return true;
}

bool ClampActivation(const fb::ConvParamsT* p) {
  if (!p) return true;
  switch (p->activation) {
    case fb::Activation::None:
    case fb::Activation::Relu:
    case fb::Activation::Relu6:
    case fb::Activation::Clip: return true;
    default: return false;
  }
}

// ... -> Conv(w [M, C/g, k...], per tensor or per output channel; bias)
// [fused clamp] -> ... becomes QLinearConv; true when it rewrote.
bool FuseConv(fb::NetT& net, const NetIndex& idx, size_t i, std::vector<uint8_t>* removed) {
  fb::OpT& conv = *net.ops[i];
  WeightedQdq m;
  if (conv.inputs.size() > 3) return false;  // a fused residual (fuse_residual): QLinearConv has none
  if (!ClampActivation(conv.params.AsConvParams()) || !MatchWeighted(net, idx, conv, 3, SIZE_MAX, 0, &m)) return false;
  const int64_t M = m.wshape[0];
  int bias = -1;
  if (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !Int32Bias(net, idx, conv.inputs[2], m, M, &bias)) return false;
  conv.type = fb::OpType::QLinearConv;
  conv.inputs = {m.xq, m.ax.scale, m.ax.zero, m.wq, m.aw.scale, m.aw.zero, m.ay.scale, m.ay.zero};
  if (bias >= 0) conv.inputs.push_back(bias);
  conv.outputs[0] = m.yq;
  (*removed)[static_cast<size_t>(m.quantize)] = 1;
  return true;
}

}  // namespace

StatusOr<int> FuseQdq(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fuse_qdq"));
  std::vector<uint8_t> removed(net.ops.size(), 0);
  int n = 0;
  NetIndex idx(net, removed);
  size_t indexed = net.tensors.size();
  for (size_t i = 0; i < net.ops.size(); ++i) {
    if (indexed != net.tensors.size()) {  // constants added since: index them too
      idx = NetIndex(net, removed);
      indexed = net.tensors.size();
    }
    const fb::OpType type = net.ops[i]->type;
    const bool fused = type == fb::OpType::Add      ? FuseAdd(net, idx, i, &removed)
                       : type == fb::OpType::MatMul ? FuseMatMul(net, idx, i, &removed)
                       : type == fb::OpType::Gemm   ? FuseGemm(net, idx, i, &removed)
                       : type == fb::OpType::Conv   ? FuseConv(net, idx, i, &removed)
                                                    : false;
    if (!fused) continue;
    ++n;
    idx = NetIndex(net, removed);
    indexed = net.tensors.size();
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
