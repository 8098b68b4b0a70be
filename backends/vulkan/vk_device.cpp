#include "vk_device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "log.h"

namespace kiln {

const char* VkResultName(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult(unknown)";
  }
}

Status VkCheck(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return Status::Ok();
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    return OutOfMemory("%s: %s", what, VkResultName(r));
  if (r == VK_ERROR_DEVICE_LOST) return Internal("%s: %s (the GPU reset or the driver crashed)", what, VkResultName(r));
  return Internal("%s: %s", what, VkResultName(r));
}

std::string VulkanCaps::toString() const {
  const char* kind = type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? "discrete"
                     : type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? "integrated"
                     : type == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU    ? "virtual"
                     : type == VK_PHYSICAL_DEVICE_TYPE_CPU            ? "cpu"
                                                                      : "other";
  return StrFormat("%s (%s, Vulkan %u.%u, fp16 storage %s, fp16 math %s, int8 dot %s, subgroup %u%s)", name.c_str(),
                   kind, VK_API_VERSION_MAJOR(api_version), VK_API_VERSION_MINOR(api_version),
                   storage_16bit ? "yes" : "no", float16 ? "yes" : "no",
                   int8_dot ? (int8_dot_fast ? "yes (accelerated)" : "yes") : "no", subgroup_size,
                   coop_matrix_f16 ? ", cooperative matrix" : "");
}

namespace {

std::mutex g_devices_mutex;
// By (device index, validation): every device in use, and (while sharing is
// on) the ones kept for the process, in a map never destroyed: a device is
// not torn down at exit, after the driver may have been.
std::map<std::pair<int, bool>, std::weak_ptr<VulkanDevice>> g_devices;
std::map<std::pair<int, bool>, std::shared_ptr<VulkanDevice>>& KeptDevices() {
  static auto* kept = new std::map<std::pair<int, bool>, std::shared_ptr<VulkanDevice>>();
  return *kept;
}

int TypeRank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

bool EnvFlag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// Whether the device multiplies 16 x 16 x 16 half matrices into float ones
// in a subgroup (gemm_coop.comp's shape).
bool HasCoopShape(VkPhysicalDevice physical) {
  if (!vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) return false;
  uint32_t n = 0;
  if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(physical, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(physical, &n, props.data()) != VK_SUCCESS) return false;
  return std::any_of(props.begin(), props.begin() + n, [](const VkCooperativeMatrixPropertiesNV& p) {
    return p.MSize == 16 && p.NSize == 16 && p.KSize == 16 && p.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
           p.BType == VK_COMPONENT_TYPE_FLOAT16_NV && p.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
           p.DType == VK_COMPONENT_TYPE_FLOAT32_NV && p.scope == VK_SCOPE_SUBGROUP_NV;
  });
}

bool HasExtension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// The process's Vulkan instance (one with the validation layer, one
// without), created on first use and kept for the process's life: only
// devices come and go with sessions. NVIDIA's driver failed vkCreateInstance
// with VK_ERROR_INCOMPATIBLE_DRIVER after some dozens of create/destroy
// cycles in one process (an H100, driver 580), and an instance costs tens of
// milliseconds a session besides. Called under g_devices_mutex.
StatusOr<VkInstance> SharedInstance(bool validation) {
  static VkInstance instances[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  VkInstance& instance = instances[validation ? 1 : 0];
  if (instance) return instance;
  std::vector<const char*> layers, extensions;
  if (validation) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, nullptr);
    std::vector<VkLayerProperties> props(n);
    vkEnumerateInstanceLayerProperties(&n, props.data());
    bool found = std::any_of(props.begin(), props.end(), [](const VkLayerProperties& p) {
      return std::strcmp(p.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    });
    if (!found)
      return Unavailable("KILN_VULKAN_VALIDATION is set but VK_LAYER_KHRONOS_validation is not installed "
                         "(Debian: vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kiln";
  app.pEngineName = "kiln";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ici.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ici.ppEnabledLayerNames = layers.data();
  ici.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  VkInstance created = VK_NULL_HANDLE;
  VkResult r = vkCreateInstance(&ici, nullptr, &created);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) return Unavailable("no Vulkan driver (vkCreateInstance: %s)", VkResultName(r));
  KILN_RETURN_IF_ERROR(VkCheck(r, "vkCreateInstance"));
  // Device-level entry points go through the loader's dispatch, so that
  // several devices (indices) can coexist in one process.
  volkLoadInstance(created);
  instance = created;
  return instance;
}

}  // namespace

StatusOr<std::shared_ptr<VulkanDevice>> VulkanDevice::Get(int index) {
  const std::pair<int, bool> key{index, EnvFlag("KILN_VULKAN_VALIDATION")};
  const char* share = std::getenv("KILN_VULKAN_SHARE");
  const bool keep = !(share && share[0] == '0');
  std::lock_guard<std::mutex> lock(g_devices_mutex);
  auto& kept = KeptDevices();
  if (auto d = g_devices[key].lock(); d && !d->lost()) {
    if (keep) kept[key] = d;
    else kept.erase(key);
    return d;
  }
  std::shared_ptr<VulkanDevice> d(new VulkanDevice());
  KILN_RETURN_IF_ERROR(d->init(index));
  g_devices[key] = d;
  if (keep) kept[key] = d;
  else kept.erase(key);
  return d;
}

VKAPI_ATTR VkBool32 VKAPI_CALL VulkanDevice::OnDebugMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                            VkDebugUtilsMessageTypeFlagsEXT,
                                                            const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                            void* self) {
  if (!(severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) return VK_FALSE;
  auto* dev = static_cast<VulkanDevice*>(self);
  KILN_LOG("vulkan validation: %s", data->pMessage);
  std::lock_guard<std::mutex> lock(dev->error_mutex_);
  if (dev->validation_error_.empty()) dev->validation_error_ = data->pMessage ? data->pMessage : "(no message)";
  return VK_FALSE;
}

Status VulkanDevice::TakeValidationError() {
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (validation_error_.empty()) return Status::Ok();
  std::string m = std::move(validation_error_);
  validation_error_.clear();
  return Internal("Vulkan validation error: %s", m.c_str());
}

Status VulkanDevice::init(int index) {
  static VkResult loader = volkInitialize();
  if (loader != VK_SUCCESS) return Unavailable("no Vulkan loader (libvulkan.so.1) on this machine");
  if (volkGetInstanceVersion() < VK_API_VERSION_1_1)
    return Unavailable("the Vulkan loader is older than 1.1");

  const bool validation = EnvFlag("KILN_VULKAN_VALIDATION");
  KILN_ASSIGN_OR_RETURN(instance_, SharedInstance(validation));
  if (validation) {
    VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    mci.pfnUserCallback = &VulkanDevice::OnDebugMessage;
    mci.pUserData = this;
    KILN_RETURN_IF_ERROR(VkCheck(vkCreateDebugUtilsMessengerEXT(instance_, &mci, nullptr, &messenger_),
                            "vkCreateDebugUtilsMessengerEXT"));
  }

  uint32_t count = 0;
  vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  if (devices.empty()) return Unavailable("the Vulkan loader found no device");
  if (index >= static_cast<int>(devices.size()))
    return InvalidArgument("Vulkan device index %d, but this machine has %zu Vulkan device(s)", index, devices.size());
  if (index >= 0) {
    physical_ = devices[static_cast<size_t>(index)];
  } else {
    int best = 99;
    for (VkPhysicalDevice d : devices) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(d, &p);
      if (p.apiVersion < VK_API_VERSION_1_1) continue;
      if (TypeRank(p.deviceType) < best) {
        best = TypeRank(p.deviceType);
        physical_ = d;
      }
    }
    if (!physical_) return Unavailable("no Vulkan 1.1 device");
  }

  // Capabilities.
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(physical_, &props2);
  const VkPhysicalDeviceProperties& p = props2.properties;
  if (p.apiVersion < VK_API_VERSION_1_1) return Unavailable("Vulkan device '%s' is older than 1.1", p.deviceName);
  caps_.name = p.deviceName;
  caps_.type = p.deviceType;
  caps_.api_version = p.apiVersion;
  caps_.driver_version = p.driverVersion;
  caps_.vendor_id = p.vendorID;
  caps_.device_id = p.deviceID;
  std::memcpy(caps_.pipeline_cache_uuid, p.pipelineCacheUUID, VK_UUID_SIZE);
  caps_.subgroup_size = subgroup.subgroupSize;
  caps_.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    caps_.max_workgroup_size[i] = p.limits.maxComputeWorkGroupSize[i];
    caps_.max_workgroup_count[i] = p.limits.maxComputeWorkGroupCount[i];
  }
  caps_.max_push_constants = p.limits.maxPushConstantsSize;
  caps_.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  caps_.min_storage_offset_alignment = p.limits.minStorageBufferOffsetAlignment;
  caps_.min_texel_offset_alignment = std::max<VkDeviceSize>(1, p.limits.minTexelBufferOffsetAlignment);
  const uint64_t max_texels = p.limits.maxTexelBufferElements;
  caps_.non_coherent_atom_size = p.limits.nonCoherentAtomSize;
  caps_.timestamp_period_ns = p.limits.timestampPeriod;

  uint32_t ext_count = 0;
  vkEnumerateDeviceExtensionProperties(physical_, nullptr, &ext_count, nullptr);
  std::vector<VkExtensionProperties> exts(ext_count);
  vkEnumerateDeviceExtensionProperties(physical_, nullptr, &ext_count, exts.data());
  bool has_f16i8 = HasExtension(exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  bool has_8bit = HasExtension(exts, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);

  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
  VkPhysicalDevice8BitStorageFeaturesKHR s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &s16;
  void** tail = &s16.pNext;
  if (has_f16i8) {
    *tail = &f16;
    tail = &f16.pNext;
  }
  if (has_8bit) {
    *tail = &s8;
    tail = &s8.pNext;
  }
  // Matrix units (gemm_coop.comp): VK_NV_cooperative_matrix with the
  // Vulkan memory model its SPIR-V declares.
  const bool has_coop = HasExtension(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) &&
                        HasExtension(exts, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceVulkanMemoryModelFeaturesKHR vmm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR};
  if (has_coop) {
    *tail = &coop;
    coop.pNext = &vmm;
    tail = &vmm.pNext;
  }
  // Packed int8 dot products (qconv_dot's and qmatmul_dot's _dp variants).
  const bool has_dot = HasExtension(exts, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  if (has_dot) {
    *tail = &dot;
    tail = &dot.pNext;
  }
  vkGetPhysicalDeviceFeatures2(physical_, &features);
  caps_.storage_16bit = s16.storageBuffer16BitAccess;
  caps_.float16 = has_f16i8 && f16.shaderFloat16;
  caps_.storage_8bit = has_8bit && s8.storageBuffer8BitAccess;
  caps_.float64 = features.features.shaderFloat64;
  caps_.coop_matrix_f16 = has_coop && coop.cooperativeMatrix && vmm.vulkanMemoryModel && caps_.float16 &&
                          caps_.storage_16bit && caps_.subgroup_size == 32 && caps_.max_workgroup_invocations >= 128 &&
                          HasCoopShape(physical_) && !EnvIsZero("KILN_VULKAN_COOP");

  caps_.int8_dot = has_dot && dot.shaderIntegerDotProduct && caps_.storage_8bit && !EnvIsZero("KILN_GPU_INT8DOT");
  if (caps_.int8_dot) {
    VkPhysicalDeviceShaderIntegerDotProductPropertiesKHR dp{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES_KHR};
    VkPhysicalDeviceProperties2 dp2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    dp2.pNext = &dp;
    vkGetPhysicalDeviceProperties2(physical_, &dp2);
    caps_.int8_dot_fast = dp.integerDotProduct4x8BitPackedMixedSignednessAccelerated;
  }

  caps_.cpu_kernels = caps_.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (const char* k = std::getenv("KILN_VULKAN_KERNELS")) {
    if (std::strcmp(k, "gpu") == 0) caps_.cpu_kernels = false;
    else if (std::strcmp(k, "cpu") == 0) caps_.cpu_kernels = true;
  }
  if (caps_.cpu_kernels) {
    caps_.conv_tile_blocks = 2, caps_.conv_tile_cols = 8, caps_.conv_tile_blocks_pointwise = 8;
    caps_.dw_fit_cols = true;
    caps_.attention_rows = 4;
  }
  ConvTileFromEnv(&caps_);
  // Texel-buffer reads (GpuCaps::texel_elements) on CPU drivers, where the
  // device reads both texel formats as uniform texel buffers.
  if (caps_.cpu_kernels) {
    bool formats = true;
    for (VkFormat f : {VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R16G16B16A16_SFLOAT, VK_FORMAT_R32_SFLOAT,
                       VK_FORMAT_R16_SFLOAT}) {
      VkFormatProperties fp{};
      vkGetPhysicalDeviceFormatProperties(physical_, f, &fp);
      formats = formats && (fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT);
    }
    const char* off = std::getenv("KILN_VULKAN_TEXEL");  // =0: storage buffers only (A/B)
    if (formats && !(off && std::strcmp(off, "0") == 0)) caps_.texel_elements = max_texels;
  }
  if (caps_.cpu_kernels) caps_.gemm_register_tile = 8;
  if (caps_.cpu_kernels) caps_.elementwise_items_large = 128;
  if (const char* e = std::getenv("KILN_GPU_ELEMENTWISE_ITEMS")) caps_.elementwise_items_large = std::atoi(e);  // A/B
  if (const char* v = std::getenv("KILN_GPU_GEMM_VECTOR"); caps_.cpu_kernels && !(v && v[0] == '0'))
    caps_.gemm_vector_columns = 4;
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  for (uint32_t i = 0; i < memory_.memoryHeapCount; ++i)
    if (memory_.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      caps_.memory_bytes = std::max<uint64_t>(caps_.memory_bytes, memory_.memoryHeaps[i].size);
  const VkMemoryPropertyFlags unified = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    if ((memory_.memoryTypes[i].propertyFlags & unified) == unified) caps_.unified_memory = true;

  // A compute queue (a compute-only family first: async compute on desktops).
  uint32_t fam_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &fam_count, nullptr);
  std::vector<VkQueueFamilyProperties> fams(fam_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical_, &fam_count, fams.data());
  int family = -1;
  for (uint32_t i = 0; i < fam_count; ++i) {
    if (!(fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (family < 0 || !(fams[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = static_cast<int>(i);
  }
  if (family < 0) return Unavailable("Vulkan device '%s' has no compute queue", caps_.name.c_str());
  queue_family_ = static_cast<uint32_t>(family);
  caps_.timestamps = fams[queue_family_].timestampValidBits > 0 && caps_.timestamp_period_ns > 0;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family_;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  // Enable exactly what we use.
  VkPhysicalDevice16BitStorageFeatures en16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  en16.storageBuffer16BitAccess = caps_.storage_16bit;
  VkPhysicalDeviceShaderFloat16Int8FeaturesKHR enf16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
  enf16.shaderFloat16 = caps_.float16;
  VkPhysicalDevice8BitStorageFeaturesKHR en8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES_KHR};
  en8.storageBuffer8BitAccess = caps_.storage_8bit;
  std::vector<const char*> dev_exts;
  void* chain = &en16;
  void** next = &en16.pNext;
  if (caps_.float16) {
    dev_exts.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    *next = &enf16;
    next = &enf16.pNext;
  }
  if (caps_.storage_8bit) {
    dev_exts.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    *next = &en8;
    next = &en8.pNext;
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesNV en_coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  en_coop.cooperativeMatrix = VK_TRUE;
  VkPhysicalDeviceVulkanMemoryModelFeaturesKHR en_vmm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR};
  en_vmm.vulkanMemoryModel = VK_TRUE;
  if (caps_.coop_matrix_f16) {
    dev_exts.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    dev_exts.push_back(VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME);
    *next = &en_coop;
    en_coop.pNext = &en_vmm;
    next = &en_vmm.pNext;
  }
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR en_dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
  en_dot.shaderIntegerDotProduct = VK_TRUE;
  if (caps_.int8_dot) {
    dev_exts.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    *next = &en_dot;
    next = &en_dot.pNext;
  }
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = chain;
  VkPhysicalDeviceFeatures core{};
  core.shaderFloat64 = caps_.float64;
  dci.pEnabledFeatures = &core;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(dev_exts.size());
  dci.ppEnabledExtensionNames = dev_exts.data();
  KILN_RETURN_IF_ERROR(VkCheck(vkCreateDevice(physical_, &dci, nullptr, &device_), "vkCreateDevice"));
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  return VkCheck(vkCreatePipelineCache(device_, &pci, nullptr, &pipeline_cache_), "vkCreatePipelineCache");
}

VulkanDevice::~VulkanDevice() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    for (auto& [key, p] : pipelines_) {
      if (p->pipeline) vkDestroyPipeline(device_, p->pipeline, nullptr);
      vkDestroyPipelineLayout(device_, p->layout, nullptr);
      vkDestroyDescriptorSetLayout(device_, p->set_layout, nullptr);
    }
    if (pipeline_cache_) vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_) vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  // instance_ is the process's (SharedInstance): kept.
}

int VulkanDevice::findMemoryType(uint32_t type_bits, VkMemoryPropertyFlags required,
                                 VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    VkMemoryPropertyFlags f = memory_.memoryTypes[i].propertyFlags;
    if ((f & required) != required) continue;
    if ((f & preferred) == preferred) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

}  // namespace kiln
