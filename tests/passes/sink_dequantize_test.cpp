// sink_dequantize: a per-tensor DequantizeLinear of an 8-bit activation moves
// below the ops that only move values (Transpose, Reshape, Concat of one
// quantization, ...), which then run on the 8-bit tensors, and a
// QuantizeLinear of a DequantizeLinear with the same parameters goes; the
// outputs stay the same. Not across different scales, nor for constants.
#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::OpTypes;

struct Quant {
  int scale, zero;
};

Quant AddQuant(NetBuilder& b, const std::string& name, float scale, uint8_t zero) {
  return {b.addConstant(name + "_s", {}, std::vector<float>{scale}),
          b.addConstant(name + "_z", fb::DataType::U8, {}, &zero, 1)};
}

int Qdq(NetBuilder& b, int x, Quant q, const std::string& name) {
  const int xq = b.addOp(fb::OpType::QuantizeLinear, "q_" + name, {x, q.scale, q.zero}, {name + "_q"})[0];
  return b.addOp(fb::OpType::DequantizeLinear, "dq_" + name, {xq, q.scale, q.zero}, {name + "_dq"})[0];
}

// x [1,2,3,4] -> QDQ -> Transpose -> Reshape [1,2,12] -> Concat(with QDQ(x2), axis 2)
// -> QuantizeLinear [-> DequantizeLinear -> y]; x2's quantization `s2`, the last one's `s3`.
fb::NetT Chain(float s2, float s3, bool float_output) {
  NetBuilder b("chain");
  const int x = b.addInput("x", fb::DataType::F32, {1, 2, 3, 4});
  const int x2 = b.addInput("x2", fb::DataType::F32, {1, 2, 12});
  const Quant q1 = AddQuant(b, "a", 0.01f, 100), q2 = AddQuant(b, "b", s2, 100), q3 = AddQuant(b, "c", s3, 100);
  fb::TransposeParamsT perm;
  perm.perm = {0, 1, 3, 2};
  const int t = b.addOp(fb::OpType::Transpose, "transpose", {Qdq(b, x, q1, "x")}, {"t"}, perm)[0];
  const int r = b.addOp(fb::OpType::Reshape, "reshape", {t, b.addConstant("shape", {3}, std::vector<int64_t>{1, 2, 12})},
                        {"r"})[0];
  fb::AxisParamsT axis;
  axis.axis = 2;
  const int c = b.addOp(fb::OpType::Concat, "concat", {r, Qdq(b, x2, q2, "x2")}, {"c"}, axis)[0];
  const int cq = b.addOp(fb::OpType::QuantizeLinear, "q_c", {c, q3.scale, q3.zero}, {"cq"})[0];
  b.addOutput(float_output ? b.addOp(fb::OpType::DequantizeLinear, "dq_c", {cq, q3.scale, q3.zero}, {"y"})[0] : cq);
  EXPECT_TRUE(InferDtypes(b.net()).ok());
  return b.net();
}

fb::DataType InputType(const fb::NetT& net, fb::OpType type) {
  const fb::OpT* op = test::FindOp(net, type);
  return op ? net.tensors[static_cast<size_t>(op->inputs[0])]->dtype : fb::DataType::F32;
}

TEST(PassesSinkDequantize, MovingOpsRunOnTheEightBitTensors) {
  const fb::NetT net = Chain(0.01f, 0.01f, true);
  // Transpose, Reshape, Concat sink; the QuantizeLinear after the Concat goes.
  const fb::NetT after = ApplyPass(net, SinkDequantize, 4);
  EXPECT_EQ(InputType(after, fb::OpType::Transpose), fb::DataType::U8);
  EXPECT_EQ(InputType(after, fb::OpType::Reshape), fb::DataType::U8);
  EXPECT_EQ(InputType(after, fb::OpType::Concat), fb::DataType::U8);
  EXPECT_EQ(CountOps(after, fb::OpType::QuantizeLinear), 2) << OpTypes(after);  // the two inputs'
  fb::NetT clean = after;
  ASSERT_TRUE(RemoveDeadCode(clean).ok());
  EXPECT_EQ(CountOps(clean, fb::OpType::DequantizeLinear), 1) << OpTypes(clean);  // y's
}

TEST(PassesSinkDequantize, OtherScalesStopIt) {
  // x2 quantized with another scale: the Concat stays in f32; so does the
  // last QuantizeLinear (nothing to cancel).
  fb::NetT after = ApplyPass(Chain(0.02f, 0.01f, true), SinkDequantize, 2);
  EXPECT_EQ(InputType(after, fb::OpType::Reshape), fb::DataType::U8);
  EXPECT_EQ(InputType(after, fb::OpType::Concat), fb::DataType::F32);
  EXPECT_EQ(CountOps(after, fb::OpType::QuantizeLinear), 3);
  // Concat sinks, but the last QuantizeLinear has another scale: it stays.
  after = ApplyPass(Chain(0.01f, 0.03f, true), SinkDequantize, 3);
  EXPECT_EQ(InputType(after, fb::OpType::Concat), fb::DataType::U8);
  EXPECT_EQ(CountOps(after, fb::OpType::QuantizeLinear), 3);
}

TEST(PassesSinkDequantize, GraphOutputKeepsItsName) {
  // The QuantizeLinear writes the graph output: the Concat writes it instead.
  fb::NetT after = Chain(0.01f, 0.01f, false);
  StatusOr<int> n = SinkDequantize(after);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 4);
  ASSERT_EQ(after.outputs.size(), 1u);
  const int out = after.outputs[0];
  EXPECT_EQ(after.tensors[static_cast<size_t>(out)]->name, "cq");
  const fb::OpT* concat = test::FindOp(after, fb::OpType::Concat);
  ASSERT_TRUE(concat);
  EXPECT_EQ(concat->outputs[0], out);
  EXPECT_TRUE(InferDtypes(after).ok());
  EXPECT_EQ(after.tensors[static_cast<size_t>(out)]->dtype, fb::DataType::U8);
}

// MaxPool keeps the order of values: the pool of the quantized values is
// the quantized pool; not with Indices (two outputs).
TEST(PassesSinkDequantize, MaxPoolRunsOnTheEightBitTensor) {
  for (const bool indices : {false, true}) {
    NetBuilder b("maxpool");
    const int x = b.addInput("x", fb::DataType::F32, {1, 3, 6, 6});
    const Quant q = AddQuant(b, "a", 0.02f, 128);
    fb::PoolParamsT p;
    p.kernel_shape = {3, 3};
    p.strides = {2, 2};
    p.pads = {1, 1, 1, 1};
    std::vector<std::string> outs = {"m"};
    if (indices) outs.push_back("idx");
    const std::vector<int> m = b.addOp(fb::OpType::MaxPool, "pool", {Qdq(b, x, q, "x")}, outs, p);
    const int mq = b.addOp(fb::OpType::QuantizeLinear, "q_m", {m[0], q.scale, q.zero}, {"mq"})[0];
    b.addOutput(b.addOp(fb::OpType::DequantizeLinear, "dq_m", {mq, q.scale, q.zero}, {"y"})[0]);
    EXPECT_TRUE(InferDtypes(b.net()).ok());
    const fb::NetT after = ApplyPass(b.net(), SinkDequantize, indices ? 0 : 2);  // sunk, then the pair cancelled
    EXPECT_EQ(InputType(after, fb::OpType::MaxPool), indices ? fb::DataType::F32 : fb::DataType::U8);
  }
}

TEST(PassesSinkDequantize, ConstantsAreLeftForFoldDequantize) {
  NetBuilder b("const");
  const int x = b.addInput("x", fb::DataType::F32, {6});
  const std::vector<uint8_t> w = {1, 2, 3, 4, 5, 6};
  const int wq = b.addConstant("wq", fb::DataType::U8, {2, 3}, w.data(), w.size());
  const Quant q = AddQuant(b, "w", 0.5f, 3);
  const int wd = b.addOp(fb::OpType::DequantizeLinear, "dq_w", {wq, q.scale, q.zero}, {"wd"})[0];
  const int r = b.addOp(fb::OpType::Reshape, "reshape", {wd, b.addConstant("shape", {1}, std::vector<int64_t>{6})},
                        {"r"})[0];
  b.addOutput(b.addOp(fb::OpType::Add, "add", {x, r}, {"y"})[0]);
  ApplyPass(b.net(), SinkDequantize, 0);
}

}  // namespace
}  // namespace kiln
