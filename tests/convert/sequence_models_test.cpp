// Recurrent and control-flow models exported from torch
// (tools/models/make_sequence_models.py wrote tests/models/sequence): each
// converted from ONNX and run on the host, Vulkan and OpenCL must match
// torch's outputs within 1e-4 (integers exactly). The VAD is also run as a
// stream, its LSTM state bound from one call to the next on the device.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "npy.h"
#include "support/backend_compare.h"

namespace kiln {
namespace {

const std::string kDir = std::string(KILN_TEST_MODELS_DIR) + "/sequence/";

double Value(const std::vector<uint8_t>& bytes, fb::DataType d, size_t i) {
  switch (d) {
    case fb::DataType::F32: return reinterpret_cast<const float*>(bytes.data())[i];
    case fb::DataType::I64: return static_cast<double>(reinterpret_cast<const int64_t*>(bytes.data())[i]);
    case fb::DataType::I32: return reinterpret_cast<const int32_t*>(bytes.data())[i];
    default: return NAN;
  }
}

void ExpectMatches(Tensor* out, const NpyArray& want, const std::string& what) {
  ASSERT_EQ(out->shape(), want.shape) << what;
  ASSERT_EQ(out->dtype(), want.dtype) << what;
  std::vector<uint8_t> got(out->byteSize());
  auto host = Tensor::wrap(out->shape(), out->dtype(), got.data());
  ASSERT_TRUE(out->copyToHostTensor(host.get()).ok()) << what;
  const bool exact = want.dtype != fb::DataType::F32;
  for (size_t i = 0; i < static_cast<size_t>(out->elementCount()); ++i) {
    const double g = Value(got, out->dtype(), i), w = Value(want.bytes, want.dtype, i);
    const double tol = exact ? 0 : 1e-4 * (1 + std::fabs(w));
    ASSERT_LE(std::fabs(g - w), tol) << what << " [" << i << "]: got " << g << ", torch " << w;
  }
}

StatusOr<NpyArray> Npy(const std::string& file) { return ReadNpy(kDir + file); }

Status Write(Session* s, const std::string& name, const NpyArray& a) {
  auto host = Tensor::wrap(a.shape, a.dtype, const_cast<uint8_t*>(a.bytes.data()));
  return s->getInput(name)->copyFromHostTensor(*host);
}

class SequenceModels : public ::testing::TestWithParam<ForwardType> {};

// Runs model `name` on the backend with its saved inputs; compares every
// saved output.
void RunModel(const std::string& name, ForwardType backend) {
  auto interp = LoadAnyModel(kDir + name + ".onnx");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ScheduleConfig c;
  c.type = backend;
  auto s = (*interp)->createSession(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  for (const OpPlacement& p : (*s)->placement().ops) EXPECT_TRUE(p.reason.empty()) << p.type << ": " << p.reason;
  std::map<std::string, NpyArray> ins;
  for (auto& [in, t] : (*s)->getInputAll()) {
    auto a = Npy(name + ".in." + in + ".npy");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE((*s)->resizeTensor(t, a->shape).ok());
    // Inputs that decide the plan (the VAD's sample rate) are written first.
    if (t->hostData()) {
      ASSERT_TRUE(Write(*s, in, *a).ok());
    }
    ins[in] = std::move(a).value();
  }
  Status st = (*s)->resize();
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (auto& [in, a] : ins) ASSERT_TRUE(Write(*s, in, a).ok()) << in;
  st = (*s)->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (auto& [out, t] : (*s)->getOutputAll()) {
    auto want = Npy(name + ".out." + out + ".npy");
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ExpectMatches(t, *want, name + " " + out + " on " + ForwardTypeName(backend));
  }
}

TEST_P(SequenceModels, VoiceActivityWithIfOnTheSampleRate) {
  KILN_REQUIRE_BACKEND(GetParam());
  RunModel("vad", GetParam());
}
TEST_P(SequenceModels, GruKeywordSpotter) {
  KILN_REQUIRE_BACKEND(GetParam());
  RunModel("kws", GetParam());
}
TEST_P(SequenceModels, BidirectionalLstmTextRecognizer) {
  KILN_REQUIRE_BACKEND(GetParam());
  RunModel("crnn", GetParam());
}
TEST_P(SequenceModels, LoopGreedyDecoder) {
  KILN_REQUIRE_BACKEND(GetParam());
  RunModel("decoder", GetParam());
}

// Five calls of the VAD with h_out -> h and c_out -> c bound: each call's
// probability matches torch's stream from a zero state.
TEST_P(SequenceModels, VoiceActivityStreamWithBoundState) {
  KILN_REQUIRE_BACKEND(GetParam());
  auto interp = LoadAnyModel(kDir + "vad.onnx");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ScheduleConfig c;
  c.type = GetParam();
  auto s = (*interp)->createSession(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session* session = *s;
  auto xs = Npy("vad.stream.x.npy"), probs = Npy("vad.stream.prob.npy");
  ASSERT_TRUE(xs.ok() && probs.ok());
  int64_t sr = 16000;
  ASSERT_TRUE(session->resizeTensor(session->getInput("sr"), {}).ok());
  ASSERT_TRUE(session->getInput("sr")->copyFromHostTensor(*Tensor::wrap({}, fb::DataType::I64, &sr)).ok());
  ASSERT_TRUE(session->resize().ok());
  ASSERT_TRUE(session->bindState("h_out", "h").ok());
  ASSERT_TRUE(session->bindState("c_out", "c").ok());
  ASSERT_TRUE(session->resetState().ok());
  const int64_t steps = xs->shape[0];
  for (int64_t k = 0; k < steps; ++k) {
    NpyArray x{fb::DataType::F32, {1, 64}, {}};
    x.bytes.assign(xs->bytes.begin() + k * 64 * 4, xs->bytes.begin() + (k + 1) * 64 * 4);
    ASSERT_TRUE(Write(session, "x", x).ok());
    Status st = session->run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    NpyArray p{fb::DataType::F32, {1, 1}, {}};
    p.bytes.assign(probs->bytes.begin() + k * 4, probs->bytes.begin() + (k + 1) * 4);
    ExpectMatches(session->getOutput("prob"), p, "step " + std::to_string(k));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SequenceModels,
                         ::testing::Values(ForwardType::kHost, ForwardType::kVulkan, ForwardType::kOpenCL),
                         [](const ::testing::TestParamInfo<ForwardType>& i) { return ForwardTypeName(i.param); });

}  // namespace
}  // namespace kiln
