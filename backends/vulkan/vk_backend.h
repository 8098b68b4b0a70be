// The Vulkan backend.
//
// Memory: one VkBuffer + VkDeviceMemory per session pool, planned by
// MemoryPlanner (offsets aligned to the device's storage-buffer offset
// alignment); the model constants read by Vulkan ops (weights) live in a
// buffer of their own, uploaded once through the staging buffer when the
// session first resizes and kept across later resizes. Where a
// device-local memory type is also host-visible (lavapipe, integrated GPUs,
// resizable BAR) the pool is mapped and copies are memcpy; elsewhere copies
// go through a host-visible staging buffer.
//
// Kernels: the shared op layer (backends/gpu) describes each op's work at
// onResize as a list of GpuDispatch (kernel, bindings, push constants,
// group counts); nothing Vulkan-specific lives in an op. At onRecord the backend
// allocates and writes every descriptor set, then records each run of
// consecutive Vulkan ops into one command buffer, inserting a barrier
// exactly where a dispatch reads or writes memory that an earlier dispatch
// in the same interval wrote (or, for writes, read): each buffer range's
// last access is tracked. run() only submits (vkQueueSubmit per run) and
// waits on the runs' fences. With callbacks (op_by_op) each op's dispatches
// are recorded into a one-shot command buffer and waited for.
//
// Pipelines are created at resize from SPIR-V compiled at build time
// (shaders/vulkan), with specialization constants, through the device's
// VkPipelineCache (ScheduleConfig::cacheFile merged into it at creation,
// written from it at the end), and kept by the device for its later
// sessions (vk_device.h).
//
// Thread-safety: one session, one thread (see backend.h).
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "gpu_backend.h"
#include "kiln/session.h"
#include "memory_planner.h"
#include "vk_device.h"

namespace kiln {

// A device buffer of the backend's own (pool, weights, staging).
struct VulkanBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize bytes = 0;
};

class VulkanBackend final : public GpuBackend {
 public:
  static StatusOr<std::unique_ptr<Backend>> Create(const ScheduleConfig& config);
  ~VulkanBackend() override;

  const char* name() const override { return "vulkan"; }
  std::string deviceName() const override { return device_->caps().toString(); }

  Status onAllocateBuffer() override;
  MemoryReport memoryReport() const override;
  Status onRecord(const std::vector<std::vector<Execution*>>& runs) override;
  void onExecuteBegin(bool op_by_op) override;
  Status onWaitFinish() override;
  Status onCopyBuffer(const Tensor& src, Tensor* dst) override;
  Status onCopyWithin(const Tensor& src, Tensor* dst) override;
  StatusOr<DevicePeaks> measurePeaks() override;  // vk_peaks.cpp
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

  VulkanDevice& device() { return *device_; }
  const VulkanCaps& caps() const { return device_->caps(); }
  bool opTime(const Execution* e, double* ms) const override;
  // How long creating this backend's pipelines took (cold-start figures).
  double pipelineMs() const { return pipeline_ms_; }
  // Writes the device's pipeline cache to ScheduleConfig::cacheFile where
  // it holds more than the file gave it (or the file gave nothing).
  Status saveCache();
  // The size of the device's pipeline cache data.
  StatusOr<size_t> cacheBytes() const;
  // Creates the pipelines kernel() deferred, side by side on up to as many
  // threads as the CPU has, through the one pipeline cache (the session
  // calls it once every execution is set up; recording calls it too).
  Status onPrepareKernels() override { return createPending(); }

 private:
  Status createPending();
  VulkanBackend() = default;
  Status init(const ScheduleConfig& config);
  Status waitIdle();
  Status recordDispatches(VkCommandBuffer cmd, const std::vector<GpuExecution*>& execs, bool timestamps);
  // A device-local buffer (freed with freeVkBuffer), with `data` uploaded
  // when given.
  StatusOr<VulkanBuffer> createVkBuffer(VkDeviceSize bytes, const void* data = nullptr);
  void freeVkBuffer(VulkanBuffer* b);
  Status submit(VkCommandBuffer cmd, VkFence fence);
  StatusOr<VkCommandBuffer> beginOneShot();
  Status endOneShot(VkCommandBuffer cmd);
  Status ensureStaging(VkDeviceSize bytes);
  // One dispatch of `p` over a and b, submitted and waited for (peaks).
  Status timeDispatch(const VulkanPipeline* p, const VulkanBuffer& a, const VulkanBuffer& b, const void* push,
                      uint32_t push_bytes, uint32_t groups, double* seconds);
  Status uploadConstants();
  void freeRecording();
  Status writeDescriptorSets(const std::vector<std::vector<Execution*>>& runs);
  Status readTimings();

  std::shared_ptr<VulkanDevice> device_;
  ScheduleConfig config_;
  VulkanBuffer pool_;
  uint8_t* pool_map_ = nullptr;  // non-null on unified memory
  VulkanBuffer constant_buffer_;
  VulkanBuffer staging_;
  uint8_t* staging_map_ = nullptr;

  // The device cache's size when the cache file was merged into it; 0 when
  // the file was missing or refused (then written at the end regardless).
  size_t cache_loaded_bytes_ = 0;
  std::vector<VulkanPipeline*> pending_;  // asked for, pipeline not made yet
  double pipeline_ms_ = 0;

  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  std::vector<VkBufferView> texel_views_;  // the recording's texel-buffer bindings
  struct Run {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    std::vector<GpuExecution*> execs;
    bool pending = false;
  };
  std::vector<Run> runs_;
  std::unordered_map<const Execution*, size_t> last_of_run_;  // last exec of run -> run index
  VkCommandBuffer one_shot_ = VK_NULL_HANDLE;
  VkFence one_shot_fence_ = VK_NULL_HANDLE;
  bool op_by_op_ = false;
  bool math16_ = false;  // half arithmetic where a kernel has it (init)

  VkQueryPool queries_ = VK_NULL_HANDLE;
  std::unordered_map<const Execution*, uint32_t> query_of_;  // exec -> its first timestamp query
  std::unordered_map<const Execution*, double> timings_;      // ms of the last run
};

}  // namespace kiln
