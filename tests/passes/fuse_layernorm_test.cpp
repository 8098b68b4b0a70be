// fuse_layernorm: LayerNorm as torch exports it before opset 17 becomes one
// LayerNormalization(axis -1); not over another axis, not when an
// intermediate is read twice or is a graph output.
#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::FindOp;
using test::RandomFloats;

struct LnNet {
  NetBuilder b{"layernorm"};
  int y = -1, mean = -1, var = -1;
};

// x [2, 5, 8] -> the decomposed LayerNorm over `axis` (scale/bias over 8).
LnNet BuildLayerNorm(int axis, bool with_bias, bool swap_operands, std::vector<Dim> dims = {2, 5, 8}) {
  LnNet n;
  NetBuilder& b = n.b;
  int x = b.addInput("x", fb::DataType::F32, dims);
  fb::ReduceParamsT rp;
  rp.axes = {axis};
  int m = b.addOp(fb::OpType::ReduceMean, "mean", {x}, {"m"}, rp)[0];
  int d = b.addOp(fb::OpType::Sub, "sub", {x, m}, {"d"})[0];
  int two = b.addConstant("two", {}, std::vector<float>{2.f});
  int p = b.addOp(fb::OpType::Pow, "pow", {d, two}, {"p"})[0];
  int v = b.addOp(fb::OpType::ReduceMean, "var", {p}, {"v"}, rp)[0];
  int eps = b.addConstant("eps", {}, std::vector<float>{1e-5f});
  int ve = b.addOp(fb::OpType::Add, "add_eps", swap_operands ? std::vector<int>{eps, v} : std::vector<int>{v, eps},
                   {"ve"})[0];
  int s = b.addOp(fb::OpType::Sqrt, "sqrt", {ve}, {"s"})[0];
  int q = b.addOp(fb::OpType::Div, "div", {d, s}, {"q"})[0];
  std::vector<float> scale_v = RandomFloats(8, 1);
  for (float& f : scale_v) f += 1.5f;
  int scale = b.addConstant("ln.weight", {8}, scale_v);
  int y = b.addOp(fb::OpType::Mul, "mul", swap_operands ? std::vector<int>{scale, q} : std::vector<int>{q, scale},
                  {"y1"})[0];
  if (with_bias) {
    int bias = b.addConstant("ln.bias", {8}, RandomFloats(8, 2));
    y = b.addOp(fb::OpType::Add, "add_bias", swap_operands ? std::vector<int>{bias, y} : std::vector<int>{y, bias},
                {"y"})[0];
  }
  n.y = y;
  n.mean = m;
  n.var = v;
  return n;
}

TEST(PassesFuseLayerNorm, TorchExport) {
  for (int axis : {-1, 2})
    for (bool bias : {true, false})
      for (bool swap : {false, true}) {
        SCOPED_TRACE("axis " + std::to_string(axis) + " bias " + std::to_string(bias) + " swap " +
                     std::to_string(swap));
        LnNet n = BuildLayerNorm(axis, bias, swap);
        n.b.addOutput(n.y);
        fb::NetT after = ApplyPass(n.b.net(), FuseLayerNorm, 1);
        ASSERT_EQ(after.ops.size(), 1u) << test::OpTypes(after);
        const fb::OpT& ln = *after.ops[0];
        EXPECT_EQ(ln.type, fb::OpType::LayerNormalization);
        EXPECT_EQ(ln.inputs.size(), bias ? 3u : 2u);
        ASSERT_NE(ln.params.AsNormParams(), nullptr);
        EXPECT_EQ(ln.params.AsNormParams()->axis, -1);
        EXPECT_FLOAT_EQ(ln.params.AsNormParams()->epsilon, 1e-5f);
      }
}

TEST(PassesFuseLayerNorm, SymbolicLeadingDims) {
  LnNet n = BuildLayerNorm(-1, true, false, {"batch", "seq", 8});
  n.b.addOutput(n.y);
  fb::NetT after = ApplyPass(n.b.net(), FuseLayerNorm, 1);
  EXPECT_EQ(CountOps(after, fb::OpType::LayerNormalization), 1);
}

TEST(PassesFuseLayerNorm, NotOverAnotherAxis) {
  LnNet n = BuildLayerNorm(1, true, false, {2, 8, 8});
  n.b.addOutput(n.y);
  fb::NetT after = ApplyPass(n.b.net(), FuseLayerNorm, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::LayerNormalization), 0);
}

TEST(PassesFuseLayerNorm, NotWhenMeanIsReadTwice) {
  LnNet n = BuildLayerNorm(-1, true, false);
  int z = n.b.addOp(fb::OpType::Add, "join", {n.y, n.mean}, {"z"})[0];
  n.b.addOutput(z);
  fb::NetT after = ApplyPass(n.b.net(), FuseLayerNorm, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::LayerNormalization), 0);
}

TEST(PassesFuseLayerNorm, NotWhenVarianceIsGraphOutput) {
  LnNet n = BuildLayerNorm(-1, true, false);
  n.b.addOutput(n.y);
  n.b.addOutput(n.var);
  fb::NetT after = ApplyPass(n.b.net(), FuseLayerNorm, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::LayerNormalization), 0);
}

}  // namespace
}  // namespace kiln
