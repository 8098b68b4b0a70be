// "upcast_fp16": a graph that computes in float16 (weights and activations
// f16, as a model exported in half precision is) computes in float32: f16
// constants are widened, f16 intermediates declared f32, ops that make f16
// (Cast to f16, EyeLike, the windows, SequenceEmpty) make f32. The app's
// view stays f16: a graph input keeps its f16 type and is widened by a Cast
// after it, a graph output keeps its name and f16 type and is narrowed by a
// Cast before it. Every backend then runs the model with its f32 kernels
// (a GPU at precision low stores the f32 tensors as f16 again).
// Subgraphs are widened whole (their parent passes f32 values in).
#include <cstring>

#include "half.h"
#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

std::unique_ptr<fb::OpT> CastOp(const std::string& name, int in, int out, fb::DataType to) {
  auto op = std::make_unique<fb::OpT>();
  op->type = fb::OpType::Cast;
  op->name = name;
  op->inputs = {in};
  op->outputs = {out};
  fb::CastParamsT p;
  p.to = to;
  op->params.Set(std::move(p));
  return op;
}

int AddTensor(fb::NetT& net, const fb::TensorT& like, const std::string& name, fb::DataType dtype) {
  auto t = std::make_unique<fb::TensorT>();
  t->name = name;
  t->dtype = dtype;
  for (const auto& d : like.shape) {
    auto dim = std::make_unique<fb::DimT>();
    dim->size = d->size;
    dim->symbol = d->symbol;
    t->shape.push_back(std::move(dim));
  }
  t->unknown_rank = like.unknown_rank;
  net.tensors.push_back(std::move(t));
  return static_cast<int>(net.tensors.size()) - 1;
}

}  // namespace

StatusOr<int> UpcastFp16(fb::NetT& net, bool keep_io) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "upcast_fp16"));
  const size_t n = net.tensors.size();
  std::vector<uint8_t> is_input(n, 0), is_output(n, 0);
  for (int t : net.inputs) is_input[static_cast<size_t>(t)] = 1;
  for (int t : net.outputs) is_output[static_cast<size_t>(t)] = 1;
  int changed = 0;
  std::vector<std::unique_ptr<fb::OpT>> head, tail;  // Casts after the inputs, before the outputs
  for (size_t i = 0; i < n; ++i) {
    fb::TensorT& t = *net.tensors[i];
    if (t.dtype != fb::DataType::F16 || t.sequence || t.optional) continue;
    ++changed;
    if (!t.data.empty() || t.is_constant) {  // widen the values
      std::vector<uint8_t> wide(t.data.size() * 2);
      for (size_t k = 0; k < t.data.size() / 2; ++k) {
        uint16_t h;
        std::memcpy(&h, &t.data[k * 2], 2);
        const float f = HalfToFloat(h);
        std::memcpy(&wide[k * 4], &f, 4);
      }
      t.data = std::move(wide);
      t.dtype = fb::DataType::F32;
      continue;
    }
    const std::string name = t.name;
    if (keep_io && is_input[i] && !is_output[i]) {  // f16 in, widened after
      const int wide = AddTensor(net, *net.tensors[i], name + "/f32", fb::DataType::F32);
      ReplaceInputs(net, static_cast<int>(i), wide);
      head.push_back(CastOp(name + "/to_f32", static_cast<int>(i), wide, fb::DataType::F32));
      continue;
    }
    if (keep_io && is_output[i] && !is_input[i]) {  // computed in f32, narrowed for the app under its name
      const int narrow = AddTensor(net, *net.tensors[i], name, fb::DataType::F16);
      net.tensors[i]->name = name + "/f32";
      net.tensors[i]->dtype = fb::DataType::F32;
      for (int& o : net.outputs)
        if (o == static_cast<int>(i)) o = narrow;
      tail.push_back(CastOp(name + "/to_f16", static_cast<int>(i), narrow, fb::DataType::F16));
      continue;
    }
    if (keep_io && is_input[i]) continue;  // an input passed straight out: stays as it is
    t.dtype = fb::DataType::F32;
  }
  for (auto& op : net.ops) {
    if (auto* c = op->params.AsCastParams(); c && c->to == fb::DataType::F16 && op->type == fb::OpType::Cast) {
      c->to = fb::DataType::F32;
      ++changed;
    }
    if (auto* e = op->params.AsEyeLikeParams(); e && e->dtype == fb::DataType::F16) e->dtype = fb::DataType::F32;
    if (auto* w = op->params.AsWindowParams(); w && w->dtype == fb::DataType::F16) w->dtype = fb::DataType::F32;
    if (auto* s = op->params.AsSequenceParams(); s && s->dtype == fb::DataType::F16) s->dtype = fb::DataType::F32;
  }
  if (changed == 0) return 0;
  for (auto& op : net.ops) head.push_back(std::move(op));
  for (auto& op : tail) head.push_back(std::move(op));
  net.ops = std::move(head);
  return changed;
}

}  // namespace kiln
