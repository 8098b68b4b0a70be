// The OpenCL backend as a session uses it (on PoCL in CI): prepared kernels
// replayed with new inputs and shapes, host fallback with the reason and
// copies, the program-binary cache file, profiling, a bad device index.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "cl_backend.h"
#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "log.h"
#include "support/backend_compare.h"
#include "support/test_models.h"

namespace kiln::test {
namespace {

constexpr ForwardType kCl = ForwardType::kOpenCL;

// x[?,3,5] -> Relu -> Add(c) -> Sigmoid -> Mul(x) -> Transpose -> y.
std::unique_ptr<Interpreter> Chain() {
  NetBuilder b("chain");
  int x = b.addInput("x", fb::DataType::F32, {Dim("n"), 3, 5});
  int c = b.addConstant("c", {5}, std::vector<float>{0.5f, -1.f, 0.25f, 2.f, -0.75f});
  int r = b.addOp(fb::OpType::Relu, "relu", {x}, {"r"})[0];
  int a = b.addOp(fb::OpType::Add, "add", {r, c}, {"a"})[0];
  int s = b.addOp(fb::OpType::Sigmoid, "sigmoid", {a}, {"s"})[0];
  int m = b.addOp(fb::OpType::Mul, "mul", {s, x}, {"m"})[0];
  fb::TransposeParamsT perm;
  perm.perm = {2, 0, 1};
  b.addOutput(b.addOp(fb::OpType::Transpose, "transpose", {m}, {"y"}, perm)[0]);
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  EXPECT_TRUE(interp.ok());
  return std::move(interp).value();
}

std::vector<float> RunOnce(Session* s, const std::vector<int64_t>& shape, const std::vector<float>& x) {
  Tensor* in = s->getInput();
  EXPECT_TRUE(s->resizeTensor(in, shape).ok());
  EXPECT_TRUE(s->resize().ok());
  auto host = Tensor::wrap(shape, fb::DataType::F32, const_cast<float*>(x.data()));
  EXPECT_TRUE(in->copyFromHostTensor(*host).ok());
  Status st = s->run();
  EXPECT_TRUE(st.ok()) << st.ToString();
  Tensor* out = s->getOutput();
  std::vector<float> y(static_cast<size_t>(out->elementCount()));
  auto dst = Tensor::wrap(out->shape(), fb::DataType::F32, y.data());
  EXPECT_TRUE(out->copyToHostTensor(dst.get()).ok());
  return y;
}

TEST(OpenCLSession, PreparedRunsReplayAndResize) {
  KILN_REQUIRE_BACKEND(kCl);
  auto interp = Chain();
  ScheduleConfig cl_config;
  cl_config.type = kCl;
  Session* cl = *interp->createSession(cl_config);
  Session* host = *interp->createSession({});
  EXPECT_EQ(cl->placement().ops_per_backend.at("opencl"), 5);
  EXPECT_EQ(cl->placement().switches, 0);
  for (int64_t n : {1, 4, 2}) {
    for (uint32_t seed : {1u, 2u}) {
      const std::vector<float> x = RandomFloats(static_cast<size_t>(n) * 15, seed);
      ExpectNear(RunOnce(cl, {n, 3, 5}, x), RunOnce(host, {n, 3, 5}, x), 1e-5f, "n=" + std::to_string(n));
    }
  }
}

// An op OpenCL has no kernel for (Neg on i32) runs on the host between
// OpenCL ops, with copies, and the placement says why.
TEST(OpenCLSession, HostFallbackNamesTheOp) {
  KILN_REQUIRE_BACKEND(kCl);
  NetBuilder nb("detour");
  int x = nb.addInput("x", fb::DataType::F32, {2, 3, 5});
  int k = nb.addInput("k", fb::DataType::I32, {2, 3, 5});
  int r = nb.addOp(fb::OpType::Relu, "relu", {x}, {"r"})[0];
  int ni = nb.addOp(fb::OpType::Neg, "neg_i32", {k}, {"ni"})[0];
  fb::CastParamsT to_f32;
  to_f32.to = fb::DataType::F32;
  int nf = nb.addOp(fb::OpType::Cast, "to_f32", {ni}, {"nf"}, to_f32)[0];
  nb.addOutput(nb.addOp(fb::OpType::Add, "add", {nf, r}, {"y"})[0]);
  auto bytes = nb.finish();
  ASSERT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok());
  ScheduleConfig c;
  c.type = kCl;
  auto cls = (*interp)->createSession(c);
  ASSERT_TRUE(cls.ok()) << cls.status().ToString();
  auto hs = (*interp)->createSession({});
  ASSERT_TRUE(hs.ok()) << hs.status().ToString();
  Session* cl = *cls;
  Session* host = *hs;
  const Placement& p = cl->placement();
  for (const OpPlacement& op : p.ops) {
    if (op.name == "neg_i32") {
      EXPECT_EQ(op.backend, "host");
      EXPECT_NE(op.reason.find("opencl"), std::string::npos) << op.reason;
    }
    if (op.name == "relu" || op.name == "add") {
      EXPECT_EQ(op.backend, "opencl") << op.name;
    }
  }
  EXPECT_GE(p.switches, 1);
  const std::vector<float> xv = RandomFloats(30, 4);
  std::vector<int32_t> kv(30);
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = static_cast<int32_t>(i) - 11;
  std::vector<std::vector<float>> out;
  for (Session* s : {cl, host}) {
    ASSERT_TRUE(s->resize().ok());
    auto hx = Tensor::wrap({2, 3, 5}, fb::DataType::F32, const_cast<float*>(xv.data()));
    auto hk = Tensor::wrap({2, 3, 5}, fb::DataType::I32, kv.data());
    ASSERT_TRUE(s->getInput("x")->copyFromHostTensor(*hx).ok());
    ASSERT_TRUE(s->getInput("k")->copyFromHostTensor(*hk).ok());
    Status st = s->run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::vector<float> y(30);
    auto hy = Tensor::wrap({2, 3, 5}, fb::DataType::F32, y.data());
    ASSERT_TRUE(s->getOutput()->copyToHostTensor(hy.get()).ok());
    out.push_back(y);
  }
  ExpectNear(out[0], out[1], 1e-6f, "detour");
}

// A second backend of the process builds no program that an earlier one
// built (none kept with KILN_OPENCL_SHARE_PROGRAMS=0).
TEST(OpenCLSession, ProgramsSharedInProcess) {
  KILN_REQUIRE_BACKEND(kCl);
  // A work-group size no other test asks for: a program of its own.
  const uint32_t local[3] = {48, 1, 1};
  ScheduleConfig c;
  c.type = kCl;
  // Not kept while sharing is off, so built again once it is on, then shared.
  const std::pair<const char*, size_t> passes[] = {{"0", 1}, {"1", 1}, {"1", 0}, {"0", 1}};
  for (auto [share, compiled] : passes) {
    setenv("KILN_OPENCL_SHARE_PROGRAMS", share, 1);
    auto b = OpenCLBackend::Create(c);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    auto* cl = static_cast<OpenCLBackend*>(b->get());
    ASSERT_TRUE(cl->kernel("unary", 2, local, {5}).ok());
    EXPECT_EQ(cl->programsCompiled(), compiled) << "KILN_OPENCL_SHARE_PROGRAMS=" << share;
  }
  unsetenv("KILN_OPENCL_SHARE_PROGRAMS");
}

// A second backend with the cache file builds no program from source; a
// file that is not a cache is ignored. Programs are not shared in-process
// here, so that each backend starts as a fresh process would.
TEST(OpenCLSession, ProgramBinaryCacheFile) {
  KILN_REQUIRE_BACKEND(kCl);
  setenv("KILN_OPENCL_SHARE_PROGRAMS", "0", 1);
  const std::string file = TempDir() + "/cl.cache";
  const uint32_t local[3] = {64, 1, 1};
  ScheduleConfig c;
  c.type = kCl;
  c.cacheFile = file;
  for (int pass = 0; pass < 2; ++pass) {
    auto b = OpenCLBackend::Create(c);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    auto* cl = static_cast<OpenCLBackend*>(b->get());
    ASSERT_TRUE(cl->kernel("unary", 2, local, {3}).ok());
    ASSERT_TRUE(cl->kernel("binary", 3, local, {0}).ok());
    EXPECT_EQ(cl->programsCompiled(), pass == 0 ? 2u : 0u) << "pass " << pass;
  }
  std::ofstream(file, std::ios::trunc) << "not a cache";
  auto b = OpenCLBackend::Create(c);
  ASSERT_TRUE(b.ok());
  auto* cl = static_cast<OpenCLBackend*>(b->get());
  ASSERT_TRUE(cl->kernel("unary", 2, local, {3}).ok());
  EXPECT_EQ(cl->programsCompiled(), 1u);
  unsetenv("KILN_OPENCL_SHARE_PROGRAMS");
}

// Tuning measures each 1-D dispatch's work-group size once, keeps the result
// in the cache file (the second session measures nothing), and never
// changes the results.
TEST(OpenCLSession, WorkSizeTuningIsCachedAndExact) {
  KILN_REQUIRE_BACKEND(kCl);
  auto interp = Chain();
  const std::string file = TempDir() + "/tuned.cache";
  Session* host = *interp->createSession({});
  const std::vector<float> x = RandomFloats(4 * 15, 6);
  const std::vector<float> want = RunOnce(host, {4, 3, 5}, x);
  for (int pass = 0; pass < 2; ++pass) {
    ScheduleConfig c;
    c.type = kCl;
    c.tuning = Tuning::kFast;
    c.cacheFile = file;
    std::vector<std::string> logs;
    SetLogSink([&](const std::string& m) { logs.push_back(m); });
    Session* s = *interp->createSession(c);
    const std::vector<float> got = RunOnce(s, {4, 3, 5}, x);
    SetLogSink(nullptr);
    ExpectNear(got, want, 1e-6f, "tuned, pass " + std::to_string(pass));
    std::string tuning_log;
    for (const std::string& m : logs)
      if (m.find("work-group sizes") != std::string::npos) tuning_log = m;
    // relu, add, sigmoid, mul, transpose: five 1-D dispatches.
    EXPECT_NE(tuning_log.find(pass == 0 ? "(5 measured, 0 from the cache file)" : "(0 measured, 5 from the cache file)"),
              std::string::npos)
        << "pass " << pass << ": " << tuning_log;
    ASSERT_TRUE(interp->releaseSession(s).ok());
  }
}

TEST(OpenCLSession, ProfileTimesEveryOp) {
  KILN_REQUIRE_BACKEND(kCl);
  auto interp = Chain();
  ScheduleConfig c;
  c.type = kCl;
  c.profile = true;
  Session* s = *interp->createSession(c);
  RunOnce(s, {3, 3, 5}, RandomFloats(45, 3));
  const auto& prof = s->profile();
  ASSERT_EQ(prof.size(), 5u);
  for (const OpProfile& p : prof) {
    EXPECT_EQ(p.backend, "opencl") << p.name;
    EXPECT_TRUE(p.device_timer) << p.name;
    EXPECT_GE(p.ms, 0) << p.name;
  }
}

// Replays recorded as command buffers where the device offers
// cl_khr_command_buffer (and KILN_OPENCL_COMMAND_BUFFER=0 does not say no).
TEST(OpenCLSession, RunsAreCommandBuffersWhereTheDeviceHasThem) {
  KILN_REQUIRE_BACKEND(kCl);
  ScheduleConfig c;
  c.type = kCl;
  auto b = OpenCLBackend::Create(c);
  ASSERT_TRUE(b.ok());
  const ClCaps& caps = static_cast<OpenCLBackend*>(b->get())->caps();
  const char* off = std::getenv("KILN_OPENCL_COMMAND_BUFFER");
  if (off && std::string(off) == "0") {
    EXPECT_FALSE(caps.command_buffer);
  } else {
    EXPECT_EQ(caps.command_buffer, caps.toString().find("command buffers yes") != std::string::npos);
  }
  // PoCL (the CI driver) has the extension: the fast path is what CI tests.
  if (caps.platform.find("Portable Computing Language") != std::string::npos && !(off && std::string(off) == "0")) {
    EXPECT_TRUE(caps.command_buffer) << caps.toString();
  }
}

// Kernels take each tensor as a buffer and a byte offset (no sub-buffers):
// every __global pointer, and only those, gets its offset parameter, after
// the kernel's own parameters and whatever attribute precedes its name.
TEST(OpenCLKernelSource, BufferOffsetsAppendedToEveryKernel) {
  const std::string src =
      "typedef struct { uint n; } P;\n"
      "__kernel void a(__global const float* x, __global uchar* y, P p) { y[0] = (uchar)x[0]; }\n"
      "__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void b(__global float4* z) { z[0] = 0; }\n";
  auto out = WithBufferOffsets(src);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NE(out->find("void a(__global const float* x, __global uchar* y, P p, ulong kiln_off_x, ulong kiln_off_y) {"),
            std::string::npos)
      << *out;
  EXPECT_NE(out->find("x = (__global const float*)((__global const uchar*)x + kiln_off_x);"), std::string::npos)
      << *out;
  EXPECT_NE(out->find("y = (__global uchar*)((__global uchar*)y + kiln_off_y);"), std::string::npos) << *out;
  EXPECT_NE(out->find("void b(__global float4* z, ulong kiln_off_z) {"), std::string::npos) << *out;
  EXPECT_EQ(out->find("kiln_off_p"), std::string::npos) << *out;
  EXPECT_FALSE(WithBufferOffsets("__kernel void broken(__global float* x").ok());
}

TEST(OpenCLSession, BadDeviceIndexFallsBackWithReason) {
  auto interp = Chain();
  ScheduleConfig c;
  c.type = kCl;
  c.deviceIndex = 99;
  auto s = interp->createSession(c);
  ASSERT_TRUE(s.ok());
  const Placement& p = (*s)->placement();
  EXPECT_EQ(p.ops[0].backend, "host");
  EXPECT_NE(p.ops[0].reason.find("OpenCL device index 99"), std::string::npos) << p.ops[0].reason;
}

}  // namespace
}  // namespace kiln::test
