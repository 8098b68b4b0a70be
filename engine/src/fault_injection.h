// Fault injection for tests: makes the next allocation or device wait at a
// site fail as the driver or the C library would, so that tests can check
// every such failure reaches the app as a Status (and the session stays
// releasable) instead of a crash. Sites:
//   kHostAlloc    the host backend's pool (aligned_alloc returns null);
//   kDeviceAlloc  Vulkan vkAllocateMemory (VK_ERROR_OUT_OF_DEVICE_MEMORY) and
//                 OpenCL clCreateBuffer (CL_MEM_OBJECT_ALLOCATION_FAILURE);
//   kDeviceLost   Vulkan queue submission and the wait for a run
//                 (VK_ERROR_DEVICE_LOST).
// Off by default: Hit() is one relaxed atomic load when nothing is armed.
//
// Thread-safety: Arm/Reset/Hit may be called from any thread.
#pragma once

namespace kiln::fault {

enum class Site : int { kHostAlloc = 0, kDeviceAlloc, kDeviceLost, kCount };

// The (skip + 1)-th Hit(site) from now returns true, once.
void Arm(Site site, int skip = 0);
// Disarms every site.
void Reset();
// Called at the site: true means fail this call.
bool Hit(Site site);
// Whether an armed failure at `site` has not fired yet.
bool Pending(Site site);

}  // namespace kiln::fault
