// Runs one OpTest on the host and on a GPU backend and compares: the GPU
// must run the op itself (no op on the host) and match within `tol`
// (relative, see ExpectNear). Used by every GPU backend's op tests.
//
// A GPU backend that cannot start fails the test: CI installs lavapipe and
// PoCL, so a skipped GPU test would hide a broken backend. Set
// KILN_TEST_ALLOW_NO_GPU=1 to turn that into a skip on a machine without them.
#pragma once

#include <random>

#include "support/op_test.h"

namespace kiln::test {

// The GPU backend the shared op suites (tests/gpu) run on: Vulkan, or
// OpenCL when KILN_TEST_GPU=opencl (ctest opencl_ops).
ForwardType TestGpu();

// Fails (or skips, see above) when `type` cannot be created here.
bool BackendAvailable(ForwardType type, std::string* why);

// Tolerances (relative, see ExpectNear): fp32 kernels are held to the
// caller's (typically 1e-4); with fp16 storage every value is rounded to
// 11 significant bits on the way in and out, so 1e-2.
constexpr float kFp16Tolerance = 1e-2f;

// True when KILN_TEST_PRECISION=low: ExpectSameAsHost then runs the GPU side
// with Precision::kLow (fp16 storage) and the fp16 tolerance (ctest
// vulkan_fp16 runs the op suites this way).
bool LowPrecisionRun();

void ExpectSameAsHost(const OpTest& t, ForwardType backend, float tol, const std::string& what = "");

// Resizes the session's single input to `shape`, writes `x`, runs, and
// returns its single (f32) output; each failing step fails the test.
std::vector<float> RunOnce(Interpreter* interp, Session* s, const std::vector<int64_t>& shape,
                           const std::vector<float>& x);

// Values in [lo, hi) from a fixed seed.
std::vector<float> Random(size_t n, float lo = -1.f, float hi = 1.f, uint32_t seed = 7);

}  // namespace kiln::test

#define KILN_REQUIRE_BACKEND(type)                                                         \
  do {                                                                                     \
    std::string why_;                                                                      \
    if (!::kiln::test::BackendAvailable(type, &why_)) {                                    \
      if (std::getenv("KILN_TEST_ALLOW_NO_GPU")) GTEST_SKIP() << why_;                     \
      FAIL() << why_ << " (set KILN_TEST_ALLOW_NO_GPU=1 on a machine without the driver)"; \
    }                                                                                      \
  } while (0)
