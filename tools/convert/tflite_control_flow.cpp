// TFLite IF and WHILE -> Kiln If and Loop (schema/kiln.fbs SubGraph). A
// TFLite subgraph takes its values as explicit inputs, so it maps to a Kiln
// subgraph with no captures; each is imported by a child importer into the
// root model's subgraph list.
//
// WHILE(v...) { cond, body } tests cond before every iteration; Kiln's Loop
// tests its condition after each. So the Loop's body is
//   c = If(true) { cond }(v)          -- cond called as a subgraph
//   v' = If(c) { body } else { v }    -- the step, or no change
// returning (c, v'): the iteration that finds c false leaves v as it is and
// ends the loop.
#include "kiln/passes.h"
#include "tflite_importer.h"

namespace kiln::tflite_import {

namespace {

constexpr int kMaxDepth = 16;

int BoolConst(NetBuilder& b, const std::string& name) {
  uint8_t yes = 1;
  return b.addConstant(name, fb::DataType::BOOL, {}, &yes, 1);
}

}  // namespace

StatusOr<int> TfliteImporter::Subgraph(int graph, std::vector<fb::DataType>* out_dtypes) {
  if (graph < 0 || static_cast<size_t>(graph) >= m_.subgraphs.size())
    return InvalidArgument("subgraph %d does not exist (the model has %zu)", graph, m_.subgraphs.size());
  int depth = 0;
  for (TfliteImporter* p = this; p; p = p->parent_, ++depth)
    if (p->graph_ == static_cast<size_t>(graph))
      return InvalidArgument("subgraph %d runs itself (recursive control flow)", graph);
  if (depth > kMaxDepth) return InvalidArgument("subgraphs nested more than %d deep", kMaxDepth);
  TfliteImporter child(m_, opt_, report_, static_cast<size_t>(graph));
  child.parent_ = this;
  KILN_RETURN_IF_ERROR(child.ImportGraph(), "subgraph %d '%s'", graph, m_.subgraphs[static_cast<size_t>(graph)].name.c_str());
  for (auto& [type, names] : child.missing_) missing_[type].insert(missing_[type].end(), names.begin(), names.end());
  fb::NetT& net = child.b_.net();
  KILN_RETURN_IF_ERROR(InferDtypes(net).status(), "subgraph %d: inferring dtypes", graph);
  out_dtypes->clear();
  for (int t : net.outputs) out_dtypes->push_back(net.tensors[static_cast<size_t>(t)]->dtype);
  return root()->b_.addSubgraph(std::move(child.b_));
}

Status TfliteImporter::IfOp(const tfl::Operator& op) {
  std::vector<fb::DataType> then_types, else_types;
  fb::IfParamsT p;
  KILN_ASSIGN_OR_RETURN(p.then_branch, Subgraph(op.options.Int(tfl::opt::kThenGraph, -1), &then_types), "then");
  KILN_ASSIGN_OR_RETURN(p.else_branch, Subgraph(op.options.Int(tfl::opt::kElseGraph, -1), &else_types), "else");
  if (then_types != else_types || then_types.size() != op.outputs.size())
    return InvalidArgument("IF: the branches give %zu and %zu outputs (types differing), the op has %zu",
                           then_types.size(), else_types.size(), op.outputs.size());
  std::vector<int> in;
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(int t, Act(op.inputs[k]));
    in.push_back(t);
  }
  std::vector<std::string> names;
  for (int32_t o : op.outputs) names.push_back(Unique(T(o).name));
  std::vector<int> outs = b_.addOp(OpType::If, names[0], in, names, U(std::move(p)));
  for (size_t k = 0; k < outs.size(); ++k) {
    b_.net().tensors[static_cast<size_t>(outs[k])]->dtype = then_types[k];
    kiln_[static_cast<size_t>(op.outputs[k])] = outs[k];
  }
  return Status::Ok();
}

Status TfliteImporter::WhileOp(const tfl::Operator& op) {
  std::vector<fb::DataType> cond_types, body_types;
  KILN_ASSIGN_OR_RETURN(int cond, Subgraph(op.options.Int(tfl::opt::kCondGraph, -1), &cond_types), "cond");
  KILN_ASSIGN_OR_RETURN(int body, Subgraph(op.options.Int(tfl::opt::kBodyGraph, -1), &body_types), "body");
  const size_t n = op.inputs.size();
  std::vector<int> vars;
  std::vector<fb::DataType> types;
  for (size_t k = 0; k < n; ++k) {
    KILN_ASSIGN_OR_RETURN(int t, Act(op.inputs[k]));
    vars.push_back(t);
    types.push_back(b_.net().tensors[static_cast<size_t>(t)]->dtype);
  }
  if (cond_types.size() != 1 || body_types != types || op.outputs.size() != n)
    return InvalidArgument("WHILE: cond gives %zu outputs (needs 1), body %zu for %zu loop variables", cond_types.size(),
                           body_types.size(), n);
  auto var_inputs = [&](NetBuilder& g, const std::string& prefix) {
    std::vector<int> v;
    for (size_t k = 0; k < n; ++k) {
      v.push_back(g.addInput(prefix + std::to_string(k), types[k], {}));
      g.net().tensors[static_cast<size_t>(v.back())]->unknown_rank = true;
    }
    return v;
  };
  // No change: the else branch of the step.
  NetBuilder same(name_ + "/same");
  for (int v : var_inputs(same, "v"))
    same.addOutput(same.addOp(OpType::Identity, "same" + std::to_string(v), {v}, {"v_same" + std::to_string(v)})[0]);
  for (size_t k = 0; k < n; ++k) same.net().tensors[static_cast<size_t>(same.net().outputs[k])]->dtype = types[k];
  const int same_index = root()->b_.addSubgraph(std::move(same));

  NetBuilder step(name_ + "/loop_body");
  step.addInput("iter", fb::DataType::I64, {});
  step.addInput("cond_in", fb::DataType::BOOL, {});
  std::vector<int> v = var_inputs(step, "v");
  fb::IfParamsT call;
  call.then_branch = call.else_branch = cond;
  std::vector<int> call_in = {BoolConst(step, "true")};
  call_in.insert(call_in.end(), v.begin(), v.end());
  const int c = step.addOp(OpType::If, "cond", call_in, {"c"}, U(std::move(call)))[0];
  step.net().tensors[static_cast<size_t>(c)]->dtype = fb::DataType::BOOL;
  fb::IfParamsT choose;
  choose.then_branch = body;
  choose.else_branch = same_index;
  std::vector<int> choose_in = {c};
  choose_in.insert(choose_in.end(), v.begin(), v.end());
  std::vector<std::string> next_names;
  for (size_t k = 0; k < n; ++k) next_names.push_back("v_next" + std::to_string(k));
  std::vector<int> next = step.addOp(OpType::If, "step", choose_in, next_names, U(std::move(choose)));
  step.addOutput(c);
  for (size_t k = 0; k < n; ++k) {
    step.net().tensors[static_cast<size_t>(next[k])]->dtype = types[k];
    step.addOutput(next[k]);
  }
  fb::LoopParamsT lp;
  lp.body = root()->b_.addSubgraph(std::move(step));
  std::vector<int> loop_in = {-1, BoolConst(b_, Unique(name_ + "/true"))};
  loop_in.insert(loop_in.end(), vars.begin(), vars.end());
  std::vector<std::string> names;
  for (int32_t o : op.outputs) names.push_back(Unique(T(o).name));
  std::vector<int> outs = b_.addOp(OpType::Loop, names[0], loop_in, names, U(std::move(lp)));
  for (size_t k = 0; k < n; ++k) {
    b_.net().tensors[static_cast<size_t>(outs[k])]->dtype = types[k];
    kiln_[static_cast<size_t>(op.outputs[k])] = outs[k];
  }
  return Status::Ok();
}

}  // namespace kiln::tflite_import
