// If, Loop and Scan with their subgraphs on a GPU backend (Vulkan, or
// KILN_TEST_GPU=opencl): every subgraph op must run on the GPU (no
// fallback in the placement), and the results match the C++ references of
// tests/support/control_flow_models.cpp, as on the host
// (tests/engine/control_flow_test.cpp).
#include "kiln/interpreter.h"
#include "support/backend_compare.h"
#include "support/control_flow_models.h"

namespace kiln::test {
namespace {

const ForwardType kGpu = TestGpu();

struct Opened {
  std::unique_ptr<Interpreter> interp;
  Session* session = nullptr;
};

Opened Open(const NetBuilder& b) {
  Opened r;
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  if (!interp.ok()) return r;
  r.interp = std::move(interp).value();
  ScheduleConfig c;
  c.type = kGpu;
  if (LowPrecisionRun()) c.precision = Precision::kLow;
  auto s = r.interp->createSession(c);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return r;
  r.session = *s;
  // Every op on the GPU, subgraphs' included; at fp16 storage the
  // comparisons stay on the host (they decline F16, as everywhere).
  for (const OpPlacement& p : r.session->placement().ops)
    EXPECT_TRUE(p.reason.empty() || (LowPrecisionRun() && p.reason.find("not F16") != std::string::npos))
        << p.type << ": " << p.reason;
  return r;
}

template <typename T>
void Write(Session* s, const std::string& name, const std::vector<int64_t>& shape, std::vector<T> v, fb::DataType d) {
  Tensor* in = s->getInput(name);
  ASSERT_NE(in, nullptr) << name;
  ASSERT_TRUE(s->resizeTensor(in, shape).ok());
  auto host = Tensor::wrap(shape, d, v.data());
  ASSERT_TRUE(in->copyFromHostTensor(*host).ok());
}

std::vector<float> Read(Session* s, const std::string& name) {
  Tensor* t = s->getOutput(name);
  std::vector<float> v(static_cast<size_t>(t->elementCount()));
  auto host = Tensor::wrap(t->shape(), fb::DataType::F32, v.data());
  EXPECT_TRUE(t->copyToHostTensor(host.get()).ok());
  return v;
}

float Tol() { return LowPrecisionRun() ? kFp16Tolerance : 1e-5f; }

TEST(GpuControlFlow, IfOnData) {
  KILN_REQUIRE_BACKEND(kGpu);
  Opened r = Open(IfOnData());
  ASSERT_NE(r.session, nullptr);
  const std::vector<float> y = {0.5f, -1.f, 2.f, 3.f};
  for (std::vector<float> x : {std::vector<float>{1, 2, -1, 0.5f}, std::vector<float>{-1, -2, 1, 0.5f}}) {
    Write(r.session, "x", {4}, x, fb::DataType::F32);
    Write(r.session, "y", {4}, y, fb::DataType::F32);
    Status st = r.session->run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    ExpectNear(Read(r.session, "out"), IfOnDataRef(x, y), Tol());
  }
}

TEST(GpuControlFlow, LoopWithTripCount) {
  KILN_REQUIRE_BACKEND(kGpu);
  Opened r = Open(LoopWithTripCount());
  ASSERT_NE(r.session, nullptr);
  const std::vector<float> x = {1, -2, 4};
  Write(r.session, "x", {3}, x, fb::DataType::F32);
  Status st = r.session->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<float> acc, scans;
  LoopWithTripCountRef(x, 4, &acc, &scans);
  ExpectNear(Read(r.session, "acc"), acc, Tol());
  ExpectNear(Read(r.session, "scans"), scans, Tol());
}

TEST(GpuControlFlow, LoopUntil) {
  KILN_REQUIRE_BACKEND(kGpu);
  Opened r = Open(LoopUntil());
  ASSERT_NE(r.session, nullptr);
  const std::vector<float> v = {1, 2};
  Write(r.session, "v", {2}, v, fb::DataType::F32);
  Status st = r.session->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<float> last, scans;
  LoopUntilRef(v, &last, &scans);
  ExpectNear(Read(r.session, "last"), last, Tol());
  ExpectNear(Read(r.session, "scans"), scans, Tol());
}

TEST(GpuControlFlow, ScanReverse) {
  KILN_REQUIRE_BACKEND(kGpu);
  Opened r = Open(ScanReverse());
  ASSERT_NE(r.session, nullptr);
  const std::vector<float> s0 = {0.25f, -1}, seq = {1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
  Write(r.session, "s0", {2}, s0, fb::DataType::F32);
  Write(r.session, "seq", {2, 5}, seq, fb::DataType::F32);
  Status st = r.session->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<float> state, out;
  ScanReverseRef(s0, seq, &state, &out);
  ExpectNear(Read(r.session, "s"), state, Tol());
  ExpectNear(Read(r.session, "out"), out, Tol());
}

// The state stays on the device: the backend copies h_out into h itself.
TEST(GpuControlFlow, StreamingStateOnTheDevice) {
  KILN_REQUIRE_BACKEND(kGpu);
  Opened r = Open(StreamingCell());
  ASSERT_NE(r.session, nullptr);
  ASSERT_TRUE(r.session->bindState("h_out", "h").ok());
  ASSERT_TRUE(r.session->resetState().ok());
  std::vector<std::vector<float>> xs;
  for (int k = 0; k < 4; ++k) {
    xs.push_back({0.1f * k, -0.5f, 1.f, 0.25f * k});
    Write(r.session, "x", {1, 4}, xs.back(), fb::DataType::F32);
    ASSERT_TRUE(r.session->run().ok());
    ExpectNear(Read(r.session, "out"), StreamingCellRef(xs), Tol());
  }
  ASSERT_NE(r.session->getInput("h")->backend(), nullptr) << "the state input should live on the GPU";
}

}  // namespace
}  // namespace kiln::test
