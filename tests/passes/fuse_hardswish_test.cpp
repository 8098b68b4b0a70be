// fuse_hardswish: x * Clip(x + 3, 0, 6) / 6 in the orders exporters write
// becomes one HardSwish (then fused into the Conv before it by
// fuse_activation); not with other constants or an intermediate read twice.
#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::RandomFloats;

struct HsNet {
  NetBuilder b{"hardswish"};
  int x = -1, y = -1, clip = -1;
};

// x = in * 4 (past both knees), then the pattern. sixth_first: Mul(x,
// Div(c, 6)) (B), else Div(Mul(x, c), 6) (A); by_mul: the sixth as Mul(1/6).
HsNet BuildHardSwish(bool sixth_first, bool by_mul, bool swap, float three = 3.f, float six = 6.f) {
  HsNet h;
  NetBuilder& b = h.b;
  int in = b.addInput("in", fb::DataType::F32, {2, 3, 4, 4});
  int x = b.addOp(fb::OpType::Mul, "scale_in", {in, b.addConstant("four", {}, std::vector<float>{4.f})}, {"x"})[0];
  int k3 = b.addConstant("three", {1}, std::vector<float>{three});
  int a = b.addOp(fb::OpType::Add, "add3", swap ? std::vector<int>{k3, x} : std::vector<int>{x, k3}, {"a"})[0];
  int lo = b.addConstant("lo", {}, std::vector<float>{0.f}), hi = b.addConstant("hi", {}, std::vector<float>{six});
  int c = b.addOp(fb::OpType::Clip, "relu6", {a, lo, hi}, {"c"})[0];
  auto sixth = [&](int t, const std::string& name) {
    if (by_mul) {
      int k = b.addConstant(name + ".k", {}, std::vector<float>{1.f / 6.f});
      return b.addOp(fb::OpType::Mul, name, swap ? std::vector<int>{k, t} : std::vector<int>{t, k}, {name + ".out"})[0];
    }
    return b.addOp(fb::OpType::Div, name, {t, b.addConstant(name + ".k", {}, std::vector<float>{6.f})},
                   {name + ".out"})[0];
  };
  if (sixth_first) {
    int d = sixth(c, "sixth");
    h.y = b.addOp(fb::OpType::Mul, "mul", swap ? std::vector<int>{d, x} : std::vector<int>{x, d}, {"y"})[0];
  } else {
    int m = b.addOp(fb::OpType::Mul, "mul", swap ? std::vector<int>{c, x} : std::vector<int>{x, c}, {"m"})[0];
    h.y = sixth(m, "sixth");
  }
  h.x = x;
  h.clip = c;
  return h;
}

TEST(PassesFuseHardSwish, ExporterOrders) {
  for (bool sixth_first : {false, true})
    for (bool by_mul : {false, true})
      for (bool swap : {false, true}) {
        SCOPED_TRACE("sixth_first " + std::to_string(sixth_first) + " by_mul " + std::to_string(by_mul) + " swap " +
                     std::to_string(swap));
        HsNet h = BuildHardSwish(sixth_first, by_mul, swap);
        h.b.addOutput(h.y);
        fb::NetT after = ApplyPass(h.b.net(), FuseHardSwish, 1);
        EXPECT_EQ(test::OpTypes(after), "Mul HardSwish");
        EXPECT_EQ(after.ops.back()->inputs, std::vector<int32_t>{h.x});
        EXPECT_EQ(after.ops.back()->outputs[0], h.y);  // the last op's output, name kept
      }
}

TEST(PassesFuseHardSwish, NotWithOtherConstantsOrSharedIntermediates) {
  for (auto [three, six] : {std::pair<float, float>{2.f, 6.f}, {3.f, 5.f}}) {
    HsNet h = BuildHardSwish(false, false, false, three, six);
    h.b.addOutput(h.y);
    ApplyPass(h.b.net(), FuseHardSwish, 0);
  }
  HsNet h = BuildHardSwish(false, false, false);
  h.b.addOutput(h.y);
  h.b.addOutput(h.clip);  // the Clip is also a graph output
  ApplyPass(h.b.net(), FuseHardSwish, 0);
}

// After a Conv, the whole chain ends up as the Conv's fused activation.
TEST(PassesFuseHardSwish, ThenFusedIntoTheConv) {
  NetBuilder b("conv_hardswish");
  int x = b.addInput("x", fb::DataType::F32, {1, 3, 6, 6});
  int w = b.addConstant("w", {4, 3, 3, 3}, RandomFloats(4 * 27, 1));
  fb::ConvParamsT p;
  p.pads = {1, 1, 1, 1};
  int c = b.addOp(fb::OpType::Conv, "conv", {x, w}, {"c"}, p)[0];
  int a = b.addOp(fb::OpType::Add, "add3", {c, b.addConstant("three", {}, std::vector<float>{3.f})}, {"a"})[0];
  int r = b.addOp(fb::OpType::Clip, "relu6",
                  {a, b.addConstant("lo", {}, std::vector<float>{0.f}), b.addConstant("hi", {}, std::vector<float>{6.f})},
                  {"r"})[0];
  int m = b.addOp(fb::OpType::Mul, "mul", {c, r}, {"m"})[0];
  int y = b.addOp(fb::OpType::Div, "div6", {m, b.addConstant("six", {}, std::vector<float>{6.f})}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = ApplyPass(b.net(), FuseHardSwish, 1);
  after = ApplyPass(after, FuseActivation, 1);
  ASSERT_EQ(after.ops.size(), 1u);
  EXPECT_EQ(after.ops[0]->params.AsConvParams()->activation, fb::Activation::HardSwish);
}

}  // namespace
}  // namespace kiln
