// Vulkan: out of device memory at every allocation a session makes, and a
// device lost during a run (injected, see fault_injection.h).
#include "support/fault_checks.h"

namespace kiln::test {
namespace {

TEST(VulkanFaults, OutOfDeviceMemory) {
  CheckAllocationFailures(ForwardType::kVulkan, fault::Site::kDeviceAlloc, "VK_ERROR_OUT_OF_DEVICE_MEMORY", 16);
}

TEST(VulkanFaults, DeviceLostDuringARun) { CheckDeviceLostAtRun(ForwardType::kVulkan); }

}  // namespace
}  // namespace kiln::test
