// QDQ models (tests/models/quant, written by tools/models/make_quant_models.py
// with tools/models/quantize_qdq.py from a small torch CNN: Conv + Relu,
// Conv + Relu6, a strided depthwise Conv, a pointwise Conv, a residual Add,
// MaxPool, GlobalAveragePool, Gemm) convert with every Conv fused into a
// QLinearConv and the residual Add into a QLinearAdd (fuse_qdq) and run on the host, Vulkan and OpenCL, each op on
// the backend asked for, within one step of the output's scale of
// onnxruntime's output on the same QDQ model (cnn_<form>.ort.npy). Two
// forms: uint8 activations with per-channel int8 weights (onnxruntime's
// default), int8 activations with per-tensor weights.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "npy.h"
#include "support/backend_compare.h"

namespace kiln {
namespace {

const std::string kDir = std::string(KILN_TEST_MODELS_DIR) + "/quant/";

struct Case {
  ForwardType backend;
  const char* form;
};

class QuantModels : public ::testing::TestWithParam<Case> {};

TEST_P(QuantModels, WithinOneStepOfOnnxRuntime) {
  const Case c = GetParam();
  KILN_REQUIRE_BACKEND(c.backend);
  auto x = ReadNpy(kDir + "cnn.input.npy");
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  auto want = ReadNpy(kDir + "cnn_" + c.form + ".ort.npy");
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  float step = 0;
  std::ifstream(kDir + "cnn_" + c.form + ".scale.txt") >> step;
  ASSERT_GT(step, 0.f);

  auto interp = LoadAnyModel(kDir + "cnn_" + c.form + ".onnx");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ScheduleConfig config;
  config.type = c.backend;
  auto s = (*interp)->createSession(config);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  int qconv = 0, qadd = 0;
  for (const OpPlacement& p : (*s)->placement().ops) {
    EXPECT_TRUE(p.reason.empty()) << p.type << ": " << p.reason;
    EXPECT_NE(p.type, "Conv") << "a Conv was left unfused";
    EXPECT_NE(p.type, "Add") << "the residual Add was left unfused";
    qconv += p.type == "QLinearConv";
    qadd += p.type == "QLinearAdd";
  }
  EXPECT_EQ(qconv, 5);  // every Conv of the model
  EXPECT_EQ(qadd, 1);   // its residual Add
  ASSERT_TRUE((*s)->getInput()->copyFromHostTensor(*Tensor::wrap(x->shape, fb::DataType::F32, x->bytes.data())).ok());
  Status st = (*s)->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<float> got(10), ref(10);
  ASSERT_EQ(want->bytes.size(), ref.size() * sizeof(float));
  std::memcpy(ref.data(), want->bytes.data(), want->bytes.size());
  ASSERT_TRUE((*s)->getOutput()->copyToHostTensor(Tensor::wrap({1, 10}, fb::DataType::F32, got.data()).get()).ok());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(std::fabs(got[i] - ref[i]), step * 1.0001f) << i;
}

// onnxruntime's com.microsoft QLinearAdd (its QOperator form) imports as
// Kiln's QLinearAdd and gives onnxruntime's bytes (the same arithmetic,
// host_fallback/ops/quant.cpp) on each backend.
class MicrosoftQLinearAdd : public ::testing::TestWithParam<ForwardType> {};

TEST_P(MicrosoftQLinearAdd, ImportsAndMatchesOnnxRuntime) {
  const ForwardType backend = GetParam();
  KILN_REQUIRE_BACKEND(backend);
  auto a = ReadNpy(kDir + "qadd_ms.a.npy");
  auto b = ReadNpy(kDir + "qadd_ms.b.npy");
  auto want = ReadNpy(kDir + "qadd_ms.ort.npy");
  ASSERT_TRUE(a.ok() && b.ok() && want.ok());
  auto interp = LoadAnyModel(kDir + "qadd_ms.onnx");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ScheduleConfig config;
  config.type = backend;
  auto s = (*interp)->createSession(config);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ((*s)->placement().ops.size(), 1u);
  EXPECT_EQ((*s)->placement().ops[0].type, "QLinearAdd");
  EXPECT_TRUE((*s)->placement().ops[0].reason.empty()) << (*s)->placement().ops[0].reason;
  ASSERT_TRUE((*s)->getInput("a")->copyFromHostTensor(*Tensor::wrap(a->shape, fb::DataType::U8, a->bytes.data())).ok());
  ASSERT_TRUE((*s)->getInput("b")->copyFromHostTensor(*Tensor::wrap(b->shape, fb::DataType::U8, b->bytes.data())).ok());
  Status st = (*s)->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<uint8_t> got(want->bytes.size());
  ASSERT_TRUE((*s)->getOutput()->copyToHostTensor(Tensor::wrap(want->shape, fb::DataType::U8, got.data()).get()).ok());
  // Kiln's QLinearAdd computes as onnxruntime's: the same bytes.
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(int{got[i]}, int{want->bytes[i]}) << i;
}

INSTANTIATE_TEST_SUITE_P(Backends, QuantModels,
                         ::testing::Values(Case{ForwardType::kHost, "qdq_u8"}, Case{ForwardType::kHost, "qdq_s8"},
                                           Case{ForwardType::kVulkan, "qdq_u8"}, Case{ForwardType::kVulkan, "qdq_s8"},
                                           Case{ForwardType::kOpenCL, "qdq_u8"}, Case{ForwardType::kOpenCL, "qdq_s8"}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(ForwardTypeName(i.param.backend)) + "_" + i.param.form;
                         });

INSTANTIATE_TEST_SUITE_P(Backends, MicrosoftQLinearAdd,
                         ::testing::Values(ForwardType::kHost, ForwardType::kVulkan, ForwardType::kOpenCL),
                         [](const ::testing::TestParamInfo<ForwardType>& i) { return ForwardTypeName(i.param); });

}  // namespace
}  // namespace kiln
