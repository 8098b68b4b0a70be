// A model computing in float16 (tests/models/fp16/cnn_fp16.onnx, written by
// tools/models/onnx_to_fp16.py --test-model from a small torch CNN: f16
// weights, activations, input and output) converts and runs on the host,
// Vulkan and OpenCL, every op on the backend asked for, its f16 output
// within 1e-3 of the float32 model's (cnn.onnx) on the same input: the
// upcast_fp16 pass computes it in f32 behind Casts at its input and output.
#include <gtest/gtest.h>

#include "half.h"
#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "npy.h"
#include "support/backend_compare.h"

namespace kiln {
namespace {

const std::string kDir = std::string(KILN_TEST_MODELS_DIR) + "/fp16/";

class Fp16Models : public ::testing::TestWithParam<ForwardType> {};

TEST_P(Fp16Models, HalfPrecisionCnnMatchesTheFloatModel) {
  KILN_REQUIRE_BACKEND(GetParam());
  auto x = ReadNpy(kDir + "cnn.input.npy");
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  const size_t n = x->bytes.size() / 4;
  std::vector<float> xf(n);
  std::memcpy(xf.data(), x->bytes.data(), n * 4);

  auto ref_interp = LoadAnyModel(kDir + "cnn.onnx");
  ASSERT_TRUE(ref_interp.ok()) << ref_interp.status().ToString();
  auto ref = (*ref_interp)->createSession(ScheduleConfig{});
  ASSERT_TRUE(ref.ok());
  ASSERT_TRUE((*ref)->getInput()->copyFromHostTensor(*Tensor::wrap(x->shape, fb::DataType::F32, xf.data())).ok());
  ASSERT_TRUE((*ref)->run().ok());
  std::vector<float> want(10);
  ASSERT_TRUE((*ref)->getOutput()->copyToHostTensor(Tensor::wrap({1, 10}, fb::DataType::F32, want.data()).get()).ok());

  auto interp = LoadAnyModel(kDir + "cnn_fp16.onnx");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ScheduleConfig c;
  c.type = GetParam();
  auto s = (*interp)->createSession(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (const OpPlacement& p : (*s)->placement().ops) EXPECT_TRUE(p.reason.empty()) << p.type << ": " << p.reason;
  Tensor* in = (*s)->getInput();
  ASSERT_EQ(in->dtype(), fb::DataType::F16);  // the app's view stays f16
  std::vector<uint16_t> xh(n);
  for (size_t i = 0; i < n; ++i) xh[i] = FloatToHalf(xf[i]);
  ASSERT_TRUE(in->copyFromHostTensor(*Tensor::wrap(x->shape, fb::DataType::F16, xh.data())).ok());
  Status st = (*s)->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  Tensor* out = (*s)->getOutput();
  ASSERT_EQ(out->dtype(), fb::DataType::F16);
  ASSERT_EQ(out->name(), "probs");
  std::vector<uint16_t> yh(10);
  ASSERT_TRUE(out->copyToHostTensor(Tensor::wrap({1, 10}, fb::DataType::F16, yh.data()).get()).ok());
  for (size_t i = 0; i < 10; ++i) EXPECT_NEAR(HalfToFloat(yh[i]), want[i], 1e-3) << i;
}

INSTANTIATE_TEST_SUITE_P(Backends, Fp16Models,
                         ::testing::Values(ForwardType::kHost, ForwardType::kVulkan, ForwardType::kOpenCL),
                         [](const ::testing::TestParamInfo<ForwardType>& i) { return ForwardTypeName(i.param); });

}  // namespace
}  // namespace kiln
