// fuse_gelu: the erf GELU in the op orders torch exports becomes one Gelu;
// not when an intermediate is read twice or is a graph output.
#include <cmath>
#include <cstring>

#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::RandomFloats;

enum class Order { kMulXThenHalf, kHalfXFirst, kHalfSumFirst };

struct GeluNet {
  NetBuilder b{"gelu"};
  int x = -1, erf = -1, y = -1;
};

// x = in * 3 (so erf sees a wide range), then the GELU pattern.
GeluNet BuildGelu(Order order, bool mul_by_inverse, bool swap_operands) {
  GeluNet g;
  NetBuilder& b = g.b;
  int in = b.addInput("in", fb::DataType::F32, {2, 16});
  int three = b.addConstant("three", {}, std::vector<float>{3.f});
  int x = b.addOp(fb::OpType::Mul, "scale_in", {in, three}, {"x"})[0];
  int d;
  if (mul_by_inverse) {
    int c = b.addConstant("inv_sqrt2", {}, std::vector<float>{0.70710678f});
    d = b.addOp(fb::OpType::Mul, "div", swap_operands ? std::vector<int>{c, x} : std::vector<int>{x, c}, {"d"})[0];
  } else {
    int c = b.addConstant("sqrt2", {}, std::vector<float>{1.4142135f});
    d = b.addOp(fb::OpType::Div, "div", {x, c}, {"d"})[0];
  }
  int e = b.addOp(fb::OpType::Erf, "erf", {d}, {"e"})[0];
  int one = b.addConstant("one", {}, std::vector<float>{1.f});
  int a =
      b.addOp(fb::OpType::Add, "add", swap_operands ? std::vector<int>{one, e} : std::vector<int>{e, one}, {"a"})[0];
  int half = b.addConstant("half", {1}, std::vector<float>{0.5f});
  int y = -1;
  switch (order) {
    case Order::kMulXThenHalf: {
      int m = b.addOp(fb::OpType::Mul, "mul", {x, a}, {"m"})[0];
      y = b.addOp(fb::OpType::Mul, "mul_half", swap_operands ? std::vector<int>{half, m} : std::vector<int>{m, half},
                  {"y"})[0];
      break;
    }
    case Order::kHalfXFirst: {
      int h = b.addOp(fb::OpType::Mul, "half_x", {x, half}, {"h"})[0];
      y = b.addOp(fb::OpType::Mul, "mul", swap_operands ? std::vector<int>{a, h} : std::vector<int>{h, a}, {"y"})[0];
      break;
    }
    case Order::kHalfSumFirst: {
      int h = b.addOp(fb::OpType::Mul, "half_sum", {a, half}, {"h"})[0];
      y = b.addOp(fb::OpType::Mul, "mul", swap_operands ? std::vector<int>{h, x} : std::vector<int>{x, h}, {"y"})[0];
      break;
    }
  }
  g.x = x;
  g.erf = e;
  g.y = y;
  return g;
}

TEST(PassesFuseGelu, TorchExportOrders) {
  for (Order order : {Order::kMulXThenHalf, Order::kHalfXFirst, Order::kHalfSumFirst})
    for (bool inverse : {false, true})
      for (bool swap : {false, true}) {
        SCOPED_TRACE("order " + std::to_string(static_cast<int>(order)) + " inverse " + std::to_string(inverse) +
                     " swap " + std::to_string(swap));
        GeluNet g = BuildGelu(order, inverse, swap);
        g.b.addOutput(g.y);
        fb::NetT after = ApplyPass(g.b.net(), FuseGelu, 1);
        EXPECT_EQ(CountOps(after, fb::OpType::Gelu), 1);
        EXPECT_EQ(CountOps(after, fb::OpType::Erf), 0);
        EXPECT_EQ(after.ops.size(), 2u) << test::OpTypes(after);  // scale_in, Gelu
        EXPECT_EQ(after.ops.back()->inputs, std::vector<int32_t>{g.x});
      }
}

TEST(PassesFuseGelu, NotWhenErfIsReadTwice) {
  GeluNet g = BuildGelu(Order::kMulXThenHalf, false, false);
  int n = g.b.addOp(fb::OpType::Neg, "neg", {g.erf}, {"n"})[0];
  int z = g.b.addOp(fb::OpType::Add, "join", {g.y, n}, {"z"})[0];
  g.b.addOutput(z);
  fb::NetT after = ApplyPass(g.b.net(), FuseGelu, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Gelu), 0);
}

TEST(PassesFuseGelu, NotWhenIntermediateIsGraphOutput) {
  GeluNet g = BuildGelu(Order::kHalfXFirst, true, false);
  g.b.addOutput(g.y);
  g.b.addOutput(g.erf);
  fb::NetT after = ApplyPass(g.b.net(), FuseGelu, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Gelu), 0);
}

TEST(PassesFuseGelu, NotWithOtherConstants) {
  GeluNet g = BuildGelu(Order::kMulXThenHalf, false, false);
  g.b.addOutput(g.y);
  // 0.5 -> 0.25: not a GELU any more.
  for (auto& t : g.b.net().tensors)
    if (t->name == "half") {
      float q = 0.25f;
      std::memcpy(t->data.data(), &q, 4);
    }
  fb::NetT after = ApplyPass(g.b.net(), FuseGelu, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Gelu), 0);
}

}  // namespace
}  // namespace kiln
