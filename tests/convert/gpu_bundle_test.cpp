// Ahead-of-time bundles of GPU sessions (Interpreter::saveBundle on a Vulkan
// or OpenCL session, kiln-compile --backend vulkan|opencl): the bundle
// carries the driver state with the device and driver it was made on; a
// session of that backend takes it and computes the same bytes; a bundle
// for another device, or whose state is damaged, compiles as a model does
// and the placement says why; a host session of it ignores the state.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <functional>

#include "kiln/format.h"
#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "support/backend_compare.h"
#include "support/test_models.h"

namespace kiln {
namespace {

constexpr int64_t kC = 8, kM = 16, kH = 10;

// x -> Conv 3x3 (Relu) -> Conv 1x1 -> Add(constant) -> Sigmoid -> y: several
// kernels, so several programs / pipelines.
std::vector<uint8_t> Model() {
  NetBuilder nb("gpu_bundle");
  const int x = nb.addInput("x", fb::DataType::F32, {1, kC, kH, kH});
  fb::ConvParamsT p;
  p.kernel_shape = {3, 3};
  p.pads = {1, 1, 1, 1};
  p.activation = fb::Activation::Relu;
  int t = nb.addOp(fb::OpType::Conv, "conv",
                   {x, nb.addConstant("w", {kM, kC, 3, 3}, test::RandomFloats(kM * kC * 9, 2, 0.2f)),
                    nb.addConstant("b", {kM}, test::RandomFloats(kM, 3, 0.1f))},
                   {"c"}, p)[0];
  fb::ConvParamsT p1;
  p1.kernel_shape = {1, 1};
  t = nb.addOp(fb::OpType::Conv, "conv1x1", {t, nb.addConstant("w2", {4, kM, 1, 1}, test::RandomFloats(4 * kM, 9, 0.3f))},
               {"c2"}, p1)[0];
  t = nb.addOp(fb::OpType::Add, "shift", {t, nb.addConstant("shift", {1, 4, 1, 1}, std::vector<float>{1.f, -2.f, 3.f, -4.f})},
               {"s"})[0];
  nb.addOutput(nb.addOp(fb::OpType::Sigmoid, "sig", {t}, {"y"})[0]);
  auto bytes = nb.finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

// y of a session of `interp` on `type` (x fixed); *out: the session.
std::vector<float> RunOn(Interpreter& interp, ForwardType type, Session** out = nullptr) {
  ScheduleConfig config;
  config.type = type;
  auto s = interp.createSession(config);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  std::vector<float> x = test::RandomFloats(kC * kH * kH, 1, 1.f);
  EXPECT_TRUE((*s)->getInput("x")->copyFromHostTensor(*Tensor::wrap({1, kC, kH, kH}, fb::DataType::F32, x.data())).ok());
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<float> y(4 * kH * kH);
  EXPECT_TRUE(
      (*s)->getOutput("y")->copyToHostTensor(Tensor::wrap({1, 4, kH, kH}, fb::DataType::F32, y.data()).get()).ok());
  if (out) *out = *s;
  return y;
}

std::string Temp(const char* name) {
  return ::testing::TempDir() + "/" + name + std::to_string(getpid()) + ".kbundle";
}

void Edit(const std::string& path, const std::function<void(fb::NetT&)>& edit) {
  auto interp = Interpreter::createFromFile(path);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  std::unique_ptr<fb::NetT> net((*interp)->net().UnPack());
  edit(*net);
  NetBuilder b(net->name);
  b.net() = std::move(*net);
  ASSERT_TRUE(b.writeFile(path).ok());
}

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class GpuBundle : public ::testing::TestWithParam<ForwardType> {};

TEST_P(GpuBundle, StateTakenOnItsDeviceOnlyAndSameBytes) {
  KILN_REQUIRE_BACKEND(GetParam());
  const std::string name = ForwardTypeName(GetParam());
  const std::vector<uint8_t> model = Model();
  auto interp = Interpreter::createFromBuffer(model.data(), model.size());
  ASSERT_TRUE(interp.ok());
  Session* s = nullptr;
  const std::vector<float> want = RunOn(**interp, GetParam(), &s);
  ASSERT_EQ(s->placement().ops_per_backend.count(name), 1u) << s->placement().toString();
  const std::string path = Temp("gpu");
  ASSERT_TRUE((*interp)->saveBundle(s, path).ok());

  {  // What the bundle holds.
    auto b = Interpreter::createFromFile(path);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    const fb::Bundle* bundle = (*b)->net().bundle();
    ASSERT_NE(bundle, nullptr);
    EXPECT_EQ(bundle->backend()->str(), name);
    ASSERT_NE(bundle->device(), nullptr);
    EXPECT_TRUE(Has(bundle->device()->str(), name + "|")) << bundle->device()->str();
    ASSERT_NE(bundle->device_cache(), nullptr);
    EXPECT_GT(bundle->device_cache()->size(), 16u);
  }
  auto same = Interpreter::createFromFile(path);
  ASSERT_TRUE(same.ok());
  Session* t = nullptr;
  std::vector<float> got = RunOn(**same, GetParam(), &t);
  EXPECT_TRUE(Has(t->placement().bundle, name + ": ") && Has(t->placement().bundle, "taken from it"))
      << t->placement().bundle;
  if (GetParam() == ForwardType::kOpenCL) {  // every program the model needs came as a binary
    EXPECT_FALSE(Has(t->placement().bundle, ": 0 program binaries")) << t->placement().bundle;
  }
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)));

  // Another device or driver: compiled as usual, and said why.
  Edit(path, [](fb::NetT& net) { net.bundle->device = "vulkan|another GPU|driver 1"; });
  auto other = Interpreter::createFromFile(path);
  ASSERT_TRUE(other.ok());
  got = RunOn(**other, GetParam(), &t);
  EXPECT_TRUE(Has(t->placement().bundle, "state not used: made for 'vulkan|another GPU|driver 1'"))
      << t->placement().bundle;
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)));

  // Damaged state for this device: never a crash, never other output.
  unlink(path.c_str());
  ASSERT_TRUE((*interp)->saveBundle(s, path).ok());
  Edit(path, [](fb::NetT& net) {
    for (size_t i = 0; i < net.bundle->device_cache.size(); ++i) net.bundle->device_cache[i] ^= 0x5a;
  });
  auto damaged = Interpreter::createFromFile(path);
  ASSERT_TRUE(damaged.ok());
  got = RunOn(**damaged, GetParam(), &t);
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float))) << t->placement().bundle;
  if (GetParam() == ForwardType::kOpenCL) {
    EXPECT_TRUE(Has(t->placement().bundle, "does not parse")) << t->placement().bundle;
  }

  // A host session of a GPU bundle: no GPU state wanted, the model runs.
  const std::vector<float> host_want = RunOn(**interp, ForwardType::kHost);
  got = RunOn(**damaged, ForwardType::kHost, &t);
  EXPECT_EQ(0, std::memcmp(got.data(), host_want.data(), host_want.size() * sizeof(float)));
  unlink(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuBundle, ::testing::Values(ForwardType::kVulkan, ForwardType::kOpenCL),
                         [](const ::testing::TestParamInfo<ForwardType>& i) { return ForwardTypeName(i.param); });

}  // namespace
}  // namespace kiln
