// Op set v2 on the host against naive references: activations with params,
// integer arithmetic, generators, indexing, TopK, CumSum, the new
// reductions, Hardmax, LRN, MeanVarianceNormalization and the losses; and
// the bad inputs each must refuse with a clear error.
#include <cmath>
#include <limits>

#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln {
namespace {

using test::ExpectNear;
using test::OpTest;
using test::RandomFloats;

template <typename T>
OpTest& In(OpTest& t, const std::string& name, std::vector<int64_t> shape, fb::DataType dt, const std::vector<T>& v) {
  return t.input(name, std::move(shape), dt, v.data(), v.size() * sizeof(T));
}

TEST(OpsetV2, ActivationsWithParams) {
  std::vector<float> x = RandomFloats(4 * 5, 11);
  for (float& v : x) v *= 3;
  {
    fb::SeluParamsT p;
    p.alpha = 1.5f;
    p.gamma = 2.f;
    auto out = OpTest(fb::OpType::Selu).input("x", {4, 5}, x).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (float v : x) want.push_back(2.f * (v > 0 ? v : 1.5f * (std::exp(v) - 1)));
    ExpectNear(out->at(0).f32(), want, 1e-5f, "Selu");
  }
  {
    fb::EluParamsT p;
    p.alpha = 2.f;
    auto out = OpTest(fb::OpType::Celu).input("x", {4, 5}, x).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (float v : x) want.push_back(v > 0 ? v : 2.f * (std::exp(v / 2.f) - 1));
    ExpectNear(out->at(0).f32(), want, 1e-5f, "Celu");
    out = OpTest(fb::OpType::ThresholdedRelu).input("x", {4, 5}, x).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    want.clear();
    for (float v : x) want.push_back(v > 2.f ? v : 0.f);
    ExpectNear(out->at(0).f32(), want, 0, "ThresholdedRelu");
  }
  {
    fb::ShrinkParamsT p;
    p.bias = 0.5f;
    p.lambd = 1.f;
    auto out = OpTest(fb::OpType::Shrink).input("x", {4, 5}, x).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (float v : x) want.push_back(v < -1 ? v + 0.5f : (v > 1 ? v - 0.5f : 0.f));
    ExpectNear(out->at(0).f32(), want, 0, "Shrink");
  }
}

TEST(OpsetV2, IsNaNIsInf) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::vector<float> x = {1, inf, -inf, nan, 0};
  auto out = OpTest(fb::OpType::IsNaN).input("x", {5}, x).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(0).u8(), (std::vector<uint8_t>{0, 0, 0, 1, 0}));
  fb::IsInfParamsT p;
  p.detect_positive = false;
  out = OpTest(fb::OpType::IsInf).input("x", {5}, x).params(p).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(0).u8(), (std::vector<uint8_t>{0, 0, 1, 0, 0}));
}

TEST(OpsetV2, IntegerArithmetic) {
  {  // Mod: the divisor's sign by default, the dividend's with fmod; % 0 is 0
    OpTest t(fb::OpType::Mod);
    In<int32_t>(t, "a", {5}, fb::DataType::I32, {7, -7, 7, -7, 5});
    In<int32_t>(t, "b", {5}, fb::DataType::I32, {3, 3, -3, -3, 0});
    auto out = t.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).i32(), (std::vector<int32_t>{1, 2, -2, -1, 0}));
    fb::ModParamsT p;
    p.fmod = true;
    out = t.params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).i32(), (std::vector<int32_t>{1, -1, 1, -1, 0}));
  }
  {  // u8 Add wraps; BitShift by the width or more is 0
    OpTest add(fb::OpType::Add);
    In<uint8_t>(add, "a", {3}, fb::DataType::U8, {250, 1, 128});
    In<uint8_t>(add, "b", {3}, fb::DataType::U8, {10, 2, 128});
    auto out = add.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).u8(), (std::vector<uint8_t>{4, 3, 0}));
    fb::BitShiftParamsT p;
    p.left = true;
    OpTest shl(fb::OpType::BitShift);
    In<uint16_t>(shl, "a", {3}, fb::DataType::U16, {1, 3, 0xffff});
    In<uint16_t>(shl, "b", {3}, fb::DataType::U16, {4, 1, 16});
    out = shl.params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).as<uint16_t>(), (std::vector<uint16_t>{16, 6, 0}));
  }
  {  // Pow of integers, Clip of i8 (the type's limits when a bound is left out)
    OpTest pw(fb::OpType::Pow);
    In<int64_t>(pw, "a", {3}, fb::DataType::I64, {2, -3, 5});
    In<int64_t>(pw, "b", {3}, fb::DataType::I64, {10, 3, 0});
    auto out = pw.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).i64(), (std::vector<int64_t>{1024, -27, 1}));
    OpTest clip(fb::OpType::Clip);
    In<int8_t>(clip, "x", {4}, fb::DataType::I8, {-128, -5, 5, 127});
    std::vector<int8_t> lo = {-6};
    clip.constant("lo", {}, fb::DataType::I8, lo.data(), 1);
    out = clip.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).as<int8_t>(), (std::vector<int8_t>{-6, -5, 5, 127}));
  }
  {  // variadic Sum and Mean, f64
    OpTest sum(fb::OpType::Sum);
    In<double>(sum, "a", {2}, fb::DataType::F64, {1, 2});
    In<double>(sum, "b", {2}, fb::DataType::F64, {10, 20});
    In<double>(sum, "c", {1}, fb::DataType::F64, {100});
    auto out = sum.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).as<double>(), (std::vector<double>{111, 122}));
    OpTest mean(fb::OpType::Mean);
    In<double>(mean, "a", {2}, fb::DataType::F64, {1, 2});
    In<double>(mean, "b", {2}, fb::DataType::F64, {3, 4});
    out = mean.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).as<double>(), (std::vector<double>{2, 3}));
  }
  {  // logic and comparisons
    std::vector<uint8_t> a = {0, 0, 1, 1}, b = {0, 1, 0, 1};
    auto out = OpTest(fb::OpType::Xor).inputBool("a", {4}, a).inputBool("b", {4}, b).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).u8(), (std::vector<uint8_t>{0, 1, 1, 0}));
    out = OpTest(fb::OpType::Or).inputBool("a", {4}, a).inputBool("b", {4}, b).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).u8(), (std::vector<uint8_t>{0, 1, 1, 1}));
    out = OpTest(fb::OpType::GreaterOrEqual).input("a", {3}, {1, 2, 3}).input("b", {1}, {2}).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).u8(), (std::vector<uint8_t>{0, 1, 1}));
  }
}

TEST(OpsetV2, Generators) {
  {
    std::vector<int64_t> value = {7};
    auto out = OpTest(fb::OpType::ConstantOfShape)
                   .constantI64("shape", {2}, {2, 3})
                   .constant("value", {1}, fb::DataType::I64, value.data(), 8)
                   .run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(out->at(0).i64(), std::vector<int64_t>(6, 7));
  }
  {
    auto out = OpTest(fb::OpType::Range).constant("s", {}, {1.f}).constant("l", {}, {2.f}).constant("d", {}, {0.25f}).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {1, 1.25f, 1.5f, 1.75f}, 0, "Range f32");
    out = OpTest(fb::OpType::Range).constantI64("s", {}, {10}).constantI64("l", {}, {3}).constantI64("d", {}, {-3}).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).i64(), (std::vector<int64_t>{10, 7, 4}));
  }
  {
    fb::EyeLikeParamsT p;
    p.k = 1;
    auto out = OpTest(fb::OpType::EyeLike).input("x", {3, 4}, std::vector<float>(12, 5.f)).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 0, "EyeLike");
    out = OpTest(fb::OpType::Size).input("x", {3, 4}, std::vector<float>(12, 5.f)).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).i64(), (std::vector<int64_t>{12}));
  }
  {  // OneHot on axis 0; -1 is the last class, 3 is out of range (all off)
    fb::AxisParamsT p;
    p.axis = 0;
    auto out = OpTest(fb::OpType::OneHot)
                   .inputI64("i", {3}, {0, -1, 3})
                   .constantI64("depth", {}, {3})
                   .constant("values", {2}, {-1.f, 5.f})
                   .params(p)
                   .run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, (std::vector<int64_t>{3, 3}));
    ExpectNear(out->at(0).f32(), {5, -1, -1, -1, -1, -1, -1, 5, -1}, 0, "OneHot");
  }
  {  // Trilu lower with k = -1 on a batch of 2 matrices
    fb::TriluParamsT p;
    p.upper = false;
    std::vector<float> x(2 * 3 * 3);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
    auto out = OpTest(fb::OpType::Trilu).input("x", {2, 3, 3}, x).constantI64("k", {}, {-1}).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {0, 0, 0, 4, 0, 0, 7, 8, 0, 0, 0, 0, 13, 0, 0, 16, 17, 0}, 0, "Trilu");
  }
}

TEST(OpsetV2, GeneratorsRefuseBadCounts) {
  auto zero = OpTest(fb::OpType::Range).constant("s", {}, {0.f}).constant("l", {}, {1.f}).constant("d", {}, {0.f}).run();
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("delta"), std::string::npos) << zero.status().ToString();
  // 4e18 elements: over any memory limit, refused at resize with the op named.
  auto huge = OpTest(fb::OpType::Range)
                  .constantI64("s", {}, {0})
                  .constantI64("l", {}, {int64_t{4} << 60})
                  .constantI64("d", {}, {1})
                  .run();
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("Range"), std::string::npos) << huge.status().ToString();
  auto neg = OpTest(fb::OpType::ConstantOfShape).constantI64("shape", {2}, {2, -3}).run();
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("negative"), std::string::npos) << neg.status().ToString();
  auto big = OpTest(fb::OpType::ConstantOfShape).constantI64("shape", {3}, {1 << 20, 1 << 20, 1 << 20}).run();
  ASSERT_FALSE(big.ok());
  auto depth = OpTest(fb::OpType::OneHot)
                   .inputI64("i", {1}, {0})
                   .constantI64("depth", {}, {-2})
                   .constant("values", {2}, {0.f, 1.f})
                   .run();
  ASSERT_FALSE(depth.ok());
  EXPECT_NE(depth.status().message().find("depth"), std::string::npos) << depth.status().ToString();
}

TEST(OpsetV2, GatherAndScatter) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};  // [2, 3]
  {
    fb::AxisParamsT p;
    p.axis = 1;
    auto out = OpTest(fb::OpType::GatherElements).input("d", {2, 3}, data).inputI64("i", {2, 2}, {2, 0, -1, 1}).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {3, 1, 6, 5}, 0, "GatherElements");
  }
  {  // batch_dims 1: one index tuple per batch row
    fb::GatherNDParamsT p;
    p.batch_dims = 1;
    auto out = OpTest(fb::OpType::GatherND).input("d", {2, 3}, data).inputI64("i", {2, 1}, {2, 0}).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, (std::vector<int64_t>{2}));
    ExpectNear(out->at(0).f32(), {3, 4}, 0, "GatherND");
    out = OpTest(fb::OpType::GatherND).input("d", {2, 3}, data).inputI64("i", {2, 1}, {1, 0}).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {4, 5, 6, 1, 2, 3}, 0, "GatherND rows");
  }
  {  // ScatterElements with add: duplicate indices accumulate
    fb::ScatterParamsT p;
    p.axis = 1;
    p.reduction = fb::ScatterReduction::Add;
    auto out = OpTest(fb::OpType::ScatterElements)
                   .input("d", {2, 3}, data)
                   .inputI64("i", {2, 2}, {0, 0, 2, -1})
                   .input("u", {2, 2}, {10, 20, 30, 40})
                   .params(p)
                   .run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {31, 2, 3, 4, 5, 76}, 0, "ScatterElements add");
    out = OpTest(fb::OpType::ScatterND).input("d", {2, 3}, data).inputI64("i", {1, 1}, {1}).input("u", {1, 3}, {7, 8, 9}).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {1, 2, 3, 7, 8, 9}, 0, "ScatterND");
  }
}

TEST(OpsetV2, OutOfRangeIndicesAreErrors) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  struct Case {
    const char* what;
    StatusOr<std::vector<test::OpResult>> out;
  };
  fb::AxisParamsT axis1;
  axis1.axis = 1;
  Case cases[] = {
      {"GatherElements", OpTest(fb::OpType::GatherElements).input("d", {2, 3}, data).inputI64("i", {1, 1}, {3}).params(axis1).run()},
      {"GatherElements", OpTest(fb::OpType::GatherElements).input("d", {2, 3}, data).inputI64("i", {1, 1}, {-4}).params(axis1).run()},
      {"GatherND", OpTest(fb::OpType::GatherND).input("d", {2, 3}, data).inputI64("i", {1, 2}, {1, 3}).run()},
      {"ScatterElements", OpTest(fb::OpType::ScatterElements).input("d", {2, 3}, data).inputI64("i", {1, 1}, {2}).input("u", {1, 1}, {0}).run()},
      {"ScatterND", OpTest(fb::OpType::ScatterND).input("d", {2, 3}, data).inputI64("i", {1, 1}, {-3}).input("u", {1, 3}, {0, 0, 0}).run()},
  };
  for (Case& c : cases) {
    ASSERT_FALSE(c.out.ok()) << c.what;
    EXPECT_EQ(c.out.status().code(), StatusCode::kInvalidArgument) << c.out.status().ToString();
    EXPECT_NE(c.out.status().message().find("out of range"), std::string::npos) << c.out.status().ToString();
    EXPECT_NE(c.out.status().message().find(c.what), std::string::npos) << c.out.status().ToString();
  }
}

TEST(OpsetV2, TopKAndCumSum) {
  std::vector<float> x = {3, 1, 4, 1, 5, 9, 2, 6};  // [2, 4]
  fb::TopKParamsT p;
  auto out = OpTest(fb::OpType::TopK).input("x", {2, 4}, x).constantI64("k", {1}, {2}).params(p).outputs(2).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at(0).f32(), {4, 3, 9, 6}, 0, "TopK values");
  EXPECT_EQ(out->at(1).i64(), (std::vector<int64_t>{2, 0, 1, 3}));
  p.largest = false;
  out = OpTest(fb::OpType::TopK).input("x", {2, 4}, x).constantI64("k", {1}, {3}).params(p).outputs(2).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(1).i64(), (std::vector<int64_t>{1, 3, 0, 2, 0, 3}));  // ties: the lower index first

  fb::CumSumParamsT c;
  c.exclusive = true;
  c.reverse = true;
  out = OpTest(fb::OpType::CumSum).input("x", {2, 4}, x).constantI64("axis", {}, {1}).params(c).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at(0).f32(), {6, 5, 1, 0, 17, 8, 6, 0}, 0, "CumSum");
}

TEST(OpsetV2, NewReductions) {
  std::vector<float> x = {1, -2, 3, -4, 0.5f, 0.25f};  // [2, 3]
  fb::ReduceParamsT p;
  p.axes = {1};
  p.keepdims = false;
  auto run = [&](fb::OpType t) {
    auto out = OpTest(t).input("x", {2, 3}, x).params(p).run();
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? out->at(0).f32() : std::vector<float>{};
  };
  ExpectNear(run(fb::OpType::ReduceL1), {6, 4.75f}, 1e-6f, "ReduceL1");
  ExpectNear(run(fb::OpType::ReduceSumSquare), {14, 16.3125f}, 1e-6f, "ReduceSumSquare");
  ExpectNear(run(fb::OpType::ReduceLogSumExp),
             {std::log(std::exp(1.f) + std::exp(-2.f) + std::exp(3.f)), std::log(std::exp(-4.f) + std::exp(0.5f) + std::exp(0.25f))},
             1e-5f, "ReduceLogSumExp");
  std::vector<float> pos = {1, 2, 3, 4, 5, 6};
  auto out = OpTest(fb::OpType::ReduceLogSum).input("x", {2, 3}, pos).params(p).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at(0).f32(), {std::log(6.f), std::log(15.f)}, 1e-6f, "ReduceLogSum");
}

TEST(OpsetV2, HardmaxLrnMvn) {
  std::vector<float> x = {1, 3, 3, 0, -1, -2};  // [2, 3]
  fb::AxisParamsT a;
  a.axis = 1;
  auto out = OpTest(fb::OpType::Hardmax).input("x", {2, 3}, x).params(a).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at(0).f32(), {0, 1, 0, 1, 0, 0}, 0, "Hardmax");

  std::vector<float> img = RandomFloats(1 * 5 * 2 * 2, 3);
  fb::LrnParamsT l;
  l.size = 3;
  l.alpha = 0.5f;
  l.beta = 0.75f;
  l.bias = 2.f;
  out = OpTest(fb::OpType::LRN).input("x", {1, 5, 2, 2}, img).params(l).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> want(img.size());
  for (int c = 0; c < 5; ++c)
    for (int i = 0; i < 4; ++i) {
      float sq = 0;
      for (int j = std::max(0, c - 1); j <= std::min(4, c + 1); ++j) sq += img[j * 4 + i] * img[j * 4 + i];
      want[c * 4 + i] = img[c * 4 + i] / std::pow(2.f + 0.5f / 3 * sq, 0.75f);
    }
  ExpectNear(out->at(0).f32(), want, 1e-5f, "LRN");

  out = OpTest(fb::OpType::MeanVarianceNormalization).input("x", {1, 2, 1, 2}, {1, 3, 10, 20}).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at(0).f32(), {-1, 1, -1, 1}, 1e-6f, "MVN");
}

TEST(OpsetV2, Losses) {
  // log-probabilities [N=2, C=3], targets {2, 0}, weights {1, 2, 3}
  std::vector<float> lp = {-1, -2, -3, -0.5f, -1.5f, -2.5f};
  fb::LossParamsT p;  // mean: sum(-lp[t] * w[t]) / sum(w[t])
  auto out = OpTest(fb::OpType::NegativeLogLikelihoodLoss)
                 .input("x", {2, 3}, lp)
                 .inputI64("t", {2}, {2, 0})
                 .constant("w", {3}, {1, 2, 3})
                 .params(p)
                 .run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at(0).f32(), {(3 * 3 + 0.5f * 1) / 4}, 1e-6f, "NLL mean");
  p.reduction = fb::LossReduction::None;
  p.has_ignore_index = true;
  p.ignore_index = 0;
  out = OpTest(fb::OpType::NegativeLogLikelihoodLoss).input("x", {2, 3}, lp).inputI64("t", {2}, {2, 0}).params(p).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at(0).f32(), {3, 0}, 0, "NLL none, ignored");
  auto bad = OpTest(fb::OpType::NegativeLogLikelihoodLoss).input("x", {2, 3}, lp).inputI64("t", {2}, {3, 0}).run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("out of range"), std::string::npos) << bad.status().ToString();

  // SoftmaxCrossEntropyLoss = NLL of the log-softmax, which is output 1.
  std::vector<float> scores = {1, 2, 3, 0, 0, 0};
  fb::LossParamsT s;
  s.reduction = fb::LossReduction::Sum;
  out = OpTest(fb::OpType::SoftmaxCrossEntropyLoss).input("x", {2, 3}, scores).inputI64("t", {2}, {2, 1}).params(s).outputs(2).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const float l0 = 3 - std::log(std::exp(1.f) + std::exp(2.f) + std::exp(3.f)), l1 = -std::log(3.f);
  ExpectNear(out->at(0).f32(), {-(l0 + l1)}, 1e-5f, "SCE sum");
  EXPECT_NEAR(out->at(1).f32()[2], l0, 1e-5f);
}

}  // namespace
}  // namespace kiln
