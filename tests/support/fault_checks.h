// Injected allocation and device failures (engine/src/fault_injection.h),
// checked the same way on every backend: each must reach the app as a
// Status naming the failure, and the session must stay releasable and work
// again once the fault is gone.
#pragma once

#include <gtest/gtest.h>

#include "fault_injection.h"
#include "kiln/interpreter.h"
#include "kiln/net_builder.h"

namespace kiln::test {

inline std::unique_ptr<Interpreter> FaultModel() {
  NetBuilder b("faults");
  int x = b.addInput("x", fb::DataType::F32, {2, 64});
  int c = b.addConstant("c", {64}, std::vector<float>(64, 0.5f));
  int r = b.addOp(fb::OpType::Relu, "relu", {x}, {"r"})[0];
  int a = b.addOp(fb::OpType::Add, "add", {r, c}, {"a"})[0];
  b.addOutput(b.addOp(fb::OpType::Sigmoid, "sigmoid", {a}, {"y"})[0]);
  auto bytes = b.finish();
  return std::move(Interpreter::createFromBuffer(bytes->data(), bytes->size())).value();
}

// An allocation at session creation fails (the first `allocations` tried
// one by one, so that each buffer the backend makes is hit once): the
// status is kOutOfMemory with `want` in its message, never a crash.
inline void CheckAllocationFailures(ForwardType type, fault::Site site, const std::string& want, int allocations) {
  auto interp = FaultModel();
  ScheduleConfig config;
  config.type = type;
  int failed = 0;
  for (int k = 0; k < allocations; ++k) {
    fault::Arm(site, k);
    auto s = interp->createSession(config);
    const bool fired = !fault::Pending(site);  // still armed when the session made fewer allocations
    fault::Reset();
    if (!fired) {
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      break;
    }
    if (s.ok()) {  // a buffer made lazily, at the first run
      Status run = interp->runSession(*s);
      EXPECT_TRUE(interp->releaseSession(*s).ok());
      if (run.ok()) continue;
      EXPECT_EQ(run.code(), StatusCode::kOutOfMemory) << run.ToString();
      EXPECT_NE(run.message().find(want), std::string::npos) << run.message();
      ++failed;
      continue;
    }
    ++failed;
    EXPECT_EQ(s.status().code(), StatusCode::kOutOfMemory) << s.status().ToString();
    EXPECT_NE(s.status().message().find(want), std::string::npos) << s.status().message();
  }
  EXPECT_GT(failed, 0) << "no allocation was injected";
  // With the fault gone the same model runs.
  auto s = interp->createSession(config);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(interp->runSession(*s).ok());
}

// The device is lost while a run waits for it: the run fails naming
// VK_ERROR_DEVICE_LOST; the session can be released, and a new one runs.
inline void CheckDeviceLostAtRun(ForwardType type) {
  auto interp = FaultModel();
  ScheduleConfig config;
  config.type = type;
  auto s = interp->createSession(config);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(interp->runSession(*s).ok());
  fault::Arm(fault::Site::kDeviceLost);
  Status run = interp->runSession(*s);
  fault::Reset();
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.message().find("VK_ERROR_DEVICE_LOST"), std::string::npos) << run.message();
  EXPECT_TRUE(interp->releaseSession(*s).ok());
  auto again = interp->createSession(config);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(interp->runSession(*again).ok());
}

}  // namespace kiln::test
