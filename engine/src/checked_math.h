// Checked size arithmetic: the one place element counts, byte sizes and dims
// computed from untrusted numbers (model files, importers' inputs, values
// computed at resize) are multiplied and added. The verifier, the shape
// functions, the importers, the planner and the backends all use it, so that
// a hostile dim can give an error, never a wrapped size.
//
// Two styles:
//   * Checked*: return false (or a Status) on a negative operand or overflow.
//   * Sat*: saturate at kDimOverflow, for shape functions that compute a dim
//     and let the session's limit check (SessionImpl::checkOutputShapes)
//     refuse it with the op's name and the shape.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace kiln {

// A dim or count that overflowed: larger than any limit, so it is refused by
// the checks downstream (and printed as such in shapes).
constexpr int64_t kDimOverflow = std::numeric_limits<int64_t>::max();

// a * b, a + b for non-negative dims, saturating at kDimOverflow. A negative
// operand saturates too (no dim computed from one is valid).
inline int64_t SatMul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return kDimOverflow;
  return r;
}
inline int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return kDimOverflow;
  return r;
}

// a * b for any signs (a stride times a dim minus one), saturating at
// kDimOverflow on overflow.
inline int64_t SatMulSigned(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kDimOverflow : r;
}

// Product of dims into *count. False on a negative dim or overflow of int64.
inline bool CheckedElementCount(const std::vector<int64_t>& shape, int64_t* count) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return false;
  *count = n;
  return true;
}

// count * elem_size into *bytes. False on a negative count or overflow of size_t.
inline bool CheckedByteSize(int64_t count, size_t elem_size, size_t* bytes) {
  if (count < 0) return false;
  return !__builtin_mul_overflow(static_cast<uint64_t>(count), static_cast<uint64_t>(elem_size), bytes);
}

// Product of dims times elem_size into *bytes. False on a negative dim or overflow.
inline bool CheckedShapeBytes(const std::vector<int64_t>& shape, size_t elem_size, size_t* bytes) {
  int64_t n;
  return CheckedElementCount(shape, &n) && CheckedByteSize(n, elem_size, bytes);
}

// A double (a scaled dim, say) as an int64 dim: kDimOverflow when it is NaN,
// negative or past int64 (converting such a value is undefined behaviour).
inline int64_t DimFromDouble(double v) {
  if (!(v >= 0)) return kDimOverflow;
  if (v >= 9.2e18) return kDimOverflow;
  return static_cast<int64_t>(v);
}

}  // namespace kiln
