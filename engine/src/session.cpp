// The public Session and Interpreter session API over SessionImpl.
#include "kiln/session.h"

#include "alloc_guard.h"
#include "kiln/interpreter.h"
#include "session_impl.h"

namespace kiln {

const char* ForwardTypeName(ForwardType type) {
  switch (type) {
    case ForwardType::kHost: return "host";
    case ForwardType::kVulkan: return "vulkan";
    case ForwardType::kOpenCL: return "opencl";
    case ForwardType::kAuto: return "auto";
  }
  return "?";
}

bool ParseForwardType(const std::string& name, ForwardType* type) {
  for (ForwardType t : {ForwardType::kHost, ForwardType::kVulkan, ForwardType::kOpenCL, ForwardType::kAuto})
    if (name == ForwardTypeName(t)) {
      *type = t;
      return true;
    }
  return false;
}

bool ParsePrecision(const std::string& name, Precision* precision) {
  if (name == "normal") *precision = Precision::kNormal;
  else if (name == "high") *precision = Precision::kHigh;
  else if (name == "low") *precision = Precision::kLow;
  else return false;
  return true;
}

bool ParseGpuLayout(const std::string& name, GpuLayout* layout) {
  if (name == "auto") *layout = GpuLayout::kAuto;
  else if (name == "planar") *layout = GpuLayout::kPlanar;
  else if (name == "packed") *layout = GpuLayout::kPacked;
  else return false;
  return true;
}

std::string Placement::toString() const {
  std::string s = "placement:";
  for (auto& [backend, n] : ops_per_backend) s += StrFormat(" %s %d ops,", backend.c_str(), n);
  s += StrFormat(" %d backend switches", switches);
  if (!bundle.empty()) s += "\n  bundle: " + bundle;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].reason.empty())
      s += StrFormat("\n  op %zu '%s' (%s) runs on %s: %s", i, ops[i].name.c_str(), ops[i].type.c_str(),
                     ops[i].backend.c_str(), ops[i].reason.c_str());
    if (!ops[i].subgraphs.empty())
      s += StrFormat("\n  op %zu '%s' (%s) runs its subgraphs: %s", i, ops[i].name.c_str(), ops[i].type.c_str(),
                     ops[i].subgraphs.c_str());
  }
  return s;
}

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;
Tensor* Session::getInput(const std::string& name) { return impl_->input(name); }
Tensor* Session::getOutput(const std::string& name) { return impl_->output(name); }
std::map<std::string, Tensor*> Session::getInputAll() { return impl_->inputs(); }
std::map<std::string, Tensor*> Session::getOutputAll() { return impl_->outputs(); }
Status Session::resizeTensor(Tensor* input, const std::vector<int64_t>& shape) {
  return impl_->resizeTensor(input, shape);
}
Status Session::resize() {
  return GuardAlloc("resize", [&] { return impl_->resize(); });
}
Status Session::run() {
  return GuardAlloc("run", [&] { return impl_->run(nullptr, nullptr); });
}
Status Session::runWithCallBack(const TensorCallBack& before, const TensorCallBack& after) {
  return GuardAlloc("run", [&] { return impl_->run(&before, &after); });
}
const Placement& Session::placement() const { return impl_->placement(); }
std::vector<MemoryUse> Session::memory() const { return impl_->memory(); }
const std::vector<OpProfile>& Session::profile() const { return impl_->profile(); }
std::map<std::string, std::string> Session::devices() const { return impl_->devices(); }
SessionPhases Session::phases() const { return impl_->phases(); }
void Session::releaseCache() { impl_->releaseCache(); }
Status Session::bindState(const std::string& output, const std::string& input) {
  return impl_->bindState(output, input);
}
StatusOr<std::unique_ptr<Tensor>> Session::getWeight(const std::string& name) const {
  return GuardAlloc("getWeight", [&] { return impl_->weight(name); });
}
Status Session::setWeight(const std::string& name, const Tensor& value) {
  return GuardAlloc("setWeight", [&] { return impl_->setWeight(name, value); });
}
Status Session::resetState() {
  return GuardAlloc("resetState", [&] { return impl_->resetState(); });
}

}  // namespace kiln
