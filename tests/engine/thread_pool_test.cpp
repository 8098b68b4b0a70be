// ThreadPool: every item of every parallelFor runs exactly once, back to
// back (the workers' spin phase) and after pauses long enough that they
// sleep, with more threads than chunks and more chunks than cores.
#include "thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kiln {
namespace {

TEST(ThreadPool, EveryItemOnceBackToBackAndAfterSleeping) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 2000; ++round) {
      const int64_t n = 1 + round % 37;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallelFor(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " " << round;
      // Now and then, long enough for the workers to stop spinning and sleep.
      if (round % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

TEST(ThreadPool, GrainKeepsSmallRangesOnTheCaller) {
  ThreadPool pool(4);
  const auto caller = std::this_thread::get_id();
  bool elsewhere = false;
  pool.parallelFor(10, [&](int64_t, int64_t) { elsewhere = elsewhere || std::this_thread::get_id() != caller; }, 100);
  EXPECT_FALSE(elsewhere);
}

}  // namespace
}  // namespace kiln
