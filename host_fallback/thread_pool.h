// ThreadPool: a fixed set of workers created once per session (numThread - 1
// workers; the calling thread is the last one). parallelFor splits a range
// into one contiguous chunk per thread, so there is no oversubscription and
// no per-item scheduling cost.
//
// Thread-safety: parallelFor must not be called concurrently or recursively.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  // Runs fn(begin, end) over [0, n) in at most threads() chunks; items of
  // fewer than `grain` per chunk stay on the calling thread.
  void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

 private:
  void worker(int index);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_chunks_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace kiln
