// OpenCLBackend::measurePeaks: the device's roof for kiln-kernelbench, from
// shaders/opencl/peak.cl (register-only FMA chains; a float4 copy), each
// enqueue timed by the wall clock around clFinish and scaled until it runs
// for 20 ms, so that the enqueue cost does not matter.
#include <chrono>

#include "cl_backend.h"

namespace kiln {

StatusOr<DevicePeaks> OpenCLBackend::measurePeaks() {
  constexpr uint32_t kLocal = 64, kItems = 1u << 20, kCopyBytes = 64u << 20;
  const uint32_t local[3] = {kLocal, 1, 1};
  KILN_ASSIGN_OR_RETURN(GpuBuffer a, createBuffer(kCopyBytes));
  auto b = createBuffer(kCopyBytes);
  if (!b.ok()) {
    freeBuffer(&a);
    return b.status();
  }
  cl_kernel k = nullptr;
  // One enqueue of peak.cl in `mode` over push.n work items, waited for.
  auto run = [&](uint32_t mode, const PeakPush& push, double* seconds) -> Status {
    KILN_ASSIGN_OR_RETURN(const GpuKernel* gk, kernel("peak", 2, local, {mode}));
    cl_int err = CL_SUCCESS;
    if (k) cl().clReleaseKernel(k);
    k = cl().clCreateKernel(static_cast<const ClKernel*>(gk)->program, "peak", &err);
    KILN_RETURN_IF_ERROR(ClCheck(err, "clCreateKernel peak"));
    const auto* bytes = reinterpret_cast<const uint8_t*>(&push);
    const std::vector<ClArg> buffers = {{reinterpret_cast<cl_mem>(a.handle), 0},
                                        {reinterpret_cast<cl_mem>(b->handle), 0}};
    KILN_RETURN_IF_ERROR(SetKernelArgs(cl(), k, buffers, std::vector<uint8_t>(bytes, bytes + sizeof(push))), "peak");
    const size_t global = (size_t{push.n} + kLocal - 1) / kLocal * kLocal, lsize = kLocal;
    auto t0 = std::chrono::steady_clock::now();
    KILN_RETURN_IF_ERROR(ClCheck(cl().clEnqueueNDRangeKernel(queue_, k, 1, nullptr, &global, &lsize, 0, nullptr, nullptr),
                            "peak"));
    KILN_RETURN_IF_ERROR(ClCheck(cl().clFinish(queue_), "peak"));
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return Status::Ok();
  };
  auto peaks = MeasurePeakSchedule(kItems, kCopyBytes, run);
  if (k) cl().clReleaseKernel(k);
  freeBuffer(&a);
  freeBuffer(&*b);
  if (!peaks.ok()) return peaks.status();
  peaks->how = "float4 FMA chains (peak.cl), 1M work items; float4 copy of 64 MiB (read + write)";
  return peaks;
}

}  // namespace kiln
