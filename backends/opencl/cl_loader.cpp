#include "cl_loader.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace kiln {

StatusOr<const ClApi*> LoadOpenCL() {
  static ClApi api;
  static Status status = Unavailable("not loaded");
  static std::once_flag once;
  std::call_once(once, [] {
    // Desktop ICD loaders first, then the places Android vendors put theirs.
    static const char* const kLibraries[] = {
        "libOpenCL.so.1",
        "libOpenCL.so",
        "/system/vendor/lib64/libOpenCL.so",
        "/vendor/lib64/libOpenCL.so",
        "/system/lib64/libOpenCL.so",
        "/vendor/lib64/egl/libGLES_mali.so",
        "/system/vendor/lib64/egl/libGLES_mali.so",
        "/vendor/lib64/libPVROCL.so",
    };
    void* lib = nullptr;
    std::string tried;
    for (const char* name : kLibraries) {
      lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
      tried += (tried.empty() ? "" : ", ") + std::string(name);
    }
    if (!lib) {
      status = Unavailable("no OpenCL library (tried %s)", tried.c_str());
      return;
    }
#define KILN_CL_LOAD(name)                                                               \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name));                    \
  if (!api.name) {                                                                       \
    status = Unavailable("the OpenCL library has no %s (OpenCL 1.2 is required)", #name); \
    return;                                                                              \
  }
    KILN_CL_FUNCTIONS(KILN_CL_LOAD)
#undef KILN_CL_LOAD
    status = Status::Ok();
  });
  if (!status.ok()) return status;
  return &api;
}

const char* ClErrorName(cl_int err) {
  switch (err) {
#define KILN_CL_ERR(e) \
  case e: return #e;
    KILN_CL_ERR(CL_SUCCESS)
    KILN_CL_ERR(CL_DEVICE_NOT_FOUND)
    KILN_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    KILN_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    KILN_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    KILN_CL_ERR(CL_OUT_OF_RESOURCES)
    KILN_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    KILN_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    KILN_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    KILN_CL_ERR(CL_INVALID_VALUE)
    KILN_CL_ERR(CL_INVALID_DEVICE)
    KILN_CL_ERR(CL_INVALID_BINARY)
    KILN_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    KILN_CL_ERR(CL_INVALID_PROGRAM)
    KILN_CL_ERR(CL_INVALID_KERNEL_NAME)
    KILN_CL_ERR(CL_INVALID_KERNEL)
    KILN_CL_ERR(CL_INVALID_ARG_INDEX)
    KILN_CL_ERR(CL_INVALID_ARG_VALUE)
    KILN_CL_ERR(CL_INVALID_ARG_SIZE)
    KILN_CL_ERR(CL_INVALID_KERNEL_ARGS)
    KILN_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    KILN_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    KILN_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
    KILN_CL_ERR(CL_INVALID_BUFFER_SIZE)
    KILN_CL_ERR(CL_INVALID_MEM_OBJECT)
    KILN_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    KILN_CL_ERR(CL_INVALID_CONTEXT)
    KILN_CL_ERR(CL_INVALID_EVENT)
    KILN_CL_ERR(CL_INVALID_OPERATION)
    KILN_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE)
#undef KILN_CL_ERR
    default: return "CL_ERROR";
  }
}

Status ClCheck(cl_int err, const char* what) {
  if (err == CL_SUCCESS) return Status::Ok();
  if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY)
    return OutOfMemory("%s: %s (%d)", what, ClErrorName(err), err);
  return Internal("%s: %s (%d)", what, ClErrorName(err), err);
}

}  // namespace kiln
