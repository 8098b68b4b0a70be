// The TFLite importer's QDQ form of quantized models (the whole-model checks
// against TFLite's outputs are tests/convert/tflite_quant_models_test.cpp):
// 8-bit graph inputs and outputs keep their names and types, ops between
// them compute in f32 between DequantizeLinear and QuantizeLinear, conv
// weights stay 8-bit for fuse_qdq, and bad quantization parameters are
// errors that name the tensor.
#include <gtest/gtest.h>

#include <cstring>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "kiln/passes.h"
#include "tflite_builder.h"
#include "tflite_test_util.h"

namespace kiln::test {
namespace {

namespace tfl = tflite;

StatusOr<NetBuilder> Import(const std::vector<uint8_t>& bytes, ConvertReport* rep = nullptr) {
  ConvertReport local;
  return ImportTfliteBuffer(bytes.data(), bytes.size(), {}, rep ? rep : &local);
}

const fb::TensorT* Named(const fb::NetT& net, const std::string& name) {
  for (auto& t : net.tensors)
    if (t->name == name) return t.get();
  return nullptr;
}

// int8 x -> RESHAPE -> MAX_POOL -> int8 y, all one quantization: the values
// go through DequantizeLinear, f32 ops and QuantizeLinear unchanged, and the
// graph's input and output are the 8-bit tensors under their TFLite names.
TEST(TfliteQuant, Int8GraphKeepsNamesTypesAndValues) {
  const tfl::Quantization q{{0.05f}, {-3}, 0};
  TfliteBuilder t;
  int x = t.tensor("x", {1, 2, 4, 2}, tfl::kInt8, {}, q);
  int shape = t.tensor("shape", {4}, tfl::kInt32, TfliteBuilder::Bytes(std::vector<int32_t>{1, 4, 2, 2}));
  int r = t.tensor("r", {1, 4, 2, 2}, tfl::kInt8, {}, q);
  int y = t.tensor("y", {1, 2, 1, 2}, tfl::kInt8, {}, q);
  t.op(tfl::RESHAPE, {x, shape}, {r});
  t.op(tfl::MAX_POOL_2D, {r}, {y}, tfl::kPool2DOptions,
       {B(tfl::opt::kPadding, tfl::kValid), I(tfl::opt::kStrideW, 2), I(tfl::opt::kStrideH, 2),
        I(tfl::opt::kPoolFilterW, 2), I(tfl::opt::kPoolFilterH, 2)});
  t.io({x}, {y});
  auto b = Import(t.finish());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const fb::NetT& net = b->net();
  ASSERT_EQ(net.inputs.size(), 1u);
  ASSERT_EQ(net.outputs.size(), 1u);
  EXPECT_EQ(net.tensors[static_cast<size_t>(net.inputs[0])]->name, "x");
  EXPECT_EQ(net.tensors[static_cast<size_t>(net.inputs[0])]->dtype, fb::DataType::I8);
  EXPECT_EQ(net.tensors[static_cast<size_t>(net.outputs[0])]->name, "y");
  EXPECT_EQ(net.tensors[static_cast<size_t>(net.outputs[0])]->dtype, fb::DataType::I8);
  int dq = 0, qz = 0;
  for (auto& op : net.ops) dq += op->type == fb::OpType::DequantizeLinear, qz += op->type == fb::OpType::QuantizeLinear;
  EXPECT_EQ(dq, 2);  // x and r read in f32
  EXPECT_EQ(qz, 2);  // r and y written in 8 bits

  auto bytes = b->finish();
  ASSERT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  auto s = (*interp)->createSession({});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // NHWC x [1,2,4,2] as Kiln's NCHW [1,2,2,4]; distinct values over the whole int8 range.
  std::vector<int8_t> xv(16);
  for (size_t k = 0; k < xv.size(); ++k) xv[k] = static_cast<int8_t>(static_cast<int>(k * 17 % 256) - 128);
  ASSERT_TRUE((*s)->getInput("x")->copyFromHostTensor(*Tensor::wrap({1, 2, 2, 4}, fb::DataType::I8, xv.data())).ok());
  ASSERT_TRUE((*s)->run().ok());
  std::vector<int8_t> got(4);
  ASSERT_TRUE((*s)->getOutput("y")->copyToHostTensor(Tensor::wrap({1, 2, 2, 1}, fb::DataType::I8, got.data()).get()).ok());
  // The same in NHWC: x[h][w][c] reshaped to [4][2][2], then the max of each 2x2 window.
  auto xnhwc = [&](int h, int w, int c) { return xv[static_cast<size_t>((c * 2 + h) * 4 + w)]; };
  std::vector<int8_t> flat;
  for (int h = 0; h < 2; ++h)
    for (int w = 0; w < 4; ++w)
      for (int c = 0; c < 2; ++c) flat.push_back(xnhwc(h, w, c));
  for (int c = 0; c < 2; ++c)
    for (int oy = 0; oy < 2; ++oy) {
      int8_t m = -128;
      for (int ky = 0; ky < 2; ++ky)
        for (int kx = 0; kx < 2; ++kx) m = std::max(m, flat[static_cast<size_t>(((oy * 2 + ky) * 2 + kx) * 2 + c)]);
      EXPECT_EQ(got[static_cast<size_t>(c * 2 + oy)], m) << c << "," << oy;  // Kiln's [1, C=2, H=2, W=1]
    }
}

// A quantized conv keeps its int8 weights and int32 bias behind
// DequantizeLinear (per output channel, axis 0 after OHWI -> OIHW), for fuse_qdq.
TEST(TfliteQuant, ConvWeightsStayEightBit) {
  TfliteBuilder t;
  int x = t.tensor("x", {1, 3, 3, 2}, tfl::kInt8, {}, {{0.1f}, {0}, 0});
  std::vector<int8_t> wv(2 * 2 * 2 * 2);
  for (size_t k = 0; k < wv.size(); ++k) wv[k] = static_cast<int8_t>(k * 7 % 50 - 25);
  int w = t.tensor("w", {2, 2, 2, 2}, tfl::kInt8, TfliteBuilder::Bytes(wv), {{0.01f, 0.02f}, {0, 0}, 0});
  int bias = t.tensor("bias", {2}, tfl::kInt32, TfliteBuilder::Bytes(std::vector<int32_t>{100, -100}),
                      {{0.001f, 0.002f}, {0, 0}, 0});
  int y = t.tensor("y", {1, 2, 2, 2}, tfl::kInt8, {}, {{0.2f}, {5}, 0});
  t.op(tfl::CONV_2D, {x, w, bias}, {y}, tfl::kConv2DOptions, {B(tfl::opt::kPadding, tfl::kValid)});
  t.io({x}, {y});
  auto b = Import(t.finish());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const fb::NetT& net = b->net();
  const fb::TensorT* wt = Named(net, "w");
  const fb::TensorT* bt = Named(net, "bias");
  ASSERT_TRUE(wt && bt);
  EXPECT_EQ(wt->dtype, fb::DataType::I8);
  EXPECT_EQ(bt->dtype, fb::DataType::I32);
  int per_channel = 0;
  for (auto& op : net.ops)
    if (op->type == fb::OpType::DequantizeLinear && op->params.AsAxisParams()) per_channel += op->params.AsAxisParams()->axis == 0;
  EXPECT_EQ(per_channel, 2);  // the weights' and the bias's
  // After the optimizer (kiln-convert's), one QLinearConv from x to y.
  ASSERT_TRUE(OptimizeNet(b->net()).ok());
  auto bytes = b->finish();
  ASSERT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  auto s = (*interp)->createSession({});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ((*s)->placement().ops.size(), 1u);
  EXPECT_EQ((*s)->placement().ops[0].type, "QLinearConv");
}

// Quantization the importer cannot take is refused with the tensor's name.
TEST(TfliteQuant, BadQuantizationIsNamed) {
  struct Case {
    tfl::Quantization q;
    int8_t type;
    const char* want;
  };
  const Case cases[] = {
      {{{0.f}, {0}, 0}, tfl::kInt8, "scale 0 is not positive"},
      {{{-1.f}, {0}, 0}, tfl::kInt8, "scale -1 is not positive"},
      {{{0.1f}, {300}, 0}, tfl::kInt8, "zero point 300 is out of the range of INT8"},
      {{{0.1f}, {-1}, 0}, tfl::kUInt8, "zero point -1 is out of the range of UINT8"},
      {{{0.1f}, {0, 0}, 0}, tfl::kInt8, "1 scales and 2 zero points"},
      {{{0.1f}, {0}, 0}, tfl::kInt16, "16-bit quantized activations"},
  };
  for (const Case& c : cases) {
    TfliteBuilder t;
    int x = t.tensor("x", {1, 4}, tfl::kFloat32);
    int q = t.tensor("the_tensor", {1, 4}, c.type, {}, c.q);
    int y = t.tensor("y", {1, 4}, tfl::kFloat32);
    t.op(tfl::QUANTIZE, {x}, {q});
    t.op(tfl::DEQUANTIZE, {q}, {y});
    t.io({x}, {y});
    auto b = Import(t.finish());
    ASSERT_FALSE(b.ok()) << c.want;
    EXPECT_NE(b.status().message().find(c.want), std::string::npos) << b.status().ToString();
    EXPECT_NE(b.status().message().find("the_tensor"), std::string::npos) << b.status().ToString();
  }
}

// Per-channel weight scales must match the quantized dimension.
TEST(TfliteQuant, PerChannelScalesMustMatchTheirDimension) {
  TfliteBuilder t;
  int x = t.tensor("x", {1, 3, 3, 2}, tfl::kInt8, {}, {{0.1f}, {0}, 0});
  int w = t.tensor("w", {2, 1, 1, 2}, tfl::kInt8, TfliteBuilder::Bytes(std::vector<int8_t>{1, 2, 3, 4}),
                   {{0.01f, 0.02f, 0.03f}, {0, 0, 0}, 0});
  int y = t.tensor("y", {1, 3, 3, 2}, tfl::kInt8, {}, {{0.2f}, {0}, 0});
  t.op(tfl::CONV_2D, {x, w, -1}, {y}, tfl::kConv2DOptions, {B(tfl::opt::kPadding, tfl::kValid)});
  t.io({x}, {y});
  auto b = Import(t.finish());
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("'w': 3 scales do not match its dimension 0"), std::string::npos)
      << b.status().ToString();
}

}  // namespace
}  // namespace kiln::test
