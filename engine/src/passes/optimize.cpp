// OptimizeNet: the standard pass pipeline (kiln/passes.h).
#include "kiln/passes.h"

#include <cstdlib>
#include <string>

namespace kiln {

std::string PassReport::toString() const {
  std::string s;
  for (const auto& [name, n] : applied) s += (s.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return s;
}

namespace {

struct Step {
  const char* name;
  StatusOr<int> (*pass)(fb::NetT&);
};

// Whether KILN_SKIP_PASSES (a comma-separated list of pass names) names
// `pass`: to measure what a pass is worth, or to rule it out when
// something goes wrong.
bool Skipped(const char* pass) {
  static const std::string skip = [] {
    const char* e = std::getenv("KILN_SKIP_PASSES");
    return e ? "," + std::string(e) + "," : std::string();
  }();
  return !skip.empty() && skip.find("," + std::string(pass) + ",") != std::string::npos;
}

// Runs one pass; a pass that rewrote something is added to the report (a
// pass run twice is reported once, with the sum).
Status Run(const Step& step, fb::NetT& net, PassReport* report, int* rewrites) {
  *rewrites = 0;
  if (Skipped(step.name)) return Status::Ok();
  StatusOr<int> r = step.pass(net);
  if (!r.ok()) return r.status().WithContext(step.name);
  *rewrites = *r;
  if (*r == 0) return Status::Ok();
  for (auto& entry : report->applied)
    if (entry.first == step.name) {
      entry.second += *r;
      return Status::Ok();
    }
  report->applied.emplace_back(step.name, *r);
  return Status::Ok();
}

}  // namespace

namespace {

Status OptimizeGraph(fb::NetT& net, PassReport* report);

}  // namespace

// The net, then each control-flow subgraph the same way (as a net of its
// own: its inputs and outputs stay, so the ops that run it still match).
Status OptimizeNet(fb::NetT& net, PassReport* report) {
  PassReport local;
  if (!report) report = &local;
  KILN_ASSIGN_OR_RETURN(int widened, UpcastFp16(net, /*keep_io=*/true));
  KILN_RETURN_IF_ERROR(OptimizeGraph(net, report));
  for (size_t i = 0; i < net.subgraphs.size(); ++i) {
    fb::SubGraphT& sg = *net.subgraphs[i];
    fb::NetT sub;
    sub.format_version = net.format_version;
    sub.name = sg.name;
    sub.tensors = std::move(sg.tensors);
    sub.ops = std::move(sg.ops);
    sub.inputs = std::move(sg.inputs);
    sub.outputs = std::move(sg.outputs);
    StatusOr<int> w = UpcastFp16(sub, /*keep_io=*/false);
    Status s = w.ok() ? OptimizeGraph(sub, report) : w.status();
    if (w.ok()) widened += *w;
    sg.tensors = std::move(sub.tensors);
    sg.ops = std::move(sub.ops);
    sg.inputs = std::move(sub.inputs);
    sg.outputs = std::move(sub.outputs);
    KILN_RETURN_IF_ERROR(s, "subgraph %zu '%s'", i, sg.name.c_str());
  }
  if (widened > 0) report->applied.insert(report->applied.begin(), {"upcast_fp16", widened});
  return Status::Ok();
}

namespace {

Status OptimizeGraph(fb::NetT& net, PassReport* report) {
  static const Step kPipeline[] = {
      {"remove_identity", &RemoveIdentity}, {"fold_constants", &FoldConstants},
      {"lower_einsum", &LowerEinsum},       {"fold_batchnorm", &FoldBatchNorm},
      {"fuse_gelu", &FuseGelu},             {"fuse_hardswish", &FuseHardSwish},
      {"fuse_layernorm", &FuseLayerNorm},   {"fuse_activation", &FuseActivation},
      // dead_code first: the weights' DequantizeLinear that fuse_qdq took
      // have no reader left, and folding them would be wasted.
      {"sink_dequantize", &SinkDequantize}, {"fuse_qdq", &FuseQdq},
      {"dead_code", &RemoveDeadCode},
      {"fold_dequantize", &FoldDequantize}, {"fuse_residual", &FuseResidual},
      {"matmul_to_gemm", &MatMulToGemm},    {"fuse_attention", &FuseAttention},
      {"dead_code", &RemoveDeadCode},
  };
  for (const Step& step : kPipeline) {
    int n = 0;
    KILN_RETURN_IF_ERROR(Run(step, net, report, &n));
    // The Gemms matmul_to_gemm made can take a following activation.
    if (step.pass == &MatMulToGemm && n > 0)
      KILN_RETURN_IF_ERROR(Run({"fuse_activation", &FuseActivation}, net, report, &n));
  }
  return Status::Ok();
}

}  // namespace

}  // namespace kiln
