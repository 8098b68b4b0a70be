// fuse_qdq: DequantizeLinear -> Conv (DequantizeLinear weights, int32 or
// float bias) [-> fused Relu / Clip] -> QuantizeLinear becomes one
// QLinearConv whose output is within one step of the QDQ graph's, and a
// DequantizeLinear pair -> Add [-> Relu] -> QuantizeLinear one QLinearAdd
// (within a step of the chain: its arithmetic is onnxruntime's), and a QDQ MatMul or Gemm (its bias as QLinearMatMul's
// int32 input 8) with constant weights one QLinearMatMul; not when
// the pattern is broken (a second reader of the Conv's output, an activation
// without an integer form, per-axis activation scales, weights that are not
// constants). FoldConstants keeps DequantizeLinear of 8-bit constants for
// it; FoldDequantize folds what it left.
#include <cmath>

#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::CountOps;
using test::OpTypes;
using test::RandomFeeds;
using test::RunNet;

constexpr float kSx = 0.02f, kSy = 0.05f;

struct Options {
  bool relu = false;
  bool sigmoid = false;      // a fused activation with no integer form
  bool second_reader = false;
  bool per_axis_x = false;   // activations quantized per channel
  bool weights_input = false;  // quantized weights from a graph input
  bool float_bias = false;
};

// x [1, 4, 6, 6] -> Q -> DQ -> Conv(DQ(w int8, per channel), bias) [-> Relu]
// -> Q -> DQ -> y (and the Conv's output as a second output when asked).
fb::NetT QdqConv(const Options& o) {
  NetBuilder b("qdq");
  const int x = b.addInput("x", fb::DataType::F32, {1, 4, 6, 6});
  const std::vector<int64_t> xs_shape = o.per_axis_x ? std::vector<int64_t>{4} : std::vector<int64_t>{};
  const int sx = b.addConstant("sx", xs_shape, std::vector<float>(o.per_axis_x ? 4 : 1, kSx));
  const std::vector<uint8_t> zx(o.per_axis_x ? 4 : 1, 128);
  const int zxt = b.addConstant("zx", fb::DataType::U8, xs_shape, zx.data(), zx.size());
  const int xq = b.addOp(fb::OpType::QuantizeLinear, "qx", {x, sx, zxt}, {"xq"})[0];
  const int xd = b.addOp(fb::OpType::DequantizeLinear, "dqx", {xq, sx, zxt}, {"xd"})[0];
  std::vector<int8_t> w(6 * 4 * 9);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(static_cast<int>((i * 37 + 11) % 255) - 127);
  const int wq = o.weights_input ? b.addInput("wq", fb::DataType::I8, {6, 4, 3, 3})
                                 : b.addConstant("wq", fb::DataType::I8, {6, 4, 3, 3}, w.data(), w.size());
  const std::vector<float> sw = {0.01f, 0.02f, 0.005f, 0.015f, 0.008f, 0.011f};
  const int swt = b.addConstant("sw", {6}, sw);
  const std::vector<int8_t> zw(6, 0);
  const int zwt = b.addConstant("zw", fb::DataType::I8, {6}, zw.data(), zw.size());
  fb::AxisParamsT axis;
  axis.axis = 0;
  const int wd = b.addOp(fb::OpType::DequantizeLinear, "dqw", {wq, swt, zwt}, {"wd"}, axis)[0];
  int bias;
  if (o.float_bias) {
    bias = b.addConstant("bias", {6}, std::vector<float>{0.1f, -0.2f, 0.05f, 0.f, 0.3f, -0.07f});
  } else {
    std::vector<float> sb(6);
    for (size_t i = 0; i < 6; ++i) sb[i] = kSx * sw[i];
    const int bq = b.addConstant("bq", {6}, std::vector<int32_t>{250, -500, 500, 0, 1000, -350});
    const int sbt = b.addConstant("sb", {6}, sb);
    const int zbt = b.addConstant("zb", {6}, std::vector<int32_t>(6, 0));
    bias = b.addOp(fb::OpType::DequantizeLinear, "dqb", {bq, sbt, zbt}, {"bd"}, axis)[0];
  }
  fb::ConvParamsT p;
  p.kernel_shape = {3, 3};
  p.pads = {1, 1, 1, 1};
  if (o.sigmoid) p.activation = fb::Activation::Sigmoid;
  int c = b.addOp(fb::OpType::Conv, "conv", {xd, wd, bias}, {"c"}, p)[0];
  if (o.relu) c = b.addOp(fb::OpType::Relu, "relu", {c}, {"r"})[0];
  const int sy = b.addConstant("sy", {}, std::vector<float>{kSy});
  const uint8_t zy_v = 3;
  const int zy = b.addConstant("zy", fb::DataType::U8, {}, &zy_v, 1);
  const int yq = b.addOp(fb::OpType::QuantizeLinear, "qy", {c, sy, zy}, {"yq"})[0];
  const int y = b.addOp(fb::OpType::DequantizeLinear, "dqy", {yq, sy, zy}, {"y"})[0];
  b.addOutput(y);
  if (o.second_reader) b.addOutput(c);
  // The 8-bit intermediates' dtypes, as the ONNX importer gives them.
  EXPECT_TRUE(InferDtypes(b.net()).ok());
  return b.net();
}

// The pass pipeline up to fuse_qdq (fuse_activation first, as OptimizeNet).
fb::NetT Fused(const fb::NetT& net, int want_fused) {
  fb::NetT after = net;
  EXPECT_TRUE(FuseActivation(after).ok());
  StatusOr<int> n = FuseQdq(after);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  if (n.ok()) {
    EXPECT_EQ(*n, want_fused) << OpTypes(after);
  }
  EXPECT_TRUE(RemoveDeadCode(after).ok());
  return after;
}

// y of both nets on the same inputs: within one step of kSy, and mostly equal.
void ExpectWithinOneStep(const fb::NetT& before, const fb::NetT& after) {
  test::Feeds feeds = RandomFeeds(before, 11);
  for (auto& [name, f] : feeds)
    for (float& v : f.values) v *= 2.f;
  auto want = RunNet(before, feeds);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto got = RunNet(after, feeds);
  ASSERT_TRUE(got.ok()) << got.status().ToString() << "\nops: " << OpTypes(after);
  size_t differ = 0;
  for (size_t i = 0; i < (*want)[0].size(); ++i) {
    const float d = std::fabs((*got)[0][i] - (*want)[0][i]);
    EXPECT_LE(d, kSy * 1.001f) << i;
    differ += d > 0;
  }
  EXPECT_LT(differ, (*want)[0].size() / 20);
}

TEST(PassesFuseQdq, ConvBecomesQLinearConv) {
  for (bool relu : {false, true})
    for (bool float_bias : {false, true}) {
      SCOPED_TRACE(std::string(relu ? "relu" : "none") + (float_bias ? ", float bias" : ", int32 bias"));
      Options o;
      o.relu = relu;
      o.float_bias = float_bias;
      const fb::NetT net = QdqConv(o);
      const fb::NetT after = Fused(net, 1);
      EXPECT_EQ(CountOps(after, fb::OpType::QLinearConv), 1) << OpTypes(after);
      EXPECT_EQ(CountOps(after, fb::OpType::Conv), 0) << OpTypes(after);
      EXPECT_EQ(CountOps(after, fb::OpType::Relu), 0) << OpTypes(after);
      // Only the graph's own Q (input) and DQ (output) are left.
      EXPECT_EQ(CountOps(after, fb::OpType::DequantizeLinear), 1) << OpTypes(after);
      ExpectWithinOneStep(net, after);
    }
}

// x, r [1, 8, 5, 5] -> Q -> DQ each -> Add [-> Relu] -> Q -> DQ -> y.
fb::NetT QdqAdd(bool relu, bool mixed_types) {
  NetBuilder b("qdq_add");
  int dq[2];
  for (int k = 0; k < 2; ++k) {
    const std::string n = k == 0 ? "x" : "r";
    const int x = b.addInput(n, fb::DataType::F32, {1, 8, 5, 5});
    const int s = b.addConstant(n + "_s", {}, std::vector<float>{k == 0 ? 0.02f : 0.03f});
    const bool i8 = mixed_types && k == 1;
    const uint8_t z = i8 ? 0 : 128;
    const int zt = b.addConstant(n + "_z", i8 ? fb::DataType::I8 : fb::DataType::U8, {}, &z, 1);
    const int q = b.addOp(fb::OpType::QuantizeLinear, n + "_q", {x, s, zt}, {n + "q"})[0];
    dq[k] = b.addOp(fb::OpType::DequantizeLinear, n + "_dq", {q, s, zt}, {n + "d"})[0];
  }
  int sum = b.addOp(fb::OpType::Add, "add", {dq[0], dq[1]}, {"sum"})[0];
  if (relu) sum = b.addOp(fb::OpType::Relu, "relu", {sum}, {"sum_relu"})[0];
  const int sy = b.addConstant("sy", {}, std::vector<float>{0.04f});
  const uint8_t zy_v = 100;
  const int zy = b.addConstant("zy", fb::DataType::U8, {}, &zy_v, 1);
  const int yq = b.addOp(fb::OpType::QuantizeLinear, "qy", {sum, sy, zy}, {"yq"})[0];
  b.addOutput(b.addOp(fb::OpType::DequantizeLinear, "dqy", {yq, sy, zy}, {"y"})[0]);
  EXPECT_TRUE(InferDtypes(b.net()).ok());
  return b.net();
}

TEST(PassesFuseQdq, AddBecomesQLinearAddWithinAStep) {
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "relu" : "none");
    const fb::NetT net = QdqAdd(relu, false);
    const fb::NetT after = Fused(net, 1);
    EXPECT_EQ(CountOps(after, fb::OpType::QLinearAdd), 1) << OpTypes(after);
    EXPECT_EQ(CountOps(after, fb::OpType::Add) + CountOps(after, fb::OpType::Relu), 0) << OpTypes(after);
    // QLinearAdd rounds the sum as onnxruntime does (quant.cpp), the chain
    // through its own f32 steps: within one step of the output's scale.
    test::Feeds feeds = RandomFeeds(net, 5);
    auto want = RunNet(net, feeds);
    auto got = RunNet(after, feeds);
    ASSERT_TRUE(want.ok() && got.ok());
    ASSERT_EQ((*got)[0].size(), (*want)[0].size());
    for (size_t i = 0; i < (*got)[0].size(); ++i)
      EXPECT_LE(std::fabs((*got)[0][i] - (*want)[0][i]), 0.04f * 1.001f) << i;
  }
  // int8 and uint8 operands: QLinearAdd takes one type, so the chain stays.
  const fb::NetT mixed = Fused(QdqAdd(false, true), 0);
  EXPECT_EQ(CountOps(mixed, fb::OpType::Add), 1) << OpTypes(mixed);
}

// x -> QuantizeLinear -> DequantizeLinear (kSx, zero point zx, uint8): the
// dequantized x.
int QdqInput(NetBuilder& b, int x, uint8_t zx_v) {
  const int sx = b.addConstant("sx", {}, std::vector<float>{kSx});
  const int zx = b.addConstant("zx", fb::DataType::U8, {}, &zx_v, 1);
  const int xq = b.addOp(fb::OpType::QuantizeLinear, "qx", {x, sx, zx}, {"xq"})[0];
  return b.addOp(fb::OpType::DequantizeLinear, "dqx", {xq, sx, zx}, {"xd"})[0];
}

// int8 weights w of `shape`, dequantized along `axis` by sw (zero points 0).
int QdqWeights(NetBuilder& b, const std::vector<int8_t>& w, const std::vector<int64_t>& shape,
               const std::vector<float>& sw, int64_t axis) {
  const int64_t n = static_cast<int64_t>(sw.size());
  const int wq = b.addConstant("wq", fb::DataType::I8, shape, w.data(), w.size());
  const int swt = b.addConstant("sw", {n}, sw);
  const std::vector<int8_t> zw(sw.size(), 0);
  const int zwt = b.addConstant("zw", fb::DataType::I8, {n}, zw.data(), zw.size());
  fb::AxisParamsT p;
  p.axis = axis;
  return b.addOp(fb::OpType::DequantizeLinear, "dqw", {wq, swt, zwt}, {"wd"}, p)[0];
}

// y -> QuantizeLinear -> DequantizeLinear (kSy, zero point zy) -> the graph
// output; the 8-bit intermediates' dtypes inferred as the importer does.
void QdqOutput(NetBuilder& b, int y, uint8_t zy_v) {
  const int sy = b.addConstant("sy", {}, std::vector<float>{kSy});
  const int zy = b.addConstant("zy", fb::DataType::U8, {}, &zy_v, 1);
  const int yq = b.addOp(fb::OpType::QuantizeLinear, "qy", {y, sy, zy}, {"yq"})[0];
  b.addOutput(b.addOp(fb::OpType::DequantizeLinear, "dqy", {yq, sy, zy}, {"y"})[0]);
  EXPECT_TRUE(InferDtypes(b.net()).ok());
}

// x [2, 3, 16] -> Q -> DQ -> MatMul(DQ(w int8 [16, 8], per column)) -> Q -> DQ -> y.
fb::NetT QdqMatMul() {
  NetBuilder b("qdq_matmul");
  const int xd = QdqInput(b, b.addInput("x", fb::DataType::F32, {2, 3, 16}), 128);
  std::vector<int8_t> w(16 * 8);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(static_cast<int>((i * 53 + 5) % 241) - 120);
  std::vector<float> sw(8);
  for (size_t i = 0; i < 8; ++i) sw[i] = 0.004f + 0.001f * static_cast<float>(i);
  const int wd = QdqWeights(b, w, {16, 8}, sw, 1);
  QdqOutput(b, b.addOp(fb::OpType::MatMul, "mm", {xd, wd}, {"mm"})[0], 120);
  return b.net();
}

TEST(PassesFuseQdq, MatMulBecomesQLinearMatMul) {
  const fb::NetT net = QdqMatMul();
  const fb::NetT after = Fused(net, 1);
  EXPECT_EQ(CountOps(after, fb::OpType::QLinearMatMul), 1) << OpTypes(after);
  EXPECT_EQ(CountOps(after, fb::OpType::MatMul), 0) << OpTypes(after);
  ExpectWithinOneStep(net, after);
}

enum class GemmBias { kNone, kInt32, kFloat };

// x [3, 16] -> Q -> DQ -> Gemm(DQ(w int8, [8, 16] per row when trans_b,
// else [16, 8] per column), bias) -> Q -> DQ -> y.
fb::NetT QdqGemm(bool trans_b, GemmBias bias_kind, float alpha = 1.f) {
  NetBuilder b("qdq_gemm");
  const int xd = QdqInput(b, b.addInput("x", fb::DataType::F32, {3, 16}), 100);
  std::vector<int8_t> w(16 * 8);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(static_cast<int>((i * 61 + 7) % 251) - 125);
  std::vector<float> sw(8);
  for (size_t i = 0; i < 8; ++i) sw[i] = 0.003f + 0.0015f * static_cast<float>(i);
  const int wd = trans_b ? QdqWeights(b, w, {8, 16}, sw, 0) : QdqWeights(b, w, {16, 8}, sw, 1);
  std::vector<int> ins = {xd, wd};
  if (bias_kind == GemmBias::kFloat) {
    ins.push_back(b.addConstant("bias", {8}, std::vector<float>{0.1f, -0.2f, 0.05f, 0.f, 0.3f, -0.07f, 0.6f, -1.f}));
  } else if (bias_kind == GemmBias::kInt32) {
    std::vector<float> sb(8);
    for (size_t i = 0; i < 8; ++i) sb[i] = kSx * sw[i];
    const int bq = b.addConstant("bq", {8}, std::vector<int32_t>{250, -500, 500, 0, 1000, -350, 4000, -3000});
    const int sbt = b.addConstant("sb", {8}, sb);
    fb::AxisParamsT b_axis;
    b_axis.axis = 0;
    ins.push_back(b.addOp(fb::OpType::DequantizeLinear, "dqb", {bq, sbt}, {"bd"}, b_axis)[0]);
  }
  fb::GemmParamsT p;
  p.trans_b = trans_b;
  p.alpha = alpha;
  QdqOutput(b, b.addOp(fb::OpType::Gemm, "gemm", ins, {"g"}, p)[0], 130);
  return b.net();
}

TEST(PassesFuseQdq, GemmBecomesQLinearMatMulWithItsBias) {
  for (bool trans_b : {true, false})
    for (GemmBias bias : {GemmBias::kNone, GemmBias::kInt32, GemmBias::kFloat}) {
      SCOPED_TRACE(std::string(trans_b ? "transB" : "B") + " bias " + std::to_string(static_cast<int>(bias)));
      const fb::NetT net = QdqGemm(trans_b, bias);
      const fb::NetT after = Fused(net, 1);
      EXPECT_EQ(CountOps(after, fb::OpType::QLinearMatMul), 1) << OpTypes(after);
      EXPECT_EQ(CountOps(after, fb::OpType::Gemm), 0) << OpTypes(after);
      for (const auto& op : after.ops) {
        if (op->type == fb::OpType::QLinearMatMul) {
          EXPECT_EQ(op->inputs.size(), bias == GemmBias::kNone ? 8u : 9u);
        }
      }
      ExpectWithinOneStep(net, after);
    }
  // alpha is not 1: the Gemm stays float.
  const fb::NetT scaled = Fused(QdqGemm(true, GemmBias::kInt32, 0.5f), 0);
  EXPECT_EQ(CountOps(scaled, fb::OpType::Gemm), 1) << OpTypes(scaled);
}

TEST(PassesFuseQdq, BrokenPatternsStay) {
  Options two;
  two.second_reader = true;
  Options sig;
  sig.sigmoid = true;
  Options axis;
  axis.per_axis_x = true;
  Options dyn;
  dyn.weights_input = true;
  for (const Options& o : {two, sig, axis, dyn}) {
    const fb::NetT after = Fused(QdqConv(o), 0);
    EXPECT_EQ(CountOps(after, fb::OpType::QLinearConv), 0) << OpTypes(after);
    EXPECT_EQ(CountOps(after, fb::OpType::Conv), 1) << OpTypes(after);
  }
}

TEST(PassesFuseQdq, QuantizedWeightsStayForTheFusionThenFold) {
  Options sig;  // not fusable: its weights' DequantizeLinear is folded last
  sig.sigmoid = true;
  fb::NetT net = QdqConv(sig);
  const int dq = CountOps(net, fb::OpType::DequantizeLinear);
  ASSERT_TRUE(FoldConstants(net).ok());
  EXPECT_EQ(CountOps(net, fb::OpType::DequantizeLinear), dq) << OpTypes(net);
  StatusOr<int> n = FoldDequantize(net);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2);  // weights and bias
  EXPECT_EQ(CountOps(net, fb::OpType::DequantizeLinear), dq - 2) << OpTypes(net);
  // The whole pipeline on the fusable form leaves one QLinearConv.
  fb::NetT full = QdqConv(Options{});
  ASSERT_TRUE(OptimizeNet(full).ok());
  EXPECT_EQ(CountOps(full, fb::OpType::QLinearConv), 1) << OpTypes(full);
  EXPECT_EQ(CountOps(full, fb::OpType::Conv), 0) << OpTypes(full);
}

}  // namespace
}  // namespace kiln
