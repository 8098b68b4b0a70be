// The parameter-free unary ops and their naive references, one row an op:
// the host suite (ops/elementwise_test.cpp) checks each against its
// reference, and the GPU suite (gpu/gpu_elementwise_test.cpp) each backend
// against the host, over [lo, hi]. Adding such an op is adding its row here.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/format.h"

namespace kiln::test {

struct UnaryCase {
  fb::OpType type;
  float (*ref)(float);
  float lo = -3, hi = 3;  // the inputs' range
};

inline std::vector<UnaryCase> UnaryCases() {
  return {
      {fb::OpType::Relu, [](float x) { return x > 0 ? x : 0.f; }},
      {fb::OpType::Sigmoid, [](float x) { return 1 / (1 + std::exp(-x)); }},
      {fb::OpType::Tanh, [](float x) { return std::tanh(x); }},
      {fb::OpType::HardSwish, [](float x) { return x * std::min(1.f, std::max(0.f, (x + 3) / 6)); }},
      {fb::OpType::Erf, [](float x) { return std::erf(x); }},
      {fb::OpType::Gelu, [](float x) { return x * 0.5f * (1 + std::erf(x / std::sqrt(2.f))); }},
      {fb::OpType::Exp, [](float x) { return std::exp(x); }},
      {fb::OpType::Log, [](float x) { return std::log(x); }, 0.01f, 5},
      {fb::OpType::Sqrt, [](float x) { return std::sqrt(x); }, 0, 5},
      {fb::OpType::Neg, [](float x) { return -x; }},
      {fb::OpType::Abs, [](float x) { return std::fabs(x); }},
      {fb::OpType::Reciprocal, [](float x) { return 1 / x; }, 0.5f, 4},
      {fb::OpType::Softsign, [](float x) { return x / (1 + std::fabs(x)); }, -6, 6},
      {fb::OpType::Identity, [](float x) { return x; }},
      {fb::OpType::Sin, [](float x) { return std::sin(x); }},
      {fb::OpType::Cos, [](float x) { return std::cos(x); }},
      {fb::OpType::Tan, [](float x) { return std::tan(x); }, -1.2f, 1.2f},
      {fb::OpType::Asin, [](float x) { return std::asin(x); }, -0.99f, 0.99f},
      {fb::OpType::Acos, [](float x) { return std::acos(x); }, -0.99f, 0.99f},
      {fb::OpType::Atan, [](float x) { return std::atan(x); }},
      {fb::OpType::Sinh, [](float x) { return std::sinh(x); }},
      {fb::OpType::Cosh, [](float x) { return std::cosh(x); }},
      {fb::OpType::Asinh, [](float x) { return std::asinh(x); }},
      {fb::OpType::Acosh, [](float x) { return std::acosh(x); }, 1, 5},
      {fb::OpType::Atanh, [](float x) { return std::atanh(x); }, -0.9f, 0.9f},
      {fb::OpType::Ceil, [](float x) { return std::ceil(x); }},
      {fb::OpType::Floor, [](float x) { return std::floor(x); }},
      {fb::OpType::Round, [](float x) { return std::nearbyint(x); }},
      {fb::OpType::Sign, [](float x) { return x > 0 ? 1.f : (x < 0 ? -1.f : 0.f); }},
      {fb::OpType::Softplus, [](float x) { return std::log(1 + std::exp(x)); }},
      {fb::OpType::Mish, [](float x) { return x * std::tanh(std::log(1 + std::exp(x))); }},
  };
}

}  // namespace kiln::test
