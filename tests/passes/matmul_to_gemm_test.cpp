// matmul_to_gemm: MatMul(A [M, K], constant W [K, N]) + constant bias
// becomes one Gemm (and then takes a following activation), an N-D A one
// between two Reshapes; not for a bias that varies along A's leading dims
// or when the MatMul's output is read twice.
#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::FindOp;
using test::RandomFloats;

struct MmNet {
  NetBuilder b{"matmul_add"};
  int mm = -1, y = -1;
};

MmNet BuildMatMulAdd(std::vector<Dim> a_shape, std::vector<int64_t> bias_shape, bool bias_first) {
  MmNet n;
  int a = n.b.addInput("a", fb::DataType::F32, a_shape);
  int w = n.b.addConstant("w", {8, 6}, RandomFloats(48, 1));
  int64_t bias_n = 1;
  for (int64_t d : bias_shape) bias_n *= d;
  int bias = n.b.addConstant("bias", bias_shape, RandomFloats(static_cast<size_t>(bias_n), 2));
  n.mm = n.b.addOp(fb::OpType::MatMul, "matmul", {a, w}, {"mm"})[0];
  n.y = n.b.addOp(fb::OpType::Add, "add", bias_first ? std::vector<int>{bias, n.mm} : std::vector<int>{n.mm, bias},
                  {"y"})[0];
  return n;
}

TEST(PassesMatMulToGemm, MatMulAddBecomesGemm) {
  const std::vector<std::vector<int64_t>> biases = {{6}, {1, 6}, {4, 6}, {4, 1}, {}};
  for (const auto& bias : biases)
    for (bool first : {false, true}) {
      SCOPED_TRACE("bias rank " + std::to_string(bias.size()) + (first ? " first" : ""));
      MmNet n = BuildMatMulAdd({4, 8}, bias, first);
      n.b.addOutput(n.y);
      fb::NetT after = ApplyPass(n.b.net(), MatMulToGemm, 1);
      ASSERT_EQ(after.ops.size(), 1u) << test::OpTypes(after);
      EXPECT_EQ(after.ops[0]->type, fb::OpType::Gemm);
    }
}

TEST(PassesMatMulToGemm, ThenActivationFuses) {
  MmNet n = BuildMatMulAdd({4, 8}, {6}, false);
  int r = n.b.addOp(fb::OpType::Relu, "relu", {n.y}, {"r"})[0];
  n.b.addOutput(r);
  fb::NetT after = n.b.net();
  PassReport report;
  ASSERT_TRUE(OptimizeNet(after, &report).ok());
  ASSERT_EQ(after.ops.size(), 1u) << test::OpTypes(after);
  EXPECT_EQ(after.ops[0]->params.AsGemmParams()->activation, fb::Activation::Relu);
  EXPECT_EQ(report.toString(), "matmul_to_gemm 1, fuse_activation 1") << report.toString();
  test::ExpectSameOutputs(n.b.net(), after);
}

// An N-D A (a Linear layer on [batch, tokens, features]): Reshape into
// [M, K], Gemm with the bias, Reshape back; the same outputs, and a
// following Relu fuses into the Gemm through the Reshape.
TEST(PassesMatMulToGemm, NdInputThroughReshapes) {
  const std::vector<std::vector<int64_t>> biases = {{6}, {1, 1, 6}, {1}, {}};
  for (const auto& bias : biases)
    for (bool relu : {false, true}) {
      SCOPED_TRACE("bias rank " + std::to_string(bias.size()) + (relu ? ", relu" : ""));
      MmNet n = BuildMatMulAdd({2, 4, 8}, bias, false);
      n.b.addOutput(relu ? n.b.addOp(fb::OpType::Relu, "relu", {n.y}, {"r"})[0] : n.y);
      fb::NetT after = n.b.net();
      PassReport report;
      ASSERT_TRUE(OptimizeNet(after, &report).ok());
      EXPECT_EQ(test::OpTypes(after), "Reshape Gemm Reshape");
      EXPECT_EQ(FindOp(after, fb::OpType::Gemm)->params.AsGemmParams()->activation,
                relu ? fb::Activation::Relu : fb::Activation::None);
      test::ExpectSameOutputs(n.b.net(), after);
    }
}

TEST(PassesMatMulToGemm, NotForABiasAlongTheLeadingDims) {
  MmNet n = BuildMatMulAdd({2, 4, 8}, {4, 6}, false);
  n.b.addOutput(n.y);
  fb::NetT after = ApplyPass(n.b.net(), MatMulToGemm, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::MatMul), 1);
}

TEST(PassesMatMulToGemm, NotWhenBiasWouldGrowTheOutput) {
  MmNet n = BuildMatMulAdd({4, 8}, {2, 1, 6}, false);
  n.b.addOutput(n.y);
  fb::NetT after = ApplyPass(n.b.net(), MatMulToGemm, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::MatMul), 1);
}

TEST(PassesMatMulToGemm, NotWhenMatMulOutputIsReadTwiceOrIsOutput) {
  {
    MmNet n = BuildMatMulAdd({4, 8}, {6}, false);
    int s = n.b.addOp(fb::OpType::Sigmoid, "sigmoid", {n.mm}, {"s"})[0];
    n.b.addOutput(n.y);
    n.b.addOutput(s);
    fb::NetT after = ApplyPass(n.b.net(), MatMulToGemm, 0);
    EXPECT_EQ(CountOps(after, fb::OpType::MatMul), 1);
  }
  {
    MmNet n = BuildMatMulAdd({4, 8}, {6}, false);
    n.b.addOutput(n.y);
    n.b.addOutput(n.mm);
    fb::NetT after = ApplyPass(n.b.net(), MatMulToGemm, 0);
    EXPECT_EQ(CountOps(after, fb::OpType::MatMul), 1);
  }
}

}  // namespace
}  // namespace kiln
