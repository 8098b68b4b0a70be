// The Vulkan backend's pipelines (vk_backend.h): the device's pipeline cache
// (the cache file and an ahead-of-time bundle's state merged into it),
// kernels by name and specialization (descriptor and pipeline layouts made
// at once, storage or texel-buffer bindings; the device keeps them for its
// later sessions), and the pipelines themselves created side by side at the
// end of a resize (createPending).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <system_error>
#include <thread>

#include "mapped_file.h"
#include "vk_backend.h"
#include "vk_shaders.h"

namespace kiln {

std::string VulkanBackend::cacheIdentity() const {
  const auto& c = device_->caps();
  std::string uuid;
  for (uint8_t b : c.pipeline_cache_uuid) uuid += StrFormat("%02x", b);
  return StrFormat("vulkan|%s|%04x:%04x|driver %u|cache %s", c.name.c_str(), c.vendor_id, c.device_id,
                   c.driver_version, uuid.c_str());
}

StatusOr<size_t> VulkanBackend::cacheBytes() const {
  size_t size = 0;
  KILN_RETURN_IF_ERROR(
      VkCheck(vkGetPipelineCacheData(device_->device(), device_->pipelineCache(), &size, nullptr), "vkGetPipelineCacheData"));
  return size;
}

// The device's whole cache: the pipelines of every session of the device so
// far (a bundle's tool makes one model's).
StatusOr<std::vector<uint8_t>> VulkanBackend::exportCache() {
  KILN_ASSIGN_OR_RETURN(size_t size, cacheBytes());
  std::vector<uint8_t> data(size);
  KILN_RETURN_IF_ERROR(VkCheck(vkGetPipelineCacheData(device_->device(), device_->pipelineCache(), &size, data.data()),
                               "vkGetPipelineCacheData"));
  data.resize(size);
  return data;
}

StatusOr<std::string> VulkanBackend::importCache(const uint8_t* data, size_t bytes) {
  // A cache of its own, merged into the device's: the driver checks the
  // header (vendor, device, cache UUID), and ignores one of another device.
  VkDevice dev = device_->device();
  VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  pci.initialDataSize = bytes;
  pci.pInitialData = data;
  VkPipelineCache from = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(VkCheck(vkCreatePipelineCache(dev, &pci, nullptr, &from), "vkCreatePipelineCache (bundle)"));
  VkResult r = vkMergePipelineCaches(dev, device_->pipelineCache(), 1, &from);
  vkDestroyPipelineCache(dev, from, nullptr);
  KILN_RETURN_IF_ERROR(VkCheck(r, "vkMergePipelineCaches (bundle)"));
  return StrFormat("a pipeline cache of %zu bytes", bytes);
}

Status VulkanBackend::saveCache() {
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> data, exportCache());
  if (data.size() == cache_loaded_bytes_) return Status::Ok();  // nothing new learned
  KILN_RETURN_IF_ERROR(WriteFileAtomically(config_.cacheFile, data.data(), data.size(), "vulkan pipeline cache"));
  cache_loaded_bytes_ = data.size();
  return Status::Ok();
}

// ------------------------------------------------------------------ pipelines

StatusOr<const GpuKernel*> VulkanBackend::kernel(const char* shader, uint32_t bindings, const uint32_t local[3],
                                                  const std::vector<uint32_t>& spec, uint32_t texel_mask) {
  // In fp16 mode a float kernel (one with a STORE_T variant) runs as its
  // fp16-storage variant; with texel-buffer bindings, as its _tx variant.
  // A kernel with a half-arithmetic variant runs it where the device has
  // shaderFloat16 (VulkanBackend::math16_).
  std::string name = shader;
  if (math16_ && FindSpirv((name + "_f16m").c_str()))
    name += "_f16m";
  else if (half_ && FindSpirv((name + "_f16").c_str()))
    name += "_f16";
  if (texel_mask) {
    if (!caps().texel_elements) return Internal("%s: texel-buffer bindings on a device without them", shader);
    name += "_tx";
  }
  std::string key = StrFormat("%s/%u/%u,%u,%u", name.c_str(), bindings, local[0], local[1], local[2]);
  for (uint32_t v : spec) key += StrFormat(",%u", v);
  std::lock_guard<std::mutex> lock(device_->pipelinesMutex());
  auto& made = device_->pipelines();
  if (auto it = made.find(key); it != made.end()) {
    // Made by an earlier session, or being made by another one now, or its
    // creation failed: createPending makes it or waits for it (under its
    // create_mutex, also what makes the pipeline handle safe to read).
    pending_.push_back(it->second.get());
    return static_cast<const GpuKernel*>(it->second.get());
  }

  const SpirvBlob* spv = FindSpirv(name.c_str());
  if (!spv) return Internal("no SPIR-V named '%s' in this build", name.c_str());
  const VulkanCaps& caps = device_->caps();
  if (local[0] * local[1] * local[2] > caps.max_workgroup_invocations || local[0] > caps.max_workgroup_size[0] ||
      local[1] > caps.max_workgroup_size[1] || local[2] > caps.max_workgroup_size[2])
    return Unsupported("%s: work group %ux%ux%u exceeds the device's limits", shader, local[0], local[1], local[2]);
  auto t0 = std::chrono::steady_clock::now();
  VkDevice dev = device_->device();
  auto p = std::make_unique<VulkanPipeline>();
  p->name = name;
  p->bindings = bindings;
  p->texel_mask = texel_mask;
  std::copy(local, local + 3, p->local_size);

  std::vector<VkDescriptorSetLayoutBinding> lb(bindings);
  for (uint32_t i = 0; i < bindings; ++i) {
    lb[i].binding = i;
    lb[i].descriptorType =
        (texel_mask >> i) & 1 ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    lb[i].descriptorCount = 1;
    lb[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dli.bindingCount = bindings;
  dli.pBindings = lb.data();
  KILN_RETURN_IF_ERROR(VkCheck(vkCreateDescriptorSetLayout(dev, &dli, nullptr, &p->set_layout), shader));
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, kMaxPushConstantBytes};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &p->set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pcr;
  Status st = VkCheck(vkCreatePipelineLayout(dev, &pli, nullptr, &p->layout), shader);
  if (!st.ok()) {
    vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
    return st;
  }

  // The pipeline itself (the driver's compile: most of a session's set-up
  // on a CPU driver) is made later, with the others, by createPending.
  p->spirv = spv;
  p->spec.assign(local, local + 3);
  p->spec.insert(p->spec.end(), spec.begin(), spec.end());
  pipeline_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  VulkanPipeline* raw = p.get();
  made.emplace(key, std::move(p));
  pending_.push_back(raw);
  return static_cast<const GpuKernel*>(raw);
}

namespace {

// vkCreateShaderModule + vkCreateComputePipelines for one pipeline (called
// from several threads at once: both are thread-safe, the cache internally
// synchronized); nothing when another session made it meanwhile.
Status CreatePipeline(VkDevice dev, VkPipelineCache cache, VulkanPipeline* p) {
  std::lock_guard<std::mutex> lock(p->create_mutex);
  if (p->pipeline) return Status::Ok();
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  smi.codeSize = p->spirv->bytes;
  smi.pCode = p->spirv->words;
  VkShaderModule module = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(VkCheck(vkCreateShaderModule(dev, &smi, nullptr, &module), p->name.c_str()));
  std::vector<VkSpecializationMapEntry> entries(p->spec.size());
  for (uint32_t i = 0; i < p->spec.size(); ++i) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(), p->spec.size() * 4, p->spec.data()};
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = module;
  cpi.stage.pName = "main";
  cpi.stage.pSpecializationInfo = &si;
  cpi.layout = p->layout;
  Status st = VkCheck(vkCreateComputePipelines(dev, cache, 1, &cpi, nullptr, &p->pipeline), p->name.c_str());
  vkDestroyShaderModule(dev, module, nullptr);
  return st;
}

}  // namespace

Status VulkanBackend::createPending() {
  if (pending_.empty()) return Status::Ok();
  const auto t0 = std::chrono::steady_clock::now();
  VkDevice dev = device_->device();
  VkPipelineCache cache = device_->pipelineCache();
  std::vector<VulkanPipeline*> todo;
  todo.swap(pending_);
  std::sort(todo.begin(), todo.end());
  todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
  std::vector<Status> status(todo.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < todo.size();) status[i] = CreatePipeline(dev, cache, todo[i]);
  };
  // KILN_VK_PIPELINE_THREADS=N caps the threads (1: one after another).
  size_t cap = 8;
  if (const char* env = std::getenv("KILN_VK_PIPELINE_THREADS")) cap = std::max(1, std::atoi(env));
  const size_t threads = std::min<size_t>({todo.size(), std::max(1u, std::thread::hardware_concurrency()), cap});
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {  // the system's thread limit: the threads there are share the work
      break;
    }
  }
  work();
  for (std::thread& h : helpers) h.join();
  pipeline_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Any not made stay pending: unusable, and said so each time they are asked for.
  Status first;
  for (size_t i = 0; i < todo.size(); ++i)
    if (!status[i].ok()) {
      pending_.push_back(todo[i]);
      if (first.ok()) first = status[i];
    }
  return first;
}

}  // namespace kiln
