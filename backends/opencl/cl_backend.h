// The OpenCL backend: the GPU op layer (backends/gpu) on OpenCL 1.2.
//
// Memory: one cl_mem per session pool, planned by MemoryPlanner with
// offsets aligned to the device's base-address alignment; a kernel reads a
// tensor through the pool and the tensor's byte offset, two arguments
// (WithBufferOffsets, cl_backend.cpp: no sub-buffers); the model constants
// (weights) read by OpenCL ops live in a buffer of their own, uploaded once
// when the session first resizes and kept across later resizes. Copies to
// and from the host go through a pinned staging buffer (CL_MEM_ALLOC_HOST_PTR,
// which drivers back with page-locked host memory that the device reaches
// by DMA): the host side is written or read through a mapping (converting
// f32 <-> f16 in fp16-storage mode), the device side is a buffer copy.
//
// Kernels: shaders/opencl/<name>.cl, checked by clang at build time and
// embedded; a program is built per (kernel, spec constants, fp16) at resize,
// never at run time, and its binary kept in ScheduleConfig::cacheFile (keyed
// by device, driver version and a hash of source and options), so a second
// process skips the compiler. At onRecord every dispatch gets its own
// cl_kernel with all arguments set once; where the device has
// cl_khr_command_buffer, each run of consecutive OpenCL ops is then recorded
// once into a command buffer that run() enqueues whole; elsewhere (and with
// profiling or callbacks, which need per-op events or waits) run() enqueues
// the prepared kernels in order (an in-order queue orders them). run()
// waits at the end.
// With profiling on, each op's commands are timed with events. With
// ScheduleConfig::tuning, each 1-D dispatch's work-group size is measured
// at record time (a few candidates, the fastest kept) and remembered in the
// cache file under its kernel, build options and grid, so a second session
// reads it instead of measuring.
//
// Thread-safety: one session, one thread (see backend.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cl_device.h"
#include "gpu_backend.h"
#include "kiln/session.h"
#include "memory_planner.h"

namespace kiln {

struct ClKernel : GpuKernel {
  cl_program program = nullptr;
  std::string options;  // the build options (spec constants, fp16)
};

// A kernel's buffer argument: the buffer and the byte offset of the data.
struct ClArg {
  cl_mem mem = nullptr;
  uint64_t offset = 0;
};

// A kernel source with one `ulong kiln_off_<name>` parameter appended to
// each __kernel for each of its __global pointer parameters, in order, and
// each pointer moved by its offset (bytes) before the body runs.
StatusOr<std::string> WithBufferOffsets(const std::string& body);

// Sets a kernel's arguments in the order its built source takes them: the
// buffers, the push-constant struct (when not empty), then each buffer's
// byte offset (WithBufferOffsets in cl_backend.cpp appends those).
Status SetKernelArgs(const ClApi& cl, cl_kernel kernel, const std::vector<ClArg>& buffers,
                     const std::vector<uint8_t>& push);

class OpenCLBackend final : public GpuBackend {
 public:
  static StatusOr<std::unique_ptr<Backend>> Create(const ScheduleConfig& config);
  ~OpenCLBackend() override;

  const char* name() const override { return "opencl"; }
  std::string deviceName() const override { return device_->caps().toString(); }

  Status onAllocateBuffer() override;
  MemoryReport memoryReport() const override;
  Status onRecord(const std::vector<std::vector<Execution*>>& runs) override;
  void onExecuteBegin(bool op_by_op) override { op_by_op_ = op_by_op; }
  Status onWaitFinish() override;
  Status onCopyBuffer(const Tensor& src, Tensor* dst) override;
  Status onCopyWithin(const Tensor& src, Tensor* dst) override;
  bool opTime(const Execution* e, double* ms) const override;
  StatusOr<DevicePeaks> measurePeaks() override;  // cl_peaks.cpp
  std::string cacheIdentity() const override;
  StatusOr<std::vector<uint8_t>> exportCache() override;
  StatusOr<std::string> importCache(const uint8_t* data, size_t bytes) override;

  // GpuBackend.
  const GpuCaps& gpuCaps() const override { return device_->caps(); }
  StatusOr<const GpuKernel*> kernel(const char* name, uint32_t bindings, const uint32_t local[3],
                                    const std::vector<uint32_t>& spec, uint32_t texel_mask = 0) override;
  StatusOr<GpuBuffer> createBuffer(uint64_t bytes, const void* data = nullptr) override;
  void freeBuffer(GpuBuffer* b) override;
  Status submitExecution(GpuExecution* exec) override;

  const ClCaps& caps() const { return device_->caps(); }
  // Runs recorded as command buffers at the last resize (0 without cl_khr_command_buffer).
  size_t commandBuffersRecorded() const { return command_buffers_.size(); }
  // Programs built from source in this session (the rest came from the cache file).
  size_t programsCompiled() const { return programs_compiled_; }

 private:
  OpenCLBackend() = default;
  Status init(const ScheduleConfig& config);
  const ClApi& cl() const { return device_->api(); }
  StatusOr<cl_program> buildProgram(const std::string& stem, const std::string& options);
  // What one dispatch launches (nothing when it is empty or an aliasing copy).
  struct Launch {
    bool skip = false, copy = false;
    cl_mem src = nullptr, dst = nullptr;
    size_t src_offset = 0, dst_offset = 0, bytes = 0;
    size_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
  };
  Launch launchOf(const GpuDispatch& d) const;
  // On `queue`, or the session's queue when null.
  Status enqueue(const GpuDispatch& d, cl_event* event, cl_command_queue queue = nullptr);
  // cl_khr_command_buffer: each run recorded once, enqueued by its last op.
  Status recordCommandBuffers(const std::vector<std::vector<Execution*>>& runs);
  // ScheduleConfig::tuning: the work-group size of a free_local dispatch,
  // measured (or read from the cache file) at record time.
  Status tune(const GpuDispatch& d);
  Status uploadConstants();
  // The pinned staging buffer, grown to at least `bytes`.
  Status ensureStaging(uint64_t bytes);
  void freeRecording();
  void loadCache();
  // Each program's binary into binaries_: those missing, or (again) all.
  void readBinaries(bool again);
  Status saveCache();

  std::shared_ptr<ClDevice> device_;
  ScheduleConfig config_;
  cl_command_queue queue_ = nullptr;
  cl_command_queue tune_queue_ = nullptr;  // with profiling, made by the first tune()
  cl_mem pool_ = nullptr;
  uint64_t pool_bytes_ = 0;
  cl_mem constant_buffer_ = nullptr;
  cl_mem staging_ = nullptr;
  uint64_t staging_bytes_ = 0;
  uint64_t constant_bytes_ = 0;

  std::map<std::string, std::unique_ptr<ClKernel>> kernels_;  // by name, bindings, local size, spec
  std::map<std::string, cl_program> programs_;                // by source stem and build options
  std::map<std::string, std::string> program_keys_;           // programs_'s key -> its binary's key
  std::map<std::string, std::vector<uint8_t>> binaries_;      // the cache file's program binaries
  size_t binaries_loaded_ = 0;
  size_t programs_compiled_ = 0;

  // The recording: one cl_kernel per dispatch (GpuDispatch::prepared).
  std::vector<cl_kernel> recorded_kernels_;
  bool op_by_op_ = false;
  std::vector<cl_command_buffer_khr> command_buffers_;
  std::unordered_map<const Execution*, cl_command_buffer_khr> buffer_of_run_end_;
  std::unordered_map<uint64_t, uint32_t> tuned_local_;  // prepared cl_kernel -> work-group size
  size_t tuned_measured_ = 0, tuned_cached_ = 0;
  std::unordered_map<const Execution*, std::pair<cl_event, cl_event>> events_;  // first, last command
  std::unordered_map<const Execution*, double> timings_;
};

}  // namespace kiln
