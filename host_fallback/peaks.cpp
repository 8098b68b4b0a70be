// HostBackend::measurePeaks: the CPU's roof for kiln-kernelbench. FMA
// throughput from the GEMM ISA's register-only probe (gemm.h) run on every
// pool thread at once; bandwidth from memcpy of buffers far larger than any
// cache, split over the same threads.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "gemm.h"
#include "host_backend.h"

namespace kiln {

StatusOr<DevicePeaks> HostBackend::measurePeaks() {
  using Clock = std::chrono::steady_clock;
  const int n = pool_.threads();
  const Isa isa = GemmBestIsa();
  std::vector<double> gflops(static_cast<size_t>(n));
  pool_.parallelFor(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) gflops[static_cast<size_t>(i)] = MeasureFmaGflops(isa, 0.25);
  });
  DevicePeaks p;
  for (double g : gflops) {
    p.gflops += g;
    p.core_gflops = std::max(p.core_gflops, g);
  }

  constexpr size_t kBytes = size_t{128} << 20;
  std::vector<uint8_t> src(kBytes, 1), dst(kBytes, 0);  // touched: no page faults in the timing
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    pool_.parallelFor(n, [&](int64_t b, int64_t e) {
      const size_t lo = kBytes * static_cast<size_t>(b) / static_cast<size_t>(n);
      const size_t hi = kBytes * static_cast<size_t>(e) / static_cast<size_t>(n);
      std::memcpy(dst.data() + lo, src.data() + lo, hi - lo);
    });
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  p.gbps = 2.0 * kBytes / best / 1e9;
  p.how = StrFormat("%s FMA probe on %d thread%s; memcpy of 128 MiB (read + write)", GemmIsaName(isa), n,
                    n == 1 ? "" : "s");
  return p;
}

}  // namespace kiln
