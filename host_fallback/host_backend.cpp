#include "host_backend.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "cpu_features.h"
#include "fault_injection.h"
#include "gemm.h"

namespace kiln {

#define KILN_HOST_OP(Op, Factory) \
  StatusOr<std::unique_ptr<Execution>> CreateHost##Factory(const GraphOp&, const Graph&, HostBackend*);
#include "ops.inc"
#undef KILN_HOST_OP

namespace {

using Factory = StatusOr<std::unique_ptr<Execution>> (*)(const GraphOp&, const Graph&, HostBackend*);
struct Entry {
  fb::OpType type;
  Factory factory;
};
const Entry kKernels[] = {
#define KILN_HOST_OP(Op, Fac) {fb::OpType::Op, &CreateHost##Fac},
#include "ops.inc"
#undef KILN_HOST_OP
};

Factory FindFactory(fb::OpType type) {
  for (const Entry& e : kKernels)
    if (e.type == type) return e.factory;
  return nullptr;
}

// The value of the first "key : value" line of /proc/cpuinfo with this key.
std::string CpuInfo(const char* key) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) {
      size_t c = line.find(':');
      if (c != std::string::npos) return line.substr(c + 2);
    }
  return "";
}

std::string CpuModel() {
#if defined(__aarch64__)
  // arm64 Linux names no model, only the implementer and part numbers (and
  // under qemu-user the file is the build machine's: "model name" would be
  // an x86 CPU's).
  const std::string impl = CpuInfo("CPU implementer"), part = CpuInfo("CPU part");
  return impl.empty() ? "arm64 CPU" : "arm64 CPU (implementer " + impl + ", part " + part + ")";
#else
  const std::string model = CpuInfo("model name");
  return model.empty() ? "CPU" : model;
#endif
}

}  // namespace

bool HostSupports(fb::OpType type) { return FindFactory(type) != nullptr; }

StatusOr<std::unique_ptr<Backend>> CreateHostBackend(const ScheduleConfig& config) {
  return std::unique_ptr<Backend>(new HostBackend(config.numThread, config.precision));
}

HostBackend::HostBackend(int threads, Precision precision) : pool_(threads), precision_(precision) {}
HostBackend::~HostBackend() { std::free(memory_); }

uint8_t* AllocateHostPool(size_t bytes) {
  bytes = bytes ? bytes : 64;
  // Pools of 2 MiB and more in whole 2 MiB huge pages where the kernel
  // gives them (transparent huge pages, "madvise" mode): a few faults
  // instead of one per 4 KiB page. Touched now, so the first run takes no
  // page faults on it (6 MiB: 1600 faults, milliseconds, else).
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t align = bytes >= kHuge ? kHuge : 64;
  bytes = (bytes + align - 1) / align * align;
  auto* memory = static_cast<uint8_t*>(std::aligned_alloc(align, bytes));
  if (!memory) return nullptr;
#ifdef MADV_HUGEPAGE
  if (align == kHuge) (void)::madvise(memory, bytes, MADV_HUGEPAGE);
#endif
  std::memset(memory, 0, bytes);
  return memory;
}

std::string HostBackend::setBundle(const fb::Bundle* bundle) {
  bundle_index_.clear();
  bundle_used_.clear();
  bundle_stale_.clear();
  if (!bundle || !bundle->blobs() || bundle->blobs()->size() == 0) return "";
  const std::string isa = bundle->isa() ? bundle->isa()->str() : "";
  if (isa != GemmIsaName(GemmBestIsa()))
    return StrFormat("host forms not used: packed for %s, this CPU's GEMM is %s; packing at resize", isa.c_str(),
                     GemmIsaName(GemmBestIsa()));
  for (const fb::PrepackedBlob* b : *bundle->blobs())
    if (b->key() && b->data()) bundle_index_[{b->op(), b->key()->str()}] = b;
  return "";
}

const fb::PrepackedBlob* HostBackend::bundled(int op, const std::string& key) const {
  auto it = bundle_index_.find({op, key});
  return it == bundle_index_.end() ? nullptr : it->second;
}

std::string HostBackend::deviceName() const {
  static const std::string features = HostCpuFeatures();
  return CpuModel() + " (" + GemmIsaName(GemmBestIsa()) + " GEMM" + (features.empty() ? "" : ", cpu: " + features) +
         ", " + HostCachesText() + ", " + std::to_string(pool_.threads()) + (pool_.threads() == 1 ? " thread)" : " threads)");
}

StatusOr<std::unique_ptr<Execution>> HostBackend::onCreate(const GraphOp& op, const Graph& graph) {
  Factory f = FindFactory(op.type);
  if (!f) return Unsupported("the host backend has no %s kernel", op.typeName());
  return f(op, graph, this);
}

void HostBackend::onClearBuffer() {
  planner_.clear();
  buffer_of_.clear();
  id_of_.clear();
  view_offset_.clear();
}

Status HostBackend::onAcquireBuffer(Tensor* t, const Tensor* share_with) {
  if (share_with) {
    auto it = id_of_.find(share_with);
    if (it == id_of_.end()) return Internal("in-place share with an unacquired tensor '%s'", share_with->name().c_str());
    planner_.share(it->second);
    buffer_of_[t] = it->second;
    id_of_[t] = it->second;
    auto view = view_offset_.find(share_with);
    if (view != view_offset_.end()) view_offset_[t] = view->second;
    return Status::Ok();
  }
  int id = planner_.acquire(t->byteSize());
  buffer_of_[t] = id;
  id_of_[t] = id;
  return Status::Ok();
}

Status HostBackend::onAcquireView(Tensor* t, const Tensor* parent, size_t byte_offset) {
  auto it = id_of_.find(parent);
  if (it == id_of_.end()) return Internal("view of an unacquired tensor '%s'", parent->name().c_str());
  if (byte_offset + t->byteSize() > parent->byteSize())
    return Internal("view '%s' of %zu bytes at %zu past '%s' (%zu bytes)", t->name().c_str(), t->byteSize(),
                    byte_offset, parent->name().c_str(), parent->byteSize());
  planner_.share(it->second);
  buffer_of_[t] = it->second;
  id_of_[t] = it->second;
  auto pv = view_offset_.find(parent);
  view_offset_[t] = byte_offset + (pv == view_offset_.end() ? 0 : pv->second);
  return Status::Ok();
}

Status HostBackend::onReleaseBuffer(Tensor* t) {
  auto it = id_of_.find(t);
  if (it == id_of_.end()) return Internal("release of unacquired tensor '%s'", t->name().c_str());
  planner_.release(it->second);
  return Status::Ok();
}

Status HostBackend::onAllocateBuffer() {
  MemoryPlanner::Plan plan = planner_.plan();
  std::free(memory_);
  memory_ = nullptr;
  KILN_RETURN_IF_ERROR(checkPoolSize(plan.total + report_.constant_bytes));
  memory_ = fault::Hit(fault::Site::kHostAlloc) ? nullptr : AllocateHostPool(plan.total);
  if (!memory_) return OutOfMemory("host pool of %zu bytes", plan.total);
  for (auto& [tensor, id] : buffer_of_) {
    auto view = view_offset_.find(tensor);
    tensor->bind(nullptr, memory_ + plan.offsets[static_cast<size_t>(id)] + (view == view_offset_.end() ? 0 : view->second));
  }
  report_.planned_bytes = plan.total;
  report_.lower_bound_bytes = plan.lower_bound;
  report_.tensor_bytes = 0;
  report_.tensors = buffer_of_.size();
  for (auto& [tensor, id] : buffer_of_) report_.tensor_bytes += tensor->byteSize();
  return Status::Ok();
}

Status HostBackend::onCopyBuffer(const Tensor& src, Tensor* dst) {
  if (!src.hostData() || !dst->hostData()) return Internal("host copy between non-host tensors");
  if (src.byteSize() != dst->byteSize())
    return InvalidArgument("copy of '%s': %zu bytes into %zu", src.name().c_str(), src.byteSize(), dst->byteSize());
  if (src.hostData() != dst->hostData()) std::memmove(dst->hostData(), src.hostData(), src.byteSize());
  return Status::Ok();
}

}  // namespace kiln
