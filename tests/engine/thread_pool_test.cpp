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

// The caller's own chunk is short and a worker's outlasts the caller's spin,
// so the caller sleeps and the worker's last chunk must wake it (a lost
// wake-up hangs here), and back to back with short jobs, where the worker
// finishing a job must not hold the lock the caller's next job takes.
TEST(ThreadPool, CallerSleepsUntilTheLastChunkEnds) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    const auto caller = std::this_thread::get_id();
    int slept_elsewhere = 0;
    for (int round = 0; round < 60; ++round) {
      std::atomic<int> done{0}, long_elsewhere{0};
      pool.parallelFor(threads, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          // Item 0 (the caller's first claim) long enough for a spinning
          // worker to claim the next.
          if (i == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
          if (i != 0 && std::this_thread::get_id() != caller) {
            std::this_thread::sleep_for(std::chrono::microseconds(600));  // past the caller's 200 us spin
            long_elsewhere.fetch_add(1);
          }
          done.fetch_add(1);
        }
      });
      ASSERT_EQ(done.load(), threads) << round;
      slept_elsewhere += long_elsewhere.load() > 0;
      for (int quick = 0; quick < 50; ++quick) {
        std::atomic<int> hits{0};
        pool.parallelFor(2 * threads, [&](int64_t b, int64_t e) { hits.fetch_add(static_cast<int>(e - b)); });
        ASSERT_EQ(hits.load(), 2 * threads);
      }
    }
    EXPECT_GT(slept_elsewhere, 0) << "no worker ever took a long chunk: the caller never had to sleep";
  }
}

TEST(ThreadPool, GrainKeepsSmallRangesOnTheCaller) {
  ThreadPool pool(4);
  const auto caller = std::this_thread::get_id();
  bool elsewhere = false;
  pool.parallelFor(10, [&](int64_t, int64_t) { elsewhere = elsewhere || std::this_thread::get_id() != caller; }, 100);
  EXPECT_FALSE(elsewhere);
}

// setActive(1) runs every parallelFor as one chunk on the caller (the
// session's one-thread form); threads() stays the pool's size; the count is
// clamped to 1 .. threads(), and all threads split again after.
TEST(ThreadPool, ActiveThreadsLimitTheChunks) {
  ThreadPool pool(3);
  const auto caller = std::this_thread::get_id();
  pool.setActive(1);
  EXPECT_EQ(pool.threads(), 3);
  EXPECT_EQ(pool.active(), 1);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  bool elsewhere = false;
  pool.parallelFor(90, [&](int64_t b, int64_t e) {
    chunks.emplace_back(b, e);
    elsewhere = elsewhere || std::this_thread::get_id() != caller;
  });
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0], std::make_pair(int64_t{0}, int64_t{90}));
  EXPECT_FALSE(elsewhere);
  pool.setActive(0);
  EXPECT_EQ(pool.active(), 1);
  pool.setActive(7);
  EXPECT_EQ(pool.active(), 3);
  std::atomic<int> calls{0};
  pool.parallelFor(90, [&](int64_t, int64_t) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 3);
}

}  // namespace
}  // namespace kiln
