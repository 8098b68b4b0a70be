// The host's strided copy, shared by its layout kernels (layout_*.cpp,
// reduce.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {

class ThreadPool;

// dst (contiguous, `shape`) [i] = src[offset + sum_d idx_d * strides[d]], for
// elements of `esize` bytes; strides and offset count elements and may be
// negative or 0 (broadcast). Defined in layout_copy.cpp.
void StridedCopy(ThreadPool& pool, const uint8_t* src, uint8_t* dst, size_t esize, std::vector<int64_t> shape,
                 std::vector<int64_t> strides, int64_t offset);

}  // namespace kiln
