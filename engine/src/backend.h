// Backend and Execution: the interface every device implements (host,
// Vulkan, OpenCL), in MNN's vocabulary.
//
// A session drives a backend through a resize like this:
//   onChooseLayouts(steps, app_tensors)  // shapes known; device layouts
//   onClearBuffer()
//   for each op on this backend, in execution order:
//     onAcquireBuffer(each output)      // lifetime starts
//     execution->onResize(inputs, outputs)
//     onReleaseBuffer(each input whose last use this was)
//   onPrepareKernels()                  // what the set-up deferred (pipelines, in parallel)
//   onAllocateBuffer()                  // one allocation per pool; binds tensors
//   onCopyBuffer(constant, mirror)      // constants read by this backend, once
//   onRecord(runs)                      // a GPU backend records its work here
// and a run like this:
//   onExecuteBegin(op_by_op); execution->onExecute(...) for each op;
//   onExecuteEnd(); onWaitFinish()
//
// Thread-safety: a backend belongs to one session and is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph.h"
#include "kiln/session.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

class Backend;

// One op on one backend.
class Execution {
 public:
  explicit Execution(Backend* backend) : backend_(backend) {}
  virtual ~Execution() = default;
  // Shape-dependent setup (kernel choice, scratch sizes, recording). Tensor
  // memory is not bound yet: only shapes and dtypes may be read.
  virtual Status onResize(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) {
    return Status::Ok();
  }
  virtual Status onExecute(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) = 0;
  Backend* backend() const { return backend_; }

  // Ahead-of-time bundles (kiln-compile): the forms this execution made
  // from constants at creation and resize (packed panels, transformed
  // filters), each under a key with what it was made for (`meta`), which a
  // session of a matching bundle takes back in place.
  struct Prepacked {
    std::string key;
    std::vector<int64_t> meta;
    const void* data = nullptr;
    size_t bytes = 0;
  };
  virtual void prepacked(std::vector<Prepacked>* out) const {}

 private:
  Backend* backend_;
};

struct MemoryReport {
  size_t planned_bytes = 0;      // what onAllocateBuffer allocated
  size_t lower_bound_bytes = 0;  // largest sum of live tensor bytes at any op
  size_t tensor_bytes = 0;       // sum of all acquired tensors (no reuse)
  size_t tensors = 0;
  size_t constant_bytes = 0;     // constants kept apart from the pool (GPU weights)
  size_t packed_tensors = 0;     // tensors held in a device layout other than NCHW
};

// One step of a session in run order, as onChooseLayouts sees it: an op's
// execution on `backend`, or (exec == nullptr) a copy of inputs[0] into
// outputs[0] between backends.
struct StepView {
  Backend* backend = nullptr;
  Execution* exec = nullptr;
  const std::vector<Tensor*>* inputs = nullptr;
  const std::vector<Tensor*>* outputs = nullptr;
};

// A device's measured roof (kiln-kernelbench): fp32 FMA throughput and copy
// bandwidth, each from a kernel made for it, not from a data sheet.
struct DevicePeaks {
  double gflops = 0;  // fp32, counting an FMA as 2 flops
  double gbps = 0;    // bytes read + written per second / 1e9
  double core_gflops = 0;  // host: the FMA peak of one core (gflops is all the pool's threads); else 0
  std::string how;    // what was measured ("AVX-512 FMA, 2 threads; memcpy 128 MiB")
};

// The host's physical memory in bytes (SIZE_MAX when it cannot be read).
size_t PhysicalMemoryBytes();

// Backend creators, declared here and defined by each backend (as MNN
// registers its backends): the engine creates every backend through them and
// includes no GPU backend's header. host_fallback/host_backend.cpp,
// backends/vulkan/vk_backend.cpp and backends/opencl/cl_backend.cpp define
// their own; a build without a GPU backend links engine/src/
// absent_backends.cpp's, which return Unavailable with the reason.
StatusOr<std::unique_ptr<Backend>> CreateHostBackend(const ScheduleConfig& config);
StatusOr<std::unique_ptr<Backend>> CreateVulkanBackend(const ScheduleConfig& config);
StatusOr<std::unique_ptr<Backend>> CreateOpenCLBackend(const ScheduleConfig& config);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;       // "host", "vulkan", "opencl"
  virtual std::string deviceName() const = 0;  // "AMD EPYC ... (AVX-512, 2 threads)"

  // Creates the execution of `op`, or an Unsupported status that says why
  // (the scheduler prints it when the op falls back to another backend).
  virtual StatusOr<std::unique_ptr<Execution>> onCreate(const GraphOp& op, const Graph& graph) = 0;

  // Resize, first, with every tensor's shape known: all steps of the
  // session (every backend's), and the tensors the app reads or writes
  // (graph inputs and outputs). A backend may hold a tensor that only its
  // own executions touch in a layout of its own (GPU: channel-packed); it
  // keeps the choice until the next call, and its copies to and from the
  // host convert.
  virtual Status onChooseLayouts(const std::vector<StepView>& steps, const std::vector<const Tensor*>& app_tensors) {
    return Status::Ok();
  }
  virtual void onClearBuffer() = 0;

  // What the device can hold: the largest single buffer, and all of its
  // memory. The session's limits (ScheduleConfig::maxTensorBytes and
  // maxSessionBytes) default to these. The host's: its physical memory.
  virtual size_t maxBufferBytes() const { return PhysicalMemoryBytes(); }
  virtual size_t totalMemoryBytes() const { return PhysicalMemoryBytes(); }
  // The most one resize may plan on this backend (pool plus the constants it
  // keeps), set by the session before planning; onAllocateBuffer checks its
  // plan against it with checkPoolSize before allocating anything.
  void setMemoryLimit(size_t bytes) { memory_limit_ = bytes; }
  size_t memoryLimit() const { return memory_limit_; }
  Status checkPoolSize(size_t bytes) const {
    if (bytes <= memory_limit_) return Status::Ok();
    return OutOfMemory("%s pool of %zu bytes exceeds the session memory limit (%zu bytes)", name(), bytes,
                       memory_limit_);
  }

  // An op's own scratch (an unfolded input, padded planes) of `bytes`,
  // checked against the same limit before it is allocated: a model whose
  // attributes (huge pads or strides) would ask for more fails resize with
  // the op's name (the session adds it), where the allocation would abort
  // or exhaust the machine.
  Status checkScratch(size_t bytes, const char* what) const {
    if (bytes <= memory_limit_) return Status::Ok();
    return OutOfMemory("scratch for %s of %zu bytes exceeds the session memory limit (%zu bytes)", what, bytes,
                       memory_limit_);
  }

  // `share_with`: the tensor may reuse that (already acquired) tensor's
  // memory in place; the memory is released when both are.
  virtual Status onAcquireBuffer(Tensor* t, const Tensor* share_with = nullptr) = 0;
  virtual Status onReleaseBuffer(Tensor* t) = 0;
  // Views: `t` lives inside `parent` (already acquired) at `byte_offset`,
  // so that a Concat's inputs are written where its output keeps them and
  // the Concat copies nothing. The parent's memory is released when it and
  // every view are. Backends that take views say so (supportsViews).
  virtual bool supportsViews() const { return false; }
  virtual Status onAcquireView(Tensor* t, const Tensor* parent, size_t byte_offset) {
    (void)t, (void)parent, (void)byte_offset;
    return Unsupported("%s backend has no tensor views", name());
  }
  // A model constant read by this backend's ops (`mirror` of the host
  // tensor `src`, whose bytes never change). A backend that keeps constants
  // apart (a GPU uploading weights once, not at every resize) takes it and
  // returns true; it must bind `mirror` by onAllocateBuffer. false: the
  // session plans it like any tensor and copies it at each resize.
  virtual StatusOr<bool> onAcquireConstant(Tensor* mirror, const Tensor& src) { return false; }
  // The bytes of constant `src` changed (Session::setWeight): a backend that
  // took a mirror of it must copy it again before the next run.
  virtual void onConstantChanged(const Tensor& src) {}
  // Every execution set up (onResize): the backend creates the kernels it
  // deferred so as to create them side by side (Vulkan's pipelines). The
  // session counts its time as pipelines.
  virtual Status onPrepareKernels() { return Status::Ok(); }
  virtual Status onAllocateBuffer() = 0;
  virtual MemoryReport memoryReport() const = 0;

  // Resize, last: this backend's executions in run order, grouped into the
  // maximal runs that no other backend's step (or copy) interrupts. A GPU
  // backend records each run once here, so that onExecute only submits.
  virtual Status onRecord(const std::vector<std::vector<Execution*>>& runs) { return Status::Ok(); }

  // `op_by_op`: the session reads tensors between ops (callbacks), so each
  // onExecute must finish its op's work by the next onWaitFinish.
  virtual void onExecuteBegin(bool op_by_op) {}
  virtual Status onExecuteEnd() { return Status::Ok(); }
  virtual Status onWaitFinish() { return Status::Ok(); }
  // Device time of `e` in the last run, when the backend measures it
  // (profiling on, timestamps supported).
  virtual bool opTime(const Execution* e, double* ms) const { return false; }
  // Copies between this backend's tensors and host tensors (either way).
  virtual Status onCopyBuffer(const Tensor& src, Tensor* dst) = 0;
  // Copies one of this backend's tensors into another of its tensors (same
  // shape, dtype and layout) on the device, finished by return.
  // Unsupported: the caller goes through the host.
  virtual Status onCopyWithin(const Tensor& src, Tensor* dst) { return Unsupported("%s: no device copy", name()); }
  // Measures the device's roof (takes about a second). Benchmarks only.
  virtual StatusOr<DevicePeaks> measurePeaks() { return Unsupported("%s: no peak measurement", name()); }

  // Ahead-of-time bundles (kiln-compile --backend vulkan|opencl): the
  // driver state a session builds at creation, resize and first run
  // (Vulkan's pipeline cache; OpenCL's program binaries and tuned
  // work-group sizes), for a bundle to carry. cacheIdentity() names the
  // device and driver that state is valid for ("" where a backend has none
  // to give); importCache() seeds the backend with a bundle's state made
  // for that identity (before the session creates its kernels) and says
  // what it took, as the placement printout shows it.
  virtual std::string cacheIdentity() const { return ""; }
  virtual StatusOr<std::vector<uint8_t>> exportCache() { return Unsupported("%s: no driver state to bundle", name()); }
  virtual StatusOr<std::string> importCache(const uint8_t* data, size_t bytes) {
    return Unsupported("%s: no driver state to take from a bundle", name());
  }

 private:
  size_t memory_limit_ = SIZE_MAX;
};

}  // namespace kiln
