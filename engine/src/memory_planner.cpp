#include "memory_planner.h"

#include <algorithm>
#include <numeric>

namespace kiln {

void MemoryPlanner::clear() {
  buffers_.clear();
  step_ = 0;
}

int MemoryPlanner::acquire(size_t bytes) {
  size_t aligned = (bytes + alignment_ - 1) / alignment_ * alignment_;
  buffers_.push_back({aligned, step_++, INT64_MAX, 1});
  return static_cast<int>(buffers_.size()) - 1;
}

void MemoryPlanner::share(int id) {
  ++buffers_[static_cast<size_t>(id)].users;
  ++step_;
}

void MemoryPlanner::release(int id) {
  Buffer& b = buffers_[static_cast<size_t>(id)];
  if (b.users > 0 && --b.users == 0) b.end = step_;
  ++step_;
}

MemoryPlanner::Plan MemoryPlanner::plan() const {
  Plan p;
  size_t n = buffers_.size();
  p.offsets.assign(n, 0);
  for (const Buffer& b : buffers_) p.sum_of_buffers += b.bytes;

  // Lower bound: the most bytes live at one step (events sorted by step).
  std::vector<std::pair<int64_t, int64_t>> events;  // (step, +bytes at begin / -bytes after end)
  for (const Buffer& b : buffers_) {
    events.push_back({b.begin, static_cast<int64_t>(b.bytes)});
    if (b.end != INT64_MAX) events.push_back({b.end + 1, -static_cast<int64_t>(b.bytes)});
  }
  std::sort(events.begin(), events.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;  // frees first
  });
  int64_t live = 0, peak = 0;
  for (auto& e : events) peak = std::max(peak, live += e.second);
  p.lower_bound = static_cast<size_t>(peak);

  if (no_reuse_) {
    size_t off = 0;
    for (size_t i = 0; i < n; ++i) {
      p.offsets[i] = off;
      off += buffers_[i].bytes;
    }
    p.total = off;
    return p;
  }

  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers_[a].bytes > buffers_[b].bytes; });
  std::vector<size_t> placed;
  for (size_t id : order) {
    const Buffer& b = buffers_[id];
    // The placed buffers alive at the same time, by offset.
    std::vector<size_t> overlapping;
    for (size_t q : placed) {
      const Buffer& o = buffers_[q];
      if (o.begin <= b.end && b.begin <= o.end) overlapping.push_back(q);
    }
    std::sort(overlapping.begin(), overlapping.end(), [&](size_t x, size_t y) { return p.offsets[x] < p.offsets[y]; });
    // Best fit: the smallest gap that holds the buffer, else after the last.
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (size_t q : overlapping) {
      if (p.offsets[q] >= cursor + b.bytes && p.offsets[q] - cursor < best_gap) {
        best = cursor;
        best_gap = p.offsets[q] - cursor;
      }
      cursor = std::max(cursor, p.offsets[q] + buffers_[q].bytes);
    }
    p.offsets[id] = best != SIZE_MAX ? best : cursor;
    p.total = std::max(p.total, p.offsets[id] + b.bytes);
    placed.push_back(id);
  }
  return p;
}

}  // namespace kiln
