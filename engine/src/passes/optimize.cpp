// OptimizeNet: the standard pass pipeline (kiln/passes.h).
#include "kiln/passes.h"

namespace kiln {

std::string PassReport::toString() const {
  std::string s;
  for (const auto& [name, n] : applied) s += (s.empty() ? "" : ", ") + name + " " + std::to_string(n);
  return s;
}

Status OptimizeNet(fb::NetT& net, PassReport* report) {
  PassReport local;
  if (!report) report = &local;
  auto run = [&](const char* name, StatusOr<int> (*pass)(fb::NetT&)) -> StatusOr<int> {
    StatusOr<int> r = pass(net);
    if (!r.ok()) return r.status().WithContext(name);
    if (*r > 0) {
      bool merged = false;
      for (auto& entry : report->applied)
        if (entry.first == name) {  // a pass run twice is reported once
          entry.second += *r;
          merged = true;
        }
      if (!merged) report->applied.emplace_back(name, *r);
    }
    return r;
  };
  { ASSIGN_OR_RETURN(int n, run("remove_identity", &RemoveIdentity)); (void)n; }
  { ASSIGN_OR_RETURN(int n, run("fold_constants", &FoldConstants)); (void)n; }
  { ASSIGN_OR_RETURN(int n, run("fold_batchnorm", &FoldBatchNorm)); (void)n; }
  { ASSIGN_OR_RETURN(int n, run("fuse_gelu", &FuseGelu)); (void)n; }
  { ASSIGN_OR_RETURN(int n, run("fuse_layernorm", &FuseLayerNorm)); (void)n; }
  { ASSIGN_OR_RETURN(int n, run("fuse_activation", &FuseActivation)); (void)n; }
  {
    ASSIGN_OR_RETURN(int gemms, run("matmul_to_gemm", &MatMulToGemm));
    if (gemms > 0) {  // the new Gemms can take a following activation
      ASSIGN_OR_RETURN(int n, run("fuse_activation", &FuseActivation));
      (void)n;
    }
  }
  { ASSIGN_OR_RETURN(int n, run("dead_code", &RemoveDeadCode)); (void)n; }
  return Status::Ok();
}

}  // namespace kiln
