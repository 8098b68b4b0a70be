#include "support/backend_compare.h"

#include <algorithm>
#include <cstdlib>

#include "session_impl.h"

namespace kiln::test {

bool BackendAvailable(ForwardType type, std::string* why) {
  ScheduleConfig c;
  c.type = type;
  auto b = DefaultBackendFactory()(type, c);
  if (!b.ok()) *why = std::string(ForwardTypeName(type)) + " is unavailable: " + b.status().message();
  return b.ok();
}

ForwardType TestGpu() {
  const char* g = std::getenv("KILN_TEST_GPU");
  return g && std::string(g) == "opencl" ? ForwardType::kOpenCL : ForwardType::kVulkan;
}

bool LowPrecisionRun() {
  const char* p = std::getenv("KILN_TEST_PRECISION");
  return p && std::string(p) == "low";
}

void ExpectSameAsHost(const OpTest& test, ForwardType backend, float tol, const std::string& what) {
  OpTest t = test;
  if (LowPrecisionRun()) t.roundF32InputsToHalf();
  auto want = t.run();
  ASSERT_TRUE(want.ok()) << what << ": host: " << want.status().ToString();
  Placement placement;
  OpTest gpu = t;
  gpu.capturePlacement(&placement);
  ScheduleConfig c;
  c.type = backend;
  c.backupType = ForwardType::kHost;
  if (const char* t = std::getenv("KILN_TEST_TUNING"))  // ctest opencl_tuned
    c.tuning = std::string(t) == "full" ? Tuning::kFull : Tuning::kFast;
  if (LowPrecisionRun()) {
    c.precision = Precision::kLow;
    tol = std::max(tol, kFp16Tolerance);
  }
  auto got = gpu.run(c);
  ASSERT_TRUE(got.ok()) << what << ": " << ForwardTypeName(backend) << ": " << got.status().ToString();
  for (const OpPlacement& p : placement.ops)
    EXPECT_EQ(p.backend, ForwardTypeName(backend)) << what << ": " << p.name << " (" << p.type << ") ran on "
                                                   << p.backend << ": " << p.reason;
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_EQ((*got)[i].shape, (*want)[i].shape) << what << " output " << i;
    EXPECT_EQ((*got)[i].dtype, (*want)[i].dtype) << what << " output " << i;
    if ((*want)[i].dtype == fb::DataType::F32)
      ExpectNear((*got)[i].f32(), (*want)[i].f32(), tol, what + " output " + std::to_string(i));
    else
      EXPECT_EQ((*got)[i].bytes, (*want)[i].bytes) << what << " output " << i;
  }
}

std::vector<float> Random(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<float> RunOnce(Interpreter* interp, Session* s, const std::vector<int64_t>& shape,
                           const std::vector<float>& x) {
  Tensor* in = interp->getSessionInput(s);
  EXPECT_TRUE(interp->resizeTensor(in, shape).ok());
  EXPECT_TRUE(interp->resizeSession(s).ok());
  auto host = Tensor::wrap(shape, fb::DataType::F32, const_cast<float*>(x.data()));
  EXPECT_TRUE(in->copyFromHostTensor(*host).ok());
  Status st = interp->runSession(s);
  EXPECT_TRUE(st.ok()) << st.ToString();
  Tensor* out = interp->getSessionOutput(s);
  std::vector<float> y(static_cast<size_t>(out->elementCount()));
  auto dst = Tensor::wrap(out->shape(), fb::DataType::F32, y.data());
  EXPECT_TRUE(out->copyToHostTensor(dst.get()).ok());
  return y;
}

}  // namespace kiln::test
