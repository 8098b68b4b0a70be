// fuse_residual: Add(Conv(x), r) [-> Relu] becomes Conv(x, W, B, r) with
// the Relu as its activation, in either operand order, with and without a
// bias, placed where r is computed (a projection shortcut exported after the
// conv); not for a broadcast Add, a Conv with its own activation, a Conv
// output read twice or a graph output, or shapes not known statically.
// Every rewrite is checked against the unfused net's numbers (ApplyPass).
#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::OpTypes;
using test::RandomFloats;

constexpr int64_t kC = 6, kH = 7;

int Conv(NetBuilder& b, const std::string& name, int x, bool bias, uint32_t seed,
         fb::Activation act = fb::Activation::None) {
  std::vector<int> in = {x, b.addConstant(name + ".w", {kC, kC, 3, 3}, RandomFloats(kC * kC * 9, seed, 0.3f))};
  if (bias) in.push_back(b.addConstant(name + ".b", {kC}, RandomFloats(kC, seed + 1)));
  fb::ConvParamsT p;
  p.kernel_shape = {3, 3};
  p.pads = {1, 1, 1, 1};
  p.activation = act;
  return b.addOp(fb::OpType::Conv, name, in, {name + ".out"}, p)[0];
}

struct Block {
  NetBuilder b{"residual"};
  int x = -1, c = -1, y = -1;
};

// x -> conv1 (Relu) -> conv2 -> Add(conv2, x) [-> Relu] -> y.
Block ResidualBlock(bool swap, bool relu, bool bias) {
  Block k;
  k.x = k.b.addInput("x", fb::DataType::F32, {1, kC, kH, kH});
  const int c1 = Conv(k.b, "conv1", k.x, true, 1, fb::Activation::Relu);
  k.c = Conv(k.b, "conv2", c1, bias, 3);
  const int s = k.b.addOp(fb::OpType::Add, "add", swap ? std::vector<int>{k.x, k.c} : std::vector<int>{k.c, k.x},
                          {"sum"})[0];
  k.y = relu ? k.b.addOp(fb::OpType::Relu, "relu", {s}, {"y"})[0] : s;
  return k;
}

TEST(PassesFuseResidual, BlockInEitherOrderWithAndWithoutRelu) {
  for (bool swap : {false, true})
    for (bool relu : {false, true})
      for (bool bias : {false, true}) {
        SCOPED_TRACE("swap " + std::to_string(swap) + " relu " + std::to_string(relu) + " bias " +
                     std::to_string(bias));
        Block k = ResidualBlock(swap, relu, bias);
        k.b.addOutput(k.y);
        fb::NetT after = ApplyPass(k.b.net(), FuseResidual, 1);
        EXPECT_EQ(OpTypes(after), "Conv Conv");
        const fb::OpT& fused = *after.ops.back();
        ASSERT_EQ(fused.inputs.size(), 4u);
        EXPECT_EQ(fused.inputs[2] >= 0, bias);
        EXPECT_EQ(fused.inputs[3], k.x);
        EXPECT_EQ(fused.outputs[0], k.y);  // the last op's output, name kept
        EXPECT_EQ(fused.params.AsConvParams()->activation, relu ? fb::Activation::Relu : fb::Activation::None);
      }
}

// ResNet's projection shortcut: main = conv(x), short = conv(x) made after
// it, Add(main, short). The fused op must come after the shortcut's conv.
TEST(PassesFuseResidual, ShortcutComputedAfterTheConv) {
  NetBuilder b("shortcut");
  const int x = b.addInput("x", fb::DataType::F32, {1, kC, kH, kH});
  const int main = Conv(b, "main", x, true, 5);
  const int shortcut = Conv(b, "shortcut", x, true, 7);
  const int s = b.addOp(fb::OpType::Add, "add", {main, shortcut}, {"sum"})[0];
  b.addOutput(b.addOp(fb::OpType::Relu, "relu", {s}, {"y"})[0]);
  fb::NetT after = ApplyPass(b.net(), FuseResidual, 1);
  ASSERT_EQ(OpTypes(after), "Conv Conv");
  EXPECT_EQ(after.ops[0]->outputs[0], shortcut);
  EXPECT_EQ(after.ops[1]->inputs[3], shortcut);
}

TEST(PassesFuseResidual, NotForOtherForms) {
  {  // broadcast: r is a per-channel constant
    NetBuilder b("broadcast");
    const int x = b.addInput("x", fb::DataType::F32, {1, kC, kH, kH});
    const int c = Conv(b, "conv", x, true, 1);
    const int k = b.addConstant("k", {1, kC, 1, 1}, RandomFloats(kC, 2));
    b.addOutput(b.addOp(fb::OpType::Add, "add", {c, k}, {"y"})[0]);
    ApplyPass(b.net(), FuseResidual, 0);
  }
  {  // the conv has an activation of its own
    Block k;
    k.x = k.b.addInput("x", fb::DataType::F32, {1, kC, kH, kH});
    k.c = Conv(k.b, "conv", k.x, true, 1, fb::Activation::Relu);
    k.b.addOutput(k.b.addOp(fb::OpType::Add, "add", {k.c, k.x}, {"y"})[0]);
    ApplyPass(k.b.net(), FuseResidual, 0);
  }
  {  // the conv's output is read twice, and is a graph output
    Block k = ResidualBlock(false, true, true);
    k.b.addOutput(k.y);
    k.b.addOutput(k.c);
    ApplyPass(k.b.net(), FuseResidual, 0);
  }
  {  // symbolic dims: the shapes are not known to match
    NetBuilder b("symbolic");
    const int x = b.addInput("x", fb::DataType::F32, {1, kC, "h", "w"});
    const int c = Conv(b, "conv", x, true, 1);
    b.addOutput(b.addOp(fb::OpType::Add, "add", {c, x}, {"y"})[0]);
    ApplyPass(b.net(), FuseResidual, 0);
  }
}

// A Conv with a residual takes no affine (it would scale the residual too)
// and no activation but Relu (the GPU backends apply it after the Add).
TEST(PassesFuseResidual, OtherPassesKeepTheirHandsOff) {
  Block k = ResidualBlock(false, false, true);
  k.b.addOutput(k.y);
  fb::NetT fused = ApplyPass(k.b.net(), FuseResidual, 1);
  auto after = [&](fb::OpType type) {
    NetBuilder b("after");
    b.net() = fused;
    const int y = b.net().outputs[0];
    b.net().outputs.clear();
    if (type == fb::OpType::Mul) {
      b.addOutput(b.addOp(type, "scale", {y, b.addConstant("s", {1, kC, 1, 1}, RandomFloats(kC, 9))}, {"z"})[0]);
    } else {
      b.addOutput(b.addOp(type, "act", {y}, {"z"})[0]);
    }
    return b.net();
  };
  ApplyPass(after(fb::OpType::Mul), FoldBatchNorm, 0);
  ApplyPass(after(fb::OpType::Sigmoid), FuseActivation, 0);
  ApplyPass(after(fb::OpType::Relu), FuseActivation, 1);
}

// The standard pipeline runs it.
TEST(PassesFuseResidual, InTheOptimizePipeline) {
  Block k = ResidualBlock(false, true, true);
  k.b.addOutput(k.y);
  fb::NetT net = k.b.net();
  PassReport report;
  ASSERT_TRUE(OptimizeNet(net, &report).ok());
  EXPECT_NE(report.toString().find("fuse_residual 1"), std::string::npos) << report.toString();
  EXPECT_EQ(OpTypes(net), "Conv Conv");
}

}  // namespace
}  // namespace kiln
