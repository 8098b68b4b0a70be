// "infer_dtypes": the dtypes of op outputs from their inputs', by each op's
// OutType (its op_defs.inc row). Importers that do not know intermediates'
// types (ONNX nodes carry none) leave a placeholder there; the GPU backends
// choose kernels by the declared dtypes, so a bool mask or an i64 index
// computed in the graph needs its real dtype in the file.
#include "kiln/passes.h"
#include "ops/op_defs.h"

namespace kiln {

namespace {

// Output j's dtype, or false when it cannot be told (an input of unknown
// type, or an op whose type is not inferred).
bool OutputDtype(const fb::OpT& op, const OpDef& def, size_t j, const std::vector<const fb::DataType*>& in,
                 fb::DataType* out) {
  auto input = [&](size_t k) -> bool {
    if (k >= in.size() || !in[k]) return false;
    *out = *in[k];
    return true;
  };
  switch (def.out_type) {
    case OutType::kLike0: return input(0);
    case OutType::kLike1: return input(1);
    case OutType::kLike2: return input(2);
    case OutType::kBool: *out = fb::DataType::BOOL; return true;
    case OutType::kI64: *out = fb::DataType::I64; return true;
    case OutType::kIdx:
      if (j == 0) return input(0);
      *out = fb::DataType::I64;
      return true;
    case OutType::kNone: return false;
    case OutType::kParam: break;
  }
  switch (op.type) {
    case fb::OpType::Cast:
      if (!op.params.AsCastParams()) return false;
      *out = op.params.AsCastParams()->to;
      return true;
    case fb::OpType::EyeLike:
      if (op.params.AsEyeLikeParams() && op.params.AsEyeLikeParams()->has_dtype) {
        *out = op.params.AsEyeLikeParams()->dtype;
        return true;
      }
      return input(0);
    case fb::OpType::ConstantOfShape:
      if (op.inputs.size() > 1 && op.inputs[1] >= 0) return input(1);
      *out = fb::DataType::F32;
      return true;
    case fb::OpType::HannWindow:
    case fb::OpType::HammingWindow:
    case fb::OpType::BlackmanWindow:
    case fb::OpType::MelWeightMatrix:
      *out = op.params.AsWindowParams() ? op.params.AsWindowParams()->dtype : fb::DataType::F32;
      return true;
    case fb::OpType::SequenceEmpty:
      *out = op.params.AsSequenceParams() ? op.params.AsSequenceParams()->dtype : fb::DataType::F32;
      return true;
    case fb::OpType::QuantizeLinear:
      if (op.inputs.size() > 2 && op.inputs[2] >= 0) return input(2);
      *out = fb::DataType::U8;
      return true;
    case fb::OpType::DynamicQuantizeLinear:
      *out = j == 1 ? fb::DataType::F32 : fb::DataType::U8;
      return true;
    case fb::OpType::MatMulInteger:
    case fb::OpType::ConvInteger:
      *out = fb::DataType::I32;
      return true;
    case fb::OpType::QLinearMatMul:
    case fb::OpType::QLinearConv: return input(7);
    default: return false;
  }
}

}  // namespace

StatusOr<int> InferDtypes(fb::NetT& net) {
  const size_t n = net.tensors.size();
  std::vector<bool> known(n, false);
  for (int t : net.inputs)
    if (t >= 0 && static_cast<size_t>(t) < n) known[static_cast<size_t>(t)] = true;
  for (size_t t = 0; t < n; ++t)
    if (net.tensors[t] && (!net.tensors[t]->data.empty() || net.tensors[t]->is_constant)) known[t] = true;
  int changed = 0;
  for (const auto& op : net.ops) {
    if (!op) continue;
    const OpDef* def = FindOpDef(op->type);
    if (op->type == fb::OpType::If || op->type == fb::OpType::Loop || op->type == fb::OpType::Scan ||
        op->type == fb::OpType::Optional) {
      // Their importer declares their outputs from their subgraphs'.
      for (int t : op->outputs)
        if (t >= 0 && static_cast<size_t>(t) < n) known[static_cast<size_t>(t)] = true;
      continue;
    }
    std::vector<const fb::DataType*> in;
    for (int t : op->inputs) {
      if (t >= 0 && static_cast<size_t>(t) >= n) return InvalidArgument("op '%s': input %d out of range", op->name.c_str(), t);
      in.push_back(t >= 0 && known[static_cast<size_t>(t)] ? &net.tensors[static_cast<size_t>(t)]->dtype : nullptr);
    }
    for (size_t j = 0; j < op->outputs.size(); ++j) {
      const int t = op->outputs[j];
      if (t < 0) continue;
      if (static_cast<size_t>(t) >= n) return InvalidArgument("op '%s': output %d out of range", op->name.c_str(), t);
      fb::DataType d;
      if (!def || !OutputDtype(*op, *def, j, in, &d)) continue;  // stays as declared, and unknown
      fb::TensorT& tensor = *net.tensors[static_cast<size_t>(t)];
      if (tensor.dtype != d) {
        tensor.dtype = d;
        ++changed;
      }
      known[static_cast<size_t>(t)] = true;
    }
  }
  return changed;
}

}  // namespace kiln
