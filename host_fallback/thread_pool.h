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
// A spinning worker takes a job without any lock (JobSlot), and the caller
// takes the lock to publish one only when a worker sleeps.
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
  // session's choice for a run's steps (SessionImpl::run's adaptive
  // threading). Only the chunk count changes: kernels whose bits depend on
  // their chunks' bounds must not split a reduction by them.
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
  // Sleeping and waking only (start_cv_: workers, done_cv_: the caller).
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  // A job's description, written by the caller before it publishes the
  // job's generation: two slots used in turn, each stamped with the
  // generation it holds (0 while written), so that a worker reads a job
  // without the lock (a seqlock: a read between two equal stamps of its
  // generation is that job's), and one that read a stale generation runs
  // nothing. The worker's lock/unlock of mu_ to read the job moved the
  // mutex's line between the cores on every parallelFor.
  struct alignas(64) JobSlot {
    std::atomic<uint64_t> stamp{0};
    std::atomic<const std::function<void(int64_t, int64_t)>*> fn{nullptr};
    std::atomic<int64_t> n{0};
    std::atomic<int> chunks{0};
  };
  JobSlot slots_[2];
  alignas(64) std::atomic<uint64_t> generation_{0};  // the latest job; written by the caller only
  std::atomic<int> sleepers_{0};                      // workers about to wait, or waiting, on start_cv_
  std::atomic<bool> stop_{false};
  std::atomic<bool> caller_waiting_{false};  // the caller sleeps on done_cv_ (set under mu_)
  // (generation << 16) | the next chunk to claim: a claim succeeds only for
  // the job it was read for, so a worker that wakes late for a finished job
  // runs nothing (its function may be gone).
  alignas(64) std::atomic<uint64_t> claim_{0};
  std::atomic<int> remaining_{0};  // chunks of the current job not finished
};

}  // namespace kiln
