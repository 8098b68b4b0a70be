// fold_batchnorm: BatchNormalization after a Conv (with or without bias,
// grouped) or a Gemm (B transposed or not, C absent / [N] / [M, N]) is
// folded into the producer's weights and bias; so are Mul / Div / Add / Sub
// by a constant scalar or per-channel vector, and not other constants.
#include <cmath>

#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::RandomFloats;

// Adds BatchNormalization(x) over `c` channels with random statistics.
int AddBn(NetBuilder& b, int x, int64_t c, const std::string& name, uint32_t seed) {
  std::vector<float> var = RandomFloats(static_cast<size_t>(c), seed + 3);
  for (float& v : var) v = 0.5f + std::fabs(v);
  int scale = b.addConstant(name + ".scale", {c}, RandomFloats(static_cast<size_t>(c), seed));
  int bias = b.addConstant(name + ".bias", {c}, RandomFloats(static_cast<size_t>(c), seed + 1));
  int mean = b.addConstant(name + ".mean", {c}, RandomFloats(static_cast<size_t>(c), seed + 2));
  int vt = b.addConstant(name + ".var", {c}, var);
  fb::NormParamsT p;
  p.epsilon = 1e-3f;
  return b.addOp(fb::OpType::BatchNormalization, name, {x, scale, bias, mean, vt}, {name + ".out"}, p)[0];
}

TEST(PassesFoldBatchNorm, ConvWithAndWithoutBias) {
  NetBuilder b("conv_bn");
  int x = b.addInput("x", fb::DataType::F32, {1, 4, 6, 6});
  int w1 = b.addConstant("w1", {8, 4, 3, 3}, RandomFloats(8 * 4 * 9, 1));
  int b1 = b.addConstant("b1", {8}, RandomFloats(8, 2));
  fb::ConvParamsT conv;
  conv.kernel_shape = {3, 3};
  conv.pads = {1, 1, 1, 1};
  int c1 = b.addOp(fb::OpType::Conv, "conv1", {x, w1, b1}, {"c1"}, conv)[0];
  int n1 = AddBn(b, c1, 8, "bn1", 10);
  // Grouped, no bias.
  int w2 = b.addConstant("w2", {8, 4, 1, 1}, RandomFloats(8 * 4, 3));
  fb::ConvParamsT grouped;
  grouped.group = 2;
  int c2 = b.addOp(fb::OpType::Conv, "conv2", {n1, w2}, {"c2"}, grouped)[0];
  int n2 = AddBn(b, c2, 8, "bn2", 20);
  b.addOutput(n2);
  fb::NetT after = ApplyPass(b.net(), FoldBatchNorm, 2);
  EXPECT_EQ(CountOps(after, fb::OpType::BatchNormalization), 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Conv), 2);
  EXPECT_EQ(after.ops.back()->inputs.size(), 3u);  // a bias was added
  EXPECT_EQ(after.tensors[static_cast<size_t>(after.ops.back()->outputs[0])]->name, "bn2.out");
}

TEST(PassesFoldBatchNorm, Gemm) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    NetBuilder b("gemm_bn");
    int x = b.addInput("x", fb::DataType::F32, {3, 5});
    fb::GemmParamsT p;
    p.trans_b = variant % 2 == 1;
    p.alpha = 0.75f;
    p.beta = 1.5f;
    int w = b.addConstant("w", p.trans_b ? std::vector<int64_t>{4, 5} : std::vector<int64_t>{5, 4},
                          RandomFloats(20, 1 + variant));
    std::vector<int> ins = {x, w};
    if (variant == 1) ins.push_back(b.addConstant("c", {4}, RandomFloats(4, 9)));
    if (variant == 2) ins.push_back(b.addConstant("c", {3, 4}, RandomFloats(12, 9)));
    if (variant == 3) ins.push_back(b.addConstant("c", {3, 1}, RandomFloats(3, 9)));
    int g = b.addOp(fb::OpType::Gemm, "gemm", ins, {"g"}, p)[0];
    int y = AddBn(b, g, 4, "bn", 30);
    b.addOutput(y);
    fb::NetT after = ApplyPass(b.net(), FoldBatchNorm, 1);
    EXPECT_EQ(CountOps(after, fb::OpType::BatchNormalization), 0);
    EXPECT_EQ(CountOps(after, fb::OpType::Gemm), 1);
  }
}

// PP-LCNet's affine blocks: Conv -> Mul(scalar, y) -> Add(y, scalar), and
// per-channel forms in every shape that broadcasts along channels only.
TEST(PassesFoldBatchNorm, ConstantAffineAfterConvAndGemm) {
  NetBuilder b("conv_affine");
  int x = b.addInput("x", fb::DataType::F32, {1, 4, 6, 6});
  int w1 = b.addConstant("w1", {8, 4, 3, 3}, RandomFloats(8 * 4 * 9, 1));
  int b1 = b.addConstant("b1", {8}, RandomFloats(8, 2));
  fb::ConvParamsT conv;
  conv.pads = {1, 1, 1, 1};
  int c1 = b.addOp(fb::OpType::Conv, "conv1", {x, w1, b1}, {"c1"}, conv)[0];
  int s1 = b.addConstant("s1", {1}, std::vector<float>{0.9f});
  int m1 = b.addOp(fb::OpType::Mul, "mul1", {s1, c1}, {"m1"})[0];  // the constant first
  int t1 = b.addConstant("t1", {}, std::vector<float>{0.25f});
  int a1 = b.addOp(fb::OpType::Add, "add1", {m1, t1}, {"a1"})[0];
  int w2 = b.addConstant("w2", {8, 8, 1, 1}, RandomFloats(64, 3));
  int c2 = b.addOp(fb::OpType::Conv, "conv2", {a1, w2}, {"c2"}, fb::ConvParamsT())[0];  // no bias
  std::vector<float> k2 = RandomFloats(8, 4);
  for (float& v : k2) v = 1.f + std::fabs(v);  // away from 0
  int d2 = b.addOp(fb::OpType::Div, "div2", {c2, b.addConstant("k2", {8, 1, 1}, k2)}, {"d2"})[0];
  int e2 = b.addOp(fb::OpType::Sub, "sub2", {d2, b.addConstant("k3", {1, 8, 1, 1}, RandomFloats(8, 5))}, {"e2"})[0];
  fb::AxisParamsT flat;
  flat.axis = 1;
  int f = b.addOp(fb::OpType::Flatten, "flat", {e2}, {"f"}, flat)[0];
  int wg = b.addConstant("wg", {288, 3}, RandomFloats(288 * 3, 6));
  int g = b.addOp(fb::OpType::Gemm, "gemm", {f, wg}, {"g"}, fb::GemmParamsT())[0];
  int y = b.addOp(fb::OpType::Add, "addg", {b.addConstant("kg", {1, 3}, RandomFloats(3, 7)), g}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = ApplyPass(b.net(), FoldBatchNorm, 5);
  EXPECT_EQ(test::OpTypes(after), "Conv Conv Flatten Gemm");
  EXPECT_EQ(after.tensors[static_cast<size_t>(after.ops.back()->outputs[0])]->name, "y");
}

// Constants that are not one value a channel, a constant divided by the
// output, and an activation between: left alone.
TEST(PassesFoldBatchNorm, NotOtherAffineForms) {
  NetBuilder b("conv_not_affine");
  int x = b.addInput("x", fb::DataType::F32, {1, 2, 4, 4});
  auto conv = [&](int in, const std::string& name, fb::Activation act) {
    fb::ConvParamsT p;
    p.activation = act;
    return b.addOp(fb::OpType::Conv, name, {in, b.addConstant(name + ".w", {2, 2, 1, 1}, RandomFloats(4, 1))},
                   {name + ".out"}, p)[0];
  };
  int c1 = conv(x, "c1", fb::Activation::None);
  int m1 = b.addOp(fb::OpType::Mul, "per_column", {c1, b.addConstant("k1", {4}, RandomFloats(4, 2))}, {"m1"})[0];
  int c2 = conv(m1, "c2", fb::Activation::None);
  int m2 = b.addOp(fb::OpType::Div, "k_over_y", {b.addConstant("k2", {}, std::vector<float>{2.f}), c2}, {"m2"})[0];
  int c3 = conv(m2, "c3", fb::Activation::Relu);
  int m3 = b.addOp(fb::OpType::Add, "after_relu", {c3, b.addConstant("k3", {}, std::vector<float>{1.f})}, {"m3"})[0];
  int c4 = conv(m3, "c4", fb::Activation::None);
  int m4 = b.addOp(fb::OpType::Sub, "k_minus_y", {b.addConstant("k4", {2, 1, 1}, RandomFloats(2, 3)), c4}, {"m4"})[0];
  b.addOutput(m4);
  fb::NetT after = ApplyPass(b.net(), FoldBatchNorm, 0);
  EXPECT_EQ(after.ops.size(), 8u);
}

TEST(PassesFoldBatchNorm, NotWhenConvOutputHasSecondReader) {
  NetBuilder b("conv_bn_shared");
  int x = b.addInput("x", fb::DataType::F32, {1, 2, 4, 4});
  int w = b.addConstant("w", {2, 2, 1, 1}, RandomFloats(4, 1));
  int c = b.addOp(fb::OpType::Conv, "conv", {x, w}, {"c"}, fb::ConvParamsT())[0];
  int n = AddBn(b, c, 2, "bn", 5);
  int r = b.addOp(fb::OpType::Relu, "relu", {c}, {"r"})[0];
  int y = b.addOp(fb::OpType::Add, "add", {n, r}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = ApplyPass(b.net(), FoldBatchNorm, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::BatchNormalization), 1);
}

TEST(PassesFoldBatchNorm, NotWhenConvOutputIsGraphOutput) {
  NetBuilder b("conv_bn_output");
  int x = b.addInput("x", fb::DataType::F32, {1, 2, 4, 4});
  int w = b.addConstant("w", {2, 2, 1, 1}, RandomFloats(4, 1));
  int c = b.addOp(fb::OpType::Conv, "conv", {x, w}, {"c"}, fb::ConvParamsT())[0];
  int n = AddBn(b, c, 2, "bn", 5);
  b.addOutput(c);
  b.addOutput(n);
  fb::NetT after = ApplyPass(b.net(), FoldBatchNorm, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::BatchNormalization), 1);
}

}  // namespace
}  // namespace kiln
