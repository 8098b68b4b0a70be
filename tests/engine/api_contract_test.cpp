// The API contract (interpreter.h): handles used after their owner let go of
// them, or handed to the wrong Interpreter, give a status or a documented
// value, never undefined behaviour (this suite runs under ASan in
// `make test-asan`, which would report a use after free).
#include <gtest/gtest.h>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"

namespace kiln {
namespace {

std::unique_ptr<Interpreter> ReluModel(const std::string& name) {
  NetBuilder b(name);
  int x = b.addInput("x", fb::DataType::F32, {2, 3});
  b.addOutput(b.addOp(fb::OpType::Relu, "relu", {x}, {"y"})[0]);
  auto bytes = b.finish();
  LoadOptions opt;
  opt.display_name = name + ".kiln";
  return std::move(Interpreter::createFromBuffer(bytes->data(), bytes->size(), BufferOwnership::kCopy, opt)).value();
}

void ExpectNotOurs(const Status& s, const char* call) {
  ASSERT_FALSE(s.ok()) << call;
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(std::string(call) + ": the session is not a live session of this Interpreter"),
            std::string::npos)
      << s.message();
}

TEST(ApiContract, ModelNameAndNetAfterReleaseModel) {
  auto interp = ReluModel("m");
  Session* s = *interp->createSession({});
  interp->releaseModel();
  EXPECT_EQ(interp->modelName(), "m.kiln");
  EXPECT_EQ(interp->net().ops(), nullptr);  // the empty net, not freed memory
  EXPECT_FALSE(interp->createSession({}).ok());
  // The existing session keeps what it reads alive.
  EXPECT_TRUE(interp->runSession(s).ok());
}

TEST(ApiContract, ReleasedSessionIsRefused) {
  auto interp = ReluModel("m");
  Session* s = *interp->createSession({});
  ASSERT_TRUE(interp->releaseSession(s).ok());
  ExpectNotOurs(interp->runSession(s), "runSession");
  ExpectNotOurs(interp->resizeSession(s), "resizeSession");
  ExpectNotOurs(interp->runSessionWithCallBack(s, nullptr, nullptr), "runSessionWithCallBack");
  ExpectNotOurs(interp->releaseSession(s), "releaseSession");
  EXPECT_EQ(interp->getSessionInput(s), nullptr);
  EXPECT_EQ(interp->getSessionOutput(s), nullptr);
  EXPECT_TRUE(interp->getSessionInputAll(s).empty());
  EXPECT_TRUE(interp->getSessionOutputAll(s).empty());
  ExpectNotOurs(interp->runSession(nullptr), "runSession");
}

TEST(ApiContract, AnotherInterpretersSessionIsRefused) {
  auto a = ReluModel("a"), b = ReluModel("b");
  Session* sa = *a->createSession({});
  ExpectNotOurs(b->runSession(sa), "runSession");
  ExpectNotOurs(b->releaseSession(sa), "releaseSession");
  EXPECT_EQ(b->getSessionInput(sa), nullptr);
  Status resize = b->resizeTensor(a->getSessionInput(sa), {4, 3});
  EXPECT_FALSE(resize.ok());
  EXPECT_TRUE(a->runSession(sa).ok());
}

TEST(ApiContract, ThreadCountOutOfRange) {
  auto interp = ReluModel("m");
  for (int threads : {0, -1, 100000}) {
    ScheduleConfig c;
    c.numThread = threads;
    auto s = interp->createSession(c);
    ASSERT_FALSE(s.ok()) << threads;
    EXPECT_NE(s.status().message().find("numThread " + std::to_string(threads) + ": must be 1 to 1024"),
              std::string::npos)
        << s.status().message();
  }
}

}  // namespace
}  // namespace kiln
