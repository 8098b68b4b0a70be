// Shared helpers of the layout op tests: index arithmetic, typed random data.
#pragma once

#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln::layout_test {

using test::ExpectNear;
using test::Numel;
using test::OpResult;
using test::OpTest;
using test::RandomFloats;
using Shape = std::vector<int64_t>;


inline Shape Unravel(int64_t i, const Shape& shape) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

inline std::string ShapeToString(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

inline int64_t Ravel(const Shape& idx, const Shape& shape) {
  int64_t r = 0;
  for (size_t d = 0; d < shape.size(); ++d) r = r * shape[d] + idx[d];
  return r;
}

template <typename T>
fb::DataType DType();
template <>
inline fb::DataType DType<float>() { return fb::DataType::F32; }
template <>
inline fb::DataType DType<int64_t>() { return fb::DataType::I64; }
template <>
inline fb::DataType DType<uint8_t>() { return fb::DataType::BOOL; }
template <>
inline fb::DataType DType<uint16_t>() { return fb::DataType::F16; }  // raw bits: layout ops only move them

template <typename T>
std::vector<T> Random(size_t n, uint32_t seed) {
  std::vector<T> v(n);
  std::mt19937 rng(seed);
  for (T& x : v) {
    if (std::is_same<T, float>::value)
      x = static_cast<T>(std::uniform_real_distribution<float>(-1, 1)(rng));
    else if (std::is_same<T, uint8_t>::value)
      x = static_cast<T>(rng() & 1);
    else
      x = static_cast<T>(static_cast<int64_t>(rng() % 2000001) - 1000000);
  }
  return v;
}

template <typename T>
OpTest& In(OpTest& t, const std::string& name, const Shape& shape, const std::vector<T>& v) {
  return t.input(name, shape, DType<T>(), v.data(), v.size() * sizeof(T));
}

}  // namespace kiln::layout_test

#define ASSERT_OK(r) ASSERT_TRUE((r).ok()) << (r).status().ToString()
