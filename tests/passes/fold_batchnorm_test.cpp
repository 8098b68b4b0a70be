// fold_batchnorm: BatchNormalization after a Conv (with or without bias,
// grouped) or a Gemm (B transposed or not, C absent / [N] / [M, N]) is
// folded into the producer's weights and bias.
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
