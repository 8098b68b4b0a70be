// Ahead-of-time bundles (Interpreter::saveBundle, kiln-compile): a host
// session of a bundle takes every packed form in place (Winograd filters,
// conv GEMM panels per group, a Gemm's and a MatMul's B panels, fp16 panels
// at precision low) and computes the same bytes as a session that packs;
// a bundle made for other sizes or another ISA is used where it fits and
// packed again where not, saying so; a GPU session's bundle gives its host
// forms to a host session; bad bundles are
// refused by the verifier. The int8 convs' panels (either k order) too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "kiln/format.h"
#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "qgemm.h"
#include "support/test_models.h"

namespace kiln {
namespace {

// x [1, 16, H, H] -> 3x3 conv 16->32 (Winograd) -> 1x1 conv 32->24, 2 groups
// (two A panels) -> GlobalAveragePool -> Flatten -> Gemm (B [10, 24],
// transposed) -> MatMul (B [10, 6]) -> y. H symbolic ("h").
std::vector<uint8_t> Model() {
  NetBuilder b("bundle");
  const int x = b.addInput("x", fb::DataType::F32, {1, 16, Dim("h"), Dim("h")});
  fb::ConvParamsT c3;
  c3.kernel_shape = {3, 3};
  c3.pads = {1, 1, 1, 1};
  c3.activation = fb::Activation::Relu;
  int t = b.addOp(fb::OpType::Conv, "conv3x3",
                  {x, b.addConstant("w3", {32, 16, 3, 3}, test::RandomFloats(32 * 16 * 9, 1, 0.1f)),
                   b.addConstant("b3", {32}, test::RandomFloats(32, 2, 0.1f))},
                  {"c3"}, c3)[0];
  fb::ConvParamsT c1;
  c1.kernel_shape = {1, 1};
  c1.group = 2;
  t = b.addOp(fb::OpType::Conv, "conv1x1", {t, b.addConstant("w1", {24, 16, 1, 1}, test::RandomFloats(24 * 16, 3, 0.2f))}, {"c1"},
              c1)[0];
  t = b.addOp(fb::OpType::GlobalAveragePool, "gap", {t}, {"gap"})[0];
  fb::AxisParamsT fl;
  fl.axis = 1;
  t = b.addOp(fb::OpType::Flatten, "flat", {t}, {"flat"}, fl)[0];
  fb::GemmParamsT g;
  g.trans_b = true;
  t = b.addOp(fb::OpType::Gemm, "fc", {t, b.addConstant("wf", {10, 24}, test::RandomFloats(240, 4, 0.3f))}, {"fc"}, g)[0];
  b.addOutput(b.addOp(fb::OpType::MatMul, "mm", {t, b.addConstant("wm", {10, 6}, test::RandomFloats(60, 5, 0.3f))}, {"y"})[0]);
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

// y of a host session of `interp` at spatial size h (resized to it).
std::vector<float> RunAt(Interpreter& interp, int64_t h, Session** out = nullptr, Precision precision = Precision::kNormal) {
  ScheduleConfig config;
  config.precision = precision;
  auto s = interp.createSession(config);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  Tensor* x = (*s)->getInput("x");
  EXPECT_TRUE((*s)->resizeTensor(x, {1, 16, h, h}).ok());
  EXPECT_TRUE((*s)->resize().ok());
  std::vector<float> xv = test::RandomFloats(static_cast<size_t>(16 * h * h), 9, 1.f);
  EXPECT_TRUE(x->copyFromHostTensor(*Tensor::wrap({1, 16, h, h}, fb::DataType::F32, xv.data())).ok());
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<float> y(6);
  EXPECT_TRUE((*s)->getOutput("y")->copyToHostTensor(Tensor::wrap({1, 6}, fb::DataType::F32, y.data()).get()).ok());
  if (out) *out = *s;
  return y;
}

std::string Temp(const char* name) { return ::testing::TempDir() + "/" + name + std::to_string(getpid()) + ".kbundle"; }

// The bundle at `path` rewritten by `edit` (a NetT with its Bundle).
void Edit(const std::string& path, const std::function<void(fb::NetT&)>& edit) {
  auto interp = Interpreter::createFromFile(path);
  ASSERT_TRUE(interp.ok());
  std::unique_ptr<fb::NetT> net((*interp)->net().UnPack());
  edit(*net);
  NetBuilder b(net->name);
  b.net() = std::move(*net);
  ASSERT_TRUE(b.writeFile(path).ok());
}

TEST(Bundle, EveryPackedFormIsTakenInPlaceAndComputesTheSame) {
  for (Precision precision : {Precision::kNormal, Precision::kLow}) {
    SCOPED_TRACE(precision == Precision::kLow ? "precision low (fp16 panels)" : "precision normal");
    const std::vector<uint8_t> model = Model();
    auto interp = Interpreter::createFromBuffer(model.data(), model.size());
    ASSERT_TRUE(interp.ok());
    Session* packing = nullptr;
    const std::vector<float> want = RunAt(**interp, 12, &packing, precision);
    EXPECT_EQ(packing->placement().bundle, "");  // a plain model
    const std::string path = Temp("forms");
    ASSERT_TRUE((*interp)->saveBundle(packing, path).ok());

    auto bundle = Interpreter::createFromFile(path);
    ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
    ASSERT_NE((*bundle)->net().bundle(), nullptr);
    // Winograd filters, two A panels, the Gemm's and the MatMul's B panels.
    ASSERT_EQ((*bundle)->net().bundle()->blobs()->size(), 5u);
    EXPECT_EQ((*bundle)->net().bundle()->backend()->str(), "host");
    // Its input shape is fixed at the compiled one: the session resizes at creation.
    ScheduleConfig config;
    config.precision = precision;
    auto s = (*bundle)->createSession(config);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->getInput("x")->shape(), (std::vector<int64_t>{1, 16, 12, 12}));
    Session* taking = nullptr;
    const std::vector<float> got = RunAt(**bundle, 12, &taking, precision);
    EXPECT_EQ(taking->placement().bundle, "5 of its 5 prepacked forms used");
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float))) << "not the same bytes";
    // New weights for the Winograd conv: the bundle's filters of it are stale
    // now; the session packs the new ones, as a session of the plain model does.
    const std::vector<float> w3 = test::RandomFloats(32 * 16 * 9, 11, 0.2f);
    auto w3t = Tensor::wrap({32, 16, 3, 3}, fb::DataType::F32, const_cast<float*>(w3.data()));
    ASSERT_TRUE(taking->setWeight("w3", *w3t).ok());
    ASSERT_TRUE(packing->setWeight("w3", *w3t).ok());
    ASSERT_TRUE(taking->run().ok());
    ASSERT_TRUE(packing->run().ok());
    std::vector<float> a(6), b(6);
    ASSERT_TRUE(taking->getOutput("y")->copyToHostTensor(Tensor::wrap({1, 6}, fb::DataType::F32, a.data()).get()).ok());
    ASSERT_TRUE(packing->getOutput("y")->copyToHostTensor(Tensor::wrap({1, 6}, fb::DataType::F32, b.data()).get()).ok());
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "setWeight on a bundle session";
    EXPECT_NE(0, std::memcmp(a.data(), got.data(), a.size() * sizeof(float))) << "the new weights changed nothing";
    unlink(path.c_str());
  }
}

TEST(Bundle, OtherSizesIsaOrBackendPackAgain) {
  const std::vector<uint8_t> model = Model();
  auto interp = Interpreter::createFromBuffer(model.data(), model.size());
  ASSERT_TRUE(interp.ok());
  Session* s = nullptr;
  RunAt(**interp, 28, &s);
  const std::string path = Temp("sizes");
  ASSERT_TRUE((*interp)->saveBundle(s, path).ok());
  // The input fixed at 28 in the bundle: edit it back to symbolic, then run
  // at 7x7, where the 3x3 conv takes another Winograd tile (F(2x2), not
  // F(4x4): WinogradConv::Tile).
  Edit(path, [](fb::NetT& net) {
    for (auto& d : net.tensors[static_cast<size_t>(net.inputs[0])]->shape)
      if (d->size == 28) d->size = -1, d->symbol = "h";
  });
  auto other = Interpreter::createFromFile(path);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  const std::vector<float> want = RunAt(**interp, 7);
  Session* t = nullptr;
  const std::vector<float> got = RunAt(**other, 7, &t);
  EXPECT_EQ(t->placement().bundle, "4 of its 5 prepacked forms used, 1 made for other sizes (packed again)");
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)));

  // Another ISA, another backend: not used at all, and the session says why.
  std::string isa_here;
  Edit(path, [&](fb::NetT& net) {
    isa_here = net.bundle->isa;
    net.bundle->isa = "riscv-v";
  });
  auto isa = Interpreter::createFromFile(path);
  ASSERT_TRUE(isa.ok());
  RunAt(**isa, 7, &t);
  EXPECT_NE(t->placement().bundle.find("not used: packed for riscv-v"), std::string::npos) << t->placement().bundle;
  EXPECT_NE(t->placement().toString().find("bundle: host forms not used"), std::string::npos);
  // A GPU session's bundle: its host forms serve a host session too (the
  // GPU state is for sessions of that backend: tests/convert/gpu_bundle_test.cpp).
  Edit(path, [&](fb::NetT& net) {
    net.bundle->isa = isa_here;
    net.bundle->backend = "vulkan";
  });
  auto vk = Interpreter::createFromFile(path);
  ASSERT_TRUE(vk.ok());
  RunAt(**vk, 7, &t);
  EXPECT_EQ(t->placement().bundle, "4 of its 5 prepacked forms used, 1 made for other sizes (packed again)");
  unlink(path.c_str());
}

// x uint8 [1, 8, 9, 9] -> QLinearConv 3x3 (panels of the pixel kernel's
// order and rows where the CPU has it) -> QLinearConv 1x1 (plain panels
// either way) -> y uint8.
std::vector<uint8_t> QuantizedModel() {
  NetBuilder b("qbundle");
  const int x = b.addInput("x", fb::DataType::U8, {1, 8, 9, 9});
  auto u8 = [&](const std::string& name, std::vector<int64_t> shape, std::vector<uint8_t> v) {
    return b.addConstant(name, fb::DataType::U8, shape, v.data(), v.size());
  };
  auto i8 = [&](const std::string& name, std::vector<int64_t> shape, size_t n, uint32_t seed) {
    std::vector<int8_t> v(n);
    const std::vector<float> r = test::RandomFloats(n, seed, 1.f);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int8_t>(std::lround(r[i] * 100.f));
    return b.addConstant(name, fb::DataType::I8, shape, v.data(), v.size());
  };
  auto conv = [&](const std::string& name, int in, int m, int c, int k, uint32_t seed) {
    fb::ConvParamsT p;
    p.kernel_shape = {k, k};
    p.pads = std::vector<int>(4, k / 2);
    const int wz = b.addConstant(name + "_wz", fb::DataType::I8, {}, "\0", 1);
    return b.addOp(fb::OpType::QLinearConv, name,
                   {in, b.addConstant(name + "_xs", {}, std::vector<float>{0.02f}), u8(name + "_xz", {}, {117}),
                    i8(name + "_w", {m, c, k, k}, static_cast<size_t>(m * c * k * k), seed),
                    b.addConstant(name + "_ws", {}, std::vector<float>{0.01f}), wz,
                    b.addConstant(name + "_ys", {}, std::vector<float>{0.3f}), u8(name + "_yz", {}, {125})},
                   {name}, p)[0];
  };
  const int t = conv("c3", x, 13, 8, 3, 21);
  b.addOutput(b.addOp(fb::OpType::Identity, "out", {conv("c1", t, 7, 13, 1, 22)}, {"y"})[0]);
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

// y of a fresh host session of `interp`.
std::vector<uint8_t> RunQuantized(Interpreter& interp, Session** out) {
  auto s = interp.createSession({});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  std::vector<uint8_t> x(8 * 81);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 37 + 11) & 255);
  EXPECT_TRUE((*s)->getInput("x")->copyFromHostTensor(*Tensor::wrap({1, 8, 9, 9}, fb::DataType::U8, x.data())).ok());
  Status st = (*s)->run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<uint8_t> y(7 * 81);
  EXPECT_TRUE((*s)->getOutput("y")->copyToHostTensor(Tensor::wrap({1, 7, 9, 9}, fb::DataType::U8, y.data()).get()).ok());
  *out = *s;
  return y;
}

// The int8 convs' panels and row sums (the pixel kernel's or the GEMM's) are
// taken in place and compute the same bytes; a bundle made with the other
// order is packed again.
TEST(Bundle, QuantizedConvPanelsAreTakenInPlace) {
  const std::vector<uint8_t> model = QuantizedModel();
  auto interp = Interpreter::createFromBuffer(model.data(), model.size());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Session* packing = nullptr;
  const std::vector<uint8_t> want = RunQuantized(**interp, &packing);
  const std::string path = Temp("quant");
  ASSERT_TRUE((*interp)->saveBundle(packing, path).ok());
  auto bundle = Interpreter::createFromFile(path);
  ASSERT_TRUE(bundle.ok()) << bundle.status().ToString();
  ASSERT_NE((*bundle)->net().bundle(), nullptr);
  ASSERT_EQ((*bundle)->net().bundle()->blobs()->size(), 4u);  // panels and row sums of both convs
  Session* taking = nullptr;
  EXPECT_EQ(RunQuantized(**bundle, &taking), want);
  EXPECT_EQ(taking->placement().bundle, "4 of its 4 prepacked forms used");
  // The 3x3 conv's blobs are of one order; a session taking the other does
  // not read them (the 1x1's are the same either way).
  const char* env = std::getenv("KILN_HOST_QCONV_PIXELS");
  const std::string before = env ? env : "";
  setenv("KILN_HOST_QCONV_PIXELS", before == "0" ? "1" : "0", 1);
  auto other = Interpreter::createFromFile(path);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(RunQuantized(**other, &taking), want);
  const std::string said = taking->placement().bundle;
  if (env) setenv("KILN_HOST_QCONV_PIXELS", before.c_str(), 1);
  else unsetenv("KILN_HOST_QCONV_PIXELS");
  // The 3x3 conv's depth in the pixel kernel's order: 2 quads of channels, 9 taps.
  if (QPixelRows(QIsaFor(2 * 4 * 9)) != 0) EXPECT_EQ(said.rfind("2 of its 4 prepacked forms used", 0), 0u) << said;
  else EXPECT_EQ(said, "4 of its 4 prepacked forms used");  // one order only
  unlink(path.c_str());
}

TEST(Bundle, ErrorsAreNamed) {
  const std::vector<uint8_t> model = Model();
  auto interp = Interpreter::createFromBuffer(model.data(), model.size());
  ASSERT_TRUE(interp.ok());
  auto s = (*interp)->createSession({});  // "h" is symbolic: not resized
  ASSERT_TRUE(s.ok());
  Status st = (*interp)->saveBundle(*s, Temp("unresized"));
  EXPECT_NE(st.message().find("resize the session first"), std::string::npos) << st.ToString();
  // A blob naming an op the net does not have is refused at load.
  Session* r = nullptr;
  RunAt(**interp, 8, &r);
  const std::string path = Temp("bad");
  ASSERT_TRUE((*interp)->saveBundle(r, path).ok());
  Edit(path, [](fb::NetT& net) { net.bundle->blobs[0]->op = 99; });
  auto bad = Interpreter::createFromFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bundle blob 0 names op 99"), std::string::npos) << bad.status().ToString();
  unlink(path.c_str());
}

}  // namespace
}  // namespace kiln
