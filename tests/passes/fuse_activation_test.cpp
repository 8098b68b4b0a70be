// fuse_activation: activations after a Conv or Gemm become the producer's
// fused activation (the kinds the host kernels apply); not when the
// producer's output has a second reader or is a graph output.
#include <cmath>

#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::FindOp;
using test::RandomFloats;

// Conv [1, 3, 5, 5] -> [1, 4, 5, 5], then `act` (added by the caller).
int AddConv(NetBuilder& b, const std::string& prefix = "") {
  int x = b.addInput(prefix + "x", fb::DataType::F32, {1, 3, 5, 5});
  std::vector<float> w = RandomFloats(4 * 3 * 9, 1);
  for (float& v : w) v *= 3.f;  // outputs well beyond [-6, 6]
  int wt = b.addConstant(prefix + "w", {4, 3, 3, 3}, w);
  int bt = b.addConstant(prefix + "b", {4}, RandomFloats(4, 2));
  fb::ConvParamsT p;
  p.kernel_shape = {3, 3};
  p.pads = {1, 1, 1, 1};
  return b.addOp(fb::OpType::Conv, prefix + "conv", {x, wt, bt}, {prefix + "c"}, p)[0];
}

// Gemm [3, 6] x [5, 6]^T -> [3, 5].
int AddGemm(NetBuilder& b, const std::string& prefix = "") {
  int x = b.addInput(prefix + "x", fb::DataType::F32, {3, 6});
  std::vector<float> w = RandomFloats(5 * 6, 3);
  for (float& v : w) v *= 3.f;
  int wt = b.addConstant(prefix + "w", {5, 6}, w);
  int bt = b.addConstant(prefix + "b", {5}, RandomFloats(5, 4));
  fb::GemmParamsT p;
  p.trans_b = true;
  return b.addOp(fb::OpType::Gemm, prefix + "gemm", {x, wt, bt}, {prefix + "g"}, p)[0];
}

struct Case {
  const char* name;
  bool gemm;
  fb::Activation want;
  std::function<int(NetBuilder&, int)> act;
};

template <typename P>
const P* ParamsOf(const fb::OpT& op);
template <>
const fb::ConvParamsT* ParamsOf(const fb::OpT& op) {
  return op.params.AsConvParams();
}
template <>
const fb::GemmParamsT* ParamsOf(const fb::OpT& op) {
  return op.params.AsGemmParams();
}

TEST(PassesFuseActivation, EachKernelActivation) {
  std::vector<Case> cases = {
      {"relu", false, fb::Activation::Relu,
       [](NetBuilder& b, int x) { return b.addOp(fb::OpType::Relu, "act", {x}, {"y"})[0]; }},
      {"clip_inputs_relu6", false, fb::Activation::Relu6,
       [](NetBuilder& b, int x) {
         int lo = b.addConstant("lo", {}, std::vector<float>{0.f});
         int hi = b.addConstant("hi", {}, std::vector<float>{6.f});
         return b.addOp(fb::OpType::Clip, "act", {x, lo, hi}, {"y"})[0];
       }},
      {"clip_attrs", false, fb::Activation::Clip,
       [](NetBuilder& b, int x) {
         fb::ClipParamsT p;
         p.min = -1.5f;
         p.max = 2.f;
         return b.addOp(fb::OpType::Clip, "act", {x}, {"y"}, p)[0];
       }},
      {"clip_min_only", true, fb::Activation::Clip,
       [](NetBuilder& b, int x) {
         int lo = b.addConstant("lo", {}, std::vector<float>{-0.5f});
         return b.addOp(fb::OpType::Clip, "act", {x, lo}, {"y"})[0];
       }},
      {"hardswish", false, fb::Activation::HardSwish,
       [](NetBuilder& b, int x) { return b.addOp(fb::OpType::HardSwish, "act", {x}, {"y"})[0]; }},
      {"leaky", true, fb::Activation::LeakyRelu,
       [](NetBuilder& b, int x) {
         fb::LeakyReluParamsT p;
         p.alpha = 0.2f;
         return b.addOp(fb::OpType::LeakyRelu, "act", {x}, {"y"}, p)[0];
       }},
      {"sigmoid", true, fb::Activation::Sigmoid,
       [](NetBuilder& b, int x) { return b.addOp(fb::OpType::Sigmoid, "act", {x}, {"y"})[0]; }},
      {"gelu", true, fb::Activation::Gelu,
       [](NetBuilder& b, int x) { return b.addOp(fb::OpType::Gelu, "act", {x}, {"y"}, fb::GeluParamsT())[0]; }},
      {"relu_after_gemm", true, fb::Activation::Relu,
       [](NetBuilder& b, int x) { return b.addOp(fb::OpType::Relu, "act", {x}, {"y"})[0]; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    NetBuilder b(c.name);
    int p = c.gemm ? AddGemm(b) : AddConv(b);
    int y = c.act(b, p);
    int z = b.addOp(fb::OpType::Neg, "after", {y}, {"z"})[0];  // a reader after the activation
    b.addOutput(z);
    fb::NetT after = ApplyPass(b.net(), FuseActivation, 1);
    ASSERT_EQ(after.ops.size(), 2u) << test::OpTypes(after);
    const fb::OpT& prod = *after.ops[0];
    fb::Activation got =
        c.gemm ? ParamsOf<fb::GemmParamsT>(prod)->activation : ParamsOf<fb::ConvParamsT>(prod)->activation;
    EXPECT_EQ(got, c.want) << fb::EnumNameActivation(got);
    EXPECT_EQ(after.tensors[static_cast<size_t>(prod.outputs[0])]->name, "y");
  }
}

// y * gate(y) as two ops: Mul(c, Sigmoid(c)) becomes Silu, Mul(HardSigmoid(c),
// c) with torch's alpha 1/6 and beta 1/2 becomes HardSwish; the gate and the
// Mul both go.
TEST(PassesFuseActivation, GatedFormsBecomeOneActivation) {
  for (bool hard : {false, true}) {
    SCOPED_TRACE(hard ? "hardswish" : "silu");
    NetBuilder b("gated");
    int c = AddConv(b);
    int g;
    if (hard) {
      fb::HardSigmoidParamsT hp;
      hp.alpha = 0.1666666716337204f;  // 1/6 as torch writes it
      hp.beta = 0.5f;
      g = b.addOp(fb::OpType::HardSigmoid, "gate", {c}, {"g"}, hp)[0];
    } else {
      g = b.addOp(fb::OpType::Sigmoid, "gate", {c}, {"g"})[0];
    }
    int y = b.addOp(fb::OpType::Mul, "mul", hard ? std::vector<int>{g, c} : std::vector<int>{c, g}, {"y"})[0];
    int z = b.addOp(fb::OpType::Neg, "after", {y}, {"z"})[0];
    b.addOutput(z);
    fb::NetT after = ApplyPass(b.net(), FuseActivation, 1);
    ASSERT_EQ(after.ops.size(), 2u) << test::OpTypes(after);
    EXPECT_EQ(ParamsOf<fb::ConvParamsT>(*after.ops[0])->activation,
              hard ? fb::Activation::HardSwish : fb::Activation::Silu);
    EXPECT_EQ(after.tensors[static_cast<size_t>(after.ops[0]->outputs[0])]->name, "y");
  }
}

// Not gated forms: a HardSigmoid with other constants, a gate read twice, a
// product of the gate with another tensor (squeeze-and-excitation), and a
// Conv output with a third reader.
TEST(PassesFuseActivation, NotForOtherGatedShapes) {
  NetBuilder b("not_gated");
  int c1 = AddConv(b, "a_");
  fb::HardSigmoidParamsT hp;  // ONNX's defaults: alpha 0.2
  int g1 = b.addOp(fb::OpType::HardSigmoid, "gate1", {c1}, {"g1"}, hp)[0];
  int y1 = b.addOp(fb::OpType::Mul, "mul1", {c1, g1}, {"y1"})[0];
  int c2 = AddConv(b, "b_");
  int g2 = b.addOp(fb::OpType::Sigmoid, "gate2", {c2}, {"g2"})[0];
  int y2 = b.addOp(fb::OpType::Mul, "mul2", {c2, g2}, {"y2"})[0];
  int y2b = b.addOp(fb::OpType::Neg, "gate2_again", {g2}, {"y2b"})[0];
  int c3 = AddConv(b, "c_");
  int g3 = b.addOp(fb::OpType::Sigmoid, "gate3", {c3}, {"g3"})[0];
  int other = b.addInput("other", fb::DataType::F32, {1, 4, 5, 5});
  int y3 = b.addOp(fb::OpType::Mul, "mul3", {other, g3}, {"y3"})[0];
  int c4 = AddConv(b, "d_");
  int g4 = b.addOp(fb::OpType::Sigmoid, "gate4", {c4}, {"g4"})[0];
  int y4 = b.addOp(fb::OpType::Mul, "mul4", {c4, g4}, {"y4"})[0];
  int y4b = b.addOp(fb::OpType::Neg, "third_reader", {c4}, {"y4b"})[0];
  for (int t : {y1, y2, y2b, y3, y4, y4b}) b.addOutput(t);
  // Only gate3 goes, as a plain Sigmoid fused into its Conv (c3's one reader).
  fb::NetT after = ApplyPass(b.net(), FuseActivation, 1);
  EXPECT_EQ(CountOps(after, fb::OpType::Mul), 4);
  EXPECT_EQ(CountOps(after, fb::OpType::Sigmoid), 2);
  EXPECT_EQ(CountOps(after, fb::OpType::HardSigmoid), 1);
}

TEST(PassesFuseActivation, ConvWithoutParams) {
  NetBuilder b("no_params");
  int x = b.addInput("x", fb::DataType::F32, {1, 2, 3, 3});
  int w = b.addConstant("w", {2, 2, 1, 1}, RandomFloats(4, 1));
  int c = b.addOp(fb::OpType::Conv, "conv", {x, w}, {"c"})[0];
  int y = b.addOp(fb::OpType::Relu, "relu", {c}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = ApplyPass(b.net(), FuseActivation, 1);
  ASSERT_EQ(after.ops.size(), 1u);
  EXPECT_EQ(after.ops[0]->params.AsConvParams()->activation, fb::Activation::Relu);
}

TEST(PassesFuseActivation, NotWhenProducerOutputHasSecondReader) {
  NetBuilder b("shared");
  int c = AddConv(b);
  int r = b.addOp(fb::OpType::Relu, "relu", {c}, {"r"})[0];
  int y = b.addOp(fb::OpType::Add, "residual", {r, c}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = ApplyPass(b.net(), FuseActivation, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Relu), 1);
  EXPECT_EQ(FindOp(after, fb::OpType::Conv)->params.AsConvParams()->activation, fb::Activation::None);
}

TEST(PassesFuseActivation, NotWhenProducerOutputIsGraphOutput) {
  NetBuilder b("output");
  int g = AddGemm(b);
  int r = b.addOp(fb::OpType::Sigmoid, "sigmoid", {g}, {"r"})[0];
  b.addOutput(r);
  b.addOutput(g);
  fb::NetT after = ApplyPass(b.net(), FuseActivation, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Sigmoid), 1);
}

TEST(PassesFuseActivation, NotForUnsupportedForms) {
  // Tanh-approximated Gelu, Clip with a bound computed at run time, and an
  // activation after a MatMul (no fused activation there) all stay.
  NetBuilder b("unsupported");
  int c = AddConv(b);
  fb::GeluParamsT tanh;
  tanh.approximate = fb::GeluApproximation::Tanh;
  int y1 = b.addOp(fb::OpType::Gelu, "gelu_tanh", {c}, {"y1"}, tanh)[0];
  int x2 = b.addInput("x2", fb::DataType::F32, {3, 4});
  int w2 = b.addConstant("w2", {4, 2}, RandomFloats(8, 7));
  int mm = b.addOp(fb::OpType::MatMul, "matmul", {x2, w2}, {"mm"})[0];
  int y2 = b.addOp(fb::OpType::Relu, "relu", {mm}, {"y2"})[0];
  int lo = b.addInput("lo", fb::DataType::F32, {});
  int g = AddGemm(b, "gemm_");
  int y3 = b.addOp(fb::OpType::Clip, "clip", {g, lo}, {"y3"})[0];
  b.addOutput(y1);
  b.addOutput(y2);
  b.addOutput(y3);
  fb::NetT after = ApplyPass(b.net(), FuseActivation, 0);
  EXPECT_EQ(after.ops.size(), b.net().ops.size());
}

}  // namespace
}  // namespace kiln
