// sink_dequantize: ops that only move values run on the 8-bit tensors.
//
//   xq -> DequantizeLinear -> x -> Reshape -> y
//     becomes  xq -> Reshape -> yq -> DequantizeLinear -> y
//
// for Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, DepthToSpace,
// SpaceToDepth, Identity and Concat (whose inputs must all be dequantized
// with one scale and zero point): they pick or reorder elements, so moving
// them before the (per-tensor) DequantizeLinear changes no value, and every
// backend runs them on 8-bit tensors. Likewise MaxPool without Indices: a
// DequantizeLinear (scale > 0) keeps the order of values, so the max of the
// quantized values is the quantized max. The DequantizeLinear sinks along a
// chain of them, op by op. Then a QuantizeLinear of a DequantizeLinear with
// the same scale, zero point and type is the identity and goes:
//
//   yq -> DequantizeLinear -> QuantizeLinear (same parameters) -> zq   ==>   yq (named zq)
//
// so a QDQ model's (or a quantized TFLite model's) reshapes, transposes and
// concatenations between quantized ops stay 8-bit and need no conversion.
// Only activations sink: a DequantizeLinear of a constant is left for
// fold_dequantize. The DequantizeLinear stays for its other readers;
// dead_code removes it when none is left.
#include <cmath>
#include <cstring>

#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

bool Movable(fb::OpType t) {
  switch (t) {
    case fb::OpType::Reshape: case fb::OpType::Flatten: case fb::OpType::Squeeze: case fb::OpType::Unsqueeze:
    case fb::OpType::Transpose: case fb::OpType::Slice: case fb::OpType::DepthToSpace:
    case fb::OpType::SpaceToDepth: case fb::OpType::Identity: case fb::OpType::Concat: case fb::OpType::MaxPool:
      return true;
    default:
      return false;
  }
}

bool IsByteType(fb::DataType t) { return t == fb::DataType::U8 || t == fb::DataType::I8; }

// A per-tensor DequantizeLinear / QuantizeLinear's parameters: the scale's
// bits, the zero point and its type (uint8 0 when absent).
struct Params {
  float scale = 0;
  int64_t zero = 0;
  fb::DataType type = fb::DataType::U8;
  bool operator==(const Params& o) const {
    return std::memcmp(&scale, &o.scale, sizeof scale) == 0 && zero == o.zero && type == o.type;
  }
};

bool ReadParams(const fb::NetT& net, const fb::OpT& op, Params* p) {
  std::vector<float> s;
  if (op.inputs.size() < 2 || op.inputs[1] < 0 || !ConstFloats(net, op.inputs[1], &s) || s.size() != 1) return false;
  p->scale = s[0];
  if (!(p->scale > 0) || !std::isfinite(p->scale)) return false;  // the kernels name the problem
  if (op.inputs.size() > 2 && op.inputs[2] >= 0) {  // one 8-bit constant
    const fb::TensorT& z = *net.tensors[static_cast<size_t>(op.inputs[2])];
    if (!IsConstant(z) || !IsByteType(z.dtype) || z.data.size() != 1) return false;
    p->zero = z.dtype == fb::DataType::I8 ? static_cast<int8_t>(z.data[0]) : z.data[0];
    p->type = z.dtype;
  }
  return IsByteType(p->type);
}

// The per-tensor DequantizeLinear producing activation `t` from an 8-bit
// non-constant tensor; -1 if `t` is not such an output.
int DequantizeOf(const fb::NetT& net, const NetIndex& idx, int t, Params* p) {
  const int d = idx.producerOf(t);
  if (d < 0) return -1;
  const fb::OpT& op = *net.ops[static_cast<size_t>(d)];
  if (op.type != fb::OpType::DequantizeLinear || op.inputs.empty() || op.inputs[0] < 0) return -1;
  const int xq = op.inputs[0];
  if (IsConstant(net, xq) || !ReadParams(net, op, p) || net.tensors[static_cast<size_t>(xq)]->dtype != p->type)
    return -1;
  return d;
}

// Op i reads dequantized values only in its data inputs (all of a Concat's,
// else the first): runs on the 8-bit ones and a new DequantizeLinear after it
// gives its old output. True when it rewrote (the new op is at i + 1).
bool Sink(fb::NetT& net, const NetIndex& idx, size_t i) {
  fb::OpT& op = *net.ops[i];
  if (!Movable(op.type) || op.inputs.empty() || op.outputs.size() != 1 || op.outputs[0] < 0) return false;
  const size_t data = op.type == fb::OpType::Concat ? op.inputs.size() : 1;
  Params p;
  int dq = -1;
  std::vector<int> from(data);
  for (size_t k = 0; k < data; ++k) {
    Params pk;
    const int d = op.inputs[k] < 0 ? -1 : DequantizeOf(net, idx, op.inputs[k], &pk);
    if (d < 0 || (k > 0 && !(pk == p))) return false;
    p = pk;
    dq = d;
    from[k] = net.ops[static_cast<size_t>(d)]->inputs[0];
  }
  const fb::OpT& d = *net.ops[static_cast<size_t>(dq)];
  const int y = op.outputs[0];
  auto yq = std::make_unique<fb::TensorT>();
  yq->name = net.tensors[static_cast<size_t>(y)]->name + "/quantized";
  yq->dtype = p.type;
  const int yqi = static_cast<int>(net.tensors.size());
  net.tensors.push_back(std::move(yq));
  for (size_t k = 0; k < data; ++k) op.inputs[k] = from[k];
  op.outputs[0] = yqi;
  auto deq = std::make_unique<fb::OpT>();
  deq->type = fb::OpType::DequantizeLinear;
  deq->name = op.name + "/dequantize";
  deq->inputs = {yqi, d.inputs[1], d.inputs.size() > 2 ? d.inputs[2] : -1};
  deq->outputs = {y};
  net.ops.insert(net.ops.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(deq));
  return true;
}

bool IsOutput(const fb::NetT& net, int t) {
  for (int o : net.outputs)
    if (o == t) return true;
  return false;
}

// QuantizeLinear i of DequantizeLinear(aq) with the same parameters: its
// readers read aq instead (or aq's producer writes its output, when that is a
// graph output). `removed` marks it.
bool Cancel(fb::NetT& net, const NetIndex& idx, size_t i, std::vector<uint8_t>* removed) {
  const fb::OpT& q = *net.ops[i];
  if (q.type != fb::OpType::QuantizeLinear || q.inputs.empty() || q.outputs.size() != 1) return false;
  Params pq, pd;
  if (!ReadParams(net, q, &pq)) return false;
  const int d = DequantizeOf(net, idx, q.inputs[0], &pd);
  if (d < 0 || !(pd == pq)) return false;
  const int aq = net.ops[static_cast<size_t>(d)]->inputs[0], zq = q.outputs[0];
  if (!IsOutput(net, zq)) {
    ReplaceInputs(net, zq, aq);
  } else {
    const int producer = idx.producerOf(aq);
    if (producer < 0 || IsOutput(net, aq)) return false;  // a graph input copied to a graph output stays
    for (int& o : net.ops[static_cast<size_t>(producer)]->outputs)
      if (o == aq) o = zq;
    ReplaceInputs(net, aq, zq);
  }
  (*removed)[i] = 1;
  return true;
}

}  // namespace

StatusOr<int> SinkDequantize(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "sink_dequantize"));
  int n = 0;
  NetIndex idx(net, std::vector<uint8_t>(net.ops.size(), 0));
  for (size_t i = 0; i < net.ops.size(); ++i) {  // the new DequantizeLinear at i + 1 may sink further
    if (!Sink(net, idx, i)) continue;
    ++n;
    idx = NetIndex(net, std::vector<uint8_t>(net.ops.size(), 0));
  }
  std::vector<uint8_t> removed(net.ops.size(), 0);
  idx = NetIndex(net, removed);
  for (size_t i = 0; i < net.ops.size(); ++i) {
    if (!Cancel(net, idx, i, &removed)) continue;
    ++n;
    idx = NetIndex(net, removed);
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
