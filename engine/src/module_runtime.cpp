// Host modules, the running side: what a generated module calls (kiln_rt_*
// in kiln/module.h). kiln_rt_prepare sets up the kernels of the module's
// plan over its weights (a stamped host bundle, read in place): the model
// is verified, each op's host kernel is created and sized from the shapes
// the plan bakes, taking its packed forms from the bundle; no scheduling,
// shape inference or memory planning happens. kiln_rt_op then runs one
// kernel on tensors at the addresses the generated code gives.
#include <memory>
#include <vector>

#include "alloc_guard.h"
#include "c_api_status.h"
#include "graph.h"
#include "host_backend.h"
#include "kiln/module.h"
#include "model.h"

struct KilnRtProgram {
  struct Step {
    std::unique_ptr<kiln::Execution> exec;
    std::vector<kiln::Tensor*> inputs, outputs;
  };
  std::unique_ptr<kiln::Model> model;
  kiln::Graph graph;
  std::unique_ptr<kiln::HostBackend> host;
  std::vector<std::unique_ptr<kiln::Tensor>> tensors;
  std::vector<Step> steps;
};

namespace kiln {
namespace {

Precision PrecisionOf(int p) {
  return p == KILN_PRECISION_LOW ? Precision::kLow : p == KILN_PRECISION_HIGH ? Precision::kHigh : Precision::kNormal;
}

StatusOr<std::unique_ptr<KilnRtProgram>> Prepare(const KilnRtPlan& plan, const void* weights) {
  if (plan.abi_version != KILN_MODULE_ABI_VERSION)
    return InvalidArgument("module: made for module ABI %d, this libkiln runs ABI %d (compile the module again)",
                           plan.abi_version, KILN_MODULE_ABI_VERSION);
  if (!weights) return InvalidArgument("module: no weights");
  if (plan.num_threads < 1 || plan.num_threads > kMaxThreads || plan.num_tensors < 0 || plan.num_steps < 0)
    return InvalidArgument("module: a damaged plan (%d threads, %d tensors, %d steps)", plan.num_threads,
                           plan.num_tensors, plan.num_steps);
  auto p = std::make_unique<KilnRtProgram>();
  // The weights are the caller's: read in place, never freed here.
  auto region = ByteRegion::Adopt(weights, static_cast<size_t>(plan.weights_byte_size), [](const void*) {});
  KILN_ASSIGN_OR_RETURN(p->model, Model::Load(std::move(region), "module weights", ""));
  const fb::Bundle* bundle = p->model->net().bundle();
  if (!bundle || bundle->stamp() != plan.weights_stamp)
    return InvalidArgument("module: these weights are not the module's (stamp %llx, the module was made with %llx)",
                           static_cast<unsigned long long>(bundle ? bundle->stamp() : 0),
                           static_cast<unsigned long long>(plan.weights_stamp));
  p->graph = Graph::Build(*p->model);
  const Graph& g = p->graph;
  p->host = std::make_unique<HostBackend>(plan.num_threads, PrecisionOf(plan.precision));
  // Packed forms made for another GEMM are left alone: the kernels pack.
  (void)p->host->setBundle(bundle);

  const auto* base = static_cast<const uint8_t*>(weights);
  for (int i = 0; i < plan.num_tensors; ++i) {
    const KilnRtTensor& rt = plan.tensors[i];
    if (rt.graph_tensor < 0 || static_cast<size_t>(rt.graph_tensor) >= g.tensors.size() || rt.rank < 0 ||
        (rt.rank > 0 && !rt.dims))
      return InvalidArgument("module: tensor %d of the plan is not in the weights' net", i);
    const GraphTensor& gt = g.tensors[static_cast<size_t>(rt.graph_tensor)];
    auto t = std::make_unique<Tensor>();
    t->setName(gt.name);
    t->setDtype(static_cast<fb::DataType>(rt.dtype));
    t->setShape(std::vector<int64_t>(rt.dims, rt.dims + rt.rank));
    // (Dtypes and shapes are the session's, inferred at resize; the net may
    // leave them open. A constant's are checked against its bytes.)
    if (rt.weights_offset >= 0) {
      if (!gt.isConstant() || gt.constant.data != base + rt.weights_offset || gt.constant.size != t->byteSize() ||
          gt.dtype != t->dtype())
        return InvalidArgument("module: constant '%s' is not where the module expects it in the weights",
                               gt.name.c_str());
      t->bind(nullptr, const_cast<uint8_t*>(gt.constant.data));
    } else if (rt.value) {
      if (rt.value_byte_size != t->byteSize())
        return InvalidArgument("module: the value of '%s' has %zu bytes for %zu", gt.name.c_str(), rt.value_byte_size,
                               t->byteSize());
      t->bind(nullptr, const_cast<void*>(rt.value));
    }
    p->tensors.push_back(std::move(t));
  }
  auto tensor = [&](int32_t r) -> StatusOr<Tensor*> {
    if (r < 0) return static_cast<Tensor*>(nullptr);
    if (r >= plan.num_tensors) return InvalidArgument("module: a step names tensor %d of %d", r, plan.num_tensors);
    return p->tensors[static_cast<size_t>(r)].get();
  };
  for (int s = 0; s < plan.num_steps; ++s) {
    const KilnRtStep& rs = plan.steps[s];
    if (rs.op < 0 || static_cast<size_t>(rs.op) >= g.ops.size())
      return InvalidArgument("module: step %d runs op %d, the weights' net has %zu", s, rs.op, g.ops.size());
    const GraphOp& op = g.ops[static_cast<size_t>(rs.op)];
    if (static_cast<size_t>(rs.num_inputs) != op.inputs.size() || static_cast<size_t>(rs.num_outputs) != op.outputs.size())
      return InvalidArgument("module: step %d does not match op %d '%s' of the weights", s, rs.op, op.name.c_str());
    KilnRtProgram::Step step;
    for (int k = 0; k < rs.num_inputs; ++k) {
      KILN_ASSIGN_OR_RETURN(Tensor * t, tensor(rs.inputs[k]));
      const int want = op.inputs[static_cast<size_t>(k)];
      if ((t == nullptr) != (want < 0) || (t && plan.tensors[rs.inputs[k]].graph_tensor != want))
        return InvalidArgument("module: step %d's input %d is not op '%s''s", s, k, op.name.c_str());
      step.inputs.push_back(t);
    }
    for (int k = 0; k < rs.num_outputs; ++k) {
      KILN_ASSIGN_OR_RETURN(Tensor * t, tensor(rs.outputs[k]));
      if (t && plan.tensors[rs.outputs[k]].graph_tensor != op.outputs[static_cast<size_t>(k)])
        return InvalidArgument("module: step %d's output %d is not op '%s''s", s, k, op.name.c_str());
      step.outputs.push_back(t);
    }
    KILN_ASSIGN_OR_RETURN(step.exec, p->host->onCreate(op, g), "module: op %d '%s'", rs.op, op.name.c_str());
    KILN_RETURN_IF_ERROR(step.exec->onResize(step.inputs, step.outputs), "module: op %d '%s'", rs.op, op.name.c_str());
    p->steps.push_back(std::move(step));
  }
  return p;
}

}  // namespace
}  // namespace kiln

extern "C" {

KilnRtProgram* kiln_rt_prepare(const KilnRtPlan* plan, const void* weights) {
  if (!plan) return CApiFail(kiln::InvalidArgument("kiln_rt_prepare: no plan")), nullptr;
  auto p = kiln::GuardAlloc("module", [&] { return kiln::Prepare(*plan, weights); });
  if (!p.ok()) return CApiFail(p.status()), nullptr;
  return std::move(p).value().release();
}

KilnStatus kiln_rt_op(KilnRtProgram* program, int step, const void* const* inputs, void* const* outputs) {
  if (!program || step < 0 || static_cast<size_t>(step) >= program->steps.size())
    return CApiFail(kiln::InvalidArgument("kiln_rt_op: no step %d", step));
  KilnRtProgram::Step& s = program->steps[static_cast<size_t>(step)];
  for (size_t k = 0; k < s.inputs.size(); ++k)
    if (s.inputs[k]) s.inputs[k]->bind(nullptr, const_cast<void*>(inputs[k]));
  for (size_t k = 0; k < s.outputs.size(); ++k)
    if (s.outputs[k]) s.outputs[k]->bind(nullptr, outputs[k]);
  kiln::Status st = s.exec->onExecute(s.inputs, s.outputs);
  return st.ok() ? KILN_OK : CApiFail(st);
}

void kiln_rt_release(KilnRtProgram* program) { delete program; }

}  // extern "C"
