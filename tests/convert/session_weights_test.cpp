// Weights written back (MNN's getWeight / setWeight / updateSessionToModel):
// on the host, Vulkan and OpenCL, a conv's weights and bias changed in one
// session give that session the output of a model built with the new
// values (the host's packed panels and Winograd filters, the GPU's uploaded
// and repacked weights are made again), other sessions keep the old ones,
// updateSessionToModel + saveModel write a .kiln that reloads with them, and
// bad values, unknown names and use after releaseModel are errors that say
// so. (The C API's calls: tests/engine/c_api_check.c.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "support/test_models.h"
#include "support/backend_compare.h"

namespace kiln {
namespace {

constexpr int64_t kC = 8, kM = 16, kH = 12;  // 3x3 conv, 8 -> 16 channels: Winograd on the host

// x -> Conv(w, b, pad 1) -> Relu -> Conv 1x1 (w2) -> Add(shift) -> y. The
// Add reads its constant as a plain GPU buffer (uploaded once, not repacked).
std::vector<uint8_t> Model(const std::vector<float>& w, const std::vector<float>& b,
                           const std::vector<float>& shift) {
  NetBuilder nb("weights");
  const int x = nb.addInput("x", fb::DataType::F32, {1, kC, kH, kH});
  fb::ConvParamsT p;
  p.kernel_shape = {3, 3};
  p.pads = {1, 1, 1, 1};
  p.activation = fb::Activation::Relu;
  const int c = nb.addOp(fb::OpType::Conv, "conv",
                         {x, nb.addConstant("w", {kM, kC, 3, 3}, w), nb.addConstant("b", {kM}, b)}, {"c"}, p)[0];
  fb::ConvParamsT p1;
  p1.kernel_shape = {1, 1};
  const int c2 = nb.addOp(fb::OpType::Conv, "conv1x1",
                          {c, nb.addConstant("w2", {4, kM, 1, 1}, test::RandomFloats(4 * kM, 9, 0.3f))}, {"c2"}, p1)[0];
  nb.addOutput(nb.addOp(fb::OpType::Add, "shift", {c2, nb.addConstant("shift", {1, 4, 1, 1}, shift)}, {"y"})[0]);
  auto bytes = nb.finish();
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

const std::vector<float> kX = test::RandomFloats(kC * kH * kH, 1, 1.f);
const std::vector<float> kW0 = test::RandomFloats(kM * kC * 9, 2, 0.2f), kB0 = test::RandomFloats(kM, 3, 0.1f);
const std::vector<float> kW1 = test::RandomFloats(kM * kC * 9, 4, 0.3f), kB1 = test::RandomFloats(kM, 5, 0.2f);
const std::vector<float> kS0 = {0.f, 0.f, 0.f, 0.f}, kS1 = {1.f, -2.f, 3.f, -4.f};

std::vector<float> RunOnce(Session* s, bool feed = true) {
  if (feed) {
    auto x = Tensor::wrap({1, kC, kH, kH}, fb::DataType::F32, const_cast<float*>(kX.data()));
    EXPECT_TRUE(s->getInput("x")->copyFromHostTensor(*x).ok());
  }
  Status st = s->run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<float> y(4 * kH * kH);
  EXPECT_TRUE(s->getOutput("y")->copyToHostTensor(Tensor::wrap({1, 4, kH, kH}, fb::DataType::F32, y.data()).get()).ok());
  return y;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  float worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  EXPECT_LE(worst, 1e-4f) << what;
}

std::unique_ptr<Interpreter> Load(const std::vector<uint8_t>& bytes) {
  auto i = Interpreter::createFromBuffer(bytes.data(), bytes.size());
  EXPECT_TRUE(i.ok()) << i.status().ToString();
  return i.ok() ? std::move(*i) : nullptr;
}

class SessionWeights : public ::testing::TestWithParam<ForwardType> {};

TEST_P(SessionWeights, SetSaveReload) {
  KILN_REQUIRE_BACKEND(GetParam());
  ScheduleConfig config;
  config.type = GetParam();
  // What each set of weights gives, from models built with them.
  auto ref0 = Load(Model(kW0, kB0, kS0)), ref1 = Load(Model(kW1, kB1, kS1));
  ASSERT_TRUE(ref0 && ref1);
  const std::vector<float> y0 = RunOnce(*ref0->createSession(config)), y1 = RunOnce(*ref1->createSession(config));
  float diff = 0;
  for (size_t i = 0; i < y0.size(); ++i) diff = std::max(diff, std::fabs(y0[i] - y1[i]));
  ASSERT_GT(diff, 0.1f) << "the two weight sets must give different outputs";

  auto interp = Load(Model(kW0, kB0, kS0));
  ASSERT_TRUE(interp);
  auto a = interp->createSession(config), other = interp->createSession(config);
  ASSERT_TRUE(a.ok() && other.ok());
  for (const OpPlacement& p : (*a)->placement().ops) EXPECT_TRUE(p.reason.empty()) << p.type << ": " << p.reason;
  ExpectClose(RunOnce(*a), y0, "before setWeight");

  auto w = (*a)->getWeight("w");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ((*w)->shape(), (std::vector<int64_t>{kM, kC, 3, 3}));
  EXPECT_EQ(0, std::memcmp((*w)->hostData(), kW0.data(), kW0.size() * 4));

  // The input written before setWeight is kept; the new weights and bias apply.
  ASSERT_TRUE((*a)->setWeight("w", *Tensor::wrap({kM, kC, 3, 3}, fb::DataType::F32, const_cast<float*>(kW1.data()))).ok());
  ASSERT_TRUE((*a)->setWeight("b", *Tensor::wrap({kM}, fb::DataType::F32, const_cast<float*>(kB1.data()))).ok());
  ASSERT_TRUE(
      (*a)->setWeight("shift", *Tensor::wrap({1, 4, 1, 1}, fb::DataType::F32, const_cast<float*>(kS1.data()))).ok());
  ExpectClose(RunOnce(*a, false), y1, "after setWeight, input written before");
  ExpectClose(RunOnce(*a), y1, "after setWeight");
  w = (*a)->getWeight("w");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(0, std::memcmp((*w)->hostData(), kW1.data(), kW1.size() * 4));
  ExpectClose(RunOnce(*other), y0, "another session keeps its weights");

  // Bad values and names.
  Status st = (*a)->setWeight("w", *Tensor::create({kM, kC, 1, 1}));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("shape"), std::string::npos) << st.ToString();
  st = (*a)->setWeight("w", *Tensor::create({kM, kC, 3, 3}, fb::DataType::I32));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("i32"), std::string::npos) << st.ToString();
  EXPECT_EQ((*a)->setWeight("x", *Tensor::create({1, kC, kH, kH})).code(), StatusCode::kNotFound);  // an input
  EXPECT_EQ((*a)->getWeight("nope").status().code(), StatusCode::kNotFound);
  ExpectClose(RunOnce(*a), y1, "refused values change nothing");

  // Written back, saved, reloaded.
  ASSERT_TRUE(interp->updateSessionToModel(*a).ok());
  auto later = interp->createSession(config);
  ASSERT_TRUE(later.ok());
  ExpectClose(RunOnce(*later), y1, "a session created after updateSessionToModel");
  ExpectClose(RunOnce(*other), y0, "an older session keeps its weights");
  const std::string path = ::testing::TempDir() + "/weights_" + ForwardTypeName(GetParam()) + ".kiln";
  ASSERT_TRUE(interp->saveModel(path).ok());
  auto reloaded = Interpreter::createFromFile(path);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().ToString();
  auto r = (*reloaded)->createSession(config);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectClose(RunOnce(*r), y1, "the saved model, reloaded");
  unlink(path.c_str());

  // After releaseModel: nothing to write into or save; sessions still run.
  interp->releaseModel();
  st = interp->updateSessionToModel(*a);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("releaseModel"), std::string::npos) << st.ToString();
  EXPECT_FALSE(interp->saveModel(path).ok());
  ExpectClose(RunOnce(*a), y1, "after releaseModel");
  ExpectClose(RunOnce(*later), y1, "the later session after releaseModel");
}

INSTANTIATE_TEST_SUITE_P(Backends, SessionWeights,
                         ::testing::Values(ForwardType::kHost, ForwardType::kVulkan, ForwardType::kOpenCL),
                         [](const ::testing::TestParamInfo<ForwardType>& i) { return ForwardTypeName(i.param); });

}  // namespace
}  // namespace kiln
