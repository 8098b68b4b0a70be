// OptimizeNet: the standard pass pipeline (kiln/passes.h).
#include "kiln/passes.h"

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

// Runs one pass; a pass that rewrote something is added to the report (a
// pass run twice is reported once, with the sum).
Status Run(const Step& step, fb::NetT& net, PassReport* report, int* rewrites) {
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

Status OptimizeNet(fb::NetT& net, PassReport* report) {
  PassReport local;
  if (!report) report = &local;
  static const Step kPipeline[] = {
      {"remove_identity", &RemoveIdentity}, {"fold_constants", &FoldConstants},
      {"lower_einsum", &LowerEinsum},       {"fold_batchnorm", &FoldBatchNorm},
      {"fuse_gelu", &FuseGelu},
      {"fuse_layernorm", &FuseLayerNorm},   {"fuse_activation", &FuseActivation},
      {"matmul_to_gemm", &MatMulToGemm},    {"dead_code", &RemoveDeadCode},
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

}  // namespace kiln
