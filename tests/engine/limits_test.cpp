// Hostile shapes computed at resize: sizes whose product reaches or wraps past
// 2^63 (Reshape, Expand, Tile, Pad, Resize), the tensor and session limits of
// ScheduleConfig, and windowed ops whose work is set by their parameters.
// Each must fail resize with a status naming the op and the shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "checked_math.h"
#include "kiln/interpreter.h"
#include "kiln/net_builder.h"

namespace kiln {
namespace {

std::unique_ptr<Interpreter> Load(NetBuilder& b) {
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  return std::move(interp).value();
}

// A graph x -> op(x, values) -> y with an i64 constant as input 1.
std::unique_ptr<Interpreter> WithValues(fb::OpType type, const std::vector<int64_t>& x_shape,
                                        const std::vector<int64_t>& values, fb::OpParamsUnion params = {}) {
  NetBuilder b("hostile");
  int x = b.addInput("x", fb::DataType::F32, std::vector<Dim>(x_shape.begin(), x_shape.end()));
  int v = b.addConstant("values", {static_cast<int64_t>(values.size())}, values);
  b.addOutput(b.addOp(type, "hostile_op", {x, v}, {"y"}, std::move(params))[0]);
  return Load(b);
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A graph x -> Conv(x, w) -> y, the op named `name`; w a constant of ones,
// or a second input when weights_input.
std::unique_ptr<Interpreter> ConvNet(const std::string& name, const std::vector<Dim>& x_shape,
                                     const std::vector<int64_t>& w_shape, fb::ConvParamsT conv,
                                     bool weights_input = false) {
  NetBuilder b(name);
  int x = b.addInput("x", fb::DataType::F32, x_shape);
  int w = weights_input ? b.addInput("w", fb::DataType::F32, std::vector<Dim>(w_shape.begin(), w_shape.end()))
                        : b.addConstant("w", w_shape, std::vector<float>(static_cast<size_t>(Elements(w_shape)), 1.f));
  fb::OpParamsUnion p;
  p.Set(conv);
  b.addOutput(b.addOp(fb::OpType::Conv, name, {x, w}, {"y"}, p)[0]);
  return Load(b);
}

Status CreateAndResize(Interpreter& interp, const ScheduleConfig& config = {}) {
  auto s = interp.createSession(config);
  if (!s.ok()) return s.status();
  return interp.resizeSession(*s);
}

TEST(Limits, CheckedMath) {
  int64_t n = 0;
  EXPECT_TRUE(CheckedElementCount({2, 3, 4}, &n));
  EXPECT_EQ(n, 24);
  EXPECT_FALSE(CheckedElementCount({int64_t{1} << 32, int64_t{1} << 32}, &n));
  EXPECT_FALSE(CheckedElementCount({-1, 4}, &n));
  size_t bytes = 0;
  EXPECT_FALSE(CheckedShapeBytes({int64_t{1} << 62}, 4, &bytes));
  EXPECT_TRUE(CheckedShapeBytes({0, int64_t{1} << 62}, 4, &bytes));
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(SatMul(int64_t{1} << 40, int64_t{1} << 40), kDimOverflow);
  EXPECT_EQ(SatAdd(kDimOverflow, 1), kDimOverflow);
  EXPECT_EQ(DimFromDouble(1e30), kDimOverflow);
  EXPECT_EQ(DimFromDouble(std::numeric_limits<double>::quiet_NaN()), kDimOverflow);
  EXPECT_EQ(DimFromDouble(7.9), 7);
}

// A Reshape whose element count wraps to the input's (2^62 * 4 = 2^64 = 0
// mod 2^64) used to pass and write a wrapped shape; now it is refused.
TEST(Limits, ReshapeWrappingToTheInputsCount) {
  auto interp = WithValues(fb::OpType::Reshape, {1, 4}, {int64_t{1} << 62, 4, 4});
  Status s = CreateAndResize(*interp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'hostile_op'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cannot reshape"), std::string::npos) << s.message();
}

TEST(Limits, TileExpandPadResizePastTheLimit) {
  struct Case {
    fb::OpType type;
    std::vector<int64_t> x, values;
    const char* shape;  // the refused output shape, as printed
  };
  fb::ResizeParamsT resize;
  const Case cases[] = {
      {fb::OpType::Tile, {2, 3}, {int64_t{1} << 40, int64_t{1} << 40}, "exceeds the tensor limit"},
      {fb::OpType::Expand, {1, 1}, {int64_t{1} << 31, int64_t{1} << 31}, "[2147483648,2147483648]"},
      {fb::OpType::Pad, {1, 1}, {0, 0, 0, int64_t{1} << 60}, "exceeds the tensor limit"},
  };
  for (const Case& c : cases) {
    auto interp = WithValues(c.type, c.x, c.values);
    Status s = CreateAndResize(*interp);
    ASSERT_FALSE(s.ok()) << fb::EnumNameOpType(c.type);
    EXPECT_NE(s.message().find("'hostile_op'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(c.shape), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("tensor limit"), std::string::npos) << s.message();
  }
  // Resize with huge sizes (input 3) and with a scale that overflows int64.
  for (bool by_sizes : {true, false}) {
    NetBuilder b("resize");
    int x = b.addInput("x", fb::DataType::F32, {1, 3, 4, 8});
    std::vector<int> in = {x, -1};
    if (by_sizes) {
      in.push_back(-1);
      in.push_back(b.addConstant("sizes", {4}, std::vector<int64_t>{1, 3, int64_t{1} << 32, 8}));
    } else {
      in.push_back(b.addConstant("scales", {4}, std::vector<float>{1.f, 1.f, 1e30f, 1.f}));
    }
    fb::OpParamsUnion p;
    p.Set(resize);
    b.addOutput(b.addOp(fb::OpType::Resize, "Resize_3", in, {"y"}, p)[0]);
    auto interp = Load(b);
    Status s = CreateAndResize(*interp);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("op 0 'Resize_3' (Resize): output 'y'"), std::string::npos) << s.message();
    if (by_sizes) {
      EXPECT_NE(s.message().find("[1,3,4294967296,8]"), std::string::npos) << s.message();
    }
  }
}

// maxTensorBytes and maxSessionBytes: a model that fits by default is refused
// under smaller limits, with the limit in the message.
TEST(Limits, ConfiguredTensorAndSessionLimits) {
  NetBuilder b("two_relus");
  int x = b.addInput("x", fb::DataType::F32, {1, 1024});
  int r = b.addOp(fb::OpType::Relu, "relu", {x}, {"r"})[0];
  b.addOutput(b.addOp(fb::OpType::Neg, "neg", {r}, {"y"})[0]);
  auto interp = Load(b);
  EXPECT_TRUE(CreateAndResize(*interp).ok());
  ScheduleConfig small;
  small.maxTensorBytes = 4000;  // one tensor is 4096 bytes
  Status s = CreateAndResize(*interp, small);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exceeds the tensor limit (4000 bytes)"), std::string::npos) << s.message();
  ScheduleConfig pool;
  pool.maxSessionBytes = 5000;  // input + output + intermediate: more than 8 KiB
  s = CreateAndResize(*interp, pool);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOutOfMemory);
  EXPECT_NE(s.message().find("exceeds the session memory limit (5000 bytes)"), std::string::npos) << s.message();
}

// An empty tensor whose other dims are huge ([1,3,100663301,0]) sizes the
// loops and tables of the kernels that walk it: found by the convert-then-run
// fuzzer (a conv's tap table of 2.4 GB for an empty output).
TEST(Limits, EmptyTensorWithHugeDims) {
  NetBuilder b("empty");
  int x = b.addInput("x", fb::DataType::F32, {1, 3, 100663301, 0});
  b.addOutput(b.addOp(fb::OpType::Relu, "relu", {x}, {"y"})[0]);
  auto interp = Load(b);
  ScheduleConfig config;
  config.maxTensorBytes = size_t{16} << 20;
  Status s = CreateAndResize(*interp, config);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("input 'x' [1,3,100663301,0] exceeds the tensor limit (16777216 bytes) in its non-empty "
                             "dims"),
            std::string::npos)
      << s.message();
}

// Resize of an empty axis to a non-empty one has nothing to read: found by
// the convert-then-run fuzzer (the nearest kernel read past the input).
TEST(Limits, ResizeFromAnEmptyAxis) {
  NetBuilder b("resize_empty");
  int x = b.addInput("x", fb::DataType::F32, {1, 1, 0, 4});
  int sizes = b.addConstant("sizes", {4}, std::vector<int64_t>{1, 1, 4, 4});
  fb::ResizeParamsT p;
  fb::OpParamsUnion u;
  u.Set(p);
  b.addOutput(b.addOp(fb::OpType::Resize, "resize", {x, -1, -1, sizes}, {"y"}, u)[0]);
  auto interp = Load(b);
  Status s = CreateAndResize(*interp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Resize: axis 2 of the input is empty; it cannot be resized to 4"), std::string::npos)
      << s.message();
}

// A Conv with pads of 65536 used to run for 85 s and take 10 GB; its padded
// input is now bounded by the tensor limit.
TEST(Limits, ConvWithHugePadsIsBounded) {
  fb::ConvParamsT conv;
  conv.kernel_shape = {3, 3};
  conv.pads = {65536, 65536, 65536, 65536};
  auto interp = ConvNet("conv_pads", {1, 1, 7, 7}, {1, 1, 3, 3}, conv);
  ScheduleConfig config;
  config.maxTensorBytes = size_t{1} << 30;
  Status s = CreateAndResize(*interp, config);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'conv_pads'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("tensor limit"), std::string::npos) << s.message();

  // Tensors within the limit, but the work is not: 126x126 outputs of 63x63
  // taps each (an im2col of 252 MB). Found by the convert-then-run fuzzer:
  // the host conv's tap table took 2.4 GB.
  fb::ConvParamsT wide;
  wide.kernel_shape = {63, 63};
  wide.pads = {62, 62, 62, 62};
  interp = ConvNet("conv_work", {1, 1, 64, 64}, {1, 1, 63, 63}, wide);
  ScheduleConfig small;
  small.maxTensorBytes = size_t{64} << 20;
  s = CreateAndResize(*interp, small);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("op 0 'conv_work' (Conv): its work [126,126,1,63,63]"), std::string::npos)
      << s.message();
  EXPECT_TRUE(CreateAndResize(*interp).ok());  // the default limit lets it run

  // A kernel window of 10^6 x 10^6 taps (dilations) on a small input.
  NetBuilder d("dilations");
  int x = d.addInput("x", fb::DataType::F32, {1, 1, 7, 7});
  fb::PoolParamsT pool;
  pool.kernel_shape = {2, 2};
  pool.dilations = {1 << 30, 1 << 30};
  pool.pads = {1 << 30, 1 << 30, 1 << 30, 1 << 30};
  fb::OpParamsUnion pp;
  pp.Set(pool);
  d.addOutput(d.addOp(fb::OpType::MaxPool, "pool_dil", {x}, {"y"}, pp)[0]);
  interp = Load(d);
  s = CreateAndResize(*interp, config);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'pool_dil'"), std::string::npos) << s.message();
}

// A quantized conv's work is its im2col too (outputs' pixels times the taps
// of its weights, input 3 of QLinearConv), not its outputs times its window
// as a pool's: a ResNet stem (64 channels of 112x112 outputs, 7x7 window)
// is 157 MB counted as a pool, 1.8 MB as a conv, and was refused on
// lavapipe's 128 MiB limit.
TEST(Limits, QuantizedConvWorkIsItsIm2col) {
  NetBuilder b("qstem");
  int x = b.addInput("x", fb::DataType::U8, {1, 3, 224, 224});
  const uint8_t zx = 128, zy = 128;
  const std::vector<int8_t> w(64 * 3 * 7 * 7, 1), zw(64, 0);
  int sx = b.addConstant("sx", {}, std::vector<float>{0.02f});
  int zxt = b.addConstant("zx", fb::DataType::U8, {}, &zx, 1);
  int wt = b.addConstant("w", fb::DataType::I8, {64, 3, 7, 7}, w.data(), w.size());
  int sw = b.addConstant("sw", {64}, std::vector<float>(64, 0.004f));
  int zwt = b.addConstant("zw", fb::DataType::I8, {64}, zw.data(), zw.size());
  int sy = b.addConstant("sy", {}, std::vector<float>{0.05f});
  int zyt = b.addConstant("zy", fb::DataType::U8, {}, &zy, 1);
  fb::ConvParamsT p;
  p.kernel_shape = {7, 7};
  p.strides = {2, 2};
  p.pads = {3, 3, 3, 3};
  fb::OpParamsUnion u;
  u.Set(p);
  int y = b.addOp(fb::OpType::QLinearConv, "qstem", {x, sx, zxt, wt, sw, zwt, sy, zyt}, {"y"}, u)[0];
  b.net().tensors[static_cast<size_t>(y)]->dtype = fb::DataType::U8;
  b.addOutput(y);
  auto interp = Load(b);
  ScheduleConfig lavapipe;
  lavapipe.maxTensorBytes = size_t{128} << 20;
  EXPECT_TRUE(CreateAndResize(*interp, lavapipe).ok());
  ScheduleConfig small;
  small.maxTensorBytes = size_t{1} << 20;  // the im2col [112,112,3,7,7] of f32 is 7.4 MB
  Status s = CreateAndResize(*interp, small);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("its work [112,112,3,7,7]"), std::string::npos) << s.message();
}

// A stride of 2^30 across a 7-wide input: one output column, but the
// strided path's phase planes (one for each of the s_h x s_w phases, each
// at least a column wide) would take 2^30 x 4 rows x 4 bytes a channel (the
// convert-then-run fuzzer found a stride of 1936019969: 162 GB asked, an
// allocator abort). It now takes the implicit GEMM, which needs no scratch.
TEST(Limits, HugeStrideNeedsNoPhasePlanes) {
  fb::ConvParamsT conv;
  conv.kernel_shape = {3, 3};
  conv.strides = {2, 1 << 30};
  conv.pads = {1, 1, 1, 1};
  auto interp = ConvNet("conv_strided", {1, 1, 7, 7}, {1, 1, 3, 3}, conv);
  ScheduleConfig config;
  config.maxSessionBytes = size_t{64} << 20;
  auto session = interp->createSession(config);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session* s = *session;
  ASSERT_TRUE(interp->resizeSession(s).ok());
  Tensor* in = s->getInput("x");
  std::fill(in->host<float>(), in->host<float>() + 49, 1.f);
  Status run = interp->runSession(s);
  ASSERT_TRUE(run.ok()) << run.ToString();
  const Tensor* y = s->getOutput();
  ASSERT_EQ(y->shape(), (std::vector<int64_t>{1, 1, 4, 1}));
  // Column 0 sees input columns 0-1 (the pad before them); rows 2 oy - 1
  // to 2 oy + 1, of which the first and last window have two inside.
  const std::vector<float> expect = {4.f, 6.f, 6.f, 4.f};
  EXPECT_EQ(std::vector<float>(y->host<float>(), y->host<float>() + 4), expect);
}

// A Conv whose weights are an input unfolds its input for the GEMM: 64
// channels of 64x64 under a 3x3 kernel are 9.4 MB of scratch, past a
// session limit of 4 MB that its tensors (1.1 MB) fit. Resize fails naming
// the op and the buffer; the default limit lets it run.
TEST(Limits, ConvScratchPastTheSessionLimit) {
  fb::ConvParamsT conv;
  conv.kernel_shape = {3, 3};
  conv.pads = {1, 1, 1, 1};
  auto interp = ConvNet("conv_unfold", {1, 64, 64, 64}, {1, 64, 3, 3}, conv, /*weights_input=*/true);
  ScheduleConfig config;
  config.maxSessionBytes = size_t{4} << 20;
  Status s = CreateAndResize(*interp, config);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'conv_unfold' (Conv): scratch for the unfolded input of 9437184 bytes exceeds the "
                             "session memory limit"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(CreateAndResize(*interp).ok());
}

}  // namespace
}  // namespace kiln
