// OpenCLBackend::measurePeaks: the device's roof for kiln-kernelbench, from
// shaders/opencl/peak.cl (register-only FMA chains; a float4 copy), each
// enqueue timed by the wall clock around clFinish and scaled until it runs
// for 20 ms, so that the enqueue cost does not matter.
#include <algorithm>
#include <chrono>

#include "cl_backend.h"

namespace kiln {

StatusOr<DevicePeaks> OpenCLBackend::measurePeaks() {
  constexpr uint32_t kLocal = 64, kItems = 1u << 20, kCopyBytes = 64u << 20;
  const uint32_t local[3] = {kLocal, 1, 1};
  struct {
    uint32_t n, iters;
    float x, y;
  } push{kItems, 16, 0.999999f, 1e-7f};
  ASSIGN_OR_RETURN(GpuBuffer a, createBuffer(kCopyBytes));
  auto b = createBuffer(kCopyBytes);
  if (!b.ok()) {
    freeBuffer(&a);
    return b.status();
  }
  cl_kernel k = nullptr;
  DevicePeaks peaks;
  // One enqueue of peak.cl in `mode` over `items` work items, waited for.
  auto time = [&](uint32_t mode, uint32_t items, double* seconds) -> Status {
    ASSIGN_OR_RETURN(const GpuKernel* gk, kernel("peak", 2, local, {mode}));
    cl_int err = CL_SUCCESS;
    if (k) cl().clReleaseKernel(k);
    k = cl().clCreateKernel(static_cast<const ClKernel*>(gk)->program, "peak", &err);
    RETURN_IF_ERROR(ClCheck(err, "clCreateKernel peak"));
    cl_mem ma = reinterpret_cast<cl_mem>(a.handle), mb = reinterpret_cast<cl_mem>(b->handle);
    RETURN_IF_ERROR(ClCheck(cl().clSetKernelArg(k, 0, sizeof(cl_mem), &ma), "peak"));
    RETURN_IF_ERROR(ClCheck(cl().clSetKernelArg(k, 1, sizeof(cl_mem), &mb), "peak"));
    RETURN_IF_ERROR(ClCheck(cl().clSetKernelArg(k, 2, sizeof(push), &push), "peak"));
    const size_t global = (items + kLocal - 1) / kLocal * kLocal, lsize = kLocal;
    auto t0 = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(ClCheck(cl().clEnqueueNDRangeKernel(queue_, k, 1, nullptr, &global, &lsize, 0, nullptr, nullptr),
                            "peak"));
    RETURN_IF_ERROR(ClCheck(cl().clFinish(queue_), "peak"));
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return Status::Ok();
  };
  Status st = [&]() -> Status {
    double s = 0;
    RETURN_IF_ERROR(time(0, kItems, &s));  // warm-up: the first enqueue compiles
    for (;;) {
      RETURN_IF_ERROR(time(0, kItems, &s));
      if (s >= 0.02 || push.iters >= (1u << 24)) break;
      push.iters *= s > 0 ? std::min<uint32_t>(16, static_cast<uint32_t>(0.03 / s) + 1) : 16;
    }
    double best = s;
    for (int rep = 0; rep < 2; ++rep) {
      RETURN_IF_ERROR(time(0, kItems, &s));
      best = std::min(best, s);
    }
    peaks.gflops = 64.0 * push.iters * push.n / best / 1e9;
    push.n = kCopyBytes / 16;
    best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      RETURN_IF_ERROR(time(1, push.n, &s));
      best = std::min(best, s);
    }
    peaks.gbps = 2.0 * kCopyBytes / best / 1e9;
    return Status::Ok();
  }();
  if (k) cl().clReleaseKernel(k);
  freeBuffer(&a);
  freeBuffer(&*b);
  RETURN_IF_ERROR(st);
  peaks.how = "float4 FMA chains (peak.cl), 1M work items; float4 copy of 64 MiB (read + write)";
  return peaks;
}

}  // namespace kiln
