// fold_constants: ops whose inputs are all constants are run once with the
// engine itself (a one-op model through Interpreter and Session on the host)
// and replaced by their outputs; Shape ops whose input shape is static fold
// to that shape. One forward sweep: an op's folded outputs are constants for
// the ops after it, and the static shapes of the ops that cannot fold are
// inferred on the way so that later Shape ops see them.
#include <algorithm>
#include <cstring>
#include <memory>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "kiln/passes.h"
#include "checked_math.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

struct Folded {
  fb::DataType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// Runs op `op` of `net` (all inputs constants) as a one-op model.
StatusOr<std::vector<Folded>> Evaluate(const fb::NetT& net, const fb::OpT& op) {
  NetBuilder b("fold_constants");
  std::vector<int> ins;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    int t = op.inputs[k];
    if (t < 0) {
      ins.push_back(-1);
      continue;
    }
    const fb::TensorT& tt = *net.tensors[static_cast<size_t>(t)];
    std::vector<int64_t> shape;
    if (!StaticShapeOf(tt, &shape)) return Unsupported("input %zu has no static shape", k);
    ins.push_back(b.addConstant("in" + std::to_string(k), tt.dtype, shape, tt.data.data(), tt.data.size()));
  }
  std::vector<std::string> names;
  for (size_t k = 0; k < op.outputs.size(); ++k) names.push_back("out" + std::to_string(k));
  std::vector<int> outs = b.addOp(op.type, op.name, ins, names, op.params);
  for (int o : outs) b.addOutput(o);
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, b.finish());
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Interpreter> interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  ScheduleConfig config;
  config.type = ForwardType::kHost;
  // A folded op is small: hostile shapes fail fast instead of sizing tables
  // (an empty tensor of [19464193,87381,0,1431633920]) by what the host holds.
  config.maxTensorBytes = kMaxFoldedBytes;
  config.maxSessionBytes = 4 * kMaxFoldedBytes;
  KILN_ASSIGN_OR_RETURN(Session * session, interp->createSession(config));
  KILN_RETURN_IF_ERROR(session->run());
  std::vector<Folded> result;
  for (const std::string& name : names) {
    Tensor* t = session->getOutput(name);
    if (!t) return Internal("no output '%s'", name.c_str());
    Folded f;
    f.dtype = t->dtype();
    f.shape = t->shape();
    f.bytes.resize(t->byteSize());
    auto host = Tensor::wrap(f.shape, f.dtype, f.bytes.data());
    KILN_RETURN_IF_ERROR(t->copyToHostTensor(host.get()));
    result.push_back(std::move(f));
  }
  return result;
}

// The value of Shape(x) for x of static shape `in`, with ONNX start/end.
std::vector<int64_t> ShapeValue(const fb::OpT& op, const std::vector<int64_t>& in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = 0, end = rank;
  if (const fb::ShapeParamsT* p = op.params.AsShapeParams()) {
    start = p->start;
    end = p->end;
  }
  auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return std::min(std::max<int64_t>(v, 0), rank);
  };
  start = clamp(start);
  end = clamp(end);
  if (end < start) end = start;
  return std::vector<int64_t>(in.begin() + start, in.begin() + end);
}

// A DequantizeLinear of constant integers: quantized weights, kept so that
// fuse_qdq can take them as they are (and the file stays a quarter the
// size); FoldDequantize folds those it leaves.
bool DequantizesConstant(const fb::NetT& net, const fb::OpT& op) {
  return op.type == fb::OpType::DequantizeLinear && !op.inputs.empty() && op.inputs[0] >= 0 &&
         IsConstant(net, op.inputs[0]) && net.tensors[static_cast<size_t>(op.inputs[0])]->dtype != fb::DataType::F32;
}

bool Foldable(const fb::NetT& net, const fb::OpT& op) {
  if (op.type == fb::OpType::Constant || op.type == fb::OpType::Custom || op.type == fb::OpType::Invalid) return false;
  // Control flow needs its subgraphs, which a one-op model does not carry.
  if (op.type == fb::OpType::If || op.type == fb::OpType::Loop || op.type == fb::OpType::Scan) return false;
  bool any = false;
  for (int t : op.inputs) {
    if (t < 0) continue;
    if (!IsConstant(net, t)) return false;
    any = true;
  }
  for (int t : op.outputs)  // a quantized result keeps its op (folding writes plain values)
    if (net.tensors[static_cast<size_t>(t)]->quant) return false;
  return any;
}

}  // namespace

namespace {

enum class FoldWhat { kAllButDequantize, kDequantizeOnly };

StatusOr<int> Fold(fb::NetT& net, FoldWhat what) {
  std::vector<uint8_t> is_output(net.tensors.size(), 0);
  for (int t : net.outputs) is_output[static_cast<size_t>(t)] = 1;
  StaticShapes s = SeedShapes(net);
  std::vector<uint8_t> removed(net.ops.size(), 0);
  int folded = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    const fb::OpT& op = *net.ops[i];
    bool feeds_output = false;
    for (int t : op.outputs) feeds_output = feeds_output || is_output[static_cast<size_t>(t)];
    if (feeds_output) {  // a graph output stays produced by an op
      InferOpShapes(net, i, &s);
      continue;
    }
    if (what == FoldWhat::kAllButDequantize && op.type == fb::OpType::Shape && op.inputs.size() == 1 && op.outputs.size() == 1 && s.has(op.inputs[0])) {
      std::vector<int64_t> v = ShapeValue(op, s.shape[static_cast<size_t>(op.inputs[0])]);
      std::vector<uint8_t> bytes(v.size() * 8);
      if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
      const int out = op.outputs[0];
      SetConstant(*net.tensors[static_cast<size_t>(out)], fb::DataType::I64, {static_cast<int64_t>(v.size())},
                  std::move(bytes));
      s.known[static_cast<size_t>(out)] = 1;
      s.shape[static_cast<size_t>(out)] = {static_cast<int64_t>(v.size())};
      s.dtype[static_cast<size_t>(out)] = fb::DataType::I64;
      removed[i] = 1;
      ++folded;
      continue;
    }
    const bool inferred = InferOpShapes(net, i, &s);
    if (!inferred || !Foldable(net, op)) continue;
    if (DequantizesConstant(net, op) != (what == FoldWhat::kDequantizeOnly)) continue;
    uint64_t bytes = 0;
    bool fits = true;
    for (int t : op.outputs) {
      size_t b = 0;
      fits = fits && CheckedShapeBytes(s.shape[static_cast<size_t>(t)], DataTypeSize(s.dtype[static_cast<size_t>(t)]), &b) &&
             !__builtin_add_overflow(bytes, b, &bytes);
    }
    if (!fits || bytes > kMaxFoldedBytes) continue;
    auto values = Evaluate(net, op);
    if (!values.ok()) continue;  // the host cannot run it: keep the op
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      const size_t t = static_cast<size_t>(op.outputs[k]);
      Folded& f = (*values)[k];
      s.known[t] = 1;
      s.shape[t] = f.shape;
      s.dtype[t] = f.dtype;
      SetConstant(*net.tensors[t], f.dtype, f.shape, std::move(f.bytes));
    }
    removed[i] = 1;
    ++folded;
  }
  EraseOps(net, removed);
  return folded;
}

}  // namespace

StatusOr<int> FoldConstants(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fold_constants"));
  return Fold(net, FoldWhat::kAllButDequantize);
}

StatusOr<int> FoldDequantize(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "fold_dequantize"));
  return Fold(net, FoldWhat::kDequantizeOnly);
}

}  // namespace kiln
