#include "gpu_backend.h"

#include <algorithm>

#include "half.h"

namespace kiln {

// ---------------------------------------------------------------- executions

GpuExecution::GpuExecution(GpuBackend* b) : Execution(b) {}

GpuBackend* GpuExecution::gpu() const { return static_cast<GpuBackend*>(backend()); }

Status GpuExecution::onResize(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
  dispatches_.clear();
  if (!resolvesDtypesAtResize()) {
    auto check = [this](const std::vector<Tensor*>& ts, const std::vector<fb::DataType>& declared) -> Status {
      for (size_t k = 0, d = 0; k < ts.size() && d < declared.size(); ++k) {
        if (!ts[k]) continue;
        if (ts[k]->dtype() != declared[d])
          return Unsupported("'%s' is %s but the model declares %s, which the %s kernel was chosen for",
                             ts[k]->name().c_str(), fb::EnumNameDataType(ts[k]->dtype()),
                             fb::EnumNameDataType(declared[d]), gpu()->name());
        ++d;
      }
      return Status::Ok();
    };
    // Inputs only: an output's dtype is what the kernel writes (ArgMax's
    // i64 whatever the placeholder says); a misdeclared input is what
    // would be misread.
    RETURN_IF_ERROR(check(inputs, declared_in_));
  }
  return plan(inputs, outputs);
}

Status GpuExecution::onExecute(const std::vector<Tensor*>&, const std::vector<Tensor*>&) {
  return gpu()->submitExecution(this);
}

void GpuExecution::Groups1D(uint64_t n, uint32_t local, uint32_t groups[3]) {
  uint64_t g = (n + local - 1) / local;
  groups[1] = groups[2] = 1;
  // 65535 is the smallest maxComputeWorkGroupCount[0] a Vulkan device may have.
  while (g > 65535) {
    groups[1] *= 2;
    g = (g + 1) / 2;
  }
  groups[0] = static_cast<uint32_t>(g);
}

Status GpuExecution::addRaw(const char* name, std::vector<GpuBinding> bindings, std::vector<uint8_t> push,
                            const uint32_t groups[3], const uint32_t local[3], const std::vector<uint32_t>& spec) {
  ASSIGN_OR_RETURN(const GpuKernel* k, gpu()->kernel(name, static_cast<uint32_t>(bindings.size()), local, spec));
  GpuDispatch d;
  d.kernel = k;
  d.bindings = std::move(bindings);
  d.push = std::move(push);
  for (int i = 0; i < 3; ++i) {
    if (groups[i] > gpu()->gpuCaps().max_workgroup_count[i])
      return Unsupported("%s: %u work groups in dimension %d exceed the device's %u", name, groups[i], i,
                         gpu()->gpuCaps().max_workgroup_count[i]);
    d.groups[i] = groups[i];
  }
  dispatches_.push_back(std::move(d));
  return Status::Ok();
}

void GpuExecution::addCopy(const Tensor* src, const Tensor* dst) {
  GpuDispatch d;
  d.bindings = {{src, nullptr, false}, {dst, nullptr, true}};
  dispatches_.push_back(std::move(d));
}

StatusOr<DevicePeaks> MeasurePeakSchedule(
    uint32_t fma_items, uint32_t copy_bytes,
    const std::function<Status(uint32_t mode, const PeakPush& push, double* seconds)>& run) {
  PeakPush push{fma_items, 16, 0.999999f, 1e-7f};
  double s = 0;
  RETURN_IF_ERROR(run(0, push, &s), "peak FMA");  // warm-up: a lazy compile or first launch
  for (;;) {
    RETURN_IF_ERROR(run(0, push, &s), "peak FMA");
    if (s >= 0.02 || push.iters >= (1u << 24)) break;
    push.iters *= s > 0 ? std::min<uint32_t>(16, static_cast<uint32_t>(0.03 / s) + 1) : 16;
  }
  double best = s;
  for (int rep = 0; rep < 2; ++rep) {
    RETURN_IF_ERROR(run(0, push, &s), "peak FMA");
    best = std::min(best, s);
  }
  DevicePeaks peaks;
  peaks.gflops = 64.0 * push.iters * push.n / best / 1e9;
  push.n = copy_bytes / 16;
  best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    RETURN_IF_ERROR(run(1, push, &s), "peak copy");
    best = std::min(best, s);
  }
  peaks.gbps = 2.0 * copy_bytes / best / 1e9;
  return peaks;
}

// ------------------------------------------------------------------- backend

void GpuBackend::toStorage(const Tensor& host, uint8_t* device_bytes) const {
  const size_t n = static_cast<size_t>(host.elementCount());
  if (storageType(host) == host.dtype()) {
    if (host.byteSize()) std::memcpy(device_bytes, host.hostData(), host.byteSize());
    return;
  }
  const float* f = host.host<float>();
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = FloatToHalf(f[i]);
    std::memcpy(device_bytes + 2 * i, &h, 2);
  }
}

void GpuBackend::fromStorage(const uint8_t* device_bytes, Tensor* host) const {
  const size_t n = static_cast<size_t>(host->elementCount());
  if (storageType(*host) == host->dtype()) {
    if (host->byteSize()) std::memcpy(host->hostData(), device_bytes, host->byteSize());
    return;
  }
  float* f = host->host<float>();
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, device_bytes + 2 * i, 2);
    f[i] = HalfToFloat(h);
  }
}

void GpuBackend::onClearBuffer() {
  planner_.clear();
  buffer_of_.clear();
}

Status GpuBackend::onAcquireBuffer(Tensor* t, const Tensor* share_with) {
  const size_t bytes = storageBytes(*t);
  if (bytes > gpuCaps().max_storage_buffer_range)
    return Unsupported("tensor '%s' is %zu bytes, over the device's largest buffer binding of %llu", t->name().c_str(),
                       bytes, (unsigned long long)gpuCaps().max_storage_buffer_range);
  if (share_with) {
    auto it = buffer_of_.find(share_with);
    if (it == buffer_of_.end()) return Internal("in-place share with an unacquired tensor '%s'", share_with->name().c_str());
    planner_.share(it->second);
    buffer_of_[t] = it->second;
    return Status::Ok();
  }
  buffer_of_[t] = planner_.acquire(bytes);
  return Status::Ok();
}

Status GpuBackend::onReleaseBuffer(Tensor* t) {
  auto it = buffer_of_.find(t);
  if (it == buffer_of_.end()) return Internal("release of unacquired tensor '%s'", t->name().c_str());
  planner_.release(it->second);
  return Status::Ok();
}

StatusOr<bool> GpuBackend::onAcquireConstant(Tensor* mirror, const Tensor& src) {
  for (const Constant& c : constants_)
    if (c.mirror == mirror) return true;  // resident since an earlier resize
  if (storageBytes(src) > gpuCaps().max_storage_buffer_range)
    return Unsupported("constant '%s' is %zu bytes, over the device's largest buffer binding of %llu",
                       src.name().c_str(), storageBytes(src), (unsigned long long)gpuCaps().max_storage_buffer_range);
  constants_.push_back({mirror, &src, 0});
  constants_dirty_ = true;
  return true;
}

void GpuBackend::bindPlanned(const MemoryPlanner::Plan& plan, uint64_t handle) {
  for (auto& [tensor, id] : buffer_of_)
    const_cast<Tensor*>(tensor)->bind(this, nullptr, handle, plan.offsets[static_cast<size_t>(id)]);
  report_.planned_bytes = plan.total;
  report_.lower_bound_bytes = plan.lower_bound;
  report_.tensor_bytes = 0;
  report_.tensors = buffer_of_.size();
  for (auto& [tensor, id] : buffer_of_) report_.tensor_bytes += storageBytes(*tensor);
}

StatusOr<std::unique_ptr<Execution>> GpuBackend::createFrom(const OpEntry* begin, const OpEntry* end,
                                                            const GraphOp& op, const Graph& graph) {
  for (const OpEntry* e = begin; e != end; ++e) {
    if (e->type != op.type) continue;
    ASSIGN_OR_RETURN(std::unique_ptr<Execution> exec, e->factory(op, graph, this));
    std::vector<fb::DataType> in;
    for (int t : op.inputs)
      if (t >= 0) in.push_back(graph.tensors[static_cast<size_t>(t)].dtype);
    static_cast<GpuExecution*>(exec.get())->setDeclaredInputDtypes(std::move(in));
    return exec;
  }
  return Unsupported("the %s backend has no %s kernel", name(), op.typeName());
}

}  // namespace kiln
