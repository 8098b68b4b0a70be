// Elementwise ops on the host against naive references: unary math,
// broadcasting binary ops (f32, i64), comparisons, Where, Cast.
#include <cmath>
#include <functional>

#include "support/op_test.h"
#include "support/test_models.h"
#include "support/unary_cases.h"

namespace kiln {
namespace {

using test::ExpectNear;
using test::Numel;
using test::OpTest;
using test::RandomFloats;

using test::UnaryCase;
using test::UnaryCases;

TEST(Elementwise, UnaryOnOddShapes) {
  for (const UnaryCase& c : UnaryCases()) {
    for (auto shape : std::vector<std::vector<int64_t>>{{1}, {3, 7}, {2, 17, 5}, {1, 3, 1, 1}}) {
      std::vector<float> x = RandomFloats(static_cast<size_t>(Numel(shape)), 7);
      for (float& v : x) v = c.lo + (v + 1) / 2 * (c.hi - c.lo);
      auto out = OpTest(c.type).input("x", shape, x).run();
      ASSERT_TRUE(out.ok()) << fb::EnumNameOpType(c.type) << ": " << out.status().ToString();
      std::vector<float> want;
      for (float v : x) want.push_back(c.ref(v));
      EXPECT_EQ(out->at(0).shape, shape);
      ExpectNear(out->at(0).f32(), want, 1e-5f, fb::EnumNameOpType(c.type));
    }
  }
}

TEST(Elementwise, ParamActivations) {
  std::vector<float> x = RandomFloats(3 * 7, 3);
  for (float& v : x) v *= 4;
  {
    fb::LeakyReluParamsT p;
    p.alpha = 0.3f;
    auto out = OpTest(fb::OpType::LeakyRelu).input("x", {3, 7}, x).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (float v : x) want.push_back(v >= 0 ? v : 0.3f * v);
    ExpectNear(out->at(0).f32(), want, 1e-6f, "LeakyRelu");
  }
  {
    fb::EluParamsT p;
    p.alpha = 0.7f;
    auto out = OpTest(fb::OpType::Elu).input("x", {3, 7}, x).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (float v : x) want.push_back(v > 0 ? v : 0.7f * (std::exp(v) - 1));
    ExpectNear(out->at(0).f32(), want, 1e-5f, "Elu");
  }
  {
    fb::HardSigmoidParamsT p;
    p.alpha = 0.25f;
    p.beta = 0.4f;
    auto out = OpTest(fb::OpType::HardSigmoid).input("x", {3, 7}, x).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (float v : x) want.push_back(std::min(1.f, std::max(0.f, 0.25f * v + 0.4f)));
    ExpectNear(out->at(0).f32(), want, 1e-6f, "HardSigmoid");
  }
  {  // Clip with min/max as inputs (opset 11+), max missing
    auto out = OpTest(fb::OpType::Clip).input("x", {3, 7}, x).constant("min", {}, {-1.5f}).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (float v : x) want.push_back(std::max(-1.5f, v));
    ExpectNear(out->at(0).f32(), want, 0, "Clip(min)");
  }
  {
    fb::GeluParamsT p;
    p.approximate = fb::GeluApproximation::Tanh;
    auto out = OpTest(fb::OpType::Gelu).input("x", {3, 7}, x).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (float v : x) want.push_back(0.5f * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715f * v * v * v))));
    ExpectNear(out->at(0).f32(), want, 1e-5f, "Gelu(tanh)");
  }
}

// out[i] = f(a[bcast i], b[bcast i]) computed with explicit index arithmetic.
template <typename T, typename R>
std::vector<R> NaiveBroadcast(const std::vector<T>& a, std::vector<int64_t> sa, const std::vector<T>& b,
                              std::vector<int64_t> sb, const std::vector<int64_t>& so, std::function<R(T, T)> f) {
  while (sa.size() < so.size()) sa.insert(sa.begin(), 1);
  while (sb.size() < so.size()) sb.insert(sb.begin(), 1);
  std::vector<R> out(static_cast<size_t>(Numel(so)));
  auto st_a = test::Strides(sa), st_b = test::Strides(sb), st_o = test::Strides(so);
  for (int64_t i = 0; i < Numel(so); ++i) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < so.size(); ++d) {
      int64_t k = i / st_o[d] % so[d];
      ia += (sa[d] == 1 ? 0 : k) * st_a[d];
      ib += (sb[d] == 1 ? 0 : k) * st_b[d];
    }
    out[static_cast<size_t>(i)] = f(a[static_cast<size_t>(ia)], b[static_cast<size_t>(ib)]);
  }
  return out;
}

struct Shapes {
  std::vector<int64_t> a, b, out;
};
const std::vector<Shapes> kBroadcastShapes = {
    {{3, 7}, {3, 7}, {3, 7}},      {{2, 3, 5}, {5}, {2, 3, 5}},      {{2, 1, 5}, {1, 3, 1}, {2, 3, 5}},
    {{17}, {}, {17}},              {{1, 17, 1, 1}, {2, 17, 3, 3}, {2, 17, 3, 3}}, {{4, 1}, {1, 7}, {4, 7}},
};

TEST(Elementwise, BinaryBroadcastF32) {
  std::vector<std::pair<fb::OpType, std::function<float(float, float)>>> ops = {
      {fb::OpType::Add, [](float x, float y) { return x + y; }},
      {fb::OpType::Sub, [](float x, float y) { return x - y; }},
      {fb::OpType::Mul, [](float x, float y) { return x * y; }},
      {fb::OpType::Div, [](float x, float y) { return x / y; }},
      {fb::OpType::Max, [](float x, float y) { return std::max(x, y); }},
      {fb::OpType::Min, [](float x, float y) { return std::min(x, y); }},
      {fb::OpType::Pow, [](float x, float y) { return std::pow(std::fabs(x), y); }},
      {fb::OpType::PRelu, [](float x, float y) { return x >= 0 ? x : x * y; }},
  };
  for (auto& [type, ref] : ops) {
    for (const Shapes& s : kBroadcastShapes) {
      if (type == fb::OpType::PRelu && s.out != s.a) continue;  // PRelu's slope broadcasts to X
      std::vector<float> a = RandomFloats(static_cast<size_t>(Numel(s.a)), 1);
      std::vector<float> b = RandomFloats(static_cast<size_t>(Numel(s.b)), 2);
      if (type == fb::OpType::Div) for (float& v : b) v = v >= 0 ? v + 0.5f : v - 0.5f;
      if (type == fb::OpType::Pow) for (float& v : a) v = std::fabs(v);
      auto out = OpTest(type).input("a", s.a, a).input("b", s.b, b).run();
      ASSERT_TRUE(out.ok()) << fb::EnumNameOpType(type) << ": " << out.status().ToString();
      EXPECT_EQ(out->at(0).shape, s.out);
      ExpectNear(out->at(0).f32(), NaiveBroadcast<float, float>(a, s.a, b, s.b, s.out, ref), 1e-5f,
                 std::string(fb::EnumNameOpType(type)) + " " + std::to_string(Numel(s.a)));
    }
  }
}

// Shapes whose dimensions the row walk merges (broadcast.h): a per-channel
// scale on either side ([N,C,1,1] with [N,C,H,W]), equal shapes (one row, cut
// into pieces across threads when long), and pairs where only some
// dimensions merge; on 3 threads.
TEST(Elementwise, BroadcastMergedRows) {
  const std::vector<Shapes> shapes = {
      {{2, 5, 7, 9}, {2, 5, 1, 1}, {2, 5, 7, 9}},   {{2, 5, 1, 1}, {2, 5, 7, 9}, {2, 5, 7, 9}},
      {{1, 3, 130, 131}, {1, 3, 130, 131}, {1, 3, 130, 131}}, {{1, 2, 1, 40000}, {1, 2, 1, 40000}, {1, 2, 1, 40000}},
      {{3, 1, 4}, {1, 5, 4}, {3, 5, 4}},             {{2, 3, 4, 5}, {3, 1, 1}, {2, 3, 4, 5}},
      {{2, 3, 4, 5}, {1, 1, 4, 5}, {2, 3, 4, 5}},    {{2, 1, 4, 5}, {2, 3, 1, 1}, {2, 3, 4, 5}},
      {{1, 1, 1}, {4, 1, 6}, {4, 1, 6}},
  };
  ScheduleConfig three;
  three.numThread = 3;
  for (const Shapes& s : shapes) {
    std::vector<float> a = RandomFloats(static_cast<size_t>(Numel(s.a)), 3);
    std::vector<float> b = RandomFloats(static_cast<size_t>(Numel(s.b)), 4);
    for (auto [type, name] : {std::pair{fb::OpType::Mul, "Mul"}, std::pair{fb::OpType::Sub, "Sub"}}) {
      auto out = OpTest(type).input("a", s.a, a).input("b", s.b, b).run(three);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(out->at(0).shape, s.out);
      std::function<float(float, float)> f = [type = type](float x, float y) {
        return type == fb::OpType::Mul ? x * y : x - y;
      };
      ExpectNear(out->at(0).f32(), NaiveBroadcast<float, float>(a, s.a, b, s.b, s.out, f), 1e-6f,
                 std::string(name) + " " + std::to_string(Numel(s.a)) + " by " + std::to_string(Numel(s.b)));
    }
  }
}

// Two's complement wraparound, x / 0 = 0 and MIN / -1 = MIN (no trap).
TEST(Elementwise, IntegerArithmeticWraps) {
  const int64_t kMin = INT64_MIN, kMax = INT64_MAX;
  std::vector<int64_t> a = {kMax, kMin, kMin, 7, kMax, -9}, b = {1, -1, -1, 0, 2, 2};
  auto run = [&](fb::OpType t) {
    auto out = OpTest(t).inputI64("a", {6}, a).inputI64("b", {6}, b).run();
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? out->at(0).i64() : std::vector<int64_t>{};
  };
  EXPECT_EQ(run(fb::OpType::Add), (std::vector<int64_t>{kMin, kMax, kMax, 7, kMin + 1, -7}));
  EXPECT_EQ(run(fb::OpType::Sub), (std::vector<int64_t>{kMax - 1, kMin + 1, kMin + 1, 7, kMax - 2, -11}));
  EXPECT_EQ(run(fb::OpType::Mul), (std::vector<int64_t>{kMax, kMin, kMin, 0, -2, -18}));
  EXPECT_EQ(run(fb::OpType::Div), (std::vector<int64_t>{kMax, kMin, kMin, 0, kMax / 2, -4}));
  const int32_t kMin32 = INT32_MIN;
  const std::vector<int32_t> a32 = {kMin32, INT32_MAX, -7}, b32 = {-1, 2, 2};
  auto div = OpTest(fb::OpType::Div)
                 .input("a", {3}, fb::DataType::I32, a32.data(), 12)
                 .input("b", {3}, fb::DataType::I32, b32.data(), 12)
                 .run();
  ASSERT_TRUE(div.ok()) << div.status().ToString();
  EXPECT_EQ(div->at(0).i32(), (std::vector<int32_t>{kMin32, INT32_MAX / 2, -3}));
}

TEST(Elementwise, BinaryI64AndComparisons) {
  std::vector<int64_t> a = {5, -7, 9, 0, 12, -3}, b = {2, 3, -4};
  auto add = OpTest(fb::OpType::Div).inputI64("a", {2, 3}, a).inputI64("b", {3}, b).run();
  ASSERT_TRUE(add.ok()) << add.status().ToString();
  EXPECT_EQ(add->at(0).i64(), (std::vector<int64_t>{2, -2, -2, 0, 4, 0}));
  auto less = OpTest(fb::OpType::Less).inputI64("a", {2, 3}, a).inputI64("b", {3}, b).run();
  ASSERT_TRUE(less.ok()) << less.status().ToString();
  EXPECT_EQ(less->at(0).dtype, fb::DataType::BOOL);
  EXPECT_EQ(less->at(0).u8(), (std::vector<uint8_t>{0, 1, 0, 1, 0, 0}));
  std::vector<float> fa = RandomFloats(3 * 4, 5), fb_ = RandomFloats(4, 6);
  fa[1] = fb_[1];
  for (auto [type, ref] : std::vector<std::pair<fb::OpType, std::function<uint8_t(float, float)>>>{
           {fb::OpType::Equal, [](float x, float y) { return uint8_t(x == y); }},
           {fb::OpType::Greater, [](float x, float y) { return uint8_t(x > y); }}}) {
    auto out = OpTest(type).input("a", {3, 4}, fa).input("b", {4}, fb_).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).u8(), (NaiveBroadcast<float, uint8_t>(fa, {3, 4}, fb_, {4}, {3, 4}, ref)));
  }
}

TEST(Elementwise, LogicWhereAndVariadicMax) {
  std::vector<uint8_t> c = {1, 0, 1, 0, 0, 1};
  auto nt = OpTest(fb::OpType::Not).inputBool("c", {2, 3}, c).run();
  ASSERT_TRUE(nt.ok()) << nt.status().ToString();
  EXPECT_EQ(nt->at(0).u8(), (std::vector<uint8_t>{0, 1, 0, 1, 1, 0}));
  auto nd = OpTest(fb::OpType::And).inputBool("a", {2, 3}, c).inputBool("b", {3}, {1, 1, 0}).run();
  ASSERT_TRUE(nd.ok()) << nd.status().ToString();
  EXPECT_EQ(nd->at(0).u8(), (std::vector<uint8_t>{1, 0, 0, 0, 0, 0}));

  std::vector<float> x = RandomFloats(6, 8), y = RandomFloats(3, 9);
  auto w = OpTest(fb::OpType::Where).inputBool("c", {2, 3}, c).input("x", {2, 3}, x).input("y", {3}, y).run();
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<float> want;
  for (int i = 0; i < 6; ++i) want.push_back(c[i] ? x[i] : y[i % 3]);
  ExpectNear(w->at(0).f32(), want, 0, "Where");

  std::vector<float> m0 = RandomFloats(12, 10), m1 = RandomFloats(12, 11), m2 = RandomFloats(12, 12);
  auto mx = OpTest(fb::OpType::Max).input("a", {3, 4}, m0).input("b", {3, 4}, m1).input("c", {3, 4}, m2).run();
  ASSERT_TRUE(mx.ok()) << mx.status().ToString();
  std::vector<float> wm;
  for (int i = 0; i < 12; ++i) wm.push_back(std::max(m0[i], std::max(m1[i], m2[i])));
  ExpectNear(mx->at(0).f32(), wm, 0, "Max(3)");
}

TEST(Elementwise, Cast) {
  std::vector<float> x = {1.7f, -2.5f, 0.f, 65504.f, 3e9f, -0.1f};
  fb::CastParamsT to_i64;
  to_i64.to = fb::DataType::I64;
  auto i = OpTest(fb::OpType::Cast).input("x", {6}, x).params(to_i64).run();
  ASSERT_TRUE(i.ok()) << i.status().ToString();
  EXPECT_EQ(i->at(0).i64(), (std::vector<int64_t>{1, -2, 0, 65504, 3000000000LL, 0}));
  fb::CastParamsT to_f16;
  to_f16.to = fb::DataType::F16;
  auto h = OpTest(fb::OpType::Cast).input("x", {6}, x).params(to_f16).run();
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  std::vector<uint16_t> half = h->at(0).as<uint16_t>();
  EXPECT_EQ(half[0], 0x3ecd);  // 1.7 -> 1.7001953125
  EXPECT_EQ(half[1], 0xc100);  // -2.5
  EXPECT_EQ(half[3], 0x7bff);  // 65504, the largest half
  EXPECT_EQ(half[4], 0x7c00);  // overflow -> inf
  fb::CastParamsT to_bool;
  to_bool.to = fb::DataType::BOOL;
  auto bl = OpTest(fb::OpType::Cast).input("x", {6}, x).params(to_bool).run();
  ASSERT_TRUE(bl.ok()) << bl.status().ToString();
  EXPECT_EQ(bl->at(0).u8(), (std::vector<uint8_t>{1, 1, 0, 1, 1, 1}));
}

TEST(Elementwise, IncompatibleShapesAreAClearError) {
  auto out = OpTest(fb::OpType::Add, "add7").input("a", {3, 4}, RandomFloats(12, 1)).input("b", {5}, RandomFloats(5, 2)).run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("op 0 'add7' (Add)"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("do not broadcast"), std::string::npos) << out.status().message();
}

}  // namespace
}  // namespace kiln
