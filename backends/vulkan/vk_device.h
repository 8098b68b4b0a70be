// VulkanDevice: a logical device + compute queue on the process's Vulkan
// instance (created once and kept), shared by every session of the process
// that asks for the same device index, and kept for the process's life with
// the pipelines its sessions made (a later session of the process creates
// neither the device nor a pipeline made before). On an NVIDIA H100 a
// device cost about 200 ms a session: each op test's sessions made their own,
// and the Vulkan suites ran 10-50x longer than OpenCL's, whose device is the
// process's too. A lost device (VK_ERROR_DEVICE_LOST) is replaced at the next
// Get(). KILN_VULKAN_SHARE=0: each device goes with its last session and
// makes its pipelines afresh (the cold start of a new process, for A/B).
//
// Entry points come from volk, so a process on a machine without a Vulkan
// loader or driver still starts: Get() returns Unavailable and the scheduler
// falls back. Device choice: an explicit index, else the fastest kind
// (discrete, integrated, virtual, CPU drivers such as lavapipe).
//
// Validation: KILN_VULKAN_VALIDATION=1 enables VK_LAYER_KHRONOS_validation;
// every error message it reports is logged and turns the next
// TakeValidationError() into a failing status (the backend checks it after
// each submit), so a test run fails on any validation error.
//
// Thread-safety: the queue is guarded by queueMutex(), the shared pipelines
// by pipelinesMutex() (each one's creation by its own mutex); everything
// else is immutable after Get().
#pragma once

#include <volk.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu_backend.h"
#include "kiln/status.h"

namespace kiln {

// The Vulkan device's properties; the op layer's view of them is GpuCaps.
struct VulkanCaps : GpuCaps {
  std::string name;
  bool float16 = false;        // fp16 arithmetic (shaderFloat16), enabled on the device when present
  uint32_t subgroup_size = 0;  // shown in the device name
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0, driver_version = 0, vendor_id = 0, device_id = 0;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE] = {};
  bool timestamps = false;      // compute queue supports timestamps
  float timestamp_period_ns = 0;
  uint32_t max_push_constants = 0;
  VkDeviceSize min_storage_offset_alignment = 0;
  VkDeviceSize min_texel_offset_alignment = 1;
  VkDeviceSize non_coherent_atom_size = 0;
  // GpuCaps::cpu_kernels: true on CPU devices; KILN_VULKAN_KERNELS=gpu|cpu
  // overrides (the tests cover both paths on lavapipe).
  bool unified_memory = false;          // a device-local type is also host-visible + coherent
  std::string toString() const;
};

// A compute pipeline with its layouts, made for a kernel variant (shader,
// bindings, local size, specialization) and shared by the device's sessions.
struct VulkanPipeline : GpuKernel {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  // Null until created (VulkanBackend::createPending), under create_mutex:
  // two sessions that ask for it at once create it once.
  VkPipeline pipeline = VK_NULL_HANDLE;
  std::mutex create_mutex;
  // What vkCreateComputePipelines takes, kept until it is created: the
  // SPIR-V and the specialization values (local size first).
  const struct SpirvBlob* spirv = nullptr;
  std::vector<uint32_t> spec;
  uint32_t texel_mask = 0;  // bindings that are uniform texel buffers
};

class VulkanDevice {
 public:
  // The shared device for `index` (-1: the fastest). Created on first use.
  static StatusOr<std::shared_ptr<VulkanDevice>> Get(int index);
  ~VulkanDevice();
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  VkInstance instance() const { return instance_; }
  VkDevice device() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkQueue queue() const { return queue_; }
  uint32_t queueFamily() const { return queue_family_; }
  std::mutex& queueMutex() { return queue_mutex_; }
  const VulkanCaps& caps() const { return caps_; }

  // A memory type with all of `required` (and `preferred` where one has
  // it) among `type_bits`; -1 if none.
  int findMemoryType(uint32_t type_bits, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) const;
  VkMemoryPropertyFlags memoryFlags(int type) const { return memory_.memoryTypes[type].propertyFlags; }

  // Ok, or the first validation error reported since the last call.
  Status TakeValidationError();

  // The pipelines made on this device by key (VulkanBackend::kernel), read
  // and added to under pipelinesMutex(); they go with the device.
  std::mutex& pipelinesMutex() { return pipelines_mutex_; }
  std::map<std::string, std::unique_ptr<VulkanPipeline>>& pipelines() { return pipelines_; }
  // The pipeline cache they are made through (internally synchronized); a
  // session's cache file is merged into it and written from it.
  VkPipelineCache pipelineCache() const { return pipeline_cache_; }

  // After VK_ERROR_DEVICE_LOST: the next Get() makes a new device (sessions
  // on this one keep it until they go).
  void markLost() { lost_ = true; }
  bool lost() const { return lost_; }

 private:
  VulkanDevice() = default;
  static VKAPI_ATTR VkBool32 VKAPI_CALL OnDebugMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                       VkDebugUtilsMessageTypeFlagsEXT types,
                                                       const VkDebugUtilsMessengerCallbackDataEXT* data, void* self);
  Status init(int index);

  VkInstance instance_ = VK_NULL_HANDLE;  // the process's, never destroyed
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
  VulkanCaps caps_;
  std::mutex queue_mutex_;
  std::mutex error_mutex_;
  std::string validation_error_;
  std::mutex pipelines_mutex_;
  std::map<std::string, std::unique_ptr<VulkanPipeline>> pipelines_;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  std::atomic<bool> lost_{false};
};

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc.
const char* VkResultName(VkResult r);
// Ok, or a status naming the call and the result (OutOfMemory for the
// out-of-memory results, Internal otherwise).
Status VkCheck(VkResult r, const char* what);

}  // namespace kiln
