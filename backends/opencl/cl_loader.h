// OpenCL entry points loaded at run time (dlopen), so that an app on a
// machine without an OpenCL driver still starts and falls back to another
// backend. The table is the subset of OpenCL 1.2 that Kiln calls; the
// headers are Khronos's (Debian opencl-headers), the library whatever ICD
// loader or vendor driver the device ships: libOpenCL.so.1 / libOpenCL.so on
// desktop Linux, the vendor paths on Android (Adreno, Mali, PowerVR).
//
// Thread-safety: Load() may be called from any thread; the table is
// immutable once loaded.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include "kiln/status.h"

namespace kiln {

#define KILN_CL_FUNCTIONS(X)    \
  X(clGetPlatformIDs)           \
  X(clGetPlatformInfo)          \
  X(clGetDeviceIDs)             \
  X(clGetDeviceInfo)            \
  X(clCreateContext)            \
  X(clReleaseContext)           \
  X(clCreateCommandQueue)       \
  X(clReleaseCommandQueue)      \
  X(clCreateBuffer)             \
  X(clReleaseMemObject)         \
  X(clCreateProgramWithSource)  \
  X(clCreateProgramWithBinary)  \
  X(clBuildProgram)             \
  X(clGetProgramBuildInfo)      \
  X(clGetProgramInfo)           \
  X(clRetainProgram)            \
  X(clReleaseProgram)           \
  X(clCreateKernel)             \
  X(clReleaseKernel)            \
  X(clSetKernelArg)             \
  X(clEnqueueNDRangeKernel)     \
  X(clEnqueueReadBuffer)        \
  X(clEnqueueWriteBuffer)       \
  X(clEnqueueCopyBuffer)        \
  X(clEnqueueFillBuffer)        \
  X(clEnqueueMapBuffer)         \
  X(clEnqueueUnmapMemObject)    \
  X(clFinish)                   \
  X(clWaitForEvents)            \
  X(clGetEventProfilingInfo)    \
  X(clReleaseEvent)              \
  X(clGetExtensionFunctionAddressForPlatform)

struct ClApi {
#define KILN_CL_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_CL_FUNCTIONS(KILN_CL_MEMBER)
#undef KILN_CL_MEMBER
};

// cl_khr_command_buffer (provisional, 0.9): resolved per platform; all null
// when the device lacks the extension.
struct ClCommandBufferApi {
  clCreateCommandBufferKHR_fn create = nullptr;
  clFinalizeCommandBufferKHR_fn finalize = nullptr;
  clReleaseCommandBufferKHR_fn release = nullptr;
  clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  clCommandNDRangeKernelKHR_fn ndrange = nullptr;
  clCommandCopyBufferKHR_fn copy = nullptr;
  bool ok() const { return create && finalize && release && enqueue && ndrange && copy; }
};

// The loaded table, or Unavailable naming the libraries tried.
StatusOr<const ClApi*> LoadOpenCL();

// "CL_OUT_OF_RESOURCES" for an error code.
const char* ClErrorName(cl_int err);
// Unavailable/Internal status for a failed call, or Ok.
Status ClCheck(cl_int err, const char* what);

}  // namespace kiln
