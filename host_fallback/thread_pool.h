// ThreadPool: a fixed set of workers created once per session (numThread - 1
// workers; the calling thread is the last one). parallelFor splits a range
// into one contiguous chunk per thread, so there is no oversubscription and
// no per-item scheduling cost.
//
// A model runs hundreds of parallelFor calls of tens of microseconds each;
// waking a sleeping worker (a futex round trip) costs about as much. So a
// worker spins for a short while (kSpinMicros) for the next job before it
// sleeps, and the caller spins for the workers' chunks before it sleeps:
// between the ops of one run nobody sleeps, between runs everybody does.
//
// Chunks are claimed, not assigned: the caller and each worker take the next
// unclaimed chunk until none is left, and the caller waits only for chunks
// already started. A worker that has not woken yet (asleep, or its core
// taken by another process) costs nothing: the caller runs its chunk.
// Assigned chunks made every op wait for the slowest thread to be scheduled;
// on a 2-core machine shared with a compiler, 2 threads ran the transformer
// encoder 4x slower than 1.
//
// Thread-safety: parallelFor must not be called concurrently or recursively.
#pragma once

#include <atomic>
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

  // The pool's size: what plans made at resize size their work by.
  int threads() const { return threads_; }
  // The threads parallelFor splits over from now on, 1 .. threads(): a
  // session's per-op choice (SessionImpl::run's adaptive threading). Only
  // the chunk count changes: kernels whose bits depend on their chunks'
  // bounds must not split a reduction by them.
  void setActive(int n) { active_ = std::min(std::max(n, 1), threads_); }
  int active() const { return active_; }
  // Runs fn(begin, end) over [0, n) in at most active() chunks; items of
  // fewer than `grain` per chunk stay on the calling thread.
  void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

 private:
  void worker();
  // Claims and runs chunks of job `gen` until none is left.
  void runChunks(uint64_t gen, const std::function<void(int64_t, int64_t)>& fn, int64_t n, int chunks);

  int threads_;
  int active_ = 1;  // set only by the calling thread, between parallelFor calls
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int job_chunks_ = 0;
  std::atomic<uint64_t> generation_{0};  // written under mu_; read by spinners
  std::atomic<bool> caller_waiting_{false};  // the caller sleeps on done_cv_ (set under mu_)
  // (generation << 16) | the next chunk to claim: a claim succeeds only for
  // the job it was read for, so a worker that wakes late for a finished job
  // runs nothing (its function may be gone).
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> remaining_{0};  // chunks of the current job not finished
  bool stop_ = false;
};

}  // namespace kiln
