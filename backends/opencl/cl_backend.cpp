#include "cl_backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>

#include "cl_sources.h"
#include "fault_injection.h"
#include "log.h"
#include "mapped_file.h"

namespace kiln {
namespace {

// clCreateBuffer, failing as a device out of memory would when a test arms
// the fault (fault_injection.h).
cl_mem CreateClBuffer(const ClApi& cl, cl_context context, cl_mem_flags flags, size_t bytes, cl_int* err) {
  if (fault::Hit(fault::Site::kDeviceAlloc)) {
    *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    return nullptr;
  }
  return cl.clCreateBuffer(context, flags, bytes, nullptr, err);
}

// Pool slack, so that a kernel's pointer to an empty tensor at the pool's
// end (offset = the pool's size) still points inside the buffer.
constexpr uint64_t kPoolSlack = 256;
constexpr char kCacheMagic[8] = {'K', 'I', 'L', 'N', 'C', 'L', 'B', '1'};

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

cl_mem Mem(uint64_t handle) { return reinterpret_cast<cl_mem>(handle); }

}  // namespace

StatusOr<std::unique_ptr<Backend>> CreateOpenCLBackend(const ScheduleConfig& config) {
  return OpenCLBackend::Create(config);
}

StatusOr<std::unique_ptr<Backend>> OpenCLBackend::Create(const ScheduleConfig& config) {
  std::unique_ptr<OpenCLBackend> b(new OpenCLBackend());
  KILN_RETURN_IF_ERROR(b->init(config));
  return std::unique_ptr<Backend>(std::move(b));
}

Status OpenCLBackend::init(const ScheduleConfig& config) {
  config_ = config;
  KILN_ASSIGN_OR_RETURN(device_, ClDevice::Get(config.deviceIndex));
  planner_ = MemoryPlanner(std::max<size_t>(64, caps().base_address_align));
  half_ = config.precision == Precision::kLow && caps().storage_16bit;
  pack_layout_ = config.gpuLayout != GpuLayout::kPlanar;  // as on Vulkan (gpu_backend.h)
  cl_int err = CL_SUCCESS;
  queue_ = cl().clCreateCommandQueue(device_->context(), device_->device(),
                                     config.profile ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
  KILN_RETURN_IF_ERROR(ClCheck(err, "clCreateCommandQueue"));
  loadCache();
  return Status::Ok();
}

OpenCLBackend::~OpenCLBackend() {
  if (!device_) return;
  if (queue_) cl().clFinish(queue_);
  if (!config_.cacheFile.empty()) {
    Status s = saveCache();
    if (!s.ok()) KILN_LOG("opencl: %s", s.message().c_str());
  }
  freeRecording();
  for (auto& [key, p] : programs_) cl().clReleaseProgram(p);
  if (pool_) cl().clReleaseMemObject(pool_);
  if (constant_buffer_) cl().clReleaseMemObject(constant_buffer_);
  if (staging_) cl().clReleaseMemObject(staging_);
  if (tune_queue_) cl().clReleaseCommandQueue(tune_queue_);
  if (queue_) cl().clReleaseCommandQueue(queue_);
}

// ------------------------------------------------------------------ programs

// The cache file (and a bundle's OpenCL state): "KILNCLB1", then entries of
// [u32 key bytes][key][u64 binary bytes][binary]. Bytes that do not parse
// are ignored (logged); a binary the driver rejects is rebuilt from source.
namespace {

bool ParseCache(const uint8_t* all, size_t size, std::map<std::string, std::vector<uint8_t>>* out) {
  size_t pos = sizeof(kCacheMagic);
  if (size < pos || std::memcmp(all, kCacheMagic, sizeof(kCacheMagic)) != 0) return false;
  std::map<std::string, std::vector<uint8_t>> entries;
  while (pos < size) {
    uint32_t klen;
    uint64_t blen;
    if (size - pos < 4) break;
    std::memcpy(&klen, all + pos, 4);
    pos += 4;
    if (size - pos < klen + 8ull) break;
    std::string key(reinterpret_cast<const char*>(all) + pos, klen);
    pos += klen;
    std::memcpy(&blen, all + pos, 8);
    pos += 8;
    if (size - pos < blen) break;
    entries[key].assign(all + pos, all + pos + blen);
    pos += blen;
  }
  if (pos != size) return false;
  *out = std::move(entries);
  return true;
}

// The driver's binary of a built program (empty when it gives none).
std::vector<uint8_t> ProgramBinary(const ClApi& cl, cl_program program) {
  size_t len = 0;
  if (cl.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(len), &len, nullptr) != CL_SUCCESS || !len)
    return {};
  std::vector<uint8_t> bin(len);
  unsigned char* ptr = bin.data();
  if (cl.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) return {};
  return bin;
}

std::vector<uint8_t> SerializeCache(const std::map<std::string, std::vector<uint8_t>>& entries) {
  std::vector<uint8_t> out(kCacheMagic, kCacheMagic + sizeof(kCacheMagic));
  auto put = [&out](const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  };
  for (auto& [key, bin] : entries) {
    const uint32_t klen = static_cast<uint32_t>(key.size());
    const uint64_t blen = bin.size();
    put(&klen, 4);
    put(key.data(), klen);
    put(&blen, 8);
    put(bin.data(), bin.size());
  }
  return out;
}

}  // namespace

void OpenCLBackend::loadCache() {
  if (config_.cacheFile.empty()) return;
  std::ifstream f(config_.cacheFile, std::ios::binary);
  if (!f) return;
  std::vector<uint8_t> all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!ParseCache(all.data(), all.size(), &binaries_)) {
    KILN_LOG("opencl: '%s' is not a Kiln OpenCL cache or is truncated; starting empty", config_.cacheFile.c_str());
    return;
  }
  binaries_loaded_ = binaries_.size();
}

// Binaries are read when they are saved or exported, never at build: to
// give one, PoCL compiles the program's kernels for any work-group size,
// work that a session without a cache file never needs (a third of the
// OpenCL suites' kernel compiles in CI).
void OpenCLBackend::readBinaries(bool again) {
  for (auto& [pkey, program] : programs_) {
    auto ck = program_keys_.find(pkey);
    if (ck == program_keys_.end() || (!again && binaries_.count(ck->second))) continue;
    std::vector<uint8_t> bin = ProgramBinary(cl(), program);
    if (!bin.empty()) binaries_[ck->second] = std::move(bin);
  }
}

Status OpenCLBackend::saveCache() {
  readBinaries(false);
  if (binaries_.size() == binaries_loaded_) return Status::Ok();  // nothing new learned
  const std::vector<uint8_t> bytes = SerializeCache(binaries_);
  KILN_RETURN_IF_ERROR(WriteFileAtomically(config_.cacheFile, bytes.data(), bytes.size(), "OpenCL program cache"));
  binaries_loaded_ = binaries_.size();
  return Status::Ok();
}

std::string OpenCLBackend::cacheIdentity() const {
  const auto& c = device_->caps();
  return StrFormat("opencl|%s|%s|%s", c.platform.c_str(), c.name.c_str(), c.driver_version.c_str());
}

StatusOr<std::vector<uint8_t>> OpenCLBackend::exportCache() {
  // Each program's binary read again now: after the session's runs a driver
  // that compiles kernels for their work-group sizes at first enqueue
  // (PoCL) has those in it too, which is most of its cold start.
  readBinaries(true);
  return SerializeCache(binaries_);
}

StatusOr<std::string> OpenCLBackend::importCache(const uint8_t* data, size_t bytes) {
  std::map<std::string, std::vector<uint8_t>> entries;
  if (!ParseCache(data, bytes, &entries)) return InvalidArgument("the bundle's OpenCL state does not parse");
  size_t programs = 0, sizes = 0;
  for (auto& [key, bin] : entries) {
    (bin.size() == 4 ? sizes : programs) += 1;  // tuned work-group sizes are 4-byte entries
    binaries_[key] = std::move(bin);
  }
  return StrFormat("%zu program binaries and %zu tuned work-group sizes", programs, sizes);
}

// Kernel arguments point at their tensor by buffer and byte offset, not by
// sub-buffer: NVIDIA's driver crashed releasing sub-buffers of a pool that
// kernels had written (stop 37), and a sub-buffer's origin must be aligned
// to the device's base address alignment. So every __kernel of a source
// gets one `ulong` byte offset per __global pointer parameter, appended
// after its own parameters in order, and moves the pointer by it first.
StatusOr<std::string> WithBufferOffsets(const std::string& body) {
  std::string out;
  size_t pos = 0;
  for (size_t k; (k = body.find("__kernel", pos)) != std::string::npos;) {
    const size_t name = body.find(" void ", k);  // past any __attribute__((...))
    const size_t open = name == std::string::npos ? name : body.find('(', name);
    if (open == std::string::npos) return Internal("OpenCL source: a __kernel without parameters");
    size_t close = open;
    for (int depth = 0; close < body.size(); ++close) {
      if (body[close] == '(') ++depth;
      if (body[close] == ')' && --depth == 0) break;
    }
    const size_t brace = body.find('{', close);
    if (close >= body.size() || brace == std::string::npos)
      return Internal("OpenCL source: an unterminated __kernel signature");
    std::string extra, prologue;
    size_t start = open + 1;
    for (size_t i = open + 1; i <= close; ++i) {
      if (body[i] != ',' && i != close) continue;
      std::string param = body.substr(start, i - start);
      start = i + 1;
      const size_t star = param.rfind('*');
      if (param.find("__global") == std::string::npos || star == std::string::npos) continue;
      size_t e = param.find_last_not_of(" \t\n");
      size_t b = param.find_last_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", e);
      const std::string name = param.substr(b + 1, e - b);
      std::string type = param.substr(0, star + 1);
      type = type.substr(type.find_first_not_of(" \t\n"));
      const bool is_const = type.find("const") != std::string::npos;
      extra += ", ulong kiln_off_" + name;
      prologue += "\n  " + name + " = (" + type + ")((__global " + (is_const ? "const " : "") + "uchar*)" + name +
                  " + kiln_off_" + name + ");";
    }
    out += body.substr(pos, close - pos) + extra + body.substr(close, brace + 1 - close) + prologue;
    pos = brace + 1;
  }
  return out + body.substr(pos);
}

Status SetKernelArgs(const ClApi& cl, cl_kernel kernel, const std::vector<ClArg>& buffers,
                     const std::vector<uint8_t>& push) {
  cl_uint arg = 0;
  for (const ClArg& b : buffers)
    KILN_RETURN_IF_ERROR(ClCheck(cl.clSetKernelArg(kernel, arg++, sizeof(cl_mem), &b.mem), "buffer"));
  if (!push.empty())
    KILN_RETURN_IF_ERROR(ClCheck(cl.clSetKernelArg(kernel, arg++, push.size(), push.data()), "push constants"));
  for (const ClArg& b : buffers) {
    const cl_ulong offset = b.offset;
    KILN_RETURN_IF_ERROR(ClCheck(cl.clSetKernelArg(kernel, arg++, sizeof(offset), &offset), "buffer offset"));
  }
  return Status::Ok();
}

StatusOr<cl_program> OpenCLBackend::buildProgram(const std::string& stem, const std::string& options) {
  const std::string pkey = stem + " " + options;
  auto it = programs_.find(pkey);
  if (it != programs_.end()) return it->second;
  const char* codes = FindClSource("op_codes");  // UnaryFn's numbering, generated from the schema
  const char* common = FindClSource("common");
  const char* body = FindClSource(stem.c_str());
  if (!codes || !common || !body) return Internal("no OpenCL kernel source '%s' in this build", stem.c_str());
  KILN_ASSIGN_OR_RETURN(std::string kernels, WithBufferOffsets(body));
  const std::string source = std::string(codes) + "\n" + common + "\n" + kernels;
  const std::string ckey = StrFormat("%s|%s|%s|%016llx", stem.c_str(), caps().name.c_str(),
                                     caps().driver_version.c_str(), (unsigned long long)Fnv1a(source + options));
  const cl_device_id dev = device_->device();
  cl_int err = CL_SUCCESS;
  cl_program program = device_->findProgram(ckey);  // built by an earlier session of the process
  auto cached = binaries_.find(ckey);
  if (!program && cached != binaries_.end()) {
    const unsigned char* bin = cached->second.data();
    const size_t len = cached->second.size();
    cl_int bin_status = CL_SUCCESS;
    program = cl().clCreateProgramWithBinary(device_->context(), 1, &dev, &len, &bin, &bin_status, &err);
    if (err != CL_SUCCESS || bin_status != CL_SUCCESS ||
        cl().clBuildProgram(program, 1, &dev, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
      if (program) cl().clReleaseProgram(program);
      program = nullptr;
      binaries_.erase(cached);  // stale (another driver build): compile again
    }
  }
  if (!program) {
    const char* src = source.c_str();
    program = cl().clCreateProgramWithSource(device_->context(), 1, &src, nullptr, &err);
    KILN_RETURN_IF_ERROR(ClCheck(err, "clCreateProgramWithSource"));
    err = cl().clBuildProgram(program, 1, &dev, options.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      size_t n = 0;
      cl().clGetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
      std::string log(n, '\0');
      cl().clGetProgramBuildInfo(program, dev, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      cl().clReleaseProgram(program);
      return Internal("building OpenCL kernel %s.cl (%s): %s: %s", stem.c_str(), options.c_str(), ClErrorName(err),
                      log.c_str());
    }
    ++programs_compiled_;
  }
  device_->keepProgram(ckey, program);
  programs_[pkey] = program;
  program_keys_[pkey] = ckey;
  return program;
}

StatusOr<const GpuKernel*> OpenCLBackend::kernel(const char* name, uint32_t bindings, const uint32_t local[3],
                                                 const std::vector<uint32_t>& spec, uint32_t /*texel_mask: pointers either way*/) {
  std::string key = StrFormat("%s/%u/%u,%u,%u", name, bindings, local[0], local[1], local[2]);
  for (uint32_t v : spec) key += StrFormat(",%u", v);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second.get();
  const GpuCaps& c = caps();
  if (local[0] * local[1] * local[2] > c.max_workgroup_invocations || local[0] > c.max_workgroup_size[0] ||
      local[1] > c.max_workgroup_size[1] || local[2] > c.max_workgroup_size[2])
    return Unsupported("%s: work group %ux%ux%u exceeds the device's limits", name, local[0], local[1], local[2]);
  // <stem>_u16 is <stem>.cl moving 16-bit units, <stem>_f64 is <stem>.cl
  // summing in double (the op layer asks for it where the device has fp64),
  // <stem>_k16 is <stem>.cl taking 16 keys a block (attention.cl); in fp16
  // mode a float kernel (one that uses STORE_T) stores half.
  std::string stem = name, options = "-cl-std=CL1.2";
  if (caps().exact_divide) options += " -cl-fp32-correctly-rounded-divide-sqrt";
  static const std::pair<const char*, const char*> kVariants[] = {
      {"_u16", " -DKILN_UNIT16"}, {"_f64", " -DKILN_F64"}, {"_k16", " -DKILN_KEYS16"}};
  for (const auto& [variant, define] : kVariants) {
    if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, variant) == 0) {
      stem.resize(stem.size() - 4);
      options += define;
    }
  }
  const char* body = FindClSource(stem.c_str());
  if (!body) return Unsupported("no OpenCL kernel %s.cl", stem.c_str());
  if (half_ && std::strstr(body, "STORE_T")) options += " -DKILN_FP16";
  for (int i = 0; i < 3; ++i) options += StrFormat(" -DKILN_SPEC_%d=%u", i, local[i]);
  for (size_t i = 0; i < spec.size(); ++i) options += StrFormat(" -DKILN_SPEC_%zu=%u", i + 3, spec[i]);
  KILN_ASSIGN_OR_RETURN(cl_program program, buildProgram(stem, options));
  auto k = std::make_unique<ClKernel>();
  k->name = stem;
  k->bindings = bindings;
  std::copy(local, local + 3, k->local_size);
  k->program = program;
  k->options = options;
  const GpuKernel* raw = k.get();
  kernels_.emplace(key, std::move(k));
  return raw;
}

// -------------------------------------------------------------------- memory

StatusOr<GpuBuffer> OpenCLBackend::createBuffer(uint64_t bytes, const void* data) {
  GpuBuffer b;
  b.bytes = std::max<uint64_t>(bytes, 16);
  cl_int err = CL_SUCCESS;
  cl_mem m = CreateClBuffer(cl(), device_->context(), CL_MEM_READ_WRITE, b.bytes, &err);
  KILN_RETURN_IF_ERROR(ClCheck(err, StrFormat("allocating %llu bytes of OpenCL memory", (unsigned long long)b.bytes).c_str()));
  b.handle = reinterpret_cast<uint64_t>(m);
  if (data && bytes) {
    err = cl().clEnqueueWriteBuffer(queue_, m, CL_TRUE, 0, bytes, data, 0, nullptr, nullptr);
    if (err != CL_SUCCESS) {
      cl().clReleaseMemObject(m);
      return ClCheck(err, "clEnqueueWriteBuffer");
    }
  }
  return b;
}

void OpenCLBackend::freeBuffer(GpuBuffer* b) {
  if (b->handle) cl().clReleaseMemObject(Mem(b->handle));
  *b = GpuBuffer();
}

// Lays every constant out in one buffer and uploads them with one write.
Status OpenCLBackend::uploadConstants() {
  const uint64_t align = std::max<uint64_t>(64, caps().base_address_align);
  uint64_t total = 0;
  for (Constant& c : constants_) {
    if (!uploads(c)) continue;
    c.offset = total;
    total += (std::max<uint64_t>(storageBytes(*c.src), 4) + align - 1) / align * align;
  }
  std::vector<uint8_t> bytes(total);
  for (const Constant& c : constants_)
    if (c.resident) toStorage(*c.src, bytes.data() + c.offset);
  if (constant_buffer_) cl().clReleaseMemObject(constant_buffer_);
  constant_buffer_ = nullptr;
  cl_int err = CL_SUCCESS;
  constant_bytes_ = total + kPoolSlack;
  constant_buffer_ = CreateClBuffer(cl(), device_->context(), CL_MEM_READ_WRITE, constant_bytes_, &err);
  KILN_RETURN_IF_ERROR(ClCheck(err, "allocating the OpenCL weights buffer"));
  if (total)
    KILN_RETURN_IF_ERROR(ClCheck(cl().clEnqueueWriteBuffer(queue_, constant_buffer_, CL_TRUE, 0, total, bytes.data(), 0,
                                                      nullptr, nullptr),
                            "uploading weights"));
  for (const Constant& c : constants_)
    if (c.resident) c.mirror->bind(this, nullptr, reinterpret_cast<uint64_t>(constant_buffer_), c.offset);
  constants_dirty_ = false;
  return Status::Ok();
}

MemoryReport OpenCLBackend::memoryReport() const {
  MemoryReport r = report_;
  r.constant_bytes = (constant_buffer_ ? constant_bytes_ - kPoolSlack : 0) + own_weight_bytes_;
  return r;
}

Status OpenCLBackend::onAllocateBuffer() {
  KILN_RETURN_IF_ERROR(ClCheck(cl().clFinish(queue_), "clFinish"));
  freeRecording();
  if (constants_dirty_) KILN_RETURN_IF_ERROR(uploadConstants(), "uploading weights");
  MemoryPlanner::Plan plan = planner_.plan();
  KILN_RETURN_IF_ERROR(checkPoolSize(plan.total + memoryReport().constant_bytes));
  const uint64_t bytes = plan.total + kPoolSlack;
  if (bytes > pool_bytes_ || bytes * 2 < pool_bytes_) {
    if (pool_) cl().clReleaseMemObject(pool_);
    pool_ = nullptr;
    pool_bytes_ = 0;
    cl_int err = CL_SUCCESS;
    pool_ = CreateClBuffer(cl(), device_->context(), CL_MEM_READ_WRITE, bytes, &err);
    KILN_RETURN_IF_ERROR(ClCheck(err, StrFormat("allocating a %llu-byte OpenCL pool", (unsigned long long)bytes).c_str()));
    pool_bytes_ = bytes;
  }
  bindPlanned(plan, reinterpret_cast<uint64_t>(pool_));
  return Status::Ok();
}

Status OpenCLBackend::ensureStaging(uint64_t bytes) {
  if (staging_ && staging_bytes_ >= bytes) return Status::Ok();
  if (staging_) cl().clReleaseMemObject(staging_);
  staging_ = nullptr;
  staging_bytes_ = 0;
  const uint64_t size = std::max<uint64_t>(bytes, 1 << 16);
  cl_int err = CL_SUCCESS;
  staging_ = CreateClBuffer(cl(), device_->context(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, &err);
  KILN_RETURN_IF_ERROR(ClCheck(err, "allocating the OpenCL staging buffer"));
  staging_bytes_ = size;
  return Status::Ok();
}

Status OpenCLBackend::onCopyBuffer(const Tensor& src, Tensor* dst) {
  if (src.byteSize() != dst->byteSize())
    return InvalidArgument("copy of '%s': %zu bytes into %zu", src.name().c_str(), src.byteSize(), dst->byteSize());
  const bool src_dev = src.backend() == this, dst_dev = dst->backend() == this;
  if (src_dev == dst_dev) return Internal("opencl copy of '%s' is not between the host and OpenCL", src.name().c_str());
  if (copyHostConstant(src, dst)) return Status::Ok();  // weights kept off the device
  const Tensor& dev = src_dev ? src : *dst;
  const size_t bytes = storageBytes(dev);
  if (bytes == 0) return Status::Ok();
  if (!dev.deviceHandle())
    return Internal("opencl copy of '%s': the tensor has no memory (not resized?)", src.name().c_str());
  KILN_RETURN_IF_ERROR(ensureStaging(bytes));
  const cl_mem mem = Mem(dev.deviceHandle());
  cl_int err = CL_SUCCESS;
  if (!src_dev) {
    void* p = cl().clEnqueueMapBuffer(queue_, staging_, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, bytes, 0, nullptr,
                                      nullptr, &err);
    KILN_RETURN_IF_ERROR(ClCheck(err, "mapping the staging buffer"));
    toStorage(src, static_cast<uint8_t*>(p), packed(*dst));
    KILN_RETURN_IF_ERROR(ClCheck(cl().clEnqueueUnmapMemObject(queue_, staging_, p, 0, nullptr, nullptr), "unmap"));
    // In-order queue: kernels enqueued later see the copy.
    return ClCheck(cl().clEnqueueCopyBuffer(queue_, staging_, mem, 0, dst->deviceOffset(), bytes, 0, nullptr, nullptr),
                   "copy to the device");
  }
  KILN_RETURN_IF_ERROR(ClCheck(cl().clEnqueueCopyBuffer(queue_, mem, staging_, src.deviceOffset(), 0, bytes, 0, nullptr,
                                                   nullptr),
                          "copy from the device"));
  void* p = cl().clEnqueueMapBuffer(queue_, staging_, CL_TRUE, CL_MAP_READ, 0, bytes, 0, nullptr, nullptr, &err);
  KILN_RETURN_IF_ERROR(ClCheck(err, "mapping the staging buffer"));
  fromStorage(static_cast<const uint8_t*>(p), dst, packed(src));
  return ClCheck(cl().clEnqueueUnmapMemObject(queue_, staging_, p, 0, nullptr, nullptr), "unmap");
}

Status OpenCLBackend::onCopyWithin(const Tensor& src, Tensor* dst) {
  if (src.backend() != this || dst->backend() != this || packed(src) != packed(*dst) ||
      storageBytes(src) != storageBytes(*dst))
    return Unsupported("opencl: '%s' and '%s' differ in storage", src.name().c_str(), dst->name().c_str());
  const size_t bytes = storageBytes(src);
  if (bytes == 0) return Status::Ok();
  if (!src.deviceHandle() || !dst->deviceHandle())
    return Internal("opencl copy of '%s': the tensor has no memory (not resized?)", src.name().c_str());
  KILN_RETURN_IF_ERROR(ClCheck(cl().clEnqueueCopyBuffer(queue_, Mem(src.deviceHandle()), Mem(dst->deviceHandle()),
                                                        src.deviceOffset(), dst->deviceOffset(), bytes, 0, nullptr,
                                                        nullptr),
                               "device copy"));
  return ClCheck(cl().clFinish(queue_), "device copy");
}

// ---------------------------------------------------------------- recording

void OpenCLBackend::freeRecording() {
  for (cl_command_buffer_khr b : command_buffers_) device_->commandBuffers().release(b);  // before their kernels
  command_buffers_.clear();
  buffer_of_run_end_.clear();
  for (cl_kernel k : recorded_kernels_) cl().clReleaseKernel(k);
  recorded_kernels_.clear();
  tuned_local_.clear();
  tuned_measured_ = tuned_cached_ = 0;
  for (auto& [e, ev] : events_) {
    if (ev.first) cl().clReleaseEvent(ev.first);
    if (ev.second && ev.second != ev.first) cl().clReleaseEvent(ev.second);
  }
  events_.clear();
}

Status OpenCLBackend::onRecord(const std::vector<std::vector<Execution*>>& runs) {
  KILN_RETURN_IF_ERROR(ClCheck(cl().clFinish(queue_), "clFinish"));
  freeRecording();
  for (const auto& run : runs)
    for (Execution* e : run)
      for (GpuDispatch& d : static_cast<GpuExecution*>(e)->dispatches()) {
        if (!d.kernel) continue;
        const auto* k = static_cast<const ClKernel*>(d.kernel);
        cl_int err = CL_SUCCESS;
        cl_kernel kernel = cl().clCreateKernel(k->program, k->name.c_str(), &err);
        KILN_RETURN_IF_ERROR(ClCheck(err, StrFormat("clCreateKernel %s", k->name.c_str()).c_str()));
        recorded_kernels_.push_back(kernel);
        d.prepared = reinterpret_cast<uint64_t>(kernel);
        std::vector<ClArg> args;
        for (const GpuBinding& b : d.bindings) {
          if (b.buffer) {
            args.push_back({Mem(b.buffer->handle), 0});
          } else if (b.tensor->deviceHandle()) {
            args.push_back({Mem(b.tensor->deviceHandle()), b.tensor->deviceOffset()});
          } else {
            return Internal("tensor '%s' is bound to no OpenCL memory", b.tensor->name().c_str());
          }
        }
        KILN_RETURN_IF_ERROR(SetKernelArgs(cl(), kernel, args, d.push), "%s", k->name.c_str());
        if (config_.tuning != Tuning::kNone && d.free_local) KILN_RETURN_IF_ERROR(tune(d));
      }
  if (config_.tuning != Tuning::kNone)
    KILN_LOG("opencl: work-group sizes of %zu dispatches tuned (%zu measured, %zu from the cache file)",
             tuned_measured_ + tuned_cached_, tuned_measured_, tuned_cached_);
  // Profiling needs an event per op: then the prepared list runs instead.
  if (caps().command_buffer && !config_.profile) KILN_RETURN_IF_ERROR(recordCommandBuffers(runs));
  return Status::Ok();
}

Status OpenCLBackend::tune(const GpuDispatch& d) {
  if (d.groups[0] == 0 || d.groups[1] == 0 || d.groups[2] == 0) return Status::Ok();
  const auto* k = static_cast<const ClKernel*>(d.kernel);
  const std::string key = StrFormat("tune|%s|%s|%s|%s|%ux%u", caps().name.c_str(), caps().driver_version.c_str(),
                                    k->name.c_str(), k->options.c_str(), d.groups[0], d.groups[1]);
  auto cached = binaries_.find(key);
  if (cached != binaries_.end() && cached->second.size() == 4) {
    uint32_t local;
    std::memcpy(&local, cached->second.data(), 4);
    tuned_local_[d.prepared] = local;
    ++tuned_cached_;
    return Status::Ok();
  }
  std::vector<uint32_t> candidates = config_.tuning == Tuning::kFull
                                         ? std::vector<uint32_t>{16, 32, 64, 128, 256, 512, 1024}
                                         : std::vector<uint32_t>{32, 64, 128, 256};
  const int reps = config_.tuning == Tuning::kFull ? 5 : 2;
  // Timed by the device's own clock (profiling events on a queue of their
  // own): a wall clock around clFinish measures the launch and the wait as
  // well, which on a real GPU are most of a small kernel's time.
  if (!tune_queue_) {
    cl_int err = CL_SUCCESS;
    tune_queue_ =
        cl().clCreateCommandQueue(device_->context(), device_->device(), CL_QUEUE_PROFILING_ENABLE, &err);
    KILN_RETURN_IF_ERROR(ClCheck(err, "clCreateCommandQueue (tuning)"));
  }
  auto timed = [&](double* seconds) -> Status {
    cl_event ev = nullptr;
    KILN_RETURN_IF_ERROR(enqueue(d, &ev, tune_queue_));
    cl_int err = ev ? cl().clWaitForEvents(1, &ev) : CL_SUCCESS;
    cl_ulong start = 0, end = 0;
    if (err == CL_SUCCESS && ev) {
      err = cl().clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr);
      if (err == CL_SUCCESS)
        err = cl().clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr);
    }
    if (ev) cl().clReleaseEvent(ev);
    KILN_RETURN_IF_ERROR(ClCheck(err, "tuning: the device's timestamps"));
    *seconds = static_cast<double>(end - start) * 1e-9;
    return Status::Ok();
  };
  uint32_t best_local = d.kernel->local_size[0];
  double best = 1e30;
  for (uint32_t local : candidates) {
    if (local > caps().max_workgroup_size[0] || local > caps().max_workgroup_invocations) continue;
    tuned_local_[d.prepared] = local;
    double t = 1e30, once = 0;
    KILN_RETURN_IF_ERROR(timed(&once));  // warm-up (and any lazy compile)
    for (int r = 0; r < reps; ++r) {
      KILN_RETURN_IF_ERROR(timed(&once));
      t = std::min(t, once);
    }
    if (t < best) {
      best = t;
      best_local = local;
    }
  }
  tuned_local_[d.prepared] = best_local;
  std::vector<uint8_t> value(4);
  std::memcpy(value.data(), &best_local, 4);
  binaries_[key] = std::move(value);
  ++tuned_measured_;
  return Status::Ok();
}

OpenCLBackend::Launch OpenCLBackend::launchOf(const GpuDispatch& d) const {
  Launch l;
  if (!d.kernel) {
    const Tensor& src = *d.bindings[0].tensor;
    const Tensor& dst = *d.bindings[1].tensor;
    l.copy = true;
    l.bytes = storageBytes(src);
    l.skip = l.bytes == 0 || (src.deviceHandle() == dst.deviceHandle() && src.deviceOffset() == dst.deviceOffset());
    l.src = Mem(src.deviceHandle());
    l.dst = Mem(dst.deviceHandle());
    l.src_offset = src.deviceOffset();
    l.dst_offset = dst.deviceOffset();
    return l;
  }
  if (d.groups[0] == 0 || d.groups[1] == 0 || d.groups[2] == 0) {
    l.skip = true;
    return l;
  }
  const uint32_t* local = d.kernel->local_size;
  for (int i = 0; i < 3; ++i) {
    l.local[i] = local[i];
    l.global[i] = size_t{d.groups[i]} * local[i];
  }
  auto tuned = d.free_local ? tuned_local_.find(d.prepared) : tuned_local_.end();
  if (tuned != tuned_local_.end()) {
    // Cover at least the planned items along x with the tuned group size
    // (the kernel bounds-checks its items).
    l.local[0] = tuned->second;
    l.global[0] = (l.global[0] + l.local[0] - 1) / l.local[0] * l.local[0];
  }
  return l;
}

Status OpenCLBackend::enqueue(const GpuDispatch& d, cl_event* event, cl_command_queue queue) {
  const Launch l = launchOf(d);
  if (l.skip) return Status::Ok();
  if (!queue) queue = queue_;
  if (l.copy)
    return ClCheck(cl().clEnqueueCopyBuffer(queue, l.src, l.dst, l.src_offset, l.dst_offset, l.bytes, 0, nullptr,
                                            event),
                   "clEnqueueCopyBuffer");
  return ClCheck(cl().clEnqueueNDRangeKernel(queue, reinterpret_cast<cl_kernel>(d.prepared), 3, nullptr, l.global,
                                             l.local, 0, nullptr, event),
                 d.kernel->name.c_str());
}

Status OpenCLBackend::recordCommandBuffers(const std::vector<std::vector<Execution*>>& runs) {
  const ClCommandBufferApi& cb = device_->commandBuffers();
  for (const auto& run : runs) {
    if (run.empty()) continue;
    cl_int err = CL_SUCCESS;
    cl_command_buffer_khr buffer = cb.create(1, &queue_, nullptr, &err);
    KILN_RETURN_IF_ERROR(ClCheck(err, "clCreateCommandBufferKHR"));
    command_buffers_.push_back(buffer);
    // Each command waits for the one before: the run's order, whatever the
    // device does with a command buffer's commands.
    cl_sync_point_khr last = 0;
    bool has_last = false;
    for (Execution* e : run)
      for (const GpuDispatch& d : static_cast<GpuExecution*>(e)->dispatches()) {
        const Launch l = launchOf(d);
        if (l.skip) continue;
        cl_sync_point_khr point = 0;
        if (l.copy) {
          err = cb.copy(buffer, nullptr, l.src, l.dst, l.src_offset, l.dst_offset, l.bytes, has_last ? 1 : 0,
                        has_last ? &last : nullptr, &point, nullptr);
        } else {
          err = cb.ndrange(buffer, nullptr, nullptr, reinterpret_cast<cl_kernel>(d.prepared), 3, nullptr, l.global,
                           l.local, has_last ? 1 : 0, has_last ? &last : nullptr, &point, nullptr);
        }
        KILN_RETURN_IF_ERROR(ClCheck(err, "recording a command buffer"));
        last = point;
        has_last = true;
      }
    KILN_RETURN_IF_ERROR(ClCheck(cb.finalize(buffer), "clFinalizeCommandBufferKHR"));
    buffer_of_run_end_[run.back()] = buffer;
  }
  return Status::Ok();
}

Status OpenCLBackend::submitExecution(GpuExecution* exec) {
  if (!op_by_op_ && !command_buffers_.empty()) {
    auto it = buffer_of_run_end_.find(exec);
    if (it == buffer_of_run_end_.end()) return Status::Ok();  // enqueued with its run's last op
    cl_command_queue q = queue_;
    return ClCheck(device_->commandBuffers().enqueue(1, &q, it->second, 0, nullptr, nullptr), "clEnqueueCommandBufferKHR");
  }
  const bool timed = config_.profile && !op_by_op_;
  std::pair<cl_event, cl_event> ev{nullptr, nullptr};
  for (const GpuDispatch& d : exec->dispatches()) {
    cl_event e = nullptr;
    KILN_RETURN_IF_ERROR(enqueue(d, timed ? &e : nullptr));
    if (!e) continue;
    if (!ev.first) {
      ev.first = e;
    } else {
      if (ev.second) cl().clReleaseEvent(ev.second);
      ev.second = e;
    }
  }
  if (timed) {
    auto old = events_.find(exec);
    if (old != events_.end()) {
      if (old->second.first) cl().clReleaseEvent(old->second.first);
      if (old->second.second) cl().clReleaseEvent(old->second.second);
    }
    events_[exec] = ev;
  }
  if (op_by_op_) return ClCheck(cl().clFinish(queue_), "clFinish");
  return Status::Ok();
}

Status OpenCLBackend::onWaitFinish() {
  KILN_RETURN_IF_ERROR(ClCheck(cl().clFinish(queue_), "waiting for OpenCL"));
  if (!config_.profile) return Status::Ok();
  timings_.clear();
  for (auto& [e, ev] : events_) {
    if (!ev.first) continue;
    cl_ulong start = 0, end = 0;
    if (cl().clGetEventProfilingInfo(ev.first, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr) != CL_SUCCESS ||
        cl().clGetEventProfilingInfo(ev.second ? ev.second : ev.first, CL_PROFILING_COMMAND_END, sizeof(end), &end,
                                     nullptr) != CL_SUCCESS)
      continue;
    timings_[e] = static_cast<double>(end - start) * 1e-6;
  }
  return Status::Ok();
}

bool OpenCLBackend::opTime(const Execution* e, double* ms) const {
  auto it = timings_.find(e);
  if (it == timings_.end()) return false;
  *ms = it->second;
  return true;
}

}  // namespace kiln
