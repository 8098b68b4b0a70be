// ScratchBuffer: a grow-only, 64-byte aligned float buffer that a kernel
// keeps per thread (thread_local) for its packed panels, unfolded inputs or
// transformed tiles. Grown at resize where the size is known then, so a run
// allocates nothing; never shrinks. get() returns null when the allocation
// fails (the kernel reports kOutOfMemory or works without it).
#pragma once

#include <cstddef>
#include <cstdlib>

namespace kiln {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(p_); }

  float* get(size_t floats) {
    if (floats > n_) {
      std::free(p_);
      p_ = static_cast<float*>(std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64));
      n_ = p_ ? floats : 0;
    }
    return p_;
  }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace kiln
