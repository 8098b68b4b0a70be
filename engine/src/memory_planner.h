// MemoryPlanner: turns buffer lifetimes into offsets in one pool.
//
// A backend feeds it acquire/release calls in execution order (each call is
// one step of time); plan() then places every buffer so that no two buffers
// live at the same time overlap, greedy by size: largest first, each at the
// lowest offset that fits between the already-placed buffers whose lifetimes
// intersect its own (the strategy of TFLite GPU's "greedy by size").
// Reports the pool size and the lower bound no plan can beat (the largest
// sum of bytes live at one step).
//
// Thread-safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {

class MemoryPlanner {
 public:
  explicit MemoryPlanner(size_t alignment = 64) : alignment_(alignment) {}

  void clear();
  // Starts a buffer of `bytes`; returns its id.
  int acquire(size_t bytes);
  // Another user of buffer `id` (in-place reuse): it is freed only when every
  // user has released it.
  void share(int id);
  void release(int id);
  // Every buffer's own block, no reuse (debug: all intermediates stay readable).
  void setNoReuse(bool no_reuse) { no_reuse_ = no_reuse; }

  struct Plan {
    std::vector<size_t> offsets;  // by id
    size_t total = 0;
    size_t lower_bound = 0;
    size_t sum_of_buffers = 0;
  };
  Plan plan() const;

  struct Buffer {
    size_t bytes;
    int64_t begin, end;  // [begin, end] steps; end = INT64_MAX while live
    int users;
  };
  const std::vector<Buffer>& buffers() const { return buffers_; }

 private:
  size_t alignment_;
  bool no_reuse_ = false;
  int64_t step_ = 0;
  std::vector<Buffer> buffers_;
};

}  // namespace kiln
