#include "vk_backend.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "fault_injection.h"
#include "log.h"

namespace kiln {
namespace {

// Pool slack so that a binding of a small tensor at the pool's end may round
// its range up without leaving the buffer.
constexpr VkDeviceSize kPoolSlack = 256;
constexpr uint64_t kFenceTimeoutNs = 60ull * 1000 * 1000 * 1000;

VkDeviceSize BindingRange(VkDeviceSize bytes) { return std::max<VkDeviceSize>(bytes, 4); }

struct Range {
  VkBuffer buffer;
  VkDeviceSize begin, end;
  bool write;
};

bool Overlaps(const Range& a, const Range& b) { return a.buffer == b.buffer && a.begin < b.end && b.begin < a.end; }

void Barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src, VkPipelineStageFlags dst_stage,
             VkAccessFlags dst) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = src;
  mb.dstAccessMask = dst;
  vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

constexpr VkPipelineStageFlags kWorkStages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWorkWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kWorkAccess =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

}  // namespace

// ------------------------------------------------------------------- backend

StatusOr<std::unique_ptr<Backend>> CreateVulkanBackend(const ScheduleConfig& config) {
  return VulkanBackend::Create(config);
}

StatusOr<std::unique_ptr<Backend>> VulkanBackend::Create(const ScheduleConfig& config) {
  std::unique_ptr<VulkanBackend> b(new VulkanBackend());
  KILN_RETURN_IF_ERROR(b->init(config));
  return std::unique_ptr<Backend>(std::move(b));
}

Status VulkanBackend::init(const ScheduleConfig& config) {
  config_ = config;
  KILN_ASSIGN_OR_RETURN(device_, VulkanDevice::Get(config.deviceIndex));
  // Without 16-bit storage kLow is a no-op: fp32 is a valid "low" precision.
  half_ = config.precision == Precision::kLow && device_->caps().storage_16bit;
  // And on a GPU with shaderFloat16, the kernels that have a
  // half-arithmetic variant (<shader>_f16m: the packed conv, Winograd's
  // products) run it;
  // Softmax, LayerNorm and the reductions have none and stay in f32. Not on
  // CPU drivers: lavapipe runs half arithmetic through f32 conversions,
  // ResNet18 at precision low 187 -> 448 ms. KILN_VULKAN_FP16_MATH=1 / 0
  // forces it on / off (where the device has shaderFloat16).
  const char* m16 = std::getenv("KILN_VULKAN_FP16_MATH");
  const bool m16_wanted = m16 ? std::string(m16) != "0" : device_->caps().type != VK_PHYSICAL_DEVICE_TYPE_CPU;
  math16_ = half_ && device_->caps().float16 && m16_wanted;
  // Channel-packed conv chains unless planar is asked for: on lavapipe too,
  // packed measured faster (README, Benchmarks: resnet18 1.4x, mobilenet_v2
  // 3.5x; not yet measured on a real GPU).
  pack_layout_ = config.gpuLayout != GpuLayout::kPlanar;
  planner_ = MemoryPlanner(std::max<size_t>({64, device_->caps().min_storage_offset_alignment,
                                             device_->caps().min_texel_offset_alignment}));
  VkDevice dev = device_->device();

  if (!config.cacheFile.empty()) {
    std::ifstream f(config.cacheFile, std::ios::binary);
    std::vector<uint8_t> blob;
    if (f) blob.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (!blob.empty()) {
      // Merged into the device's cache; the driver checks the header
      // (vendor, device, cache UUID) and ignores a cache from another device
      // or driver version.
      auto merged = importCache(blob.data(), blob.size());
      if (merged.ok()) {
        KILN_ASSIGN_OR_RETURN(cache_loaded_bytes_, cacheBytes());
      } else {
        KILN_LOG("vulkan: pipeline cache '%s' rejected (%s); starting without it", config.cacheFile.c_str(),
                 merged.status().message().c_str());
      }
    }
  }

  VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpi.queueFamilyIndex = device_->queueFamily();
  KILN_RETURN_IF_ERROR(VkCheck(vkCreateCommandPool(dev, &cpi, nullptr, &command_pool_), "vkCreateCommandPool"));
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = command_pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  KILN_RETURN_IF_ERROR(VkCheck(vkAllocateCommandBuffers(dev, &cai, &one_shot_), "vkAllocateCommandBuffers"));
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  KILN_RETURN_IF_ERROR(VkCheck(vkCreateFence(dev, &fci, nullptr, &one_shot_fence_), "vkCreateFence"));
  return Status::Ok();
}

VulkanBackend::~VulkanBackend() {
  if (!device_) return;
  VkDevice dev = device_->device();
  (void)waitIdle();
  if (!config_.cacheFile.empty()) {
    Status s = saveCache();
    if (!s.ok()) KILN_LOG("vulkan: %s", s.message().c_str());
  }
  freeRecording();
  // The pipelines are the device's (kept for its later sessions).
  if (one_shot_fence_) vkDestroyFence(dev, one_shot_fence_, nullptr);
  if (command_pool_) vkDestroyCommandPool(dev, command_pool_, nullptr);
  freeVkBuffer(&pool_);
  freeVkBuffer(&staging_);
  freeVkBuffer(&constant_buffer_);
}

// -------------------------------------------------------------------- memory

StatusOr<VulkanBuffer> VulkanBackend::createVkBuffer(VkDeviceSize bytes, const void* data) {
  VkDevice dev = device_->device();
  VulkanBuffer b;
  b.bytes = std::max<VkDeviceSize>(bytes, 16);
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = b.bytes;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (caps().texel_elements) bci.usage |= VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;  // GpuBinding::texel
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  KILN_RETURN_IF_ERROR(VkCheck(vkCreateBuffer(dev, &bci, nullptr, &b.buffer), "vkCreateBuffer"));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, b.buffer, &req);
  int type = device_->findMemoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                     VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  if (type < 0) type = device_->findMemoryType(req.memoryTypeBits, 0, 0);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  VkResult r = type < 0 || fault::Hit(fault::Site::kDeviceAlloc) ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                                                                : vkAllocateMemory(dev, &mai, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(dev, b.buffer, nullptr);
    return VkCheck(r, StrFormat("allocating %llu bytes of device memory", (unsigned long long)req.size).c_str());
  }
  vkBindBufferMemory(dev, b.buffer, b.memory, 0);
  if (data) {
    VulkanBuffer keep = b;
    Tensor src, dst;
    src.setShape({static_cast<int64_t>(bytes)});
    src.setDtype(fb::DataType::U8);
    src.bind(nullptr, const_cast<void*>(data));
    dst.setShape({static_cast<int64_t>(bytes)});
    dst.setDtype(fb::DataType::U8);
    dst.bind(this, nullptr, reinterpret_cast<uint64_t>(b.buffer), 0);
    Status s = onCopyBuffer(src, &dst);
    if (!s.ok()) {
      freeVkBuffer(&keep);
      return s;
    }
  }
  return b;
}

void VulkanBackend::freeVkBuffer(VulkanBuffer* b) {
  VkDevice dev = device_->device();
  if (b->buffer) vkDestroyBuffer(dev, b->buffer, nullptr);
  if (b->memory) vkFreeMemory(dev, b->memory, nullptr);
  *b = VulkanBuffer();
}

StatusOr<GpuBuffer> VulkanBackend::createBuffer(uint64_t bytes, const void* data) {
  KILN_ASSIGN_OR_RETURN(VulkanBuffer b, createVkBuffer(bytes, data));
  GpuBuffer g;
  g.handle = reinterpret_cast<uint64_t>(b.buffer);
  g.memory = reinterpret_cast<uint64_t>(b.memory);
  g.bytes = b.bytes;
  return g;
}

void VulkanBackend::freeBuffer(GpuBuffer* g) {
  VulkanBuffer b;
  b.buffer = reinterpret_cast<VkBuffer>(g->handle);
  b.memory = reinterpret_cast<VkDeviceMemory>(g->memory);
  freeVkBuffer(&b);
  *g = GpuBuffer();
}

// Lays every constant out in one buffer and uploads them with one copy.
Status VulkanBackend::uploadConstants() {
  const VkDeviceSize align =
      std::max<VkDeviceSize>({64, caps().min_storage_offset_alignment, caps().min_texel_offset_alignment});
  VkDeviceSize total = 0;
  for (Constant& c : constants_) {
    if (!uploads(c)) continue;
    c.offset = total;
    total += (BindingRange(storageBytes(*c.src)) + align - 1) / align * align;
  }
  freeVkBuffer(&constant_buffer_);
  KILN_ASSIGN_OR_RETURN(constant_buffer_, createVkBuffer(total + kPoolSlack));
  KILN_RETURN_IF_ERROR(ensureStaging(total));
  for (const Constant& c : constants_)
    if (c.resident) toStorage(*c.src, staging_map_ + c.offset);
  KILN_ASSIGN_OR_RETURN(VkCommandBuffer cmd, beginOneShot());
  VkBufferCopy region{0, 0, total};
  vkCmdCopyBuffer(cmd, staging_.buffer, constant_buffer_.buffer, 1, &region);
  KILN_RETURN_IF_ERROR(endOneShot(cmd));
  for (const Constant& c : constants_)
    if (c.resident) c.mirror->bind(this, nullptr, reinterpret_cast<uint64_t>(constant_buffer_.buffer), c.offset);
  constants_dirty_ = false;
  return Status::Ok();
}

MemoryReport VulkanBackend::memoryReport() const {
  MemoryReport r = report_;
  r.constant_bytes = (constant_buffer_.buffer ? constant_buffer_.bytes - kPoolSlack : 0) + own_weight_bytes_;
  return r;
}

Status VulkanBackend::onAllocateBuffer() {
  KILN_RETURN_IF_ERROR(waitIdle());
  freeRecording();
  if (constants_dirty_) KILN_RETURN_IF_ERROR(uploadConstants(), "uploading weights");
  MemoryPlanner::Plan plan = planner_.plan();
  KILN_RETURN_IF_ERROR(checkPoolSize(plan.total + memoryReport().constant_bytes));
  VkDeviceSize bytes = plan.total + kPoolSlack;
  if (bytes > pool_.bytes || bytes * 2 < pool_.bytes) {
    if (pool_map_) vkUnmapMemory(device_->device(), pool_.memory);
    pool_map_ = nullptr;
    freeVkBuffer(&pool_);
    KILN_ASSIGN_OR_RETURN(pool_, createVkBuffer(bytes));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device_->device(), pool_.buffer, &req);
    // Unified memory: map the pool once; copies become memcpy.
    int type = device_->findMemoryType(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if (type >= 0 && (device_->memoryFlags(type) & want) == want) {
      void* p = nullptr;
      if (vkMapMemory(device_->device(), pool_.memory, 0, VK_WHOLE_SIZE, 0, &p) == VK_SUCCESS)
        pool_map_ = static_cast<uint8_t*>(p);
    }
  }
  bindPlanned(plan, reinterpret_cast<uint64_t>(pool_.buffer));
  return Status::Ok();
}

// --------------------------------------------------------------- submission

Status VulkanBackend::submit(VkCommandBuffer cmd, VkFence fence) {
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd;
  {
    std::lock_guard<std::mutex> lock(device_->queueMutex());
    const VkResult r = fault::Hit(fault::Site::kDeviceLost) ? VK_ERROR_DEVICE_LOST
                                                             : vkQueueSubmit(device_->queue(), 1, &si, fence);
    if (r == VK_ERROR_DEVICE_LOST) device_->markLost();
    KILN_RETURN_IF_ERROR(VkCheck(r, "vkQueueSubmit"));
  }
  return device_->TakeValidationError();
}

Status VulkanBackend::waitIdle() {
  VkDevice dev = device_->device();
  Status status;
  for (Run& r : runs_) {
    if (!r.pending) continue;
    r.pending = false;
    VkResult wait = vkWaitForFences(dev, 1, &r.fence, VK_TRUE, kFenceTimeoutNs);
    if (fault::Hit(fault::Site::kDeviceLost)) wait = VK_ERROR_DEVICE_LOST;
    if (wait == VK_ERROR_DEVICE_LOST) device_->markLost();
    Status s = VkCheck(wait, "waiting for the GPU");
    if (status.ok()) status = s;
  }
  if (status.ok() && queries_ && !op_by_op_) status = readTimings();
  if (status.ok()) status = device_->TakeValidationError();
  return status;
}

Status VulkanBackend::onWaitFinish() { return waitIdle(); }

StatusOr<VkCommandBuffer> VulkanBackend::beginOneShot() {
  KILN_RETURN_IF_ERROR(VkCheck(vkResetCommandBuffer(one_shot_, 0), "vkResetCommandBuffer"));
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  KILN_RETURN_IF_ERROR(VkCheck(vkBeginCommandBuffer(one_shot_, &bi), "vkBeginCommandBuffer"));
  return one_shot_;
}

Status VulkanBackend::endOneShot(VkCommandBuffer cmd) {
  KILN_RETURN_IF_ERROR(VkCheck(vkEndCommandBuffer(cmd), "vkEndCommandBuffer"));
  VkDevice dev = device_->device();
  KILN_RETURN_IF_ERROR(VkCheck(vkResetFences(dev, 1, &one_shot_fence_), "vkResetFences"));
  KILN_RETURN_IF_ERROR(submit(cmd, one_shot_fence_));
  KILN_RETURN_IF_ERROR(VkCheck(vkWaitForFences(dev, 1, &one_shot_fence_, VK_TRUE, kFenceTimeoutNs), "waiting for the GPU"));
  return device_->TakeValidationError();
}

Status VulkanBackend::ensureStaging(VkDeviceSize bytes) {
  if (staging_.bytes >= bytes && staging_map_) return Status::Ok();
  VkDevice dev = device_->device();
  if (staging_map_) vkUnmapMemory(dev, staging_.memory);
  staging_map_ = nullptr;
  freeVkBuffer(&staging_);
  VulkanBuffer b;
  b.bytes = std::max<VkDeviceSize>(bytes, 1 << 16);
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = b.bytes;
  bci.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  KILN_RETURN_IF_ERROR(VkCheck(vkCreateBuffer(dev, &bci, nullptr, &b.buffer), "vkCreateBuffer (staging)"));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, b.buffer, &req);
  int type = device_->findMemoryType(req.memoryTypeBits,
                                     VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                     VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  VkResult r = type < 0 ? VK_ERROR_OUT_OF_HOST_MEMORY
              : fault::Hit(fault::Site::kDeviceAlloc) ? VK_ERROR_OUT_OF_DEVICE_MEMORY
                                                      : vkAllocateMemory(dev, &mai, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(dev, b.buffer, nullptr);
    return VkCheck(r, "allocating the staging buffer");
  }
  vkBindBufferMemory(dev, b.buffer, b.memory, 0);
  void* p = nullptr;
  KILN_RETURN_IF_ERROR(VkCheck(vkMapMemory(dev, b.memory, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory (staging)"));
  staging_ = b;
  staging_map_ = static_cast<uint8_t*>(p);
  return Status::Ok();
}

Status VulkanBackend::onCopyBuffer(const Tensor& src, Tensor* dst) {
  if (src.byteSize() != dst->byteSize())
    return InvalidArgument("copy of '%s': %zu bytes into %zu", src.name().c_str(), src.byteSize(), dst->byteSize());
  const bool src_dev = src.backend() == this, dst_dev = dst->backend() == this;
  if (!src_dev && !dst_dev) return Internal("vulkan copy between two tensors not on Vulkan");
  if (copyHostConstant(src, dst)) return Status::Ok();  // weights kept off the device
  // What moves on the device side: half of the host's bytes for an f32
  // tensor in fp16 storage (converted on the host side of the copy).
  const size_t bytes = storageBytes(src_dev ? src : *dst);
  if (bytes == 0) return Status::Ok();
  // Copies are synchronisation points: the GPU may still use the memory.
  KILN_RETURN_IF_ERROR(waitIdle());
  if ((src_dev && !src.deviceHandle()) || (dst_dev && !dst->deviceHandle()))
    return Internal("vulkan copy of '%s': the tensor has no memory (not resized?)", src.name().c_str());
  auto buf = [](const Tensor& t) { return reinterpret_cast<VkBuffer>(t.deviceHandle()); };
  const bool src_mapped = src_dev && pool_map_ && buf(src) == pool_.buffer;
  const bool dst_mapped = dst_dev && pool_map_ && buf(*dst) == pool_.buffer;
  if (!src_dev && dst_mapped) {
    toStorage(src, pool_map_ + dst->deviceOffset(), packed(*dst));
    return Status::Ok();
  }
  if (src_mapped && !dst_dev) {
    fromStorage(pool_map_ + src.deviceOffset(), dst, packed(src));
    return Status::Ok();
  }
  if (!src_dev) {
    KILN_RETURN_IF_ERROR(ensureStaging(bytes));
    toStorage(src, staging_map_, packed(*dst));
  }
  KILN_ASSIGN_OR_RETURN(VkCommandBuffer cmd, beginOneShot());
  VkBufferCopy region{src_dev ? src.deviceOffset() : 0, dst_dev ? dst->deviceOffset() : 0, bytes};
  if (src_dev && !dst_dev) KILN_RETURN_IF_ERROR(ensureStaging(bytes));
  vkCmdCopyBuffer(cmd, src_dev ? buf(src) : staging_.buffer, dst_dev ? buf(*dst) : staging_.buffer, 1, &region);
  Barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_HOST_READ_BIT);
  KILN_RETURN_IF_ERROR(endOneShot(cmd));
  if (!dst_dev) fromStorage(staging_map_, dst, packed(src));
  return Status::Ok();
}

Status VulkanBackend::onCopyWithin(const Tensor& src, Tensor* dst) {
  if (src.backend() != this || dst->backend() != this || packed(src) != packed(*dst) ||
      storageBytes(src) != storageBytes(*dst))
    return Unsupported("vulkan: '%s' and '%s' differ in storage", src.name().c_str(), dst->name().c_str());
  const size_t bytes = storageBytes(src);
  if (bytes == 0) return Status::Ok();
  if (!src.deviceHandle() || !dst->deviceHandle())
    return Internal("vulkan copy of '%s': the tensor has no memory (not resized?)", src.name().c_str());
  KILN_RETURN_IF_ERROR(waitIdle());
  KILN_ASSIGN_OR_RETURN(VkCommandBuffer cmd, beginOneShot());
  VkBufferCopy region{src.deviceOffset(), dst->deviceOffset(), bytes};
  vkCmdCopyBuffer(cmd, reinterpret_cast<VkBuffer>(src.deviceHandle()), reinterpret_cast<VkBuffer>(dst->deviceHandle()),
                  1, &region);
  Barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT);
  return endOneShot(cmd);
}

// ---------------------------------------------------------------- recording

void VulkanBackend::freeRecording() {
  VkDevice dev = device_->device();
  for (Run& r : runs_) {
    if (r.cmd) vkFreeCommandBuffers(dev, command_pool_, 1, &r.cmd);
    if (r.fence) vkDestroyFence(dev, r.fence, nullptr);
  }
  runs_.clear();
  last_of_run_.clear();
  if (descriptor_pool_) vkDestroyDescriptorPool(dev, descriptor_pool_, nullptr);
  descriptor_pool_ = VK_NULL_HANDLE;
  for (VkBufferView v : texel_views_) vkDestroyBufferView(dev, v, nullptr);
  texel_views_.clear();
  if (queries_) vkDestroyQueryPool(dev, queries_, nullptr);
  queries_ = VK_NULL_HANDLE;
  query_of_.clear();
}

Status VulkanBackend::recordDispatches(VkCommandBuffer cmd, const std::vector<GpuExecution*>& execs,
                                       bool timestamps) {
  // Order after everything submitted before (an earlier run, a copy).
  Barrier(cmd, kWorkStages | VK_PIPELINE_STAGE_HOST_BIT, kWorkWrites | VK_ACCESS_HOST_WRITE_BIT, kWorkStages,
          kWorkAccess);
  std::vector<Range> since_barrier;
  auto range_of = [this](const GpuBinding& b) {
    if (b.buffer) return Range{reinterpret_cast<VkBuffer>(b.buffer->handle), 0, b.buffer->bytes, b.write};
    VkDeviceSize off = b.tensor->deviceOffset();
    return Range{reinterpret_cast<VkBuffer>(b.tensor->deviceHandle()), off, off + BindingRange(storageBytes(*b.tensor)),
                 b.write};
  };
  KILN_RETURN_IF_ERROR(createPending());
  for (GpuExecution* e : execs) {
    const uint32_t q = timestamps ? query_of_.at(e) : 0;
    if (timestamps) {
      vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, q);
    }
    for (const GpuDispatch& d : e->dispatches()) {
      if (!d.kernel && d.bindings[0].tensor->deviceHandle() == d.bindings[1].tensor->deviceHandle() &&
          d.bindings[0].tensor->deviceOffset() == d.bindings[1].tensor->deviceOffset())
        continue;  // an in-place reshape: nothing to do
      if (d.kernel && (d.groups[0] == 0 || d.groups[1] == 0 || d.groups[2] == 0)) continue;
      if (!d.kernel && storageBytes(*d.bindings[0].tensor) == 0) continue;
      bool conflict = false;
      std::vector<Range> mine;
      for (const GpuBinding& b : d.bindings) mine.push_back(range_of(b));
      for (const Range& m : mine)
        for (const Range& s : since_barrier)
          if (Overlaps(m, s) && (m.write || s.write)) conflict = true;
      if (conflict) {
        Barrier(cmd, kWorkStages, kWorkWrites, kWorkStages, kWorkAccess);
        since_barrier.clear();
      }
      since_barrier.insert(since_barrier.end(), mine.begin(), mine.end());
      if (!d.kernel) {
        VkBufferCopy region{d.bindings[0].tensor->deviceOffset(), d.bindings[1].tensor->deviceOffset(),
                            storageBytes(*d.bindings[0].tensor)};
        vkCmdCopyBuffer(cmd, mine[0].buffer, mine[1].buffer, 1, &region);
        continue;
      }
      const auto* pl = static_cast<const VulkanPipeline*>(d.kernel);
      const VkDescriptorSet set = reinterpret_cast<VkDescriptorSet>(d.prepared);
      vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->pipeline);
      vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pl->layout, 0, 1, &set, 0, nullptr);
      if (!d.push.empty())
        vkCmdPushConstants(cmd, pl->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           static_cast<uint32_t>(d.push.size()), d.push.data());
      vkCmdDispatch(cmd, d.groups[0], d.groups[1], d.groups[2]);
    }
    if (timestamps) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, q + 1);
  }
  Barrier(cmd, kWorkStages, kWorkWrites, VK_PIPELINE_STAGE_HOST_BIT | kWorkStages,
          VK_ACCESS_HOST_READ_BIT | kWorkAccess);
  return Status::Ok();
}

// One descriptor set a dispatch, written once: storage buffers, and a
// buffer view over the binding's range where the pipeline reads a binding
// as a texel buffer (GpuBinding::texel).
Status VulkanBackend::writeDescriptorSets(const std::vector<std::vector<Execution*>>& runs) {
  VkDevice dev = device_->device();
  uint32_t sets = 0, descriptors = 0, texels = 0;
  for (const auto& run : runs)
    for (Execution* e : run)
      for (const GpuDispatch& d : static_cast<GpuExecution*>(e)->dispatches())
        if (d.kernel) {
          ++sets;
          const uint32_t mask = static_cast<const VulkanPipeline*>(d.kernel)->texel_mask;
          const uint32_t t = static_cast<uint32_t>(__builtin_popcount(mask));
          texels += t;
          descriptors += static_cast<uint32_t>(d.bindings.size()) - t;
        }
  if (sets > 0) {
    const VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, std::max(descriptors, 1u)},
                                           {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, std::max(texels, 1u)}};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = sets;
    dpi.poolSizeCount = 2;
    dpi.pPoolSizes = sizes;
    KILN_RETURN_IF_ERROR(VkCheck(vkCreateDescriptorPool(dev, &dpi, nullptr, &descriptor_pool_), "vkCreateDescriptorPool"));
  }
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  texel_views_.reserve(texels);  // the writes point into it: no reallocation
  for (const auto& run : runs)
    for (Execution* e : run)
      for (GpuDispatch& d : static_cast<GpuExecution*>(e)->dispatches()) {
        if (!d.kernel) continue;
        VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        ai.descriptorPool = descriptor_pool_;
        ai.descriptorSetCount = 1;
        ai.pSetLayouts = &static_cast<const VulkanPipeline*>(d.kernel)->set_layout;
        VkDescriptorSet set = VK_NULL_HANDLE;
        KILN_RETURN_IF_ERROR(VkCheck(vkAllocateDescriptorSets(dev, &ai, &set), "vkAllocateDescriptorSets"));
        d.prepared = reinterpret_cast<uint64_t>(set);
        infos.clear();
        writes.clear();
        for (const GpuBinding& b : d.bindings) {
          if (b.buffer) {
            infos.push_back({reinterpret_cast<VkBuffer>(b.buffer->handle), 0, b.buffer->bytes});
          } else {
            if (!b.tensor->deviceHandle())
              return Internal("tensor '%s' is bound to no Vulkan memory", b.tensor->name().c_str());
            infos.push_back({reinterpret_cast<VkBuffer>(b.tensor->deviceHandle()), b.tensor->deviceOffset(),
                             BindingRange(storageBytes(*b.tensor))});
          }
        }
        const uint32_t texel_mask = static_cast<const VulkanPipeline*>(d.kernel)->texel_mask;
        for (uint32_t i = 0; i < infos.size(); ++i) {
          VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
          w.dstSet = set;
          w.dstBinding = i;
          w.descriptorCount = 1;
          w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
          w.pBufferInfo = &infos[i];
          if ((texel_mask >> i) & 1) {
            // Four floats a texel or one (fp16 storage: halves), the binding's range.
            const bool four = d.bindings[i].texel == 4;
            VkBufferViewCreateInfo vi{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
            vi.buffer = infos[i].buffer;
            vi.format = four ? (half_ ? VK_FORMAT_R16G16B16A16_SFLOAT : VK_FORMAT_R32G32B32A32_SFLOAT)
                             : (half_ ? VK_FORMAT_R16_SFLOAT : VK_FORMAT_R32_SFLOAT);
            vi.offset = infos[i].offset;
            const VkDeviceSize texel = (half_ ? 2 : 4) * (four ? 4 : 1);
            vi.range = infos[i].range / texel * texel;
            if (vi.offset % caps().min_texel_offset_alignment != 0 || vi.range == 0 ||
                vi.range / texel > caps().texel_elements)
              return Internal("%s: binding %u (offset %llu, %llu bytes) cannot be a texel buffer", d.kernel->name.c_str(),
                              i, (unsigned long long)vi.offset, (unsigned long long)vi.range);
            VkBufferView view = VK_NULL_HANDLE;
            KILN_RETURN_IF_ERROR(VkCheck(vkCreateBufferView(dev, &vi, nullptr, &view), "vkCreateBufferView"));
            texel_views_.push_back(view);
            w.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
            w.pBufferInfo = nullptr;
            w.pTexelBufferView = &texel_views_.back();
          }
          writes.push_back(w);
        }
        vkUpdateDescriptorSets(dev, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
      }
  return Status::Ok();
}

Status VulkanBackend::onRecord(const std::vector<std::vector<Execution*>>& runs) {
  VkDevice dev = device_->device();
  KILN_RETURN_IF_ERROR(waitIdle());
  freeRecording();
  KILN_RETURN_IF_ERROR(writeDescriptorSets(runs));

  const bool timestamps = config_.profile && caps().timestamps;
  if (timestamps) {
    uint32_t n = 0;
    for (const auto& run : runs)
      for (Execution* e : run) {
        query_of_[e] = n;
        n += 2;
      }
    if (n > 0) {
      VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qi.queryCount = n;
      KILN_RETURN_IF_ERROR(VkCheck(vkCreateQueryPool(dev, &qi, nullptr, &queries_), "vkCreateQueryPool"));
    }
  }

  for (const auto& run : runs) {
    if (run.empty()) continue;
    Run r;
    for (Execution* e : run) r.execs.push_back(static_cast<GpuExecution*>(e));
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = command_pool_;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    KILN_RETURN_IF_ERROR(VkCheck(vkAllocateCommandBuffers(dev, &cai, &r.cmd), "vkAllocateCommandBuffers"));
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    Status s = VkCheck(vkCreateFence(dev, &fci, nullptr, &r.fence), "vkCreateFence");
    runs_.push_back(r);  // freed by freeRecording even on error
    KILN_RETURN_IF_ERROR(s);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    KILN_RETURN_IF_ERROR(VkCheck(vkBeginCommandBuffer(r.cmd, &bi), "vkBeginCommandBuffer"));
    if (timestamps && queries_) {
      // A run's queries are consecutive: reset them where the run starts.
      vkCmdResetQueryPool(r.cmd, queries_, query_of_.at(run.front()), static_cast<uint32_t>(run.size()) * 2);
    }
    KILN_RETURN_IF_ERROR(recordDispatches(r.cmd, r.execs, timestamps && queries_));
    KILN_RETURN_IF_ERROR(VkCheck(vkEndCommandBuffer(r.cmd), "vkEndCommandBuffer"));
    last_of_run_[run.back()] = runs_.size() - 1;
  }
  return device_->TakeValidationError();
}

void VulkanBackend::onExecuteBegin(bool op_by_op) { op_by_op_ = op_by_op; }

Status VulkanBackend::submitExecution(GpuExecution* exec) {
  if (op_by_op_) {
    KILN_RETURN_IF_ERROR(waitIdle());
    KILN_ASSIGN_OR_RETURN(VkCommandBuffer cmd, beginOneShot());
    KILN_RETURN_IF_ERROR(recordDispatches(cmd, {exec}, false));
    return endOneShot(cmd);
  }
  auto it = last_of_run_.find(exec);
  if (it == last_of_run_.end()) return Status::Ok();  // submitted with its run's last op
  Run& r = runs_[it->second];
  if (r.pending) return Internal("vulkan: run %zu submitted twice", it->second);
  KILN_RETURN_IF_ERROR(VkCheck(vkResetFences(device_->device(), 1, &r.fence), "vkResetFences"));
  KILN_RETURN_IF_ERROR(submit(r.cmd, r.fence));
  r.pending = true;
  return Status::Ok();
}

bool VulkanBackend::opTime(const Execution* e, double* ms) const {
  auto it = timings_.find(e);
  if (it == timings_.end()) return false;
  *ms = it->second;
  return true;
}

Status VulkanBackend::readTimings() {
  timings_.clear();
  if (query_of_.empty()) return Status::Ok();
  std::vector<uint64_t> ticks(query_of_.size() * 2);
  VkResult r = vkGetQueryPoolResults(device_->device(), queries_, 0, static_cast<uint32_t>(ticks.size()),
                                     ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
                                     VK_QUERY_RESULT_64_BIT);
  if (r == VK_NOT_READY) return Status::Ok();  // not every run was submitted
  KILN_RETURN_IF_ERROR(VkCheck(r, "vkGetQueryPoolResults"));
  for (auto& [e, q] : query_of_)
    timings_[e] = static_cast<double>(ticks[q + 1] - ticks[q]) * caps().timestamp_period_ns * 1e-6;
  return Status::Ok();
}

}  // namespace kiln
