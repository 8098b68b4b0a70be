#include "graph.h"

namespace kiln {

namespace {

// Net and SubGraph have the same fields.
template <typename G>
Graph BuildFrom(const G& net, const Model& model, int sub) {
  Graph g;
  g.subgraph = sub;
  size_t nt = net.tensors() ? net.tensors()->size() : 0;
  g.tensors.resize(nt);
  for (size_t i = 0; i < nt; ++i) {
    const fb::Tensor* t = net.tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
    GraphTensor& gt = g.tensors[i];
    gt.name = t->name()->str();
    gt.dtype = t->dtype();
    gt.has_shape = !t->unknown_rank();
    gt.is_sequence = t->sequence();
    gt.is_optional = t->optional();
    if (t->shape()) {
      for (const fb::Dim* d : *t->shape()) {
        gt.dims.push_back(d->size() < 0 ? -1 : d->size());
        gt.symbols.push_back(d->symbol() ? d->symbol()->str() : std::string());
      }
    }
    gt.constant = model.constant(sub, static_cast<int>(i));
  }
  if (net.ops()) {
    for (size_t i = 0; i < net.ops()->size(); ++i) {
      const fb::Op* op = net.ops()->Get(static_cast<flatbuffers::uoffset_t>(i));
      GraphOp go;
      go.type = op->type();
      go.name = op->name() ? op->name()->str() : std::string();
      go.op = op;
      if (op->inputs()) go.inputs.assign(op->inputs()->begin(), op->inputs()->end());
      if (op->outputs()) go.outputs.assign(op->outputs()->begin(), op->outputs()->end());
      for (int t : go.inputs)
        if (t >= 0) g.tensors[static_cast<size_t>(t)].consumers.push_back(static_cast<int>(i));
      for (int t : go.outputs)
        if (go.type != fb::OpType::Constant) g.tensors[static_cast<size_t>(t)].producer = static_cast<int>(i);
      g.ops.push_back(std::move(go));
    }
  }
  if (net.inputs()) g.inputs.assign(net.inputs()->begin(), net.inputs()->end());
  if (net.outputs()) g.outputs.assign(net.outputs()->begin(), net.outputs()->end());
  for (int t : g.inputs) g.tensors[static_cast<size_t>(t)].is_input = true;
  for (int t : g.outputs) g.tensors[static_cast<size_t>(t)].is_output = true;
  return g;
}

}  // namespace

Graph Graph::Build(const Model& model) { return BuildFrom(model.net(), model, -1); }

Graph Graph::BuildSubgraph(const Model& model, int sub) {
  return BuildFrom(*model.net().subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(sub)), model, sub);
}

}  // namespace kiln
