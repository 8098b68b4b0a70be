// Normalizations, Softmax/LogSoftmax and the nn family's error messages on
// the host, against naive references.
#include "ops/nn_test_util.h"

namespace kiln {
namespace {

using namespace nn_test;

// ---------------------------------------------------------------- normalizations

TEST(NnNorm, BatchNormalization) {
  for (Shape s : std::vector<Shape>{{2, 7, 5, 9}, {3, 17}, {1, 1, 5}, {2, 3, 1, 1}}) {
    SCOPED_TRACE(Str(s));
    const int64_t C = s[1], inner = Numel(s) / (s[0] * C);
    std::vector<float> x = Rand(s, 101), scale = Rand({C}, 102), bias = Rand({C}, 103), mean = Rand({C}, 104),
                       var = Rand({C}, 105);
    for (float& v : var) v = std::fabs(v) + 0.05f;
    fb::NormParamsT p;
    p.epsilon = 1e-3f;
    auto out = OpTest(fb::OpType::BatchNormalization)
                   .input("x", s, x)
                   .constant("scale", {C}, scale)
                   .constant("b", {C}, bias)
                   .constant("mean", {C}, mean)
                   .input("var", {C}, var)
                   .params(p)
                   .run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want(x.size());
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t at = (n * C + c) * inner + i;
          want[at] = static_cast<float>((x[at] - mean[c]) / std::sqrt(static_cast<double>(var[c]) + 1e-3) * scale[c] +
                                        bias[c]);
        }
    EXPECT_EQ(out->at(0).shape, s);
    ExpectNear(out->at(0).f32(), want, kTol);
  }
}

TEST(NnNorm, InstanceNormalization) {
  for (Shape s : std::vector<Shape>{{2, 3, 5, 9}, {1, 17, 9}, {3, 7, 1, 5}, {1, 1, 1, 1}}) {
    SCOPED_TRACE(Str(s));
    const int64_t C = s[1], inner = Numel(s) / (s[0] * C);
    std::vector<float> x = Rand(s, 111), scale = Rand({C}, 112), bias = Rand({C}, 113);
    for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * 3 + 2;  // a mean well away from 0
    auto out = OpTest(fb::OpType::InstanceNormalization)
                   .input("x", s, x)
                   .constant("scale", {C}, scale)
                   .constant("b", {C}, bias)
                   .run(Threads3());  // default epsilon 1e-5
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want(x.size());
    for (int64_t p = 0; p < s[0] * C; ++p) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; ++i) mean += x[p * inner + i];
      mean /= inner;
      for (int64_t i = 0; i < inner; ++i) var += (x[p * inner + i] - mean) * (x[p * inner + i] - mean);
      var /= inner;
      for (int64_t i = 0; i < inner; ++i)
        want[p * inner + i] =
            static_cast<float>((x[p * inner + i] - mean) / std::sqrt(var + 1e-5) * scale[p % C] + bias[p % C]);
    }
    ExpectNear(out->at(0).f32(), want, kTol);
  }
}

TEST(NnNorm, LayerNormalization) {
  struct Case {
    Shape x;
    int axis;
    Shape scale, bias;  // bias empty: not given
    int outputs;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 17}, -1, {17}, {17}, 1},
                                         {{2, 3, 5}, 1, {3, 5}, {5}, 3},
                                         {{7, 9}, -1, {9}, {}, 3},
                                         {{2, 3, 5}, 1, {1, 5}, {3, 1}, 2},
                                         {{3, 1}, 0, {3, 1}, {1}, 1},
                                         {{5}, -1, {5}, {5}, 3},
                                         {{64, 80}, -1, {80}, {80}, 3}}) {
    SCOPED_TRACE(Str(c.x) + " axis " + std::to_string(c.axis));
    const int rank = static_cast<int>(c.x.size()), axis = c.axis < 0 ? c.axis + rank : c.axis;
    const Shape norm(c.x.begin() + axis, c.x.end());
    const int64_t inner = Numel(norm), outer = Numel(c.x) / inner;
    std::vector<float> x = Rand(c.x, 121), scale = Rand(c.scale, 122), bias = Rand(c.bias, 123);
    // Index of normalized element j into a tensor of shape s broadcast to `norm`.
    auto at = [&](const Shape& s, int64_t j) {
      Shape full(norm.size() - s.size(), 1);
      full.insert(full.end(), s.begin(), s.end());
      int64_t idx = 0;
      for (size_t d = 0, rem_div = static_cast<size_t>(inner); d < norm.size(); ++d) {
        rem_div /= static_cast<size_t>(norm[d]);
        int64_t k = j / static_cast<int64_t>(rem_div) % norm[d];
        idx = idx * full[d] + (full[d] == 1 ? 0 : k);
      }
      return idx;
    };
    std::vector<float> want(x.size()), want_mean, want_inv;
    for (int64_t r = 0; r < outer; ++r) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < inner; ++j) mean += x[r * inner + j];
      mean /= inner;
      for (int64_t j = 0; j < inner; ++j) var += (x[r * inner + j] - mean) * (x[r * inner + j] - mean);
      double inv = 1 / std::sqrt(var / inner + 1e-5);
      for (int64_t j = 0; j < inner; ++j)
        want[r * inner + j] = static_cast<float>((x[r * inner + j] - mean) * inv * scale[at(c.scale, j)] +
                                                 (c.bias.empty() ? 0 : bias[at(c.bias, j)]));
      want_mean.push_back(static_cast<float>(mean));
      want_inv.push_back(static_cast<float>(inv));
    }
    fb::NormParamsT p;
    p.axis = c.axis;
    OpTest t(fb::OpType::LayerNormalization);
    t.input("x", c.x, x).constant("scale", c.scale, scale);
    if (!c.bias.empty()) t.constant("b", c.bias, bias);
    auto out = t.params(p).outputs(c.outputs).run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, c.x);
    ExpectNear(out->at(0).f32(), want, kTol, "Y");
    Shape stat = c.x;
    for (int d = axis; d < rank; ++d) stat[d] = 1;
    if (c.outputs > 1) {
      EXPECT_EQ(out->at(1).shape, stat);
      ExpectNear(out->at(1).f32(), want_mean, kTol, "Mean");
    }
    if (c.outputs > 2) {
      EXPECT_EQ(out->at(2).shape, stat);
      ExpectNear(out->at(2).f32(), want_inv, kTol, "InvStdDev");
    }
  }
}

// ---------------------------------------------------------------- Softmax

TEST(NnSoftmax, SoftmaxAndLogSoftmaxAlongEachAxis) {
  for (Shape s : std::vector<Shape>{{3, 7, 5}, {17, 1, 9}, {1, 300}, {2, 3, 1, 300}})
    for (int axis = -static_cast<int>(s.size()); axis < static_cast<int>(s.size()); ++axis)
      for (fb::OpType type : {fb::OpType::Softmax, fb::OpType::LogSoftmax}) {
        SCOPED_TRACE(std::string(fb::EnumNameOpType(type)) + " " + Str(s) + " axis " + std::to_string(axis));
        std::vector<float> x = Rand(s, 131);
        for (float& v : x) v *= 40;  // large logits: needs the max subtraction
        const int a = axis < 0 ? axis + static_cast<int>(s.size()) : axis;
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < a; ++d) outer *= s[d];
        for (size_t d = static_cast<size_t>(a) + 1; d < s.size(); ++d) inner *= s[d];
        const int64_t n = s[a];
        std::vector<float> want(x.size());
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < n; ++k) mx = std::max<double>(mx, x[(o * n + k) * inner + i]);
            for (int64_t k = 0; k < n; ++k) sum += std::exp(x[(o * n + k) * inner + i] - mx);
            for (int64_t k = 0; k < n; ++k) {
              double v = x[(o * n + k) * inner + i] - mx;
              want[(o * n + k) * inner + i] =
                  static_cast<float>(type == fb::OpType::Softmax ? std::exp(v) / sum : v - std::log(sum));
            }
          }
        fb::AxisParamsT p;
        p.axis = axis;
        auto out = OpTest(type).input("x", s, x).params(p).run(Threads3());
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        EXPECT_EQ(out->at(0).shape, s);
        ExpectNear(out->at(0).f32(), want, kTol);
      }
}

// The vectorized rows (vec_math.h) at every tail length, along the last axis
// (contiguous rows) and a middle one (strided columns), with the values that
// break a naive exp: logits far apart (-100 next to 80), -inf next to finite
// values (0 after Softmax, -inf after LogSoftmax), a row of -inf and a row
// with a NaN (all NaN, as in ONNX's reference: x - max is NaN there). Values
// are checked to a relative 1e-5, so tiny probabilities count too.
TEST(NnSoftmax, SpecialValuesAndTails) {
  const float nan = std::nanf("");
  for (int64_t n : {1, 2, 15, 16, 17, 31, 33, 100, 257})
    for (bool strided : {false, true})
      for (fb::OpType type : {fb::OpType::Softmax, fb::OpType::LogSoftmax}) {
        const bool log = type == fb::OpType::LogSoftmax;
        const int64_t rows = 6, inner = strided ? 3 : 1;  // strided: [rows, n, 3] along axis 1
        const Shape s = strided ? Shape{rows, n, inner} : Shape{rows, n};
        SCOPED_TRACE(std::string(fb::EnumNameOpType(type)) + " " + Str(s));
        std::vector<float> x = Rand(s, 141);
        auto at = [&](int64_t r, int64_t k, int64_t j) -> float& { return x[(r * n + k) * inner + j]; };
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < n; ++k)
            for (int64_t j = 0; j < inner; ++j) {
              float& v = at(r, k, j);
              if (r == 0) v *= 60;                                      // wide spread
              if (r == 1) v = k % 3 == 0 ? -100.f : (k % 3 == 1 ? 80.f : v);  // e^-180 underflows
              if (r == 2 && k % 4 == 1) v = -INFINITY;                  // -inf next to finite values
              if (r == 3) v = -INFINITY;                                // all -inf: NaN
              if (r == 4 && k == n / 2) v = nan;                        // a NaN: the row is NaN
              if (r == 5) v = v * 1e-3f - 50.f;                         // all alike, all negative
            }
        std::vector<float> want(x.size());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < inner; ++j) {
            double mx = -INFINITY, sum = 0;
            bool has_nan = false;
            for (int64_t k = 0; k < n; ++k) {
              has_nan |= std::isnan(at(r, k, j));
              mx = std::max<double>(mx, at(r, k, j));
            }
            for (int64_t k = 0; k < n; ++k) sum += std::exp(at(r, k, j) - mx);
            for (int64_t k = 0; k < n; ++k) {
              const double v = at(r, k, j) - mx;
              want[(r * n + k) * inner + j] = has_nan || std::isinf(mx)
                                                  ? nan
                                                  : static_cast<float>(log ? v - std::log(sum) : std::exp(v) / sum);
            }
          }
        fb::AxisParamsT p;
        p.axis = 1;
        auto out = OpTest(type).input("x", s, x).params(p).run(Threads3());
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        const std::vector<float> got = out->at(0).f32();
        int bad = 0;
        for (size_t i = 0; i < got.size() && bad < 5; ++i) {
          const float g = got[i], w = want[i];
          const bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
                          std::fabs(g - w) <= 1e-5f * std::fabs(w) + (log ? 1e-5f : 1e-38f);
          if (!ok) {
            ADD_FAILURE() << "[" << i << "] row " << i / static_cast<size_t>(n * inner) << ": got " << g << ", want "
                          << w;
            ++bad;
          }
        }
      }
}

// LayerNormalization rows of every tail length, with a mean far from zero
// (the variance must not cancel), scale and B of the normalized size (used
// as they are) and broadcast ones (expanded).
TEST(NnNorm, LayerNormalizationTailsAndOffsets) {
  for (int64_t inner : {1, 3, 15, 16, 17, 33, 256, 300})
    for (bool broadcast : {false, true}) {
      const Shape xs = {5, inner};
      SCOPED_TRACE("inner " + std::to_string(inner) + (broadcast ? " broadcast" : ""));
      std::vector<float> x = Rand(xs, 151);
      for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] + (i / static_cast<size_t>(inner) % 2 ? 1000.f : -3.f);
      const Shape ss = broadcast ? Shape{1} : Shape{inner};
      std::vector<float> scale = Rand(ss, 152), bias = Rand(ss, 153);
      std::vector<float> want, want_mean, want_inv;
      for (int64_t r = 0; r < 5; ++r) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < inner; ++j) mean += x[r * inner + j];
        mean /= inner;
        for (int64_t j = 0; j < inner; ++j) var += (x[r * inner + j] - mean) * (x[r * inner + j] - mean);
        const double inv = 1 / std::sqrt(var / inner + 1e-5);
        for (int64_t j = 0; j < inner; ++j)
          want.push_back(static_cast<float>((x[r * inner + j] - mean) * inv * scale[broadcast ? 0 : j] +
                                            bias[broadcast ? 0 : j]));
        want_mean.push_back(static_cast<float>(mean));
        want_inv.push_back(static_cast<float>(inv));
      }
      fb::NormParamsT p;
      p.axis = -1;
      auto out = OpTest(fb::OpType::LayerNormalization)
                     .input("x", xs, x)
                     .constant("scale", ss, scale)
                     .constant("b", ss, bias)
                     .params(p)
                     .outputs(3)
                     .run(Threads3());
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ExpectNear(out->at(0).f32(), want, kTol, "Y");
      ExpectNear(out->at(1).f32(), want_mean, 1e-6f, "Mean");
      ExpectNear(out->at(2).f32(), want_inv, 1e-5f, "InvStdDev");
    }
}

// ---------------------------------------------------------------- errors

TEST(NnErrors, BadShapesNameTheOp) {
  auto conv = OpTest(fb::OpType::Conv, "conv_bad")
                  .input("x", {1, 5, 7, 7}, Rand({1, 5, 7, 7}, 1))
                  .constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2))
                  .run(Threads3());
  ASSERT_FALSE(conv.ok());
  EXPECT_NE(conv.status().message().find("op 0 'conv_bad' (Conv)"), std::string::npos) << conv.status().message();
  EXPECT_NE(conv.status().message().find("Conv: input has 5 channels but weights expect 3 (group 1)"),
            std::string::npos)
      << conv.status().message();

  auto big = OpTest(fb::OpType::Conv, "conv_big")
                 .input("x", {1, 3, 2, 7}, Rand({1, 3, 2, 7}, 1))
                 .constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2))
                 .run(Threads3());
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("larger than the padded input"), std::string::npos) << big.status().message();

  auto rank = OpTest(fb::OpType::Conv).input("x", {1, 3, 7}, Rand({1, 3, 7}, 1)).constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2)).run(Threads3());
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("rank"), std::string::npos) << rank.status().message();

  auto mm = OpTest(fb::OpType::MatMul, "mm").input("a", {2, 3}, Rand({2, 3}, 1)).input("b", {4, 5}, Rand({4, 5}, 2)).run(Threads3());
  ASSERT_FALSE(mm.ok());
  EXPECT_NE(mm.status().message().find("MatMul: A [2,3] and B [4,5]: inner dims 3 and 4 differ"), std::string::npos)
      << mm.status().message();

  auto bn = OpTest(fb::OpType::BatchNormalization)
                .input("x", {2, 3, 4}, Rand({2, 3, 4}, 1))
                .constant("s", {3}, Rand({3}, 2))
                .constant("b", {3}, Rand({3}, 3))
                .constant("m", {4}, Rand({4}, 4))
                .constant("v", {3}, Rand({3}, 5))
                .run(Threads3());
  ASSERT_FALSE(bn.ok());
  EXPECT_NE(bn.status().message().find("BatchNormalization: mean (input 3) must have shape [3], has [4]"),
            std::string::npos)
      << bn.status().message();
}

TEST(NnErrors, BadParamsNameTheProblem) {
  auto expect_error = [](const StatusOr<std::vector<test::OpResult>>& r, const std::string& needle) {
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  {
    fb::ConvParamsT p;
    p.kernel_shape = {3, 2};
    expect_error(OpTest(fb::OpType::Conv)
                     .input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1))
                     .constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2))
                     .params(p)
                     .run(Threads3()),
                 "Conv: kernel_shape [3,2] does not match the weights' spatial dims [3,3]");
  }
  {
    fb::ConvParamsT p;
    p.group = 2;
    expect_error(OpTest(fb::OpType::Conv)
                     .input("x", {1, 6, 7, 7}, Rand({1, 6, 7, 7}, 1))
                     .constant("w", {5, 3, 3, 3}, Rand({5, 3, 3, 3}, 2))
                     .params(p)
                     .run(Threads3()),
                 "Conv: 5 output channels (weights [5,3,3,3]) do not divide into 2 groups");
  }
  {
    fb::ConvParamsT p;
    p.strides = {2, 2, 2};
    expect_error(OpTest(fb::OpType::Conv)
                     .input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1))
                     .constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2))
                     .params(p)
                     .run(Threads3()),
                 "Conv: strides has 3 entries, expected 2");
  }
  {
    fb::ConvParamsT p;
    p.strides = {2, 2};
    p.output_padding = {2, 0};
    expect_error(OpTest(fb::OpType::ConvTranspose)
                     .input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1))
                     .constant("w", {3, 4, 3, 3}, Rand({3, 4, 3, 3}, 2))
                     .params(p)
                     .run(Threads3()),
                 "ConvTranspose: output_padding[0] = 2 must be smaller than the stride (2)");
  }
  {
    fb::PoolParamsT p;
    p.kernel_shape = {2, 2};
    p.pads = {2, 0, 0, 0};
    expect_error(OpTest(fb::OpType::MaxPool).input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1)).params(p).run(Threads3()),
                 "MaxPool: pads 2+0 on spatial axis 0 must be smaller than the kernel extent 2");
    fb::PoolParamsT none;
    expect_error(
        OpTest(fb::OpType::AveragePool).input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1)).params(none).run(Threads3()),
        "kernel_shape is required");  // the model verifier catches it before shape inference
  }
  {
    fb::GemmParamsT p;
    p.trans_b = true;
    expect_error(OpTest(fb::OpType::Gemm)
                     .input("a", {2, 3}, Rand({2, 3}, 1))
                     .input("b", {3, 4}, Rand({3, 4}, 2))
                     .params(p)
                     .run(Threads3()),
                 "Gemm: A [2,3] and B [3,4] (transposed): inner dims 3 and 4 differ");
    expect_error(OpTest(fb::OpType::Gemm)
                     .input("a", {2, 3}, Rand({2, 3}, 1))
                     .input("b", {3, 4}, Rand({3, 4}, 2))
                     .input("c", {3, 4}, Rand({3, 4}, 3))
                     .run(Threads3()),
                 "Gemm: C [3,4] does not broadcast to [2,4]");
  }
  {
    fb::NormParamsT p;
    p.axis = 3;
    expect_error(OpTest(fb::OpType::LayerNormalization)
                     .input("x", {2, 3, 5}, Rand({2, 3, 5}, 1))
                     .constant("s", {5}, Rand({5}, 2))
                     .params(p)
                     .run(Threads3()),
                 "LayerNormalization: axis 3 out of range for rank 3");
    p.axis = 1;
    expect_error(OpTest(fb::OpType::LayerNormalization)
                     .input("x", {2, 3, 5}, Rand({2, 3, 5}, 1))
                     .constant("s", {2, 5}, Rand({2, 5}, 2))
                     .params(p)
                     .run(Threads3()),
                 "LayerNormalization: scale [2,5] does not broadcast to the normalized shape [3,5]");
  }
  {
    fb::AxisParamsT p;
    p.axis = -3;
    expect_error(OpTest(fb::OpType::Softmax).input("x", {2, 3}, Rand({2, 3}, 1)).params(p).run(Threads3()),
                 "Softmax: axis -3 out of range for rank 2");
  }
}

TEST(NnErrors, NonF32IsUnsupported) {
  std::vector<int64_t> v = {1, 2, 3, 4, 5, 6};
  fb::AxisParamsT p;
  p.axis = 1;
  auto out = OpTest(fb::OpType::Softmax).inputI64("x", {2, 3}, v).params(p).run(Threads3());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnsupported) << out.status().ToString();
  EXPECT_NE(out.status().message().find("Softmax"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("i64"), std::string::npos) << out.status().message();
}

}  // namespace
}  // namespace kiln
