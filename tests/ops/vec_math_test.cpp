// The vectorized math kernels (host_fallback/vec_math.h) against libm in
// double: e^x over the whole float range (subnormal results, overflow, NaN,
// infinities), at every length so that the vector bodies and their tails run.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gemm.h"
#include "vec_math.h"

namespace kiln {
namespace {

// Distance in units in the last place between two finite floats of one sign
// (subnormals included: their ulp is the smallest subnormal).
int64_t UlpDiff(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

TEST(VecMath, ExpWithin2UlpOverTheRange) {
  std::vector<float> x;
  for (float v = -110.f; v <= 90.f; v += 0.0137f) x.push_back(v);
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 88.72f, 88.7228f, -87.33f, -103.97f, -103.28f, -87.3365f})
    x.push_back(v);
  std::vector<float> y(x.size());
  ExpF32(x.data(), y.data(), static_cast<int64_t>(x.size()));
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x[i])));
    ASSERT_FALSE(std::isnan(y[i])) << "e^" << x[i];
    if (std::isinf(want)) {
      EXPECT_TRUE(std::isinf(y[i]) && y[i] > 0) << "e^" << x[i] << " = " << y[i];
      continue;
    }
    const int64_t d = UlpDiff(y[i], want);
    worst = std::max(worst, d);
    EXPECT_LE(d, 2) << "e^" << x[i] << " = " << y[i] << ", want " << want;
  }
  std::printf("ExpF32: worst error %lld ulp over %zu points\n", static_cast<long long>(worst), x.size());
}

TEST(VecMath, ExpSpecialValuesAndTails) {
  const float nan = std::nanf("");
  for (int64_t n = 1; n <= 40; ++n) {
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float cycle[] = {-INFINITY, INFINITY, nan, -200.f, 200.f, 0.5f, -1.f};
      x[static_cast<size_t>(i)] = cycle[i % 7];
    }
    ExpF32(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[static_cast<size_t>(i)], e = y[static_cast<size_t>(i)];
      SCOPED_TRACE("n " + std::to_string(n) + " i " + std::to_string(i) + " x " + std::to_string(v));
      if (std::isnan(v))
        EXPECT_TRUE(std::isnan(e));
      else if (v < -150.f)
        EXPECT_EQ(e, 0.f);
      else if (v > 100.f)
        EXPECT_EQ(e, INFINITY);
      else
        EXPECT_LE(UlpDiff(e, static_cast<float>(std::exp(static_cast<double>(v)))), 2);
    }
  }
  // In place.
  std::vector<float> x = {0.f, 1.f, -1.f};
  ExpF32(x.data(), x.data(), 3);
  EXPECT_EQ(x[0], 1.f);
  EXPECT_LE(UlpDiff(x[1], static_cast<float>(std::exp(1.0))), 2);
}

// Every Softmax row kernel this CPU runs (the compiler-vectorized one and,
// with AVX-512, the intrinsics one) against double precision, at each tail
// length, with a NaN row, a row of -inf, far-apart logits and log form.
// Sigmoid and Silu (x * sigmoid(x)) on every kernel this CPU runs, against
// double: within 4e-7 relative (or 1e-30 absolute near 0) over [-100, 100],
// NaN kept, +-inf as the generic kernel has them (sigmoid(-inf) is
// 1 / (1 + e^88), not 0), every length up to 40 so the tails run, and
// nothing written past n.
TEST(VecMath, SigmoidAndSiluKernels) {
  struct Kernel {
    std::string name;
    vec_detail::GateFn fn;
    bool silu;
  };
  std::vector<Kernel> kernels = {{"sigmoid generic", &vec_detail::SigmoidGeneric, false},
                                 {"silu generic", &vec_detail::SiluGeneric, true},
                                 {"sigmoid", &SigmoidF32, false},
                                 {"silu", &SiluF32, true}};
  if (GemmIsaSupported(Isa::kAvx512) && vec_detail::SigmoidAvx512()) {
    kernels.push_back({"sigmoid avx512", vec_detail::SigmoidAvx512(), false});
    kernels.push_back({"silu avx512", vec_detail::SiluAvx512(), true});
  }
  std::vector<float> x;
  for (int i = -2000; i <= 2000; ++i) x.push_back(static_cast<float>(i) * 0.05f + 0.013f);
  for (float v : {0.f, -0.f, 88.f, -88.f, 89.f, -89.f, 1e-30f, -1e-30f}) x.push_back(v);
  for (const Kernel& k : kernels) {
    SCOPED_TRACE(k.name);
    std::vector<float> y(x.size() + 1, 7.f);
    k.fn(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
      const double want = k.silu ? x[i] * s : s;
      ASSERT_LE(std::fabs(y[i] - want), 4e-7 * std::fabs(want) + 1e-30) << "x " << x[i] << " got " << y[i];
    }
    EXPECT_EQ(y[x.size()], 7.f) << "wrote past n";
    const float special[] = {NAN, INFINITY, -INFINITY};
    std::vector<float> got(3);
    k.fn(special, got.data(), 3);
    EXPECT_TRUE(std::isnan(got[0]));
    EXPECT_EQ(got[1], k.silu ? INFINITY : 1.f);
    if (k.silu)
      EXPECT_EQ(got[2], -INFINITY);
    else  // 1 / (1 + e^88): e^-x is clamped finite
      EXPECT_TRUE(got[2] >= 0.f && got[2] < 1e-37f) << got[2];
    for (int64_t n = 0; n <= 40; ++n) {
      std::vector<float> t(static_cast<size_t>(n) + 1, 5.f);
      k.fn(x.data() + 1000, t.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(t[static_cast<size_t>(i)], y[static_cast<size_t>(1000 + i)]) << "n " << n;
      ASSERT_EQ(t[static_cast<size_t>(n)], 5.f) << "n " << n << " wrote past n";
    }
  }
}

TEST(VecMath, SoftmaxRowKernels) {
  std::vector<std::pair<std::string, vec_detail::SoftmaxRowsFn>> kernels = {
      {"generic", &vec_detail::SoftmaxRowsGeneric}};
  if (GemmIsaSupported(Isa::kAvx512) && vec_detail::SoftmaxRowsAvx512())
    kernels.emplace_back("avx512", vec_detail::SoftmaxRowsAvx512());
  for (const auto& [name, kernel] : kernels)
    for (int64_t n = 1; n <= 70; ++n)
      for (bool log : {false, true}) {
        SCOPED_TRACE(name + " n " + std::to_string(n) + (log ? " log" : ""));
        const int64_t rows = 4;
        std::vector<float> x(static_cast<size_t>(rows * n)), y(x.size(), -7.f);
        for (int64_t k = 0; k < n; ++k) {
          x[static_cast<size_t>(k)] = static_cast<float>((k * 37) % 23) * 0.7f - 8.f;
          x[static_cast<size_t>(n + k)] = k % 2 ? -100.f : 80.f;
          x[static_cast<size_t>(2 * n + k)] = k == n / 2 ? std::nanf("") : 1.f;
          x[static_cast<size_t>(3 * n + k)] = -INFINITY;
        }
        kernel(x.data(), y.data(), rows, n, log);
        for (int64_t r = 0; r < rows; ++r) {
          const float* xr = x.data() + r * n;
          double mx = -INFINITY, sum = 0;
          bool nan = false;
          for (int64_t k = 0; k < n; ++k) {
            nan |= std::isnan(xr[k]);
            mx = std::max<double>(mx, xr[k]);
          }
          for (int64_t k = 0; k < n; ++k) sum += std::exp(xr[k] - mx);
          for (int64_t k = 0; k < n; ++k) {
            const float g = y[static_cast<size_t>(r * n + k)];
            if (nan || std::isinf(mx)) {
              EXPECT_TRUE(std::isnan(g)) << "row " << r << " k " << k << ": " << g;
              continue;
            }
            const double v = xr[k] - mx;
            const double w = log ? v - std::log(sum) : std::exp(v) / sum;
            EXPECT_LE(std::fabs(g - w), 2e-6 * std::fabs(w) + (log ? 1e-6 : 1e-38))
                << "row " << r << " k " << k << ": " << g << " want " << w;
          }
        }
      }
}

}  // namespace
}  // namespace kiln
