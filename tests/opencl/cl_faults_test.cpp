// OpenCL: CL_MEM_OBJECT_ALLOCATION_FAILURE at every buffer a session makes
// (injected, see fault_injection.h).
#include "support/fault_checks.h"

namespace kiln::test {
namespace {

TEST(OpenCLFaults, AllocationFailure) {
  CheckAllocationFailures(ForwardType::kOpenCL, fault::Site::kDeviceAlloc, "CL_MEM_OBJECT_ALLOCATION_FAILURE", 16);
}

}  // namespace
}  // namespace kiln::test
