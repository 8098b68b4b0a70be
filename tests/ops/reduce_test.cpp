// Reductions and ArgMax/ArgMin on the host against naive references: every
// input element is scattered into its output cell (the kernel gathers).
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln {
namespace {

using test::ExpectNear;
using test::Numel;
using test::OpTest;
using test::RandomFloats;
using Shape = std::vector<int64_t>;

std::string Str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// Which dims of `shape` the axes name (all for an empty list).
std::vector<bool> Reduced(const Shape& shape, const Shape& axes) {
  std::vector<bool> r(shape.size(), axes.empty());
  for (int64_t a : axes) r[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(shape.size()) : a)] = true;
  return r;
}

// Output shape, and for each input element its output cell.
Shape ReduceShape(const Shape& s, const std::vector<bool>& red, bool keepdims) {
  Shape o;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!red[d]) o.push_back(s[d]);
    else if (keepdims) o.push_back(1);
  }
  return o;
}

int64_t OutCell(int64_t i, const Shape& s, const std::vector<bool>& red) {
  Shape idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  int64_t cell = 0;
  for (size_t d = 0; d < s.size(); ++d)
    if (!red[d]) cell = cell * s[d] + idx[d];
  return cell;
}

std::vector<double> RefReduce(fb::OpType type, const std::vector<double>& x, const Shape& s,
                              const std::vector<bool>& red) {
  int64_t cells = 1, per = 1;
  for (size_t d = 0; d < s.size(); ++d) (red[d] ? per : cells) *= s[d];
  double init = 0;
  if (type == fb::OpType::ReduceProd) init = 1;
  if (type == fb::OpType::ReduceMax) init = -INFINITY;
  if (type == fb::OpType::ReduceMin) init = INFINITY;
  std::vector<double> acc(static_cast<size_t>(cells), init);
  for (int64_t i = 0; i < Numel(s); ++i) {
    double& a = acc[static_cast<size_t>(OutCell(i, s, red))];
    double v = x[static_cast<size_t>(i)];
    switch (type) {
      case fb::OpType::ReduceSum:
      case fb::OpType::ReduceMean: a += v; break;
      case fb::OpType::ReduceProd: a *= v; break;
      case fb::OpType::ReduceMax: a = std::max(a, v); break;
      case fb::OpType::ReduceMin: a = std::min(a, v); break;
      case fb::OpType::ReduceL2: a += v * v; break;
      default: break;
    }
  }
  for (double& a : acc) {
    if (type == fb::OpType::ReduceMean) a /= static_cast<double>(per);
    if (type == fb::OpType::ReduceL2) a = std::sqrt(a);
  }
  return acc;
}

const std::vector<fb::OpType> kReduceOps = {fb::OpType::ReduceMean, fb::OpType::ReduceSum, fb::OpType::ReduceMax,
                                            fb::OpType::ReduceMin,  fb::OpType::ReduceProd, fb::OpType::ReduceL2};

struct AxesCase {
  Shape shape, axes;
};

TEST(Reduce, F32AxesKeepdimsAndAxesInput) {
  std::vector<AxesCase> cases = {
      {{3, 7, 5}, {}},      {{3, 7, 5}, {0}},    {{3, 7, 5}, {-1}},     {{3, 7, 5}, {0, 2}},
      {{3, 7, 5}, {1}},     {{2, 17}, {1}},      {{2, 17}, {-2}},       {{1, 3, 1, 7}, {1, 3}},
      {{1, 3, 1, 7}, {0, 2}}, {{17}, {0}},       {{2, 3, 4, 5}, {-3, -1}}, {{2, 3, 4, 5}, {0, 1, 2}},
  };
  for (fb::OpType type : kReduceOps)
    for (const AxesCase& c : cases)
      for (bool keepdims : {true, false})
        for (bool axes_input : {false, true}) {
          std::vector<float> x = RandomFloats(static_cast<size_t>(Numel(c.shape)), 3);
          if (type == fb::OpType::ReduceProd)
            for (float& v : x) v = 0.8f + 0.4f * (v + 1) / 2;  // keep products near 1
          fb::ReduceParamsT p;
          p.keepdims = keepdims;
          OpTest t(type);
          t.input("x", c.shape, x);
          if (axes_input) {
            if (!c.axes.empty()) t.constantI64("axes", {static_cast<int64_t>(c.axes.size())}, c.axes);
          } else {
            for (int64_t a : c.axes) p.axes.push_back(static_cast<int32_t>(a));
          }
          auto out = t.params(p).run();
          ASSERT_TRUE(out.ok()) << out.status().ToString();
          std::vector<bool> red = Reduced(c.shape, c.axes);
          std::vector<double> want = RefReduce(type, std::vector<double>(x.begin(), x.end()), c.shape, red);
          EXPECT_EQ(out->at(0).shape, ReduceShape(c.shape, red, keepdims));
          std::string what = std::string(fb::EnumNameOpType(type)) + " " + Str(c.shape) + " axes " + Str(c.axes) +
                             (keepdims ? " keep" : "") + (axes_input ? " (input)" : "");
          ExpectNear(out->at(0).f32(), std::vector<float>(want.begin(), want.end()), 1e-5f, what);
        }
}

TEST(Reduce, NoopWithEmptyAxes) {
  std::vector<float> x = RandomFloats(21, 4);
  fb::ReduceParamsT p;
  p.noop_with_empty_axes = true;
  auto out = OpTest(fb::OpType::ReduceSum).input("x", {3, 7}, x).params(p).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(0).shape, (Shape{3, 7}));
  EXPECT_EQ(out->at(0).f32(), x);
  // An empty axes input is "no axes" too.
  auto empty = OpTest(fb::OpType::ReduceMax).input("x", {3, 7}, x).constantI64("axes", {0}, {}).params(p).run();
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->at(0).f32(), x);
}

TEST(Reduce, I64SumMaxMinProd) {
  Shape s = {3, 7, 2};
  std::mt19937 rng(5);
  std::vector<int64_t> x(static_cast<size_t>(Numel(s)));
  for (int64_t& v : x) v = static_cast<int64_t>(rng() % 41) - 20;
  for (fb::OpType type : {fb::OpType::ReduceSum, fb::OpType::ReduceMax, fb::OpType::ReduceMin, fb::OpType::ReduceProd})
    for (Shape axes : {Shape{}, Shape{1}, Shape{0, -1}}) {
      if (type == fb::OpType::ReduceProd && axes.empty()) continue;  // would overflow
      fb::ReduceParamsT p;
      p.keepdims = false;
      OpTest t(type);
      t.inputI64("x", s, x);
      if (!axes.empty()) t.constantI64("axes", {static_cast<int64_t>(axes.size())}, axes);
      auto out = t.params(p).run();
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      std::vector<bool> red = Reduced(s, axes);
      std::vector<double> want = RefReduce(type, std::vector<double>(x.begin(), x.end()), s, red);
      EXPECT_EQ(out->at(0).dtype, fb::DataType::I64);
      EXPECT_EQ(out->at(0).i64(), std::vector<int64_t>(want.begin(), want.end()))
          << fb::EnumNameOpType(type) << " axes " << Str(axes);
    }
}

TEST(Reduce, BadAxesAreClearErrors) {
  fb::ReduceParamsT p;
  p.axes = {1, -1};
  auto out = OpTest(fb::OpType::ReduceMean).input("x", {3, 7}, RandomFloats(21, 1)).params(p).run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("appears twice"), std::string::npos) << out.status().message();
  p.axes = {2};
  auto range = OpTest(fb::OpType::ReduceMean).input("x", {3, 7}, RandomFloats(21, 1)).params(p).run();
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.status().message().find("axis 2 out of range for rank 2"), std::string::npos)
      << range.status().message();
}

// ---- ArgMax, ArgMin ----

std::vector<int64_t> RefArg(bool is_max, const std::vector<float>& x, const Shape& s, int axis, bool last) {
  const size_t a = static_cast<size_t>(axis);
  std::vector<bool> red(s.size(), false);
  red[a] = true;
  int64_t cells = Numel(s) / s[a];
  std::vector<int64_t> best(static_cast<size_t>(cells), -1);
  std::vector<float> bv(static_cast<size_t>(cells));
  for (int64_t i = 0; i < Numel(s); ++i) {
    int64_t cell = OutCell(i, s, red);
    int64_t k = i / test::Strides(s)[a] % s[a];
    float v = x[static_cast<size_t>(i)];
    size_t c = static_cast<size_t>(cell);
    bool take = best[c] < 0 || (is_max ? v > bv[c] : v < bv[c]) || (last && v == bv[c]);
    if (take) {
      best[c] = k;
      bv[c] = v;
    }
  }
  return best;
}

TEST(ReduceArg, ArgMaxArgMin) {
  for (bool is_max : {true, false})
    for (auto [shape, axis] : std::vector<std::pair<Shape, int>>{
             {{3, 7, 5}, 0}, {{3, 7, 5}, 1}, {{3, 7, 5}, -1}, {{17}, 0}, {{1, 3, 1, 7}, -3}, {{2, 17}, 1}})
      for (bool keepdims : {true, false})
        for (bool last : {false, true}) {
          std::vector<float> x = RandomFloats(static_cast<size_t>(Numel(shape)), 6);
          for (float& v : x) v = std::round(v * 3);  // many ties
          fb::ArgParamsT p;
          p.axis = axis;
          p.keepdims = keepdims;
          p.select_last_index = last;
          auto out = OpTest(is_max ? fb::OpType::ArgMax : fb::OpType::ArgMin).input("x", shape, x).params(p).run();
          ASSERT_TRUE(out.ok()) << out.status().ToString();
          int a = axis < 0 ? axis + static_cast<int>(shape.size()) : axis;
          Shape os = shape;
          if (keepdims) os[static_cast<size_t>(a)] = 1;
          else os.erase(os.begin() + a);
          EXPECT_EQ(out->at(0).dtype, fb::DataType::I64);
          EXPECT_EQ(out->at(0).shape, os);
          EXPECT_EQ(out->at(0).i64(), RefArg(is_max, x, shape, a, last))
              << (is_max ? "ArgMax " : "ArgMin ") << Str(shape) << " axis " << axis << (last ? " last" : "");
        }
}

}  // namespace
}  // namespace kiln
