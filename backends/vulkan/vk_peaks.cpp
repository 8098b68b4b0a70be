// VulkanBackend::measurePeaks: the device's roof for kiln-kernelbench, from
// shaders/vulkan/peak.comp (register-only FMA chains; a vec4 copy), each
// dispatch timed by the wall clock around submit-and-wait and scaled until it
// runs long enough (20 ms) that the submission cost does not matter.
#include <algorithm>
#include <chrono>

#include "vk_backend.h"

namespace kiln {

Status VulkanBackend::timeDispatch(const VulkanPipeline* p, const VulkanBuffer& a, const VulkanBuffer& b,
                                   const void* push, uint32_t push_bytes, uint32_t groups, double* seconds) {
  KILN_RETURN_IF_ERROR(createPending());  // the pipeline kernel() deferred
  VkDevice dev = device_->device();
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
  VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(VkCheck(vkCreateDescriptorPool(dev, &dpi, nullptr, &pool), "vkCreateDescriptorPool"));
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &p->set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  Status st = VkCheck(vkAllocateDescriptorSets(dev, &ai, &set), "vkAllocateDescriptorSets");
  if (st.ok()) {
    VkDescriptorBufferInfo infos[2] = {{a.buffer, 0, a.bytes}, {b.buffer, 0, b.bytes}};
    VkWriteDescriptorSet w[2] = {};
    for (uint32_t k = 0; k < 2; ++k) {
      w[k].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      w[k].dstSet = set;
      w[k].dstBinding = k;
      w[k].descriptorCount = 1;
      w[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w[k].pBufferInfo = &infos[k];
    }
    vkUpdateDescriptorSets(dev, 2, w, 0, nullptr);
    auto cmd = beginOneShot();
    st = cmd.status();
    if (st.ok()) {
      vkCmdBindPipeline(*cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
      vkCmdBindDescriptorSets(*cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, nullptr);
      vkCmdPushConstants(*cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
      vkCmdDispatch(*cmd, groups, 1, 1);
      auto t0 = std::chrono::steady_clock::now();
      st = endOneShot(*cmd);
      *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  vkDestroyDescriptorPool(dev, pool, nullptr);
  return st;
}

StatusOr<DevicePeaks> VulkanBackend::measurePeaks() {
  constexpr uint32_t kLocal = 256, kGroups = 4096, kCopyBytes = 64u << 20;
  const uint32_t local[3] = {kLocal, 1, 1};
  KILN_ASSIGN_OR_RETURN(const GpuKernel* fma_kernel, kernel("peak", 2, local, {0}));
  KILN_ASSIGN_OR_RETURN(const GpuKernel* copy_kernel, kernel("peak", 2, local, {1}));
  const auto* fma = static_cast<const VulkanPipeline*>(fma_kernel);
  const auto* copy = static_cast<const VulkanPipeline*>(copy_kernel);
  KILN_ASSIGN_OR_RETURN(VulkanBuffer a, createVkBuffer(kCopyBytes));
  auto b = createVkBuffer(kCopyBytes);
  if (!b.ok()) {
    freeVkBuffer(&a);
    return b.status();
  }
  auto peaks = MeasurePeakSchedule(kGroups * kLocal, kCopyBytes, [&](uint32_t mode, const PeakPush& push, double* s) {
    return timeDispatch(mode == 0 ? fma : copy, a, *b, &push, sizeof(push), push.n / kLocal, s);
  });
  freeVkBuffer(&a);
  freeVkBuffer(&*b);
  if (!peaks.ok()) return peaks.status();
  peaks->how = "vec4 FMA chains (peak.comp), 1M invocations; vec4 copy of 64 MiB (read + write)";
  return peaks;
}

}  // namespace kiln
