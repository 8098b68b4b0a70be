#include "cl_device.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace kiln {
namespace {

std::string DeviceString(const ClApi& cl, cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (cl.clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (cl.clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T DeviceValue(const ClApi& cl, cl_device_id d, cl_device_info what) {
  T v{};
  cl.clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
  return v;
}

int Rank(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return 0;
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return 1;
  return 2;
}

}  // namespace

std::string ClCaps::toString() const {
  const char* kind = (type & CL_DEVICE_TYPE_GPU) ? "gpu" : (type & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator" : "cpu";
  return StrFormat("%s (%s, %s, %s, fp16 math %s, fp64 %s, exact divide %s, command buffers %s, %u compute units)",
                   name.c_str(), kind, device_version.c_str(), platform.c_str(), fp16_math ? "yes" : "no",
                   float64 ? "yes" : "no", exact_divide ? "yes" : "no", command_buffer ? "yes" : "no", compute_units);
}

StatusOr<std::shared_ptr<ClDevice>> ClDevice::Get(int index) {
  static std::mutex mu;
  static std::map<int, std::shared_ptr<ClDevice>> cache;  // for the process: see cl_device.h
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(index); it != cache.end()) return it->second;

  KILN_ASSIGN_OR_RETURN(const ClApi* api, LoadOpenCL());
  const ClApi& cl = *api;
  cl_uint np = 0;
  if (cl.clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0)
    return Unavailable("no OpenCL platform (is an ICD such as pocl-opencl-icd installed?)");
  std::vector<cl_platform_id> platforms(np);
  KILN_RETURN_IF_ERROR(ClCheck(cl.clGetPlatformIDs(np, platforms.data(), nullptr), "clGetPlatformIDs"));
  struct Candidate {
    cl_platform_id platform;
    cl_device_id device;
    cl_device_type type;
  };
  std::vector<Candidate> all;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> devs(nd);
    if (cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : devs) all.push_back({p, d, DeviceValue<cl_device_type>(cl, d, CL_DEVICE_TYPE)});
  }
  if (all.empty()) return Unavailable("no OpenCL device on %u platform(s)", np);
  size_t pick = 0;
  if (index >= 0) {
    if (static_cast<size_t>(index) >= all.size())
      return Unavailable("OpenCL device index %d, but this machine has %zu OpenCL device(s)", index, all.size());
    pick = static_cast<size_t>(index);
  } else {
    for (size_t i = 1; i < all.size(); ++i)
      if (Rank(all[i].type) < Rank(all[pick].type)) pick = i;
  }

  std::shared_ptr<ClDevice> dev(new ClDevice());
  dev->api_ = api;
  dev->device_ = all[pick].device;
  ClCaps& c = dev->caps_;
  cl_device_id d = dev->device_;
  c.type = all[pick].type;
  c.name = DeviceString(cl, d, CL_DEVICE_NAME);
  c.vendor = DeviceString(cl, d, CL_DEVICE_VENDOR);
  c.driver_version = DeviceString(cl, d, CL_DRIVER_VERSION);
  c.device_version = DeviceString(cl, d, CL_DEVICE_VERSION);
  {
    size_t n = 0;
    std::string s;
    if (cl.clGetPlatformInfo(all[pick].platform, CL_PLATFORM_NAME, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
      s.resize(n);
      cl.clGetPlatformInfo(all[pick].platform, CL_PLATFORM_NAME, n, s.data(), nullptr);
      while (!s.empty() && s.back() == '\0') s.pop_back();
    }
    c.platform = s;
  }
  const std::string ext = DeviceString(cl, d, CL_DEVICE_EXTENSIONS);
  c.fp16_math = ext.find("cl_khr_fp16") != std::string::npos;
  c.float64 = ext.find("cl_khr_fp64") != std::string::npos && !EnvIsZero("KILN_OPENCL_FP64");
  c.exact_divide = (DeviceValue<cl_device_fp_config>(cl, d, CL_DEVICE_SINGLE_FP_CONFIG) &
                    CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0 &&
                   !EnvIsZero("KILN_OPENCL_EXACT_DIVIDE");
  // vload_half / vstore_half and char pointers are core OpenCL 1.2: every
  // device can store 16- and 8-bit elements.
  c.storage_16bit = true;
  c.storage_8bit = true;
  c.images = DeviceValue<cl_bool>(cl, d, CL_DEVICE_IMAGE_SUPPORT) != 0;
  if (ext.find("cl_khr_command_buffer") != std::string::npos) {
    ClCommandBufferApi& cb = dev->command_buffers_;
    auto get = [&](const char* name) { return cl.clGetExtensionFunctionAddressForPlatform(all[pick].platform, name); };
    cb.create = reinterpret_cast<clCreateCommandBufferKHR_fn>(get("clCreateCommandBufferKHR"));
    cb.finalize = reinterpret_cast<clFinalizeCommandBufferKHR_fn>(get("clFinalizeCommandBufferKHR"));
    cb.release = reinterpret_cast<clReleaseCommandBufferKHR_fn>(get("clReleaseCommandBufferKHR"));
    cb.enqueue = reinterpret_cast<clEnqueueCommandBufferKHR_fn>(get("clEnqueueCommandBufferKHR"));
    cb.ndrange = reinterpret_cast<clCommandNDRangeKernelKHR_fn>(get("clCommandNDRangeKernelKHR"));
    cb.copy = reinterpret_cast<clCommandCopyBufferKHR_fn>(get("clCommandCopyBufferKHR"));
    c.command_buffer = cb.ok();
  }
  c.command_buffer = c.command_buffer && !EnvIsZero("KILN_OPENCL_COMMAND_BUFFER");
  c.compute_units = DeviceValue<cl_uint>(cl, d, CL_DEVICE_MAX_COMPUTE_UNITS);
  c.local_memory = DeviceValue<cl_ulong>(cl, d, CL_DEVICE_LOCAL_MEM_SIZE);
  c.base_address_align = DeviceValue<cl_uint>(cl, d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  c.max_workgroup_invocations = static_cast<uint32_t>(DeviceValue<size_t>(cl, d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  size_t items[3] = {1, 1, 1};
  cl.clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(items), items, nullptr);
  for (int i = 0; i < 3; ++i) {
    c.max_workgroup_size[i] = static_cast<uint32_t>(items[i]);
    c.max_workgroup_count[i] = 65535u * 32u;  // no OpenCL limit; keep grids within 32-bit ids
  }
  c.max_storage_buffer_range = DeviceValue<cl_ulong>(cl, d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  c.memory_bytes = DeviceValue<cl_ulong>(cl, d, CL_DEVICE_GLOBAL_MEM_SIZE);
  c.cpu_kernels = (c.type & CL_DEVICE_TYPE_CPU) != 0;
  if (const char* k = std::getenv("KILN_OPENCL_KERNELS")) c.cpu_kernels = std::string(k) == "cpu";
  if (c.cpu_kernels) c.conv_tile_blocks = 4, c.conv_tile_cols = 8, c.dw_rows_per_item = 4;
  if (c.cpu_kernels) c.attention_keys = 16, c.attention_rows = 2, c.pool_row_outputs = 8;
  ConvTileFromEnv(&c);
  if (c.cpu_kernels) c.gemm_register_tile = 8;
  if (c.cpu_kernels) c.elementwise_items_large = 32;
  if (const char* e = std::getenv("KILN_GPU_ELEMENTWISE_ITEMS")) c.elementwise_items_large = std::atoi(e);  // A/B
  if (const char* v = std::getenv("KILN_GPU_GEMM_VECTOR"); c.cpu_kernels && !(v && v[0] == '0'))
    c.gemm_vector_columns = 1;

  cl_int err = CL_SUCCESS;
  dev->context_ = cl.clCreateContext(nullptr, 1, &d, nullptr, nullptr, &err);
  KILN_RETURN_IF_ERROR(ClCheck(err, "clCreateContext"));
  cache[index] = dev;
  return dev;
}

ClDevice::~ClDevice() {
  for (auto& [key, p] : programs_) api_->clReleaseProgram(p);
  if (context_) api_->clReleaseContext(context_);
}

namespace {
bool SharePrograms() {
  const char* v = std::getenv("KILN_OPENCL_SHARE_PROGRAMS");
  return !(v && v[0] == '0');
}
}  // namespace

cl_program ClDevice::findProgram(const std::string& key) const {
  if (!SharePrograms()) return nullptr;
  std::lock_guard<std::mutex> lock(programs_mutex_);
  auto it = programs_.find(key);
  if (it == programs_.end()) return nullptr;
  api_->clRetainProgram(it->second);
  return it->second;
}

void ClDevice::keepProgram(const std::string& key, cl_program program) {
  if (!SharePrograms()) return;
  std::lock_guard<std::mutex> lock(programs_mutex_);
  if (programs_.count(key)) return;
  api_->clRetainProgram(program);
  programs_[key] = program;
}

}  // namespace kiln
