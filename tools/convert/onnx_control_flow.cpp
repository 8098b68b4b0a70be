// ONNX If, Loop and Scan -> Kiln control flow (schema/kiln.fbs SubGraph),
// and the sequence ops (host-only tensors holding lists of tensors).
// Each subgraph is imported by a child importer that resolves outer names
// through its parent: the names it reads from enclosing graphs become its
// trailing inputs (captures), and the op passes them in.
#include "onnx_importer.h"

namespace kiln::onnx_import {

namespace {

// Nesting beyond this is refused at import (the verifier's limit is 16).
constexpr int kMaxImportDepth = 16;

const onnx::GraphProto* GraphAttr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name && a.has_g()) return &a.g();
  return nullptr;
}

std::vector<int> IntsAttr(const onnx::NodeProto& n, const char* name) {
  std::vector<int> v;
  for (const auto& a : n.attribute())
    if (a.name() == name)
      for (int64_t x : a.ints()) v.push_back(static_cast<int>(x));
  return v;
}

// n with every output up to `count` named (the op keeps unused outputs, so
// that its output count matches its subgraph's).
onnx::NodeProto WithOutputs(const onnx::NodeProto& n, int count) {
  onnx::NodeProto m = n;
  for (int k = 0; k < count; ++k) {
    if (k >= m.output_size()) m.add_output("");
    if (m.output(k).empty()) m.set_output(k, n.name() + ":unused" + std::to_string(k));
  }
  return m;
}

}  // namespace

StatusOr<int> OnnxImporter::Resolve(const std::string& name, int k) {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  if (!parent_) {
    if (k >= 0) return InvalidArgument("input %d '%s' is not produced before this node", k, name.c_str());
    return InvalidArgument("'%s' is not produced in this graph or any enclosing one", name.c_str());
  }
  KILN_ASSIGN_OR_RETURN(int outer, parent_->Resolve(name, k));
  const fb::TensorT& ot = *parent_->b_.net().tensors[static_cast<size_t>(outer)];
  int t;
  if (!ot.data.empty() || ot.is_constant) {
    std::vector<int64_t> shape;
    for (const auto& d : ot.shape) shape.push_back(d->size);
    t = b_.addConstant(name, ot.dtype, shape, ot.data.data(), ot.data.size());
  } else {
    t = b_.addInput(name, ot.dtype, {});
    b_.net().tensors[static_cast<size_t>(t)]->unknown_rank = !ot.sequence && !ot.optional;
    SetKind(t, parent_->Kind(outer));
    captures_.push_back(name);
  }
  tensors_[name] = t;
  return t;
}

StatusOr<std::unique_ptr<OnnxImporter>> OnnxImporter::ImportBody(const onnx::GraphProto& g,
                                                                  const std::vector<fb::DataType>& formal) {
  if (depth_ + 1 > kMaxImportDepth)
    return InvalidArgument("subgraph '%s' is nested more than %d deep", g.name().c_str(), kMaxImportDepth);
  if (g.input_size() != static_cast<int>(formal.size()))
    return InvalidArgument("subgraph '%s' declares %d inputs; the op gives it %zu", g.name().c_str(), g.input_size(),
                           formal.size());
  auto child = std::make_unique<OnnxImporter>(opt_, report_, base_dir_);
  child->parent_ = this;
  child->depth_ = depth_ + 1;
  child->opset_ = opset_;
  child->b_.net().name = g.name();
  KILN_RETURN_IF_ERROR(child->ImportGraph(g, formal), "subgraph '%s'", g.name().c_str());
  for (const auto& out : g.output()) {
    KILN_ASSIGN_OR_RETURN(int t, child->Resolve(out.name()), "subgraph '%s' output", g.name().c_str());
    child->b_.addOutput(t);
  }
  for (auto& [type, names] : child->missing_) missing_[type].insert(missing_[type].end(), names.begin(), names.end());
  KILN_RETURN_IF_ERROR(InferDtypes(child->b_.net()).status(), "subgraph '%s': inferring dtypes", g.name().c_str());
  return child;
}

StatusOr<int> OnnxImporter::Package(OnnxImporter& child, size_t num_formal, const std::vector<std::string>& captures) {
  fb::NetT& net = child.b_.net();
  std::vector<int> inputs(net.inputs.begin(), net.inputs.begin() + static_cast<std::ptrdiff_t>(num_formal));
  for (const std::string& name : captures) {
    auto it = child.tensors_.find(name);
    const bool captured =
        it != child.tensors_.end() &&
        std::find(child.captures_.begin(), child.captures_.end(), name) != child.captures_.end();
    if (captured) {
      inputs.push_back(it->second);
      continue;
    }
    // The other branch reads it; this one takes it and leaves it unused.
    KILN_ASSIGN_OR_RETURN(int outer, Resolve(name));
    const fb::TensorT& ot = *b_.net().tensors[static_cast<size_t>(outer)];
    int t = child.b_.addInput(name + ":unused", ot.dtype, {});
    net.tensors[static_cast<size_t>(t)]->unknown_rank = !ot.sequence && !ot.optional;
    child.SetKind(t, Kind(outer));
    inputs.push_back(t);
  }
  OnnxImporter* root = this;
  while (root->parent_) root = root->parent_;
  auto& list = root->b_.net().subgraphs;
  auto sg = std::make_unique<fb::SubGraphT>();
  sg->name = net.name;
  sg->tensors = std::move(net.tensors);
  sg->ops = std::move(net.ops);
  sg->inputs = std::move(inputs);
  sg->outputs = net.outputs;
  list.push_back(std::move(sg));
  return static_cast<int>(list.size()) - 1;
}

Status OnnxImporter::ImportControlFlow(const onnx::NodeProto& node) {
  const std::string& type = node.op_type();
  std::vector<int> in;
  for (int k = 0; k < node.input_size(); ++k) {
    KILN_ASSIGN_OR_RETURN(int t, Input(node, k));
    in.push_back(t);
  }
  auto dtype = [&](int t) { return b_.net().tensors[static_cast<size_t>(t)]->dtype; };
  auto out_dtypes = [](OnnxImporter& c) {
    std::vector<fb::DataType> d;
    for (int t : c.b_.net().outputs) d.push_back(c.b_.net().tensors[static_cast<size_t>(t)]->dtype);
    return d;
  };
  // The op's inputs: `formal`, then the tensors of the captured names.
  auto with_captures = [&](std::vector<int> formal, const std::vector<std::string>& caps) -> StatusOr<std::vector<int>> {
    for (const std::string& c : caps) {
      KILN_ASSIGN_OR_RETURN(int t, Resolve(c));
      formal.push_back(t);
    }
    return formal;
  };
  std::vector<int> result_seq;  // each output's Kind (sequence, optional)
  auto out_seqs = [](OnnxImporter& c, size_t skip) {
    std::vector<int> v;
    for (size_t k = skip; k < c.b_.net().outputs.size(); ++k) v.push_back(c.Kind(c.b_.net().outputs[k]));
    return v;
  };
  std::vector<fb::DataType> result_types;
  std::vector<int> inputs;
  fb::OpParamsUnion params;
  fb::OpType op_type;
  int num_outputs;

  if (type == "If") {
    const onnx::GraphProto* then_g = GraphAttr(node, "then_branch");
    const onnx::GraphProto* else_g = GraphAttr(node, "else_branch");
    if (!then_g || !else_g) return InvalidArgument("If needs then_branch and else_branch");
    if (in.size() != 1 || in[0] < 0) return InvalidArgument("If takes one input (cond), the node gives %zu", in.size());
    KILN_ASSIGN_OR_RETURN(auto a, ImportBody(*then_g, {}));
    KILN_ASSIGN_OR_RETURN(auto b, ImportBody(*else_g, {}));
    result_types = out_dtypes(*a);
    const std::vector<fb::DataType> else_types = out_dtypes(*b);
    if (result_types.size() != else_types.size())
      return InvalidArgument("then_branch has %zu outputs, else_branch %zu", result_types.size(), else_types.size());
    result_seq = out_seqs(*a, 0);
    if (result_seq != out_seqs(*b, 0))
      return InvalidArgument("then_branch and else_branch disagree on which outputs are sequences or optionals");
    for (size_t j = 0; j < result_types.size(); ++j)
      if (result_types[j] != else_types[j])
        return InvalidArgument("output %zu is %s in then_branch and %s in else_branch", j,
                               DataTypeName(result_types[j]), DataTypeName(else_types[j]));
    std::vector<std::string> caps = a->captures_;
    for (const std::string& c : b->captures_)
      if (std::find(caps.begin(), caps.end(), c) == caps.end()) caps.push_back(c);
    fb::IfParamsT p;
    KILN_ASSIGN_OR_RETURN(p.then_branch, Package(*a, 0, caps));
    KILN_ASSIGN_OR_RETURN(p.else_branch, Package(*b, 0, caps));
    KILN_ASSIGN_OR_RETURN(inputs, with_captures({in[0]}, caps));
    params.Set(std::move(p));
    op_type = fb::OpType::If;
    num_outputs = static_cast<int>(result_types.size());
  } else if (type == "Loop") {
    const onnx::GraphProto* body_g = GraphAttr(node, "body");
    if (!body_g) return InvalidArgument("Loop needs a body");
    while (in.size() < 2) in.push_back(-1);
    const int n = static_cast<int>(in.size()) - 2;
    std::vector<fb::DataType> formal{fb::DataType::I64, fb::DataType::BOOL};
    for (int k = 0; k < n; ++k) {
      if (in[static_cast<size_t>(2 + k)] < 0) return InvalidArgument("Loop: loop-carried input %d is empty", k);
      formal.push_back(dtype(in[static_cast<size_t>(2 + k)]));
    }
    KILN_ASSIGN_OR_RETURN(auto body, ImportBody(*body_g, formal));
    // Loop-carried values may change shape between iterations (a sequence
    // of tokens that grows): exporters declare the first iteration's shape,
    // so only the rank is kept.
    for (size_t k = 2; k < formal.size(); ++k)
      for (auto& d : body->b_.net().tensors[static_cast<size_t>(body->b_.net().inputs[k])]->shape) d->size = -1;
    const std::vector<fb::DataType> outs = out_dtypes(*body);
    if (static_cast<int>(outs.size()) < 1 + n)
      return InvalidArgument("Loop body has %zu outputs; it needs the condition and %d loop-carried values",
                             outs.size(), n);
    result_types.assign(outs.begin() + 1, outs.end());
    result_seq = out_seqs(*body, 1);
    fb::LoopParamsT p;
    p.num_captures = static_cast<int>(body->captures_.size());
    KILN_ASSIGN_OR_RETURN(p.body, Package(*body, formal.size(), body->captures_));
    KILN_ASSIGN_OR_RETURN(inputs, with_captures(in, body->captures_));
    params.Set(std::move(p));
    op_type = fb::OpType::Loop;
    num_outputs = static_cast<int>(result_types.size());
  } else {  // Scan
    const onnx::GraphProto* body_g = GraphAttr(node, "body");
    if (!body_g) return InvalidArgument("Scan needs a body");
    const bool batched = opset_ < 9;  // opset 8: input 0 is sequence_lens, every value has a batch axis
    if (batched) {
      if (!in.empty() && in[0] >= 0) return Keep(node, "opset 8's sequence_lens");
      if (!in.empty()) in.erase(in.begin());
    }
    int m = 0;
    for (const auto& a : node.attribute())
      if (a.name() == "num_scan_inputs") m = static_cast<int>(a.i());
    const int n = static_cast<int>(in.size()) - m;
    if (m < 1 || n < 0) return InvalidArgument("Scan: num_scan_inputs %d for %zu inputs", m, in.size());
    std::vector<fb::DataType> formal;
    for (int t : in) {
      if (t < 0) return InvalidArgument("Scan inputs cannot be empty");
      formal.push_back(dtype(t));
    }
    KILN_ASSIGN_OR_RETURN(auto body, ImportBody(*body_g, formal));
    result_types = out_dtypes(*body);
    result_seq = out_seqs(*body, 0);
    if (static_cast<int>(result_types.size()) < n)
      return InvalidArgument("Scan body has %zu outputs for %d state values", result_types.size(), n);
    fb::ScanParamsT p;
    p.num_scan_inputs = m;
    p.num_captures = static_cast<int>(body->captures_.size());
    p.batched = batched;
    p.input_directions = IntsAttr(node, batched ? "directions" : "scan_input_directions");
    p.output_directions = IntsAttr(node, "scan_output_directions");
    p.input_axes = IntsAttr(node, "scan_input_axes");
    p.output_axes = IntsAttr(node, "scan_output_axes");
    KILN_ASSIGN_OR_RETURN(p.body, Package(*body, formal.size(), body->captures_));
    KILN_ASSIGN_OR_RETURN(inputs, with_captures(in, body->captures_));
    params.Set(std::move(p));
    op_type = fb::OpType::Scan;
    num_outputs = static_cast<int>(result_types.size());
  }
  if (node.output_size() > num_outputs)
    return InvalidArgument("%s names %d outputs; its subgraph gives %d", type.c_str(), node.output_size(), num_outputs);
  const onnx::NodeProto named = WithOutputs(node, num_outputs);
  KILN_RETURN_IF_ERROR(Emit(op_type, named, inputs, std::move(params)));
  for (int j = 0; j < num_outputs; ++j) {
    fb::TensorT& t = *b_.net().tensors[static_cast<size_t>(tensors_[named.output(j)])];
    t.dtype = result_types[static_cast<size_t>(j)];
    SetKind(tensors_[named.output(j)], static_cast<size_t>(j) < result_seq.size() ? result_seq[static_cast<size_t>(j)] : 0);
  }
  return Status::Ok();
}

// SequenceMap(seq, more...) { body }: the Loop ONNX defines it by, built as
// ONNX and imported as such. M is the first sequence's length; the body
// reads element `iter` of each sequence input (whole tensors for the
// others) and appends each output to its own sequence.
Status OnnxImporter::ImportSequenceMap(const onnx::NodeProto& n) {
  const onnx::GraphProto* body = GraphAttr(n, "body");
  if (!body) return InvalidArgument("SequenceMap needs a body");
  if (n.input_size() < 1 || body->input_size() != n.input_size())
    return InvalidArgument("SequenceMap: %d inputs, its body takes %d", n.input_size(), body->input_size());
  const std::string p = n.name() + "/map/";
  onnx::GraphProto* parent_graph = &expanded_.emplace_back();
  auto add = [](onnx::GraphProto* g, const char* type, std::vector<std::string> in, std::vector<std::string> out) {
    onnx::NodeProto* m = g->add_node();
    m->set_op_type(type);
    m->set_name(out[0]);
    for (auto& i : in) m->add_input(i);
    for (auto& o : out) m->add_output(o);
    return m;
  };
  add(parent_graph, "SequenceLength", {n.input(0)}, {p + "len"});
  onnx::NodeProto* yes = add(parent_graph, "Constant", {}, {p + "true"});
  auto* v = yes->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  v->mutable_t()->add_int32_data(1);
  onnx::NodeProto loop;
  loop.set_op_type("Loop");
  loop.set_name(n.name());
  loop.add_input(p + "len");
  loop.add_input(p + "true");
  auto* battr = loop.add_attribute();
  battr->set_name("body");
  battr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* lb = battr->mutable_g();
  lb->set_name(body->name() + "_loop");
  lb->add_input()->set_name(p + "iter");
  lb->add_input()->set_name(p + "cond");
  add(lb, "Identity", {p + "cond"}, {p + "cond_out"});
  lb->add_output()->set_name(p + "cond_out");
  for (int k = 0; k < n.input_size(); ++k) {
    KILN_ASSIGN_OR_RETURN(int t, Input(n, k));
    const std::string& inner = body->input(k).name();
    add(lb, IsSequence(t) ? "SequenceAt" : "Identity", IsSequence(t) ? std::vector<std::string>{n.input(k), p + "iter"}
                                                                      : std::vector<std::string>{n.input(k)},
        {inner});
  }
  for (const auto& init : body->initializer()) *lb->add_initializer() = init;
  for (const auto& node : body->node()) *lb->add_node() = node;
  for (int j = 0; j < body->output_size(); ++j) {
    const std::string seq = p + "seq" + std::to_string(j);
    // The output's element type: the body declares it.
    const int elem = body->output(j).type().tensor_type().elem_type();
    onnx::NodeProto* empty = add(parent_graph, "SequenceEmpty", {}, {seq});
    auto* d = empty->add_attribute();
    d->set_name("dtype");
    d->set_type(onnx::AttributeProto::INT);
    d->set_i(elem ? elem : onnx::TensorProto::FLOAT);
    loop.add_input(seq);
    auto* in = lb->add_input();
    in->set_name(seq + "_in");
    in->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(elem);
    add(lb, "SequenceInsert", {seq + "_in", body->output(j).name()}, {seq + "_out"});
    lb->add_output()->set_name(seq + "_out");
    loop.add_output(j < n.output_size() ? n.output(j) : "");
  }
  for (const auto& node : parent_graph->node()) KILN_RETURN_IF_ERROR(ImportNode(node), "SequenceMap '%s'", n.name().c_str());
  return ImportControlFlow(loop);
}

// Optional(x?) { type }, OptionalHasElement(x), OptionalGetElement(x).
Status OnnxImporter::ImportOptional(const onnx::NodeProto& n) {
  const std::string& t = n.op_type();
  KILN_ASSIGN_OR_RETURN(std::vector<int> in, Inputs(n));
  const int x = in.empty() ? -1 : in[0];
  if (t == "Optional") {
    int kind = 2 | (Kind(x) & 1);
    fb::DataType dtype = fb::DataType::F32;
    if (x >= 0) {
      if (Kind(x) & 2) return InvalidArgument("Optional of an optional");
      dtype = b_.net().tensors[static_cast<size_t>(x)]->dtype;
    } else {
      const onnx::AttributeProto* type = FindAttr(n, "type");
      if (!type || !type->has_tp()) return InvalidArgument("an empty Optional needs its type attribute");
      const onnx::TypeProto& tp = type->tp();
      const bool seq = tp.has_sequence_type();
      const auto& tt = seq ? tp.sequence_type().elem_type().tensor_type() : tp.tensor_type();
      if (!seq && !tp.has_tensor_type()) return Unsupported("Optional of a type other than a tensor or a sequence");
      KILN_ASSIGN_OR_RETURN(dtype, MapDataType(tt.elem_type()));
      kind = 2 | (seq ? 1 : 0);
    }
    KILN_RETURN_IF_ERROR(Emit(fb::OpType::Optional, n, in));
    const int out = tensors_[n.output(0)];
    b_.net().tensors[static_cast<size_t>(out)]->dtype = dtype;
    SetKind(out, kind);
    return Status::Ok();
  }
  if (x < 0) return InvalidArgument("%s needs its input", t.c_str());
  if (t == "OptionalHasElement") return Emit(fb::OpType::OptionalHasElement, n, in);
  if (t != "OptionalGetElement") return Keep(n, "");
  KILN_RETURN_IF_ERROR(Emit(fb::OpType::OptionalGetElement, n, in));
  const int out = tensors_[n.output(0)];
  b_.net().tensors[static_cast<size_t>(out)]->dtype = b_.net().tensors[static_cast<size_t>(x)]->dtype;
  SetKind(out, Kind(x) & 1);  // the value: a sequence or a tensor
  return Status::Ok();
}

Status OnnxImporter::ImportSequence(const onnx::NodeProto& n) {
  const std::string& t = n.op_type();
  if (t == "SequenceMap") return ImportSequenceMap(n);
  if (t.rfind("Optional", 0) == 0) return ImportOptional(n);
  KILN_ASSIGN_OR_RETURN(std::vector<int> in, Inputs(n));
  fb::SequenceParamsT p;
  fb::OpType type;
  bool makes_sequence = true;
  fb::DataType dtype = in.empty() || in[0] < 0 ? fb::DataType::F32 : b_.net().tensors[static_cast<size_t>(in[0])]->dtype;
  if (t == "SequenceConstruct") {
    type = fb::OpType::SequenceConstruct;
  } else if (t == "SequenceAt") {
    type = fb::OpType::SequenceAt;
    makes_sequence = false;
  } else if (t == "SequenceInsert") {
    type = fb::OpType::SequenceInsert;
  } else if (t == "SequenceErase") {
    type = fb::OpType::SequenceErase;
  } else if (t == "SequenceLength") {
    type = fb::OpType::SequenceLength;
    makes_sequence = false;
    dtype = fb::DataType::I64;
  } else if (t == "SequenceEmpty") {
    type = fb::OpType::SequenceEmpty;
    KILN_ASSIGN_OR_RETURN(dtype, MapDataType(static_cast<int>(AttrInt(n, "dtype", onnx::TensorProto::FLOAT))));
    p.dtype = dtype;
  } else if (t == "SplitToSequence") {
    type = fb::OpType::SplitToSequence;
    KILN_ASSIGN_OR_RETURN(p.axis, AttrInt32(n, "axis", 0));
    p.keepdims = AttrInt(n, "keepdims", 1) != 0;
  } else if (t == "ConcatFromSequence") {
    type = fb::OpType::ConcatFromSequence;
    makes_sequence = false;
    KILN_ASSIGN_OR_RETURN(p.axis, AttrInt32(n, "axis", 0));
    p.new_axis = AttrInt(n, "new_axis", 0) != 0;
  } else {
    return Keep(n, "");
  }
  const bool sequence_in = type != fb::OpType::SequenceConstruct && type != fb::OpType::SequenceEmpty &&
                           type != fb::OpType::SplitToSequence;
  if (sequence_in && (in.empty() || !IsSequence(in[0])))
    return InvalidArgument("%s: input 0 must be a sequence", t.c_str());
  fb::OpParamsUnion params;
  if (type == fb::OpType::SequenceEmpty || type == fb::OpType::SplitToSequence || type == fb::OpType::ConcatFromSequence)
    params.Set(std::move(p));
  KILN_RETURN_IF_ERROR(Emit(type, n, in, std::move(params)));
  fb::TensorT& out = *b_.net().tensors[static_cast<size_t>(tensors_[n.output(0)])];
  out.sequence = makes_sequence;
  out.dtype = dtype;
  return Status::Ok();
}

}  // namespace kiln::onnx_import
