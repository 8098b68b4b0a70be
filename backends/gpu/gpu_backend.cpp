#include "gpu_backend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "half.h"

namespace kiln {

// ---------------------------------------------------------------- executions

GpuExecution::GpuExecution(GpuBackend* b) : Execution(b) {}

GpuBackend* GpuExecution::gpu() const { return static_cast<GpuBackend*>(backend()); }

bool GpuExecution::packed(const Tensor* t) const { return t && gpu()->packed(*t); }

uint8_t GpuExecution::texelsOf(uint64_t bytes, uint8_t floats) const {
  const uint64_t texels = gpu()->gpuCaps().texel_elements, texel_bytes = (gpu()->halfStorage() ? 2u : 4u) * floats;
  return texels && bytes > 0 && bytes / texel_bytes <= texels ? floats : 0;
}

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
    KILN_RETURN_IF_ERROR(check(inputs, declared_in_));
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
  uint32_t texel_mask = 0;
  for (size_t i = 0; i < bindings.size(); ++i)
    if (bindings[i].texel) texel_mask |= 1u << i;
  KILN_ASSIGN_OR_RETURN(const GpuKernel* k,
                        gpu()->kernel(name, static_cast<uint32_t>(bindings.size()), local, spec, texel_mask));
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

bool EnvIsZero(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "0") == 0;
}

void ConvTileFromEnv(GpuCaps* caps) {
  const char* v = std::getenv("KILN_GPU_CONV_TILE");
  unsigned b = 0, c = 0;
  if (!v || std::sscanf(v, "%ux%u", &b, &c) != 2 || b < 1 || b > 8 || c < 1 || c > 8) return;
  caps->conv_tile_blocks = b, caps->conv_tile_cols = c;
  caps->conv_tile_blocks_pointwise = 0;
}

StatusOr<DevicePeaks> MeasurePeakSchedule(
    uint32_t fma_items, uint32_t copy_bytes,
    const std::function<Status(uint32_t mode, const PeakPush& push, double* seconds)>& run) {
  PeakPush push{fma_items, 16, 0.999999f, 1e-7f};
  double s = 0;
  KILN_RETURN_IF_ERROR(run(0, push, &s), "peak FMA");  // warm-up: a lazy compile or first launch
  for (;;) {
    KILN_RETURN_IF_ERROR(run(0, push, &s), "peak FMA");
    if (s >= 0.02 || push.iters >= (1u << 24)) break;
    push.iters *= s > 0 ? std::min<uint32_t>(16, static_cast<uint32_t>(0.03 / s) + 1) : 16;
  }
  double best = s;
  for (int rep = 0; rep < 2; ++rep) {
    KILN_RETURN_IF_ERROR(run(0, push, &s), "peak FMA");
    best = std::min(best, s);
  }
  DevicePeaks peaks;
  peaks.gflops = 64.0 * push.iters * push.n / best / 1e9;
  push.n = copy_bytes / 16;
  best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    KILN_RETURN_IF_ERROR(run(1, push, &s), "peak copy");
    best = std::min(best, s);
  }
  peaks.gbps = 2.0 * copy_bytes / best / 1e9;
  return peaks;
}

// ------------------------------------------------------------------- backend

namespace {

// The packed storage index of element i of an NCHW-ordered tensor of
// `shape` ([N, C, S...]): ((n * C4 + c / 4) * S + s) * 4 + c % 4.
struct PackIndex {
  size_t c, c4, s;
  explicit PackIndex(const std::vector<int64_t>& shape) {
    c = static_cast<size_t>(shape[1]);
    c4 = (c + 3) / 4;
    s = 1;
    for (size_t d = 2; d < shape.size(); ++d) s *= static_cast<size_t>(shape[d]);
  }
  size_t operator()(size_t i) const {
    const size_t si = i % s, nc = i / s, ci = nc % c, n = nc / c;
    return ((n * c4 + ci / 4) * s + si) * 4 + ci % 4;
  }
};

}  // namespace

std::vector<int64_t> GpuBackend::storageShape(const Tensor& t) const {
  if (!packed(t)) return t.shape();
  std::vector<int64_t> s = t.shape();
  s[1] = (s[1] + 3) / 4;
  s.push_back(4);
  return s;
}

size_t GpuBackend::storageElements(const Tensor& t) const {
  size_t n = 1;
  for (int64_t d : storageShape(t)) n *= static_cast<size_t>(d);
  return n;
}

// Element i of `host` sits at storage element at(i) in `unit`-byte units:
// i, or PackIndex when packed; fp16 storage converts each f32.
void GpuBackend::toStorage(const Tensor& host, uint8_t* device_bytes, bool packed) const {
  const bool half = storageType(host) != host.dtype();
  if (!half && !packed) {
    if (host.byteSize()) std::memcpy(device_bytes, host.hostData(), host.byteSize());
    return;
  }
  const size_t n = static_cast<size_t>(host.elementCount()), unit = half ? 2 : host.elementSize();
  std::optional<PackIndex> at;
  if (packed) {
    at.emplace(host.shape());
    std::memset(device_bytes, 0, n / std::max<size_t>(at->c, 1) * at->c4 * 4 * unit);  // the zero lanes
  }
  const uint8_t* src = host.host<uint8_t>();
  for (size_t i = 0; i < n; ++i) {
    uint8_t* dst = device_bytes + (at ? (*at)(i) : i) * unit;
    if (half) {
      float f;
      std::memcpy(&f, src + 4 * i, 4);
      const uint16_t h = FloatToHalf(f);
      std::memcpy(dst, &h, 2);
    } else {
      std::memcpy(dst, src + unit * i, unit);
    }
  }
}

void GpuBackend::fromStorage(const uint8_t* device_bytes, Tensor* host, bool packed) const {
  const bool half = storageType(*host) != host->dtype();
  if (!half && !packed) {
    if (host->byteSize()) std::memcpy(host->hostData(), device_bytes, host->byteSize());
    return;
  }
  const size_t n = static_cast<size_t>(host->elementCount()), unit = half ? 2 : host->elementSize();
  std::optional<PackIndex> at;
  if (packed) at.emplace(host->shape());
  uint8_t* dst = host->host<uint8_t>();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* src = device_bytes + (at ? (*at)(i) : i) * unit;
    if (half) {
      uint16_t h;
      std::memcpy(&h, src, 2);
      const float f = HalfToFloat(h);
      std::memcpy(dst + 4 * i, &f, 4);
    } else {
      std::memcpy(dst + unit * i, src, unit);
    }
  }
}

Status GpuBackend::onChooseLayouts(const std::vector<StepView>& steps, const std::vector<const Tensor*>& app) {
  packed_.clear();
  report_.packed_tensors = 0;
  if (!pack_layout_) return Status::Ok();
  std::vector<GpuExecution::PackRule> rules(steps.size());
  std::map<const Tensor*, bool> candidate;  // false: ruled out
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepView& st = steps[i];
    if (st.backend != this || !st.exec) continue;
    rules[i] = static_cast<GpuExecution*>(st.exec)->packRule(*st.inputs, *st.outputs);
    for (size_t k = 0; k < st.outputs->size(); ++k) {
      const Tensor* t = (*st.outputs)[k];
      if (t && ((rules[i].outputs >> k) & 1) && t->dtype() == fb::DataType::F32 && t->dimensions() >= 3 &&
          t->dimensions() <= 5 && t->elementCount() > 0)
        candidate.emplace(t, true);
    }
  }
  // Every reader must take the tensor packed: an op of this backend whose
  // rule allows it there. The app's tensors stay NCHW.
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepView& st = steps[i];
    const bool ours = st.backend == this && st.exec;
    for (size_t k = 0; k < st.inputs->size(); ++k) {
      auto it = candidate.find((*st.inputs)[k]);
      if (it != candidate.end() && !(ours && ((rules[i].inputs >> k) & 1))) it->second = false;
    }
  }
  for (const Tensor* t : app) {
    auto it = candidate.find(t);
    if (it != candidate.end()) it->second = false;
  }
  // Uniform ops: one planar tensor makes all of the op's tensors planar,
  // which may rule out a neighbour's, until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (!rules[i].uniform) continue;
      const StepView& st = steps[i];
      std::vector<const Tensor*> ts;
      for (size_t k = 0; k < st.inputs->size(); ++k)
        if ((rules[i].inputs >> k) & 1) ts.push_back((*st.inputs)[k]);
      for (size_t k = 0; k < st.outputs->size(); ++k)
        if ((rules[i].outputs >> k) & 1) ts.push_back((*st.outputs)[k]);
      bool all = true;
      for (const Tensor* t : ts) {
        auto it = candidate.find(t);
        all = all && it != candidate.end() && it->second;
      }
      if (all) continue;
      for (const Tensor* t : ts) {
        auto it = candidate.find(t);
        if (it != candidate.end() && it->second) {
          it->second = false;
          changed = true;
        }
      }
    }
  }
  for (auto& [t, ok] : candidate)
    if (ok) packed_.insert(t);
  report_.packed_tensors = packed_.size();
  findUnboundConstants(steps);
  return Status::Ok();
}

void GpuBackend::findUnboundConstants(const std::vector<StepView>& steps) {
  // Inputs no dispatch will bind (a packed conv's NCHW weights): unbound
  // unless another step binds them.
  unbound_constants_.clear();
  std::set<const Tensor*> bound;
  for (const StepView& st : steps) {
    const uint32_t unbound =
        st.backend == this && st.exec ? static_cast<GpuExecution*>(st.exec)->unboundInputs(*st.inputs, *st.outputs) : 0;
    for (size_t k = 0; k < st.inputs->size(); ++k) {
      const Tensor* t = (*st.inputs)[k];
      if (!t) continue;
      if ((unbound >> k) & 1) unbound_constants_.insert(t);
      else bound.insert(t);
    }
  }
  for (const Tensor* t : bound) unbound_constants_.erase(t);
}

bool GpuBackend::uploads(Constant& c) {
  c.resident = !unbound_constants_.count(c.mirror);
  if (!c.resident) c.mirror->bind(this, nullptr, 0, 0);
  return c.resident;
}

bool GpuBackend::copyHostConstant(const Tensor& src, Tensor* dst) const {
  if (src.backend() != this || dst->backend() == this) return false;
  for (const Constant& c : constants_) {
    if (c.mirror != &src || c.resident) continue;
    if (dst->byteSize()) std::memcpy(dst->hostData(), c.src->hostData(), dst->byteSize());
    return true;
  }
  return false;
}

void GpuBackend::onConstantChanged(const Tensor& src) {
  for (const Constant& c : constants_)
    if (c.src == &src) constants_dirty_ = true;  // uploadConstants copies them all again
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
  // In place only over the same storage (not a packed input under a planar
  // output, or the reverse).
  if (share_with && (packed(*t) != packed(*share_with) || storageBytes(*share_with) != bytes)) share_with = nullptr;
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
  const bool bound = !unbound_constants_.count(mirror);
  for (const Constant& c : constants_) {
    if (c.mirror != mirror) continue;
    if (bound && !c.resident) constants_dirty_ = true;  // bound by this resize's dispatches: upload it
    return true;  // known since an earlier resize
  }
  if (storageBytes(src) > gpuCaps().max_storage_buffer_range)
    return Unsupported("constant '%s' is %zu bytes, over the device's largest buffer binding of %llu",
                       src.name().c_str(), storageBytes(src), (unsigned long long)gpuCaps().max_storage_buffer_range);
  constants_.push_back({mirror, &src, 0});
  if (bound) constants_dirty_ = true;
  else mirror->bind(this, nullptr, 0, 0);
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

namespace {

struct OpEntry {
  fb::OpType type;
  StatusOr<std::unique_ptr<Execution>> (*factory)(const GraphOp&, const Graph&, GpuBackend*);
};

struct OpExclusion {
  const char* backend;
  fb::OpType type;
  const char* reason;
};

#define KILN_GPU_EXCLUDE(Backend, Op, Reason)
constexpr OpEntry kGpuOps[] = {
#define KILN_GPU_OP(Op, Factory) {fb::OpType::Op, &CreateGpu##Factory},
#include "gpu_ops.inc"
#undef KILN_GPU_OP
};
#undef KILN_GPU_EXCLUDE

#define KILN_GPU_OP(Op, Factory)
constexpr OpExclusion kExclusions[] = {
#define KILN_GPU_EXCLUDE(Backend, Op, Reason) {Backend, fb::OpType::Op, Reason},
#include "gpu_ops.inc"
#undef KILN_GPU_EXCLUDE
    {nullptr, fb::OpType::Invalid, nullptr},  // keeps the array non-empty
};
#undef KILN_GPU_OP

}  // namespace

StatusOr<std::unique_ptr<Execution>> GpuBackend::onCreate(const GraphOp& op, const Graph& graph) {
  for (const OpExclusion& x : kExclusions)
    if (x.backend && x.type == op.type && std::strcmp(x.backend, name()) == 0)
      return Unsupported("the %s backend does not run %s: %s", name(), op.typeName(), x.reason);
  for (const OpEntry* e = std::begin(kGpuOps); e != std::end(kGpuOps); ++e) {
    if (e->type != op.type) continue;
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Execution> exec, e->factory(op, graph, this));
    std::vector<fb::DataType> in;
    for (int t : op.inputs)
      if (t >= 0) in.push_back(graph.tensors[static_cast<size_t>(t)].dtype);
    static_cast<GpuExecution*>(exec.get())->setDeclaredInputDtypes(std::move(in));
    return exec;
  }
  return Unsupported("the %s backend has no %s kernel", name(), op.typeName());
}

}  // namespace kiln
