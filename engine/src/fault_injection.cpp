#include "fault_injection.h"

#include <atomic>

namespace kiln::fault {
namespace {

// Per site: -1 disarmed, else the number of hits to let pass first.
std::atomic<int> g_countdown[static_cast<int>(Site::kCount)] = {{-1}, {-1}, {-1}};

}  // namespace

void Arm(Site site, int skip) { g_countdown[static_cast<int>(site)].store(skip < 0 ? 0 : skip); }

void Reset() {
  for (auto& c : g_countdown) c.store(-1);
}

bool Hit(Site site) {
  std::atomic<int>& c = g_countdown[static_cast<int>(site)];
  int v = c.load(std::memory_order_relaxed);
  while (v >= 0) {
    const int next = v == 0 ? -1 : v - 1;
    if (c.compare_exchange_weak(v, next)) return v == 0;
  }
  return false;
}

bool Pending(Site site) { return g_countdown[static_cast<int>(site)].load() >= 0; }

}  // namespace kiln::fault
