// The Vulkan backend as a session uses it: recorded runs replayed, callbacks
// op by op, host fallback with copies, resize, the pipeline cache file,
// device selection errors.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "support/backend_compare.h"
#include "support/test_models.h"
#include "vk_device.h"

namespace kiln::test {
namespace {

constexpr ForwardType kVk = ForwardType::kVulkan;

// x[?,3,5] -> Relu -> Add(c) -> Sigmoid -> Mul(x) -> y, with an i32 detour
// (Cast, Neg on i32, Cast back) when `detour`: the i32 Neg has no Vulkan
// kernel (unary.comp is f32), so it runs on the host between two Vulkan
// runs. Its tensors are declared i32 so that Vulkan declines it at creation.
std::vector<uint8_t> Chain(bool detour) {
  NetBuilder b("chain");
  int x = b.addInput("x", fb::DataType::F32, {Dim("n"), 3, 5});
  int c = b.addConstant("c", {5}, std::vector<float>{0.5f, -1.f, 0.25f, 2.f, -0.75f});
  int r = b.addOp(fb::OpType::Relu, "relu", {x}, {"r"})[0];
  int a = b.addOp(fb::OpType::Add, "add", {r, c}, {"a"})[0];
  if (detour) {
    fb::CastParamsT to_i32;
    to_i32.to = fb::DataType::I32;
    fb::OpParamsUnion cast;
    cast.Set(to_i32);
    int ai = b.addTensor("ai", fb::DataType::I32), bi = b.addTensor("bi", fb::DataType::I32);
    b.addOpWithOutputs(fb::OpType::Cast, "to_i32", {a}, {ai}, std::move(cast));
    b.addOpWithOutputs(fb::OpType::Neg, "neg_i32", {ai}, {bi});
    fb::CastParamsT to_f32;
    to_f32.to = fb::DataType::F32;
    a = b.addOp(fb::OpType::Cast, "to_f32", {bi}, {"af"}, to_f32)[0];
  }
  int s = b.addOp(fb::OpType::Sigmoid, "sigmoid", {a}, {"s"})[0];
  int y = b.addOp(fb::OpType::Mul, "mul", {s, x}, {"y"})[0];
  b.addOutput(y);
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

ScheduleConfig VulkanConfig() {
  ScheduleConfig c;
  c.type = kVk;
  c.backupType = ForwardType::kHost;
  return c;
}

TEST(VulkanSession, RecordedRunsReplayAndResize) {
  KILN_REQUIRE_BACKEND(kVk);
  auto bytes = Chain(false);
  auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(interp.ok());
  auto vs = (*interp)->createSession(VulkanConfig());
  ASSERT_TRUE(vs.ok()) << vs.status().ToString();
  auto hs = (*interp)->createSession(ScheduleConfig{});
  ASSERT_TRUE(hs.ok());
  EXPECT_EQ((*vs)->placement().ops_per_backend.at("vulkan"), 4);
  EXPECT_EQ((*vs)->placement().switches, 0);
  // The same recording, replayed with new inputs; then a new shape.
  for (auto [n, seed] : {std::pair<int64_t, uint32_t>{2, 1}, {2, 2}, {7, 3}, {1, 4}}) {
    std::vector<int64_t> shape = {n, 3, 5};
    auto x = Random(static_cast<size_t>(n * 15), -2, 2, seed);
    ExpectNear(RunOnce(interp->get(), *vs, shape, x), RunOnce(interp->get(), *hs, shape, x), 1e-5f,
               "n=" + std::to_string(n));
  }
  bool vulkan_pool = false;
  for (const MemoryUse& m : (*vs)->memory())
    if (m.backend == "vulkan") {
      vulkan_pool = true;
      EXPECT_GT(m.planned_bytes, 0u);
      EXPECT_LE(m.lower_bound_bytes, m.planned_bytes);
      // The constant c (5 floats) is in the weights buffer, not the pool.
      EXPECT_GE(m.constant_bytes, 20u);
    }
  EXPECT_TRUE(vulkan_pool);
}

TEST(VulkanSession, HostFallbackWithCopies) {
  KILN_REQUIRE_BACKEND(kVk);
  auto bytes = Chain(true);
  auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(interp.ok());
  auto vs = (*interp)->createSession(VulkanConfig());
  ASSERT_TRUE(vs.ok()) << vs.status().ToString();
  auto hs = (*interp)->createSession(ScheduleConfig{});
  ASSERT_TRUE(hs.ok());
  const Placement& p = (*vs)->placement();
  bool i32_neg_on_host = false;
  for (const OpPlacement& op : p.ops)
    if (op.name == "neg_i32") {
      i32_neg_on_host = op.backend == "host";
      EXPECT_NE(op.reason.find("vulkan"), std::string::npos) << op.reason;
    }
  EXPECT_TRUE(i32_neg_on_host);
  EXPECT_GE(p.switches, 2);
  std::vector<int64_t> shape = {3, 3, 5};
  auto x = Random(45, -3, 3, 9);
  ExpectNear(RunOnce(interp->get(), *vs, shape, x), RunOnce(interp->get(), *hs, shape, x), 1e-5f);
}

// An i64 intermediate whose declared dtype is the builder's f32 placeholder
// (as ONNX files without value_info give): the binary kernel follows the
// dtype shape inference settles, so both ops run on Vulkan, on integers.
TEST(VulkanSession, IntegerIntermediateWithPlaceholderDtype) {
  KILN_REQUIRE_BACKEND(kVk);
  NetBuilder b("i64 chain");
  int x = b.addInput("x", fb::DataType::I64, {2, 3});
  int c = b.addConstant("c", {3}, std::vector<int64_t>{int64_t{1} << 40, -3, 7});
  int s = b.addOp(fb::OpType::Add, "add", {x, c}, {"s"})[0];
  int y = b.addOp(fb::OpType::Mul, "mul", {c, s}, {"y"})[0];
  b.addOutput(y);
  auto bytes = b.finish();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok());
  auto vs = (*interp)->createSession(VulkanConfig());
  ASSERT_TRUE(vs.ok()) << vs.status().ToString();
  for (const OpPlacement& op : (*vs)->placement().ops) EXPECT_EQ(op.backend, "vulkan") << op.name << ": " << op.reason;
  std::vector<int64_t> xv = {5, -6, 1 << 30, int64_t{3} << 33, 0, -1};
  Tensor* in = (*interp)->getSessionInput(*vs);
  ASSERT_TRUE((*interp)->resizeSession(*vs).ok());
  ASSERT_TRUE(in->copyFromHostTensor(*Tensor::wrap({2, 3}, fb::DataType::I64, xv.data())).ok());
  Status st = (*interp)->runSession(*vs);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<int64_t> got(6);
  ASSERT_TRUE((*interp)->getSessionOutput(*vs)->copyToHostTensor(Tensor::wrap({2, 3}, fb::DataType::I64, got.data()).get()).ok());
  const int64_t cv[3] = {int64_t{1} << 40, -3, 7};
  for (size_t i = 0; i < 6; ++i) {  // the product wraps, as the kernel's does (two's complement)
    const uint64_t want = static_cast<uint64_t>(cv[i % 3]) * static_cast<uint64_t>(xv[i] + cv[i % 3]);
    EXPECT_EQ(got[i], static_cast<int64_t>(want)) << i;
  }
}

TEST(VulkanSession, CallbacksSeeEveryOp) {
  KILN_REQUIRE_BACKEND(kVk);
  auto bytes = Chain(false);
  auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(interp.ok());
  std::vector<int64_t> shape = {2, 3, 5};
  auto x = Random(30, -2, 2, 5);
  std::map<std::string, std::vector<float>> seen[2];
  int i = 0;
  for (ScheduleConfig c : {ScheduleConfig{}, VulkanConfig()}) {
    auto s = (*interp)->createSession(c);
    ASSERT_TRUE(s.ok());
    Tensor* in = (*interp)->getSessionInput(*s);
    ASSERT_TRUE((*interp)->resizeTensor(in, shape).ok());
    ASSERT_TRUE((*interp)->resizeSession(*s).ok());
    ASSERT_TRUE(in->copyFromHostTensor(*Tensor::wrap(shape, fb::DataType::F32, x.data())).ok());
    auto after = [&](const std::vector<Tensor*>& outs, const OpInfo& op) {
      EXPECT_EQ(op.backend, i == 0 ? "host" : "vulkan");
      seen[i][op.name].assign(outs[0]->host<float>(), outs[0]->host<float>() + outs[0]->elementCount());
      return true;
    };
    Status st = (*interp)->runSessionWithCallBack(*s, nullptr, after);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ++i;
  }
  ASSERT_EQ(seen[1].size(), 4u);
  for (auto& [name, v] : seen[0]) ExpectNear(seen[1][name], v, 1e-5f, name);
}

TEST(VulkanSession, PipelineCacheFile) {
  KILN_REQUIRE_BACKEND(kVk);
  auto bytes = Chain(false);
  std::string path = TempDir() + "/kiln_vk_cache.bin";
  std::remove(path.c_str());
  ScheduleConfig c = VulkanConfig();
  c.cacheFile = path;
  std::vector<int64_t> shape = {2, 3, 5};
  auto x = Random(30, -2, 2, 6);
  std::vector<float> first;
  {
    auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
    ASSERT_TRUE(interp.ok());
    auto s = (*interp)->createSession(c);
    ASSERT_TRUE(s.ok());
    first = RunOnce(interp->get(), *s, shape, x);
  }  // releasing the session writes the cache
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0) << "no cache file written";
  EXPECT_GT(st.st_size, 16);
  {
    auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
    ASSERT_TRUE(interp.ok());
    auto s = (*interp)->createSession(c);
    ASSERT_TRUE(s.ok());
    ExpectNear(RunOnce(interp->get(), *s, shape, x), first, 0, "warm cache");
  }
  // A corrupt cache file is ignored, not fatal.
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << "not a pipeline cache at all, just text of some length";
  }
  {
    auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
    ASSERT_TRUE(interp.ok());
    auto s = (*interp)->createSession(c);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ExpectNear(RunOnce(interp->get(), *s, shape, x), first, 0, "corrupt cache");
  }
  std::remove(path.c_str());
}

// Pipelines are created after every op is set up, side by side on several
// threads (KILN_VK_PIPELINE_THREADS=1: one after another): the same bytes
// either way, and the time counted as the pipelines phase.
TEST(VulkanSession, PipelinesCreatedSideBySide) {
  KILN_REQUIRE_BACKEND(kVk);
  auto bytes = Chain(true);
  std::vector<int64_t> shape = {2, 3, 5};
  auto x = Random(30, -2, 2, 7);
  std::vector<float> got[2];
  for (int serial = 0; serial < 2; ++serial) {
    if (serial) setenv("KILN_VK_PIPELINE_THREADS", "1", 1);
    auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
    ASSERT_TRUE(interp.ok());
    auto s = (*interp)->createSession(VulkanConfig());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    got[serial] = RunOnce(interp->get(), *s, shape, x);
    EXPECT_GT((*s)->phases().pipelines, 0.0);
    unsetenv("KILN_VK_PIPELINE_THREADS");
  }
  ExpectNear(got[0], got[1], 0, "side by side vs one at a time");
}

TEST(VulkanSession, ProfileTimesEveryStep) {
  KILN_REQUIRE_BACKEND(kVk);
  auto bytes = Chain(true);
  auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(interp.ok());
  ScheduleConfig c = VulkanConfig();
  c.profile = true;
  auto s = (*interp)->createSession(c);
  ASSERT_TRUE(s.ok());
  RunOnce(interp->get(), *s, {2, 3, 5}, Random(30, -1, 1, 3));
  const auto& prof = (*s)->profile();
  int vulkan_ops = 0, copies = 0;
  for (const OpProfile& p : prof) {
    EXPECT_GE(p.ms, 0) << p.name;
    if (p.type == "Copy") ++copies;
    if (p.backend == "vulkan" && p.type != "Copy") {
      ++vulkan_ops;
      // lavapipe and every desktop driver have compute-queue timestamps.
      EXPECT_TRUE(p.device_timer) << p.name;
    }
  }
  EXPECT_EQ(vulkan_ops, 6);  // all but the i32 Neg
  EXPECT_EQ(copies, 2);      // into the host detour and back
}

TEST(VulkanSession, BadDeviceIndexFallsBackWithReason) {
  KILN_REQUIRE_BACKEND(kVk);
  auto bytes = Chain(false);
  auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(interp.ok());
  ScheduleConfig c = VulkanConfig();
  c.deviceIndex = 99;
  auto s = (*interp)->createSession(c);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Placement& p = (*s)->placement();
  EXPECT_EQ(p.ops_per_backend.count("vulkan"), 0u);
  ASSERT_FALSE(p.ops.empty());
  EXPECT_NE(p.ops[0].reason.find("device index 99"), std::string::npos) << p.ops[0].reason;
}

// Precision::kLow: f32 tensors live on the device as f16 (half the pool and
// the weights), kernels compute in fp32, results match fp32 within 1e-2;
// an op whose kernel cannot take fp16 storage (a comparison) runs on the host
// and the placement says why.
// At precision low on a device with shaderFloat16, the packed conv runs
// its half-arithmetic variant (conv_c4_f16m) where asked: on by default on
// GPUs, off on CPU drivers, KILN_VULKAN_FP16_MATH=1 / 0 forcing it. The
// results stay within fp16 tolerance of fp16 storage with f32 arithmetic
// and are not the same bits (the half products really round).
TEST(VulkanSession, HalfArithmeticWhereAsked) {
  KILN_REQUIRE_BACKEND(kVk);
  auto device = VulkanDevice::Get(-1);
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  if (!(*device)->caps().float16) GTEST_SKIP() << "no shaderFloat16 on " << (*device)->caps().toString();
  NetBuilder b("two_convs");
  int x = b.addInput("x", fb::DataType::F32, {1, 16, 12, 12});
  int w = b.addConstant("w", {16, 16, 3, 3}, RandomFloats(16 * 16 * 9, 21));
  int bias = b.addConstant("b", {16}, RandomFloats(16, 22));
  fb::ConvParamsT conv;
  conv.kernel_shape = {3, 3};
  conv.strides = {2, 2};
  conv.pads = {1, 1, 1, 1};
  int y1 = b.addOp(fb::OpType::Conv, "conv1", {x, w, bias}, {"y1"}, conv)[0];
  // A second conv, so that the first writes channel-packed (a graph
  // border stays planar) and both run the packed kernel.
  conv.strides = {1, 1};
  int w2 = b.addConstant("w2", {16, 16, 3, 3}, RandomFloats(16 * 16 * 9, 24));
  b.addOutput(b.addOp(fb::OpType::Conv, "conv2", {y1, w2, bias}, {"y"}, conv)[0]);
  auto bytes = b.finish();
  ASSERT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok());
  const std::vector<float> in = RandomFloats(16 * 12 * 12, 23);
  std::map<std::string, std::vector<float>> out;
  for (const char* math : {"0", "1"}) {
    setenv("KILN_VULKAN_FP16_MATH", math, 1);
    ScheduleConfig c;
    c.type = kVk;
    c.precision = Precision::kLow;
    auto s = (*interp)->createSession(c);
    unsetenv("KILN_VULKAN_FP16_MATH");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ((*s)->placement().ops_per_backend.at("vulkan"), 2);
    out[math] = RunOnce(interp->get(), *s, {1, 16, 12, 12}, in);
    ASSERT_TRUE((*interp)->releaseSession(*s).ok());
  }
  // Half sums of 64 products round at half's step of the partial sums:
  // measured against the outputs' scale, not element by element.
  ASSERT_EQ(out["1"].size(), out["0"].size());
  float err = 0, scale = 0;
  for (size_t i = 0; i < out["0"].size(); ++i) {
    err = std::max(err, std::fabs(out["1"][i] - out["0"][i]));
    scale = std::max(scale, std::fabs(out["0"][i]));
  }
  EXPECT_LE(err, kFp16Tolerance * scale) << "half vs f32 arithmetic, scale " << scale;
  EXPECT_GT(err, 0.f) << "the half-arithmetic kernel did not run";
}

TEST(VulkanSession, Fp16StorageHalvesMemoryAndMatches) {
  KILN_REQUIRE_BACKEND(kVk);
  auto bytes = TinyCnn().finish();
  ASSERT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok());
  const std::vector<int64_t> shape = {1, 3, 17, 13};
  const std::vector<float> x = RandomFloats(3 * 17 * 13, 9);
  std::map<Precision, std::vector<float>> out;
  std::map<Precision, MemoryUse> mem;
  for (Precision p : {Precision::kNormal, Precision::kLow}) {
    ScheduleConfig c;
    c.type = kVk;
    c.precision = p;
    auto s = (*interp)->createSession(c);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ((*s)->placement().ops_per_backend.at("vulkan"), 7);
    out[p] = RunOnce(interp->get(), *s, shape, x);
    for (const MemoryUse& m : (*s)->memory())
      if (m.backend == "vulkan") mem[p] = m;
    ASSERT_TRUE((*interp)->releaseSession(*s).ok());
  }
  EXPECT_EQ(mem[Precision::kLow].tensor_bytes * 2, mem[Precision::kNormal].tensor_bytes);
  EXPECT_LT(mem[Precision::kLow].constant_bytes, mem[Precision::kNormal].constant_bytes);
  ExpectNear(out[Precision::kLow], out[Precision::kNormal], kFp16Tolerance, "fp16 vs fp32");
  // Not bit-identical: the fp16 path really rounds.
  EXPECT_NE(out[Precision::kLow], out[Precision::kNormal]);

  NetBuilder b("less");
  int a = b.addInput("a", fb::DataType::F32, {4});
  int c = b.addConstant("c", {4}, std::vector<float>{0, 1, 2, 3});
  b.addOutput(b.addOp(fb::OpType::Less, "less", {a, c}, {"y"})[0]);
  auto less = b.finish();
  ASSERT_TRUE(less.ok());
  auto li = Interpreter::createFromBuffer(less->data(), less->size());
  ASSERT_TRUE(li.ok());
  ScheduleConfig low;
  low.type = kVk;
  low.precision = Precision::kLow;
  auto ls = (*li)->createSession(low);
  ASSERT_TRUE(ls.ok());
  const Placement& p = (*ls)->placement();
  EXPECT_EQ(p.ops[0].backend, "host");
  EXPECT_NE(p.ops[0].reason.find("F16"), std::string::npos) << p.ops[0].reason;
}

// At precision low on a device with matrix units (GpuCaps::coop_matrix_f16:
// VK_NV_cooperative_matrix), MatMul and Gemm whose M, N and K are multiples
// of 16 run gemm_coop (half products summed in float), with B along n or
// along k, alpha, beta * C and a fused activation, in 64 x 64 tiles (64
// rows) or 128 x 128 (32768 rows: 256 such tiles); other shapes, and every
// device without them (lavapipe), take gemm. Each session on a fresh device
// (KILN_VULKAN_SHARE=0), whose pipelines say which kernel ran; results
// within fp16 tolerance of the host's.
TEST(VulkanSession, MatrixUnitsWhereTheDeviceHasThem) {
  KILN_REQUIRE_BACKEND(kVk);
  NetBuilder b("coop");
  int x = b.addInput("x", fb::DataType::F32, {-1, 48});
  int w1 = b.addConstant("w1", {48, 80}, Random(48 * 80, -1, 1, 41));
  int y1 = b.addOp(fb::OpType::MatMul, "matmul", {x, w1}, {"y1"})[0];
  fb::GemmParamsT gp;
  gp.alpha = 0.5f;
  gp.beta = 0.75f;
  gp.trans_b = true;
  gp.activation = fb::Activation::Relu;
  int w2 = b.addConstant("w2", {48, 80}, Random(48 * 80, -1, 1, 42));
  int c2 = b.addConstant("c2", {48}, Random(48, -1, 1, 43));
  b.addOutput(b.addOp(fb::OpType::Gemm, "gemm", {y1, w2, c2}, {"y"}, gp)[0]);
  auto bytes = b.finish();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok());
  setenv("KILN_VULKAN_SHARE", "0", 1);
  { auto kept = VulkanDevice::Get(-1); }  // a device kept by earlier tests goes now
  for (int64_t rows : {64, 32768, 10}) {
    const std::vector<float> in = Random(static_cast<size_t>(rows) * 48, -1, 1, 44);
    ScheduleConfig host;
    host.type = ForwardType::kHost;
    auto hs = (*interp)->createSession(host);
    ASSERT_TRUE(hs.ok());
    const std::vector<float> want = RunOnce(interp->get(), *hs, {rows, 48}, in);
    ASSERT_TRUE((*interp)->releaseSession(*hs).ok());
    float scale = 0;
    for (float v : want) scale = std::max(scale, std::fabs(v));
    for (const char* coop : {"1", "0"}) {
      SCOPED_TRACE(std::string("rows ") + std::to_string(rows) + ", KILN_VULKAN_COOP=" + coop);
      setenv("KILN_VULKAN_COOP", coop, 1);
      ScheduleConfig c;
      c.type = kVk;
      c.precision = Precision::kLow;
      auto s = (*interp)->createSession(c);
      unsetenv("KILN_VULKAN_COOP");
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      EXPECT_EQ((*s)->placement().ops_per_backend.at("vulkan"), 2);
      const std::vector<float> got = RunOnce(interp->get(), *s, {rows, 48}, in);
      ASSERT_EQ(got.size(), want.size());
      float err = 0;
      for (size_t i = 0; i < got.size(); ++i) err = std::max(err, std::fabs(got[i] - want[i]));
      EXPECT_LE(err, kFp16Tolerance * scale);
      auto d = VulkanDevice::Get(-1);  // the session's device
      ASSERT_TRUE(d.ok());
      int coop_pipelines = 0, large_tiles = 0;  // the second: 256 invocations, 128 x 128 tiles
      {
        std::lock_guard<std::mutex> lock((*d)->pipelinesMutex());
        for (const auto& [key, p] : (*d)->pipelines()) {
          coop_pipelines += key.rfind("gemm_coop/", 0) == 0;
          large_tiles += key.rfind("gemm_coop/4/256,", 0) == 0;
        }
      }
      const bool has = (*d)->caps().coop_matrix_f16;
      EXPECT_EQ(coop_pipelines, has && rows % 16 == 0 ? 2 : 0) << (*d)->caps().toString();
      EXPECT_EQ(large_tiles, has && rows == 32768 ? 2 : 0) << (*d)->caps().toString();
      ASSERT_TRUE((*interp)->releaseSession(*s).ok());
    }
  }
  unsetenv("KILN_VULKAN_SHARE");
}

// Int8 convs and products take the packed dot-product kernels (qconv_dot's
// and qmatmul_dot's _dp variants) where the device has
// shaderIntegerDotProduct (lavapipe does), and the byte-by-byte twin
// elsewhere; either matches the host bit for bit.
TEST(VulkanSession, Int8DotProductsWhereTheDeviceHasThem) {
  KILN_REQUIRE_BACKEND(kVk);
  OpTest t(fb::OpType::QLinearConv);
  const std::vector<float> xf = Random(2 * 6 * 7 * 9, 0.f, 255.f, 51), wf = Random(8 * 6 * 9, -128.f, 127.f, 52);
  std::vector<uint8_t> x(xf.begin(), xf.end());
  std::vector<int8_t> w(wf.begin(), wf.end());
  const std::vector<uint8_t> zx{140}, zy{128};
  const std::vector<int8_t> zw{3};
  t.input("x", {2, 6, 7, 9}, fb::DataType::U8, x.data(), x.size());
  t.constant("sx", {}, std::vector<float>{0.02f});
  t.constant("zx", {}, fb::DataType::U8, zx.data(), 1);
  t.constant("w", {8, 6, 3, 3}, fb::DataType::I8, w.data(), w.size());
  t.constant("sw", {}, std::vector<float>{0.003f});
  t.constant("zw", {}, fb::DataType::I8, zw.data(), 1);
  t.constant("sy", {}, std::vector<float>{0.4f});
  t.constant("zy", {}, fb::DataType::U8, zy.data(), 1);
  fb::ConvParamsT p;
  p.pads = {1, 1, 1, 1};
  ExpectSameAsHost(t.params(p), kVk, 0.f, "QLinearConv 3x3");
  OpTest mm(fb::OpType::QLinearMatMul);
  mm.input("a", {6, 9}, fb::DataType::U8, x.data(), 54);
  mm.constant("sa", {}, std::vector<float>{0.02f});
  mm.constant("za", {}, fb::DataType::U8, zx.data(), 1);
  mm.constant("b", {9, 8}, fb::DataType::I8, w.data(), 72);
  mm.constant("sb", {}, std::vector<float>{0.003f});
  mm.constant("zb", {}, fb::DataType::I8, zw.data(), 1);
  mm.constant("sy", {}, std::vector<float>{0.4f});
  mm.constant("zy", {}, fb::DataType::U8, zy.data(), 1);
  ExpectSameAsHost(mm, kVk, 0.f, "QLinearMatMul 6x9x8");
  auto d = VulkanDevice::Get(-1);  // the device the session used, kept for the process
  ASSERT_TRUE(d.ok());
  const VulkanCaps& caps = (*d)->caps();
  // Lavapipe (Mesa 22.3, CI's driver) lists VK_KHR_shader_integer_dot_product:
  // there the _dp kernels must be the ones taken.
  if (caps.name.find("llvmpipe") != std::string::npos && !EnvIsZero("KILN_GPU_INT8DOT")) {
    EXPECT_TRUE(caps.int8_dot) << caps.toString();
  }
  for (const std::string kernel : {"qconv_dot_f64", "qmatmul_dot_f64"}) {
    int dot = 0, plain = 0;
    {
      std::lock_guard<std::mutex> lock((*d)->pipelinesMutex());
      for (const auto& [key, pipeline] : (*d)->pipelines()) {
        dot += key.rfind(kernel + "_dp/", 0) == 0;
        plain += key.rfind(kernel + "/", 0) == 0;
      }
    }
    EXPECT_EQ(dot > 0, caps.int8_dot) << kernel << " on " << caps.toString();
    EXPECT_EQ(plain > 0, !caps.int8_dot) << kernel << " on " << caps.toString();
  }
}

}  // namespace
}  // namespace kiln::test
