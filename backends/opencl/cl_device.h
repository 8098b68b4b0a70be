// ClDevice: one OpenCL platform device and a context on it, shared by every
// session of the process that asks for the same device index (each backend
// makes its own in-order command queue on it), kept for the process's life
// with the programs its sessions built: a later session reuses a program of
// the same source and options instead of compiling it again (a PoCL build
// runs Clang, most of a small session's creation).
//
// Device choice: an explicit index into the devices of all platforms, in
// platform order; else the fastest kind (GPU, accelerator, then CPU drivers
// such as PoCL). No OpenCL library or no device: Get() returns Unavailable
// and the scheduler falls back.
//
// Thread-safety: immutable after Get(), but for the program list (its own
// mutex).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "cl_loader.h"
#include "gpu_backend.h"

namespace kiln {

struct ClCaps : GpuCaps {
  std::string name, vendor, driver_version, device_version, platform;
  cl_device_type type = 0;
  bool fp16_math = false;  // cl_khr_fp16
  bool images = false;
  bool command_buffer = false;  // cl_khr_command_buffer, with its entry points resolved
  // CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT: programs are built with
  // -cl-fp32-correctly-rounded-divide-sqrt (float division as the host's).
  bool exact_divide = false;
  uint32_t compute_units = 0;
  uint64_t local_memory = 0;
  uint32_t base_address_align = 0;  // bytes: tensor offsets in a buffer are multiples of it
  std::string toString() const;
};

class ClDevice {
 public:
  static StatusOr<std::shared_ptr<ClDevice>> Get(int index);
  ~ClDevice();
  ClDevice(const ClDevice&) = delete;
  ClDevice& operator=(const ClDevice&) = delete;

  const ClApi& api() const { return *api_; }
  const ClCaps& caps() const { return caps_; }
  cl_device_id device() const { return device_; }
  cl_context context() const { return context_; }
  const ClCommandBufferApi& commandBuffers() const { return command_buffers_; }

  // The process's built programs, by a key naming the source, the options,
  // the device and the driver. findProgram returns one retained for the
  // caller (null if none); keepProgram retains what it keeps. Off with
  // KILN_OPENCL_SHARE_PROGRAMS=0 (read at each call): every backend builds
  // its own, as a fresh process would (kiln-bench's cache-file timings).
  cl_program findProgram(const std::string& key) const;
  void keepProgram(const std::string& key, cl_program program);

 private:
  ClDevice() = default;
  const ClApi* api_ = nullptr;
  ClCaps caps_;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  ClCommandBufferApi command_buffers_;
  mutable std::mutex programs_mutex_;
  std::map<std::string, cl_program> programs_;
};

}  // namespace kiln
