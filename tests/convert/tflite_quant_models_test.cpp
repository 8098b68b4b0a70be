// Quantized TFLite models (tests/models/quant/tflite, written by
// tools/models/make_tflite_quant.py) against TFLite's own outputs
// (NAME.tflite*.npy, from LiteRT.js: TFLite's kernels), on the host, Vulkan
// and OpenCL, each op on the backend asked for:
//  - mobile_s8: f32 in and out around an int8 graph (QUANTIZE ... DEQUANTIZE;
//    per-channel conv weights, int32 biases; conv, depthwise, residual ADD,
//    PAD, MAX_POOL, HARD_SWISH, LOGISTIC, MUL, CONCATENATION, AVERAGE_POOL,
//    RESIZE_NEAREST, MEAN, RESHAPE, FULLY_CONNECTED, SOFTMAX): every conv
//    becomes a QLinearConv and the ADD a QLinearAdd; both outputs (the
//    softmax, and the 768 values of the concatenation) within one step;
//  - mobile_u8: uint8 in and out, per-tensor uint8 weights with zero points:
//    five QLinearConv, output within one step;
//  - dynamic: dynamic-range int8 weights, f32 activations: Kiln computes in
//    f32 with the weights dequantized (1e-5 of torch's f32 result on the same
//    weights), TFLite quantizes the activations on the fly (1e-2).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "npy.h"
#include "support/backend_compare.h"

namespace kiln {
namespace {

const std::string kDir = std::string(KILN_TEST_MODELS_DIR) + "/quant/tflite/";

NpyArray Load(const std::string& file) {
  auto a = ReadNpy(kDir + file);
  EXPECT_TRUE(a.ok()) << file << ": " << a.status().ToString();
  return a.ok() ? *a : NpyArray{};
}

std::vector<float> Floats(const NpyArray& a) {
  std::vector<float> v(a.bytes.size() / 4);
  std::memcpy(v.data(), a.bytes.data(), v.size() * 4);
  return v;
}

struct Placed {
  std::unique_ptr<Interpreter> interp;
  Session* session = nullptr;
  std::map<std::string, int> ops;  // placed op types, counted
};

// Converts and places `model` on `backend` (every op there), feeds its input, runs.
void Start(const std::string& model, ForwardType backend, Placed* r) {
  auto interp = LoadAnyModel(kDir + model + ".tflite");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ScheduleConfig config;
  config.type = backend;
  auto s = (*interp)->createSession(config);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (const OpPlacement& p : (*s)->placement().ops) {
    EXPECT_TRUE(p.reason.empty()) << p.type << ": " << p.reason;
    r->ops[p.type]++;
  }
  NpyArray x = Load(model + ".input.npy");
  ASSERT_TRUE((*s)->getInput("input")->copyFromHostTensor(*Tensor::wrap(x.shape, x.dtype, x.bytes.data())).ok());
  Status st = (*s)->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  r->session = *s;
  r->interp = std::move(*interp);
}

std::vector<uint8_t> Output(Session& s, const char* name, const std::vector<int64_t>& shape, fb::DataType dtype,
                            size_t bytes) {
  std::vector<uint8_t> v(bytes);
  Status st = s.getOutput(name)->copyToHostTensor(Tensor::wrap(shape, dtype, v.data()).get());
  EXPECT_TRUE(st.ok()) << name << ": " << st.ToString();
  return v;
}

// Values within `step` of the reference (a quantization step: 1.0001 steps
// allowed for f32 rounding), and at least `exact_share` of them equal.
void ExpectSteps(const std::vector<float>& got, const std::vector<float>& want, float step, double exact_share) {
  ASSERT_EQ(got.size(), want.size());
  size_t exact = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::fabs(got[i] - want[i]), step * 1.0001f) << i << ": " << got[i] << " vs " << want[i];
    exact += got[i] == want[i];
  }
  EXPECT_GE(static_cast<double>(exact), exact_share * static_cast<double>(got.size()))
      << exact << " of " << got.size() << " equal";
}

class TfliteQuantModels : public ::testing::TestWithParam<ForwardType> {};

TEST_P(TfliteQuantModels, Int8MobileNetLikeMatchesTflite) {
  KILN_REQUIRE_BACKEND(GetParam());
  Placed r;
  ASSERT_NO_FATAL_FAILURE(Start("mobile_s8", GetParam(), &r));
  EXPECT_EQ(r.ops["QLinearConv"], 5);  // conv, depthwise, 1x1, the padded VALID conv, the strided depthwise
  EXPECT_EQ(r.ops["QLinearAdd"], 1);
  EXPECT_EQ(r.ops["Conv"], 0) << "a conv was left in f32";
  EXPECT_EQ(r.ops["Add"], 0) << "the residual ADD was left in f32";
  NpyArray want = Load("mobile_s8.tflite.npy");
  std::vector<uint8_t> got = Output(*r.session, "output", {1, 10}, fb::DataType::F32, 40);
  std::vector<float> g(10);
  std::memcpy(g.data(), got.data(), 40);
  ExpectSteps(g, Floats(want), 1.f / 256, 0.7);

  // The concatenation, [1, 4, 4, 48] NHWC in TFLite, NCHW in Kiln.
  float step = 0;
  std::ifstream(kDir + "mobile_s8.features.scale.txt") >> step;
  ASSERT_GT(step, 0.f);
  NpyArray fw = Load("mobile_s8.tflite.1.npy");
  ASSERT_EQ(fw.shape, (std::vector<int64_t>{1, 4, 4, 48}));
  std::vector<uint8_t> feat = Output(*r.session, "features", {1, 48, 4, 4}, fb::DataType::F32, 768 * 4);
  std::vector<float> nchw(768), nhwc(768);
  std::memcpy(nchw.data(), feat.data(), feat.size());
  for (int c = 0; c < 48; ++c)
    for (int p = 0; p < 16; ++p) nhwc[static_cast<size_t>(p * 48 + c)] = nchw[static_cast<size_t>(c * 16 + p)];
  ExpectSteps(nhwc, Floats(fw), step, 0.9);
}

TEST_P(TfliteQuantModels, Uint8PerTensorMatchesTflite) {
  KILN_REQUIRE_BACKEND(GetParam());
  Placed r;
  ASSERT_NO_FATAL_FAILURE(Start("mobile_u8", GetParam(), &r));
  EXPECT_EQ(r.ops["QLinearConv"], 5);
  EXPECT_EQ(r.ops["Conv"], 0);
  NpyArray want = Load("mobile_u8.tflite.npy");
  ASSERT_EQ(want.dtype, fb::DataType::U8);
  std::vector<uint8_t> got = Output(*r.session, "output", {1, 10}, fb::DataType::U8, 10);
  int exact = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(int{got[i]} - int{want.bytes[i]}), 1) << i;
    exact += got[i] == want.bytes[i];
  }
  EXPECT_GE(exact, 7);
}

TEST_P(TfliteQuantModels, DynamicRangeComputesInF32) {
  KILN_REQUIRE_BACKEND(GetParam());
  Placed r;
  ASSERT_NO_FATAL_FAILURE(Start("dynamic", GetParam(), &r));
  EXPECT_EQ(r.ops["DequantizeLinear"], 0) << "the int8 weights are folded to f32 at load";
  std::vector<uint8_t> got = Output(*r.session, "output", {1, 10}, fb::DataType::F32, 40);
  std::vector<float> g(10);
  std::memcpy(g.data(), got.data(), 40);
  const std::vector<float> f32 = Floats(Load("dynamic.f32.npy")), tfl = Floats(Load("dynamic.tflite.npy"));
  ASSERT_EQ(f32.size(), 10u);
  ASSERT_EQ(tfl.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_NEAR(g[i], f32[i], 1e-5f) << i;
    EXPECT_NEAR(g[i], tfl[i], 1e-2f) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TfliteQuantModels,
                         ::testing::Values(ForwardType::kHost, ForwardType::kVulkan, ForwardType::kOpenCL),
                         [](const ::testing::TestParamInfo<ForwardType>& i) { return ForwardTypeName(i.param); });

}  // namespace
}  // namespace kiln
