// The creators of the GPU backends a build leaves out (backend.h): each
// returns Unavailable saying why, so that a session placed on that backend
// falls back to its backup with the reason in the placement.
#include "backend.h"

namespace kiln {

#ifndef KILN_HAVE_VULKAN
StatusOr<std::unique_ptr<Backend>> CreateVulkanBackend(const ScheduleConfig&) {
  return Unavailable("this build of Kiln has no Vulkan backend (built without glslangValidator/Vulkan headers)");
}
#endif

#ifndef KILN_HAVE_OPENCL
StatusOr<std::unique_ptr<Backend>> CreateOpenCLBackend(const ScheduleConfig&) {
  return Unavailable("this build of Kiln has no OpenCL backend (built without CL/cl.h or clang)");
}
#endif

}  // namespace kiln
