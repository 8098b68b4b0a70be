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
// Kernels: an Execution describes its work at onResize as a list of
// VkDispatch (pipeline, bindings, push constants, group counts). Nothing
// Vulkan-specific beyond that lives in an op: at onRecord the backend
// allocates and writes every descriptor set, then records each run of
// consecutive Vulkan ops into one command buffer, inserting a barrier
// exactly where a dispatch reads or writes memory that an earlier dispatch
// in the same interval wrote (or, for writes, read): each buffer range's
// last access is tracked. run() only submits (vkQueueSubmit per run) and
// waits on the runs' fences. With callbacks (op_by_op) each op's dispatches
// are recorded into a one-shot command buffer and waited for.
//
// Pipelines are created at resize from SPIR-V compiled at build time
// (shaders/vulkan), with specialization constants, and kept in a
// VkPipelineCache loaded from / saved to ScheduleConfig::cacheFile.
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
#include "kiln/session.h"
#include "memory_planner.h"
#include "vk_device.h"

namespace kiln {

class VulkanBackend;

// A device buffer owned by an execution (packed weights, scratch).
struct VulkanBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize bytes = 0;
};

struct VulkanPipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  uint32_t local_size[3] = {1, 1, 1};
};

// One binding of a dispatch: a session tensor or an execution's own buffer.
struct VkBinding {
  const Tensor* tensor = nullptr;
  const VulkanBuffer* buffer = nullptr;
  bool write = false;
};

// One unit of recorded work: a compute dispatch, or (pipeline == nullptr) a
// buffer copy of bindings[0] into bindings[1] (skipped when they alias).
struct VkDispatch {
  const VulkanPipeline* pipeline = nullptr;
  std::vector<VkBinding> bindings;
  std::vector<uint8_t> push;
  uint32_t groups[3] = {1, 1, 1};
  VkDescriptorSet set = VK_NULL_HANDLE;
};

constexpr uint32_t kMaxPushConstantBytes = 128;  // the minimum every device guarantees

// One op on Vulkan. Subclasses fill dispatches_ in onResize.
class VulkanExecution : public Execution {
 public:
  explicit VulkanExecution(VulkanBackend* b);
  Status onResize(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) override;
  Status onExecute(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) override;
  std::vector<VkDispatch>& dispatches() { return dispatches_; }
  // The dtypes the model declares for the op's inputs (missing optional
  // inputs excluded), set by the backend at creation.
  void setDeclaredInputDtypes(std::vector<fb::DataType> in) { declared_in_ = std::move(in); }

 protected:
  // Kernels chosen at creation trust the model's declared dtypes, which for
  // an intermediate tensor can be a placeholder; onResize then checks them
  // against the real ones and fails (never computes on misread data). An
  // execution that picks its kernel from the bound tensors returns true.
  virtual bool resolvesDtypesAtResize() const { return false; }
  // Shape-dependent planning: call add*() for each unit of work.
  virtual Status plan(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) = 0;
  VulkanBackend* vk() const;
  // A dispatch of `shader` with `spec` constants (ids 3, 4, ...; ids 0-2 are
  // the work-group size `local`), over `groups` work groups.
  template <typename Push>
  Status add(const char* shader, std::vector<VkBinding> bindings, const Push& push, const uint32_t groups[3],
             const uint32_t local[3], const std::vector<uint32_t>& spec = {}) {
    static_assert(sizeof(Push) <= kMaxPushConstantBytes, "push constants must fit in 128 bytes");
    static_assert(sizeof(Push) % 4 == 0, "push constants are 32-bit words");
    std::vector<uint8_t> bytes(sizeof(Push));
    std::memcpy(bytes.data(), &push, sizeof(Push));
    return addRaw(shader, std::move(bindings), std::move(bytes), groups, local, spec);
  }
  Status addRaw(const char* shader, std::vector<VkBinding> bindings, std::vector<uint8_t> push,
                const uint32_t groups[3], const uint32_t local[3], const std::vector<uint32_t>& spec);
  // A 1-D dispatch over `n` items with 64-wide groups (y/z folded in when n
  // exceeds the group-count limit; shaders use KILN_GLOBAL_INDEX).
  template <typename Push>
  Status add1D(const char* shader, std::vector<VkBinding> bindings, const Push& push, uint64_t n,
               const std::vector<uint32_t>& spec = {}) {
    uint32_t groups[3], local[3] = {64, 1, 1};
    Groups1D(n, 64, groups);
    return add(shader, std::move(bindings), push, groups, local, spec);
  }
  void addCopy(const Tensor* src, const Tensor* dst);
  static void Groups1D(uint64_t n, uint32_t local, uint32_t groups[3]);

  std::vector<VkDispatch> dispatches_;
  std::vector<fb::DataType> declared_in_;
};

class VulkanBackend final : public Backend {
 public:
  static StatusOr<std::unique_ptr<Backend>> Create(const ScheduleConfig& config);
  ~VulkanBackend() override;

  const char* name() const override { return "vulkan"; }
  std::string deviceName() const override { return device_->caps().toString(); }
  StatusOr<std::unique_ptr<Execution>> onCreate(const GraphOp& op, const Graph& graph) override;

  void onClearBuffer() override;
  Status onAcquireBuffer(Tensor* t, const Tensor* share_with) override;
  Status onReleaseBuffer(Tensor* t) override;
  StatusOr<bool> onAcquireConstant(Tensor* mirror, const Tensor& src) override;
  Status onAllocateBuffer() override;
  MemoryReport memoryReport() const override;
  Status onRecord(const std::vector<std::vector<Execution*>>& runs) override;
  void onExecuteBegin(bool op_by_op) override;
  Status onWaitFinish() override;
  Status onCopyBuffer(const Tensor& src, Tensor* dst) override;
  StatusOr<DevicePeaks> measurePeaks() override;  // vk_peaks.cpp

  // fp16 storage (Precision::kLow on a device with storageBuffer16BitAccess):
  // every f32 tensor on this backend (activations, weights, inputs copied
  // in) is held as f16; kernels load it into fp32 arithmetic and store f16
  // (the <shader>_f16 variants, picked by pipeline()), and copies to and
  // from the host convert. The tensors' dtype stays f32: only the device
  // memory is half size. Executions choose data-movement kernels by
  // storageType(), not dtype().
  bool halfStorage() const { return half_; }
  fb::DataType storageType(const Tensor& t) const { return storageType(t.dtype()); }
  fb::DataType storageType(fb::DataType d) const { return half_ && d == fb::DataType::F32 ? fb::DataType::F16 : d; }
  size_t storageBytes(const Tensor& t) const {
    return static_cast<size_t>(t.elementCount()) * DataTypeSize(storageType(t));
  }

  // For executions.
  VulkanDevice& device() { return *device_; }
  const VulkanCaps& caps() const { return device_->caps(); }
  StatusOr<const VulkanPipeline*> pipeline(const char* shader, uint32_t bindings, const uint32_t local[3],
                                           const std::vector<uint32_t>& spec);
  // A device-local buffer owned by the caller (freed with freeBuffer), with
  // `data` uploaded when given (bytes as they are: no fp16 conversion).
  StatusOr<VulkanBuffer> createBuffer(VkDeviceSize bytes, const void* data = nullptr);
  void freeBuffer(VulkanBuffer* b);
  Status submitExecution(VulkanExecution* exec);
  bool opTime(const Execution* e, double* ms) const override;
  // Pipelines created so far / how long creating them took (cold-start figures).
  size_t pipelinesCreated() const { return pipelines_.size(); }
  double pipelineMs() const { return pipeline_ms_; }
  Status saveCache();

 private:
  VulkanBackend() = default;
  Status init(const ScheduleConfig& config);
  Status waitIdle();
  Status recordDispatches(VkCommandBuffer cmd, const std::vector<VulkanExecution*>& execs, bool timestamps);
  Status submit(VkCommandBuffer cmd, VkFence fence);
  StatusOr<VkCommandBuffer> beginOneShot();
  Status endOneShot(VkCommandBuffer cmd);
  Status ensureStaging(VkDeviceSize bytes);
  // A host tensor's bytes as this backend stores them (f32 -> f16 in fp16
  // mode), and back.
  void toStorage(const Tensor& host, uint8_t* device_bytes) const;
  void fromStorage(const uint8_t* device_bytes, Tensor* host) const;
  // One dispatch of `p` over a and b, submitted and waited for (peaks).
  Status timeDispatch(const VulkanPipeline* p, const VulkanBuffer& a, const VulkanBuffer& b, const void* push,
                      uint32_t push_bytes, uint32_t groups, double* seconds);
  Status uploadConstants();
  void freeRecording();
  Status readTimings();

  std::shared_ptr<VulkanDevice> device_;
  ScheduleConfig config_;
  bool half_ = false;
  MemoryPlanner planner_;
  std::map<const Tensor*, int> buffer_of_;
  VulkanBuffer pool_;
  uint8_t* pool_map_ = nullptr;  // non-null on unified memory
  // Model constants (weights): one buffer, uploaded once per session.
  struct Constant {
    Tensor* mirror;
    const Tensor* src;
    VkDeviceSize offset;
  };
  std::vector<Constant> constants_;
  bool constants_dirty_ = false;
  VulkanBuffer constant_buffer_;
  VulkanBuffer staging_;
  uint8_t* staging_map_ = nullptr;
  MemoryReport report_;

  VkPipelineCache cache_ = VK_NULL_HANDLE;
  size_t cache_loaded_bytes_ = 0;
  std::map<std::string, std::unique_ptr<VulkanPipeline>> pipelines_;
  double pipeline_ms_ = 0;

  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  struct Run {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    std::vector<VulkanExecution*> execs;
    bool pending = false;
  };
  std::vector<Run> runs_;
  std::unordered_map<const Execution*, size_t> last_of_run_;  // last exec of run -> run index
  VkCommandBuffer one_shot_ = VK_NULL_HANDLE;
  VkFence one_shot_fence_ = VK_NULL_HANDLE;
  bool op_by_op_ = false;

  VkQueryPool queries_ = VK_NULL_HANDLE;
  std::unordered_map<const Execution*, uint32_t> query_of_;  // exec -> its first timestamp query
  std::unordered_map<const Execution*, double> timings_;      // ms of the last run
};

}  // namespace kiln
