// Host: the session pool's allocation fails (injected, see fault_injection.h).
#include "support/fault_checks.h"

namespace kiln::test {
namespace {

TEST(HostFaults, PoolAllocationFailure) {
  CheckAllocationFailures(ForwardType::kHost, fault::Site::kHostAlloc, "host pool of", 4);
}

}  // namespace
}  // namespace kiln::test
