// Shared helpers of the nn op tests (nn_*_test.cpp): thread config, random
// data, shape printing and the fused-activation reference.
#pragma once

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln::nn_test {

using test::ExpectNear;
using test::Numel;
using test::OpTest;
using test::RandomFloats;
using Shape = std::vector<int64_t>;

constexpr float kTol = 1e-4f;

// Every run uses 3 host threads, so that the kernels' parallel splits are
// exercised wherever a shape is large enough to be split.
inline ScheduleConfig Threads3() {
  ScheduleConfig c;
  c.numThread = 3;
  return c;
}

inline std::vector<float> Rand(const Shape& s, uint32_t seed) { return RandomFloats(static_cast<size_t>(Numel(s)), seed); }
inline std::vector<int32_t> I32(std::initializer_list<int> v) { return std::vector<int32_t>(v.begin(), v.end()); }
inline std::string Str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

inline float RefAct(fb::Activation a, double v, float lo, float hi, float alpha) {
  switch (a) {
    case fb::Activation::None: return static_cast<float>(v);
    case fb::Activation::Relu: return static_cast<float>(v < 0 ? 0 : v);
    case fb::Activation::Relu6: return static_cast<float>(v < 0 ? 0 : (v > 6 ? 6 : v));
    case fb::Activation::Clip: return static_cast<float>(v < lo ? lo : (v > hi ? hi : v));
    case fb::Activation::LeakyRelu: return static_cast<float>(v < 0 ? alpha * v : v);
    case fb::Activation::Sigmoid: return static_cast<float>(1 / (1 + std::exp(-v)));
    case fb::Activation::HardSwish: return static_cast<float>(v * std::min(1.0, std::max(0.0, (v + 3) / 6)));
    case fb::Activation::Gelu: return static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    case fb::Activation::Silu: return static_cast<float>(v / (1 + std::exp(-v)));
  }
  return 0;
}

}  // namespace kiln::nn_test
