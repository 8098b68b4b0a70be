#include "passes/pass_util.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_set>

#include "checked_math.h"
#include "graph.h"
#include "kiln/tensor.h"
#include "ops/op_defs.h"
#include "ops/shape_inference.h"

namespace kiln::passes {

Status CheckIndices(const fb::NetT& net, const char* pass) {
  const int n = static_cast<int>(net.tensors.size());
  for (size_t i = 0; i < net.tensors.size(); ++i)
    if (!net.tensors[i]) return InvalidArgument("%s: tensor %zu is null", pass, i);
  for (size_t i = 0; i < net.ops.size(); ++i) {
    const fb::OpT* op = net.ops[i].get();
    if (!op) return InvalidArgument("%s: op %zu is null", pass, i);
    // Input and output counts as the verifier checks them, so that passes
    // may read an Add's two inputs or any op's first output without checks.
    const OpDef* def = FindOpDef(op->type);
    if (!def)
      return InvalidArgument("%s: op %zu '%s': unknown op type %d", pass, i, op->name.c_str(),
                             static_cast<int>(op->type));
    const int nin = static_cast<int>(op->inputs.size()), nout = static_cast<int>(op->outputs.size());
    if (nin < def->min_inputs || nin > def->max_inputs || nout < def->min_outputs || nout > def->max_outputs)
      return InvalidArgument("%s: op %zu '%s': %s with %d inputs and %d outputs", pass, i, op->name.c_str(), def->name,
                             nin, nout);
    for (int k = 0; k < nin; ++k) {
      const int t = op->inputs[static_cast<size_t>(k)];
      if (t < -1 || t >= n)
        return InvalidArgument("%s: op %zu '%s': input %d out of range (%d tensors)", pass, i, op->name.c_str(), t, n);
      if (t == -1 && k < def->min_inputs)
        return InvalidArgument("%s: op %zu '%s': %s input %d is required but missing", pass, i, op->name.c_str(),
                               def->name, k);
    }
    for (int t : op->outputs)
      if (t < 0 || t >= n)
        return InvalidArgument("%s: op %zu '%s': output %d out of range (%d tensors)", pass, i, op->name.c_str(), t, n);
  }
  for (int t : net.inputs)
    if (t < 0 || t >= n) return InvalidArgument("%s: graph input %d out of range (%d tensors)", pass, t, n);
  for (int t : net.outputs)
    if (t < 0 || t >= n) return InvalidArgument("%s: graph output %d out of range (%d tensors)", pass, t, n);
  return Status::Ok();
}

NetIndex::NetIndex(const fb::NetT& net, const std::vector<uint8_t>& removed) {
  const size_t n = net.tensors.size();
  producer.assign(n, -1);
  consumers.assign(n, {});
  is_output.assign(n, 0);
  is_input.assign(n, 0);
  for (size_t i = 0; i < net.ops.size(); ++i) {
    if (i < removed.size() && removed[i]) continue;
    for (int t : net.ops[i]->inputs)
      if (t >= 0) consumers[static_cast<size_t>(t)].push_back(static_cast<int>(i));
    for (int t : net.ops[i]->outputs) producer[static_cast<size_t>(t)] = static_cast<int>(i);
  }
  for (int t : net.outputs) is_output[static_cast<size_t>(t)] = 1;
  for (int t : net.inputs) is_input[static_cast<size_t>(t)] = 1;
}

bool IsConstant(const fb::TensorT& t) {
  if (t.external || t.quant) return false;
  return !t.data.empty() || t.is_constant;
}

bool IsConstant(const fb::NetT& net, int t) { return t >= 0 && IsConstant(*net.tensors[static_cast<size_t>(t)]); }

bool StaticShapeOf(const fb::TensorT& t, std::vector<int64_t>* shape) {
  if (t.unknown_rank) return false;
  shape->clear();
  for (const auto& d : t.shape) {
    if (!d || d->size < 0) return false;
    shape->push_back(d->size);
  }
  return true;
}

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n;
  return CheckedElementCount(shape, &n) ? n : kDimOverflow;
}

namespace {

// The constant's data when its declared shape matches its bytes.
const fb::TensorT* CheckedConstant(const fb::NetT& net, int t, fb::DataType dtype, std::vector<int64_t>* shape) {
  if (!IsConstant(net, t)) return nullptr;
  const fb::TensorT& tt = *net.tensors[static_cast<size_t>(t)];
  if (tt.dtype != dtype || !StaticShapeOf(tt, shape)) return nullptr;
  size_t bytes = 0;
  if (!CheckedShapeBytes(*shape, DataTypeSize(dtype), &bytes) || bytes != tt.data.size()) return nullptr;
  return &tt;
}

}  // namespace

bool ConstFloats(const fb::NetT& net, int t, std::vector<float>* v) {
  std::vector<int64_t> shape;
  const fb::TensorT* tt = CheckedConstant(net, t, fb::DataType::F32, &shape);
  if (!tt) return false;
  v->resize(tt->data.size() / 4);
  if (!v->empty()) std::memcpy(v->data(), tt->data.data(), tt->data.size());
  return true;
}

bool ConstBools(const fb::NetT& net, int t, std::vector<uint8_t>* v, std::vector<int64_t>* shape) {
  const fb::TensorT* tt = CheckedConstant(net, t, fb::DataType::BOOL, shape);
  if (!tt) return false;
  v->assign(tt->data.begin(), tt->data.end());
  return true;
}

bool ConstInts(const fb::NetT& net, int t, std::vector<int64_t>* v) {
  std::vector<int64_t> shape;
  if (const fb::TensorT* tt = CheckedConstant(net, t, fb::DataType::I64, &shape)) {
    v->resize(tt->data.size() / 8);
    if (!v->empty()) std::memcpy(v->data(), tt->data.data(), tt->data.size());
    return true;
  }
  if (const fb::TensorT* tt = CheckedConstant(net, t, fb::DataType::I32, &shape)) {
    std::vector<int32_t> w(tt->data.size() / 4);
    if (!w.empty()) std::memcpy(w.data(), tt->data.data(), tt->data.size());
    v->assign(w.begin(), w.end());
    return true;
  }
  return false;
}

bool ConstScalar(const fb::NetT& net, int t, double* v) {
  std::vector<float> f;
  if (ConstFloats(net, t, &f)) {
    if (f.size() != 1) return false;
    *v = f[0];
    return true;
  }
  std::vector<int64_t> i;
  if (ConstInts(net, t, &i)) {
    if (i.size() != 1) return false;
    *v = static_cast<double>(i[0]);
    return true;
  }
  return false;
}

bool IsScalarNear(const fb::NetT& net, int t, double want, double tol) {
  double v = 0;
  // Rank <= 1 so that broadcasting against it cannot add dimensions.
  if (t < 0 || net.tensors[static_cast<size_t>(t)]->shape.size() > 1) return false;
  return ConstScalar(net, t, &v) && std::fabs(v - want) <= tol * std::max(1.0, std::fabs(want));
}

int AddTensor(fb::NetT& net, const std::string& base, fb::DataType dtype) {
  std::unordered_set<std::string> names;
  for (const auto& t : net.tensors) names.insert(t->name);
  std::string name = base;
  for (int k = 1; names.count(name); ++k) name = base + "_" + std::to_string(k);
  auto t = std::make_unique<fb::TensorT>();
  t->name = name;
  t->dtype = dtype;
  t->unknown_rank = true;
  net.tensors.push_back(std::move(t));
  return static_cast<int>(net.tensors.size()) - 1;
}

int AddConstant(fb::NetT& net, const std::string& base, fb::DataType dtype, const std::vector<int64_t>& shape,
                const void* data, size_t bytes) {
  const int t = AddTensor(net, base, dtype);
  const uint8_t* p = static_cast<const uint8_t*>(data);
  SetConstant(*net.tensors[static_cast<size_t>(t)], dtype, shape, std::vector<uint8_t>(p, p + bytes));
  return t;
}

int AddConstantF32(fb::NetT& net, const std::string& base, const std::vector<int64_t>& shape,
                   const std::vector<float>& v) {
  return AddConstant(net, base, fb::DataType::F32, shape, v.data(), v.size() * sizeof(float));
}

void SetConstant(fb::TensorT& t, fb::DataType dtype, const std::vector<int64_t>& shape, std::vector<uint8_t> bytes) {
  t.dtype = dtype;
  t.shape.clear();
  for (int64_t d : shape) {
    auto dim = std::make_unique<fb::DimT>();
    dim->size = d;
    t.shape.push_back(std::move(dim));
  }
  t.unknown_rank = false;
  t.is_constant = true;
  t.external.reset();
  t.quant.reset();
  t.data = std::move(bytes);
}

void ReplaceInputs(fb::NetT& net, int from, int to) {
  for (auto& op : net.ops)
    for (auto& t : op->inputs)
      if (t == from) t = to;
}

void EraseOps(fb::NetT& net, const std::vector<uint8_t>& removed) {
  size_t w = 0;
  for (size_t i = 0; i < net.ops.size(); ++i)
    if (i >= removed.size() || !removed[i]) net.ops[w++] = std::move(net.ops[i]);
  net.ops.resize(w);
}

int OtherInput(const fb::OpT& op, int t) {
  if (op.inputs.size() != 2) return -2;
  if (op.inputs[0] == t) return op.inputs[1];
  if (op.inputs[1] == t) return op.inputs[0];
  return -2;
}

int OnlyReader(const fb::NetT& net, const NetIndex& idx, int t, fb::OpType type) {
  if (!idx.singleUse(t)) return -1;
  int c = idx.consumers[static_cast<size_t>(t)][0];
  return net.ops[static_cast<size_t>(c)]->type == type ? c : -1;
}

bool ClipBounds(const fb::NetT& net, const fb::OpT& clip, double* lo, double* hi) {
  const fb::ClipParamsT* p = clip.params.AsClipParams();
  *lo = p ? p->min : -INFINITY;
  *hi = p ? p->max : INFINITY;
  if (clip.inputs.size() > 1 && clip.inputs[1] >= 0 && !ConstScalar(net, clip.inputs[1], lo)) return false;
  if (clip.inputs.size() > 2 && clip.inputs[2] >= 0 && !ConstScalar(net, clip.inputs[2], hi)) return false;
  return !std::isnan(*lo) && !std::isnan(*hi) && *lo <= *hi;
}

StaticShapes SeedShapes(const fb::NetT& net) {
  StaticShapes s;
  const size_t n = net.tensors.size();
  s.known.assign(n, 0);
  s.shape.assign(n, {});
  s.dtype.assign(n, fb::DataType::F32);
  auto seed = [&](size_t i) {
    const fb::TensorT& t = *net.tensors[i];
    if (StaticShapeOf(t, &s.shape[i])) {
      s.known[i] = 1;
      s.dtype[i] = t.dtype;
    }
  };
  for (int t : net.inputs) seed(static_cast<size_t>(t));
  for (size_t i = 0; i < n; ++i)
    if (IsConstant(*net.tensors[i])) seed(i);
  return s;
}

bool InferOpShapes(const fb::NetT& net, size_t i, StaticShapes* s) {
  const fb::OpT& op = *net.ops[i];
  ShapeDef def = FindShapeDef(op.type);
  if (!def.fn || op.type == fb::OpType::Constant || op.type == fb::OpType::Custom) return false;
  static const uint8_t kEmpty[8] = {};
  std::vector<std::unique_ptr<Tensor>> owned;
  std::vector<Tensor*> ins, outs;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    int t = op.inputs[k];
    if (t < 0) {
      ins.push_back(nullptr);
      continue;
    }
    if (!s->has(t)) return false;
    const fb::TensorT& tt = *net.tensors[static_cast<size_t>(t)];
    owned.push_back(std::make_unique<Tensor>());
    Tensor* x = owned.back().get();
    x->setName(tt.name);
    x->setDtype(s->dtype[static_cast<size_t>(t)]);
    x->setShape(s->shape[static_cast<size_t>(t)]);
    if (IsConstant(tt)) {
      size_t bytes = 0;
      if (!CheckedShapeBytes(x->shape(), DataTypeSize(tt.dtype), &bytes) || tt.data.size() != bytes) return false;
      x->bind(nullptr, const_cast<uint8_t*>(tt.data.empty() ? kEmpty : tt.data.data()));
    } else if (def.value_inputs >> k & 1) {
      return false;  // its values are only known when the model runs
    }
    ins.push_back(x);
  }
  for (int t : op.outputs) {
    owned.push_back(std::make_unique<Tensor>());
    owned.back()->setName(net.tensors[static_cast<size_t>(t)]->name);
    outs.push_back(owned.back().get());
  }
  // The shape functions read params through the FlatBuffers view: pack this
  // one op into a small buffer of its own.
  fb::NetT shell;
  shell.ops.push_back(std::make_unique<fb::OpT>(op));
  flatbuffers::FlatBufferBuilder fbb(256);
  fbb.Finish(fb::Net::Pack(fbb, &shell));
  const fb::Net* view = flatbuffers::GetRoot<fb::Net>(fbb.GetBufferPointer());
  GraphOp gop;
  gop.type = op.type;
  gop.name = op.name;
  gop.op = view->ops()->Get(0);
  gop.inputs.assign(op.inputs.begin(), op.inputs.end());
  gop.outputs.assign(op.outputs.begin(), op.outputs.end());
  ShapeContext ctx(gop, ins, outs);
  if (!def.fn(ctx).ok()) return false;
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    for (int64_t d : outs[k]->shape())
      if (d < 0) return false;
    size_t t = static_cast<size_t>(op.outputs[k]);
    s->known[t] = 1;
    s->shape[t] = outs[k]->shape();
    s->dtype[t] = outs[k]->dtype();
  }
  return true;
}

StaticShapes InferStaticShapes(const fb::NetT& net) {
  StaticShapes s = SeedShapes(net);
  for (size_t i = 0; i < net.ops.size(); ++i) InferOpShapes(net, i, &s);
  return s;
}

}  // namespace kiln::passes
