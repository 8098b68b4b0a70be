// OptimizeNet: the whole pipeline on small models mixing every pattern; the
// report lists what applied and the outputs do not change.
#include <cmath>

#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::CountOps;
using test::RandomFloats;

int Const(NetBuilder& b, const std::string& name, float v) { return b.addConstant(name, {}, std::vector<float>{v}); }

// image [1, 3, 8, 8] -> Identity -> Conv -> BN -> Relu -> Conv -> BN -> Clip(0, 6)
// -> GlobalAveragePool -> Reshape(Shape-derived) -> Gemm -> GELU pattern
// -> LayerNorm pattern -> "out". The Gelu the GELU pattern becomes then
// fuses into the Gemm.
NetBuilder BuildMixed() {
  NetBuilder b("mixed");
  int x = b.addInput("image", fb::DataType::F32, {1, 3, 8, 8});
  int xi = b.addOp(fb::OpType::Identity, "dropout", {x}, {"xi"})[0];
  fb::ConvParamsT conv;
  conv.kernel_shape = {3, 3};
  conv.pads = {1, 1, 1, 1};
  auto bn = [&](int in, int64_t c, const std::string& name, uint32_t seed) {
    std::vector<float> var = RandomFloats(static_cast<size_t>(c), seed);
    for (float& v : var) v = 0.5f + std::fabs(v);
    int s = b.addConstant(name + ".s", {c}, RandomFloats(static_cast<size_t>(c), seed + 1));
    int bb = b.addConstant(name + ".b", {c}, RandomFloats(static_cast<size_t>(c), seed + 2));
    int m = b.addConstant(name + ".m", {c}, RandomFloats(static_cast<size_t>(c), seed + 3));
    int v = b.addConstant(name + ".v", {c}, var);
    return b.addOp(fb::OpType::BatchNormalization, name, {in, s, bb, m, v}, {name + ".out"}, fb::NormParamsT())[0];
  };
  int w1 = b.addConstant("w1", {8, 3, 3, 3}, RandomFloats(8 * 27, 1));
  int c1 = b.addOp(fb::OpType::Conv, "conv1", {xi, w1}, {"c1"}, conv)[0];
  int r1 = b.addOp(fb::OpType::Relu, "relu1", {bn(c1, 8, "bn1", 10)}, {"r1"})[0];
  int w2 = b.addConstant("w2", {8, 8, 3, 3}, RandomFloats(8 * 72, 2));
  int c2 = b.addOp(fb::OpType::Conv, "conv2", {r1, w2}, {"c2"}, conv)[0];
  int lo = Const(b, "zero", 0.f), hi = Const(b, "six", 6.f);
  int r2 = b.addOp(fb::OpType::Clip, "relu6", {bn(c2, 8, "bn2", 20), lo, hi}, {"r2"})[0];
  int gap = b.addOp(fb::OpType::GlobalAveragePool, "gap", {r2}, {"gap"})[0];
  // Reshape to [N, -1] with N from Shape(gap).
  int s = b.addOp(fb::OpType::Shape, "shape", {gap}, {"gap_shape"})[0];
  int i0 = b.addConstant("i0", {1}, std::vector<int64_t>{0});
  fb::AxisParamsT ax0;
  ax0.axis = 0;
  int n = b.addOp(fb::OpType::Gather, "gather", {s, i0}, {"n"}, ax0)[0];
  int m1 = b.addConstant("m1", {1}, std::vector<int64_t>{-1});
  int shape = b.addOp(fb::OpType::Concat, "concat", {n, m1}, {"flat_shape"}, ax0)[0];
  int flat = b.addOp(fb::OpType::Reshape, "flatten", {gap, shape}, {"flat"})[0];
  int fw = b.addConstant("fc.w", {16, 8}, RandomFloats(128, 3));
  int fbias = b.addConstant("fc.b", {16}, RandomFloats(16, 4));
  fb::GemmParamsT gp;
  gp.trans_b = true;
  int fc = b.addOp(fb::OpType::Gemm, "fc", {flat, fw, fbias}, {"fc"}, gp)[0];
  // GELU (torch order).
  int d = b.addOp(fb::OpType::Div, "g_div", {fc, Const(b, "sqrt2", 1.4142135f)}, {"g_d"})[0];
  int e = b.addOp(fb::OpType::Erf, "g_erf", {d}, {"g_e"})[0];
  int a = b.addOp(fb::OpType::Add, "g_add", {e, Const(b, "one", 1.f)}, {"g_a"})[0];
  int gm = b.addOp(fb::OpType::Mul, "g_mul", {fc, a}, {"g_m"})[0];
  int g = b.addOp(fb::OpType::Mul, "g_half", {gm, Const(b, "half", 0.5f)}, {"g"})[0];
  // LayerNorm over the 16 features.
  fb::ReduceParamsT rp;
  rp.axes = {-1};
  int mean = b.addOp(fb::OpType::ReduceMean, "ln_mean", {g}, {"ln_m"}, rp)[0];
  int dd = b.addOp(fb::OpType::Sub, "ln_sub", {g, mean}, {"ln_d"})[0];
  int p = b.addOp(fb::OpType::Pow, "ln_pow", {dd, Const(b, "two", 2.f)}, {"ln_p"})[0];
  int v = b.addOp(fb::OpType::ReduceMean, "ln_var", {p}, {"ln_v"}, rp)[0];
  int ve = b.addOp(fb::OpType::Add, "ln_eps", {v, Const(b, "eps", 1e-5f)}, {"ln_ve"})[0];
  int sd = b.addOp(fb::OpType::Sqrt, "ln_sqrt", {ve}, {"ln_s"})[0];
  int q = b.addOp(fb::OpType::Div, "ln_div", {dd, sd}, {"ln_q"})[0];
  int y1 = b.addOp(fb::OpType::Mul, "ln_mul", {q, b.addConstant("ln.w", {16}, RandomFloats(16, 5))}, {"ln_y1"})[0];
  int y = b.addOp(fb::OpType::Add, "ln_add", {y1, b.addConstant("ln.b", {16}, RandomFloats(16, 6))}, {"out"})[0];
  // A branch nobody reads.
  b.addOp(fb::OpType::Sigmoid, "unused", {gap}, {"unused"});
  b.addOutput(y);
  return b;
}

TEST(PassesOptimizeNet, MixedModel) {
  NetBuilder b = BuildMixed();
  fb::NetT after = b.net();
  PassReport report;
  Status s = OptimizeNet(after, &report);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(report.toString(),
            "remove_identity 1, fold_constants 3, fold_batchnorm 2, fuse_gelu 1, fuse_layernorm 1, "
            "fuse_activation 3, dead_code 1");
  EXPECT_EQ(test::OpTypes(after), "Conv Conv GlobalAveragePool Reshape Gemm LayerNormalization");
  const fb::ConvParamsT* p1 = after.ops[0]->params.AsConvParams();
  const fb::ConvParamsT* p2 = after.ops[1]->params.AsConvParams();
  ASSERT_TRUE(p1 && p2);
  EXPECT_EQ(p1->activation, fb::Activation::Relu);
  EXPECT_EQ(p2->activation, fb::Activation::Relu6);
  // Every tensor left is used; the folded-away weights are gone.
  for (const auto& t : after.tensors) {
    EXPECT_NE(t->name, "w1");
    EXPECT_NE(t->name, "bn1.s");
    EXPECT_NE(t->name, "gap_shape");
  }
  test::ExpectSameOutputs(b.net(), after);
}

TEST(PassesOptimizeNet, TinyCnnWithSymbolicInput) {
  NetBuilder b = test::TinyCnn();
  fb::NetT after = b.net();
  PassReport report;
  ASSERT_TRUE(OptimizeNet(after, &report).ok());
  EXPECT_EQ(report.toString(), "fuse_activation 1");
  EXPECT_EQ(CountOps(after, fb::OpType::Relu), 0);
  test::ExpectSameOutputs(b.net(), after);
}

TEST(PassesOptimizeNet, NothingToDo) {
  NetBuilder b("plain");
  int x = b.addInput("x", fb::DataType::F32, {2, 2});
  int y = b.addOp(fb::OpType::Tanh, "tanh", {x}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = b.net();
  PassReport report;
  ASSERT_TRUE(OptimizeNet(after, &report).ok());
  EXPECT_TRUE(report.applied.empty());
  EXPECT_EQ(after.ops.size(), 1u);
  ASSERT_TRUE(OptimizeNet(after).ok());  // the report is optional
}

TEST(PassesOptimizeNet, RejectsMalformedNet) {
  NetBuilder b("malformed");
  int x = b.addInput("x", fb::DataType::F32, {2});
  int y = b.addOp(fb::OpType::Add, "add", {x}, {"y"})[0];  // Add needs two inputs
  b.addOutput(y);
  Status s = OptimizeNet(b.net());
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("upcast_fp16: op 0 'add': Add with 1 inputs and 1 outputs"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace kiln
