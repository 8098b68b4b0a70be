// Session behaviour on elementwise graphs: scheduling across backends with
// copies at the borders, callbacks, resize, memory planning and in-place
// reuse, layouts, releaseModel, and two interpreters on two threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "gemm.h"
#include "host_backend.h"
#include "kiln/interpreter.h"
#include "log.h"
#include "memory_planner.h"
#include "session_impl.h"
#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln {
namespace {

using test::ExpectNear;
using test::RandomFloats;

// x[n, c] -> Relu -> Sigmoid -> Add(+ y) -> Neg -> out
NetBuilder Chain(std::vector<Dim> shape = {"n", "c"}) {
  NetBuilder b("chain");
  int x = b.addInput("x", fb::DataType::F32, shape);
  int y = b.addInput("y", fb::DataType::F32, shape);
  int r = b.addOp(fb::OpType::Relu, "relu", {x}, {"r"})[0];
  int s = b.addOp(fb::OpType::Sigmoid, "sigmoid", {r}, {"s"})[0];
  int a = b.addOp(fb::OpType::Add, "add", {s, y}, {"a"})[0];
  b.addOutput(b.addOp(fb::OpType::Neg, "neg", {a}, {"out"})[0]);
  return b;
}

std::vector<float> ChainRef(const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<float> out;
  for (size_t i = 0; i < x.size(); ++i) out.push_back(-(1 / (1 + std::exp(-std::max(x[i], 0.f))) + y[i]));
  return out;
}

std::unique_ptr<Interpreter> Load(const NetBuilder& b) {
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  return std::move(interp).value();
}

Status Feed(Session* s, const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& v) {
  auto host = Tensor::wrap(shape, fb::DataType::F32, const_cast<float*>(v.data()));
  return s->getInput(name)->copyFromHostTensor(*host);
}

std::vector<float> Fetch(Session* s, const std::string& name = "") {
  Tensor* t = s->getOutput(name);
  std::vector<float> v(static_cast<size_t>(t->elementCount()));
  auto host = Tensor::wrap(t->shape(), fb::DataType::F32, v.data());
  EXPECT_TRUE(t->copyToHostTensor(host.get()).ok());
  return v;
}

TEST(Session, ResizeToSeveralShapesAndRunAgain) {
  auto interp = Load(Chain());
  auto session = interp->createSession({});
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session* s = *session;
  // Symbolic inputs: running before a resize is a clear error.
  Status early = s->run();
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.message().find("input 'x': dim 0 ('n') is symbolic"), std::string::npos) << early.message();
  for (auto shape : std::vector<std::vector<int64_t>>{{2, 3}, {7, 17}, {1, 1}}) {
    ASSERT_TRUE(interp->resizeTensor(s->getInput("x"), shape).ok());
    ASSERT_TRUE(interp->resizeTensor(s->getInput("y"), shape).ok());
    ASSERT_TRUE(interp->resizeSession(s).ok());
    size_t n = static_cast<size_t>(test::Numel(shape));
    auto x = RandomFloats(n, 1), y = RandomFloats(n, 2);
    ASSERT_TRUE(Feed(s, "x", shape, x).ok());
    ASSERT_TRUE(Feed(s, "y", shape, y).ok());
    ASSERT_TRUE(interp->runSession(s).ok());
    EXPECT_EQ(s->getOutput()->shape(), shape);
    ExpectNear(Fetch(s), ChainRef(x, y), 1e-6f);
  }
  // A wrong rank is refused with the input's name.
  Status bad = s->resizeTensor(s->getInput("x"), {2, 3, 4});
  EXPECT_NE(bad.message().find("input 'x' has rank 2"), std::string::npos) << bad.message();
}

// A Concat along channels of one image: its inputs are written where its
// output keeps them (views, SessionImpl::planConcatViews) and it copies
// nothing. a = x * 2 and b = -x (16 floats each: a 64-byte line) are views
// of cat; the Relu over cat may not run in place while a is still to be
// read by the Sub after it; y = relu(cat), z = a - b. Along axis 3 (the
// inputs interleaved in the output) and with a graph input among the
// Concat's inputs nothing is a view, and the results are the same.
TEST(Session, ConcatInputsAreViewsOfItsOutput) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    NetBuilder b("concat");
    int x = b.addInput("x", fb::DataType::F32, {1, 1, 4, 4});
    int two = b.addConstant("two", {1}, std::vector<float>{2.f});
    int a = b.addOp(fb::OpType::Mul, "a", {x, two}, {"a"})[0];
    int nb = b.addOp(fb::OpType::Neg, "b", {x}, {"b"})[0];
    fb::AxisParamsT axis;
    axis.axis = variant == 1 ? 3 : 1;
    fb::OpParamsUnion p;
    p.Set(axis);
    const std::vector<int> parts = variant == 2 ? std::vector<int>{a, x} : std::vector<int>{a, nb};
    int cat = b.addOp(fb::OpType::Concat, "cat", parts, {"cat"}, p)[0];
    b.addOutput(b.addOp(fb::OpType::Relu, "relu", {cat}, {"y"})[0]);
    b.addOutput(b.addOp(fb::OpType::Sub, "sub", {a, nb}, {"z"})[0]);
    auto interp = Load(b);
    Session* s = *interp->createSession({});
    std::vector<float> xv(16);
    for (int i = 0; i < 16; ++i) xv[static_cast<size_t>(i)] = static_cast<float>(i) - 7.5f;
    ASSERT_TRUE(Feed(s, "x", {1, 1, 4, 4}, xv).ok());
    std::map<std::string, const float*> where;
    auto after = [&](const std::vector<Tensor*>& outs, const OpInfo& op) {
      where[op.name] = outs[0]->host<float>();
      return true;
    };
    ASSERT_TRUE(interp->runSessionWithCallBack(s, nullptr, after).ok());
    if (variant == 0) {
      EXPECT_EQ(where["a"], where["cat"]);
      EXPECT_EQ(where["b"], where["cat"] + 16);
    } else {
      EXPECT_NE(where["a"], where["cat"]);
    }
    std::vector<float> y_ref, z_ref;
    for (int i = 0; i < 16; ++i) z_ref.push_back(2 * xv[static_cast<size_t>(i)] + xv[static_cast<size_t>(i)]);
    auto part = [&](int which, int i) {
      const float v = xv[static_cast<size_t>(i)];
      return which == 0 ? 2 * v : variant == 2 ? v : -v;
    };
    if (variant == 1) {  // [1, 1, 4, 8]: each row a's four values, then b's
      for (int r = 0; r < 4; ++r)
        for (int which = 0; which < 2; ++which)
          for (int i = 4 * r; i < 4 * r + 4; ++i) y_ref.push_back(std::max(0.f, part(which, i)));
    } else {  // [1, 2, 4, 4]
      for (int which = 0; which < 2; ++which)
        for (int i = 0; i < 16; ++i) y_ref.push_back(std::max(0.f, part(which, i)));
    }
    EXPECT_EQ(Fetch(s, "y"), y_ref);
    EXPECT_EQ(Fetch(s, "z"), z_ref);
    // Run again: the views hold the new run's values.
    for (float& v : xv) v = -v;
    ASSERT_TRUE(Feed(s, "x", {1, 1, 4, 4}, xv).ok());
    ASSERT_TRUE(interp->runSession(s).ok());
    for (size_t i = 0; i < 16; ++i) EXPECT_EQ(Fetch(s, "z")[i], 3 * xv[i]);
  }
}

TEST(Session, CallbacksSeeEveryOpInOrderAndCanStop) {
  auto interp = Load(Chain({2, 3}));
  Session* s = *interp->createSession({});
  auto x = RandomFloats(6, 3), y = RandomFloats(6, 4);
  ASSERT_TRUE(Feed(s, "x", {2, 3}, x).ok());
  ASSERT_TRUE(Feed(s, "y", {2, 3}, y).ok());
  std::vector<std::string> seen;
  std::vector<float> relu_out;
  auto before = [&](const std::vector<Tensor*>& ins, const OpInfo& op) {
    seen.push_back("before " + op.name + ":" + op.type + "@" + op.backend);
    EXPECT_EQ(ins[0]->elementCount(), 6);
    return true;
  };
  auto after = [&](const std::vector<Tensor*>& outs, const OpInfo& op) {
    seen.push_back("after " + op.name);
    if (op.name == "relu") relu_out.assign(outs[0]->host<float>(), outs[0]->host<float>() + 6);
    return true;
  };
  ASSERT_TRUE(interp->runSessionWithCallBack(s, before, after).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"before relu:Relu@host", "after relu", "before sigmoid:Sigmoid@host",
                                            "after sigmoid", "before add:Add@host", "after add",
                                            "before neg:Neg@host", "after neg"}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(relu_out[i], std::max(0.f, x[i]));

  // Stopping at 'add' means 'neg' never runs.
  seen.clear();
  auto stop = [&](const std::vector<Tensor*>&, const OpInfo& op) {
    seen.push_back(op.name);
    return op.name != "add";
  };
  Status st = interp->runSessionWithCallBack(s, stop, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_NE(st.message().find("op 2 'add' (Add)"), std::string::npos) << st.message();
  EXPECT_EQ(seen, (std::vector<std::string>{"relu", "sigmoid", "add"}));
}

TEST(Session, InPlaceReuseAndKeepAllTensors) {
  // A long chain of unary ops on one big tensor.
  NetBuilder b("unary_chain");
  int t = b.addInput("x", fb::DataType::F32, {64, 64});
  for (int i = 0; i < 8; ++i)
    t = b.addOp(i % 2 ? fb::OpType::Neg : fb::OpType::Relu, "op" + std::to_string(i), {t}, {"t" + std::to_string(i)})[0];
  b.addOutput(t);
  auto interp = Load(b);
  const size_t bytes = 64 * 64 * 4;

  Session* s = *interp->createSession({});
  auto mem = s->memory();
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0].tensor_bytes, 9 * bytes);  // input + 8 intermediates/outputs
  EXPECT_EQ(mem[0].planned_bytes, 2 * bytes);  // the input, and one buffer the chain runs in place in
  EXPECT_EQ(mem[0].planned_bytes, mem[0].lower_bound_bytes);

  ScheduleConfig debug;
  debug.keepAllTensors = true;
  Session* d = *interp->createSession(debug);
  EXPECT_EQ(d->memory()[0].planned_bytes, 9 * bytes);
  auto x = RandomFloats(64 * 64, 5);
  for (Session* sess : {s, d}) {
    ASSERT_TRUE(Feed(sess, "x", {64, 64}, x).ok());
    ASSERT_TRUE(sess->run().ok());
  }
  ExpectNear(Fetch(s), Fetch(d), 0);
  std::vector<float> want;
  for (float v : x) {
    for (int i = 0; i < 8; ++i) v = i % 2 ? -v : std::max(0.f, v);
    want.push_back(v);
  }
  ExpectNear(Fetch(s), want, 0);
}

TEST(Session, NhwcHostTensors) {
  NetBuilder b("nhwc");
  int x = b.addInput("x", fb::DataType::F32, {1, 3, 2, 4});
  b.addOutput(b.addOp(fb::OpType::Relu, "relu", {x}, {"y"})[0]);
  auto interp = Load(b);
  Session* s = *interp->createSession({});
  auto nchw = RandomFloats(24, 6);
  std::vector<float> nhwc(24);
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 4; ++w) nhwc[(h * 4 + w) * 3 + c] = nchw[(c * 2 + h) * 4 + w];
  auto in = Tensor::wrap({1, 2, 4, 3}, fb::DataType::F32, nhwc.data(), DimensionType::kNHWC);
  ASSERT_TRUE(s->getInput()->copyFromHostTensor(*in).ok());
  ASSERT_TRUE(s->run().ok());
  auto out = Tensor::createHostTensorFromDevice(*s->getOutput(), true, DimensionType::kNHWC);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)->shape(), (std::vector<int64_t>{1, 2, 4, 3}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ((*out)->host<float>()[i], std::max(0.f, nhwc[i]));
  // A shape mismatch names the tensor.
  auto wrong = Tensor::create({1, 3, 2, 5});
  Status st = s->getInput()->copyFromHostTensor(*wrong);
  EXPECT_NE(st.message().find("tensor 'x'"), std::string::npos) << st.message();
}

TEST(Session, ReleaseModelKeepsSessionsRunning) {
  auto interp = Load(Chain({2, 2}));
  Session* s = *interp->createSession({});
  interp->releaseModel();
  EXPECT_FALSE(interp->createSession({}).ok());
  auto x = RandomFloats(4, 1), y = RandomFloats(4, 2);
  ASSERT_TRUE(Feed(s, "x", {2, 2}, x).ok());
  ASSERT_TRUE(Feed(s, "y", {2, 2}, y).ok());
  ASSERT_TRUE(s->run().ok());
  ExpectNear(Fetch(s), ChainRef(x, y), 1e-6f);
  EXPECT_TRUE(interp->releaseSession(s).ok());
}

TEST(Session, TwoInterpretersOnTwoThreadsMatchSerial) {
  auto bytes = Chain({64, 33}).finish();
  ASSERT_TRUE(bytes.ok());
  auto x = RandomFloats(64 * 33, 7), y = RandomFloats(64 * 33, 8);
  std::vector<float> want = ChainRef(x, y);
  auto work = [&](std::vector<float>* result) {
    auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
    ASSERT_TRUE(interp.ok());
    ScheduleConfig c;
    c.numThread = 2;
    Session* s = *(*interp)->createSession(c);
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(Feed(s, "x", {64, 33}, x).ok());
      ASSERT_TRUE(Feed(s, "y", {64, 33}, y).ok());
      ASSERT_TRUE(s->run().ok());
      *result = Fetch(s);
    }
  };
  std::vector<float> r1, r2;
  std::thread t1(work, &r1), t2(work, &r2);
  t1.join();
  t2.join();
  ExpectNear(r1, want, 1e-6f);
  ExpectNear(r2, want, 1e-6f);
}

// ---- scheduling across backends, with a mock device backend ----

// A "device" that runs only Relu, Add and Neg (with the host kernels), in its
// own pool, and counts the copies in and out.
class MockBackend final : public Backend {
 public:
  explicit MockBackend(std::set<fb::OpType> ops) : inner_(1), ops_(std::move(ops)) {}
  const char* name() const override { return "mock"; }
  std::string deviceName() const override { return "mock device"; }
  StatusOr<std::unique_ptr<Execution>> onCreate(const GraphOp& op, const Graph& g) override {
    if (!ops_.count(op.type)) return Unsupported("mock has no %s kernel", op.typeName());
    return inner_.onCreate(op, g);
  }
  void onClearBuffer() override {
    planner_.clear();
    ids_.clear();
  }
  Status onAcquireBuffer(Tensor* t, const Tensor* share) override {
    if (share) {
      planner_.share(ids_.at(share));
      ids_[t] = ids_.at(share);
    } else {
      ids_[t] = planner_.acquire(t->byteSize());
    }
    return Status::Ok();
  }
  Status onReleaseBuffer(Tensor* t) override {
    planner_.release(ids_.at(t));
    return Status::Ok();
  }
  Status onAllocateBuffer() override {
    auto plan = planner_.plan();
    memory_.assign(plan.total + 64, 0);
    for (auto& [t, id] : ids_) const_cast<Tensor*>(t)->bind(this, memory_.data() + plan.offsets[id]);
    return Status::Ok();
  }
  MemoryReport memoryReport() const override { return {}; }
  Status onCopyBuffer(const Tensor& src, Tensor* dst) override {
    ++copies;
    std::memcpy(dst->hostData(), src.hostData(), src.byteSize());
    return Status::Ok();
  }
  int copies = 0;

 private:
  HostBackend inner_;
  std::set<fb::OpType> ops_;
  MemoryPlanner planner_;
  std::map<const Tensor*, int> ids_;
  std::vector<uint8_t> memory_;
};

TEST(Scheduler, FallsBackPerOpWithCopiesAtTheBorders) {
  auto bytes = Chain({3, 5}).finish();
  std::shared_ptr<Model> model = std::move(
      Model::Load(ByteRegion::Copy(bytes->data(), bytes->size()).value(), "chain.kiln", "").value());
  auto graph = std::make_shared<Graph>(Graph::Build(*model));
  MockBackend* mock = nullptr;
  BackendFactory factory = [&](ForwardType t, const ScheduleConfig& c) -> StatusOr<std::unique_ptr<Backend>> {
    if (t == ForwardType::kVulkan) {
      auto m = std::make_unique<MockBackend>(std::set<fb::OpType>{fb::OpType::Relu, fb::OpType::Add, fb::OpType::Neg});
      mock = m.get();
      return std::unique_ptr<Backend>(std::move(m));
    }
    return DefaultBackendFactory()(t, c);
  };
  std::vector<std::string> logs;
  SetLogSink([&](const std::string& m) { logs.push_back(m); });
  ScheduleConfig config;
  config.type = ForwardType::kVulkan;
  auto s = SessionImpl::Create(model, graph, {config}, factory);
  SetLogSink(nullptr);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Placement& p = (*s)->placement();
  ASSERT_EQ(p.ops.size(), 4u);
  EXPECT_EQ(p.ops[0].backend, "mock");
  EXPECT_EQ(p.ops[1].backend, "host");
  EXPECT_EQ(p.ops[1].reason, "mock: mock has no Sigmoid kernel");
  EXPECT_EQ(p.ops[2].backend, "mock");
  EXPECT_EQ(p.ops[3].backend, "mock");
  EXPECT_EQ(p.switches, 2);  // relu -> sigmoid, sigmoid -> add
  EXPECT_EQ(p.ops_per_backend.at("mock"), 3);
  ASSERT_EQ(logs.size(), 1u);  // printed once, naming the op and the reason
  EXPECT_NE(logs[0].find("op 1 'sigmoid' (Sigmoid) runs on host: mock: mock has no Sigmoid kernel"), std::string::npos)
      << logs[0];

  ASSERT_TRUE((*s)->resize().ok());
  auto x = RandomFloats(15, 1), y = RandomFloats(15, 2);
  auto hx = Tensor::wrap({3, 5}, fb::DataType::F32, x.data()), hy = Tensor::wrap({3, 5}, fb::DataType::F32, y.data());
  ASSERT_TRUE((*s)->input("x")->copyFromHostTensor(*hx).ok());
  ASSERT_TRUE((*s)->input("y")->copyFromHostTensor(*hy).ok());
  EXPECT_EQ((*s)->input("x")->backend(), mock);  // inputs live where their first consumer runs
  mock->copies = 0;
  ASSERT_TRUE((*s)->run(nullptr, nullptr).ok());
  EXPECT_EQ(mock->copies, 2);  // r: mock -> host, s: host -> mock
  std::vector<float> got(15);
  auto hout = Tensor::wrap({3, 5}, fb::DataType::F32, got.data());
  ASSERT_TRUE((*s)->output("")->copyToHostTensor(hout.get()).ok());
  ExpectNear(got, ChainRef(x, y), 1e-6f);
}

TEST(Scheduler, UnavailableBackendFallsBackWithReason) {
  auto interp = Load(Chain({2, 2}));
  ScheduleConfig c;
  c.type = ForwardType::kOpenCL;
  c.deviceIndex = 99;  // no such device (or no OpenCL in this build): the backend cannot start
  std::vector<std::string> logs;
  SetLogSink([&](const std::string& m) { logs.push_back(m); });
  auto s = interp->createSession(c);
  SetLogSink(nullptr);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->placement().ops_per_backend.at("host"), 4);
  for (const OpPlacement& op : (*s)->placement().ops)  // every op says why, not just the first
    EXPECT_EQ(op.reason.rfind("opencl: ", 0), 0u) << op.reason;
  EXPECT_EQ(logs.size(), 1u);
}

TEST(Scheduler, MultiPathSession) {
  // Path 1 (relu, sigmoid) on the mock-free host, path 2 the rest: both host
  // here, but each op must be covered once and the result unchanged.
  auto interp = Load(Chain({2, 2}));
  ScheduleConfig a, b;
  a.path.inputs = {"x"};
  a.path.outputs = {"s"};
  b.numThread = 2;
  auto s = interp->createMultiPathSession({a, b});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto x = RandomFloats(4, 1), y = RandomFloats(4, 2);
  ASSERT_TRUE(Feed(*s, "x", {2, 2}, x).ok());
  ASSERT_TRUE(Feed(*s, "y", {2, 2}, y).ok());
  ASSERT_TRUE((*s)->run().ok());
  ExpectNear(Fetch(*s), ChainRef(x, y), 1e-6f);
  ScheduleConfig bad;
  bad.path.outputs = {"nope"};
  auto e = interp->createMultiPathSession({bad});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("path output 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// X[2,3,4] and n[1] (i64) are inputs; Reshape(X, Concat(n, [-1])): the shape
// depends on n's values, which are not known at resize.
NetBuilder ShapeFromInputValues() {
  NetBuilder b("shape_from_input");
  int x = b.addInput("x", fb::DataType::F32, {2, 3, 4});
  int n = b.addInput("n", fb::DataType::I64, {1});
  int minus1 = b.addConstant("minus1", {1}, std::vector<int64_t>{-1});
  fb::AxisParamsT axis0;
  axis0.axis = 0;
  int shape = b.addOp(fb::OpType::Concat, "concat", {n, minus1}, {"shape"}, axis0)[0];
  b.addOutput(b.addOp(fb::OpType::Reshape, "reshape", {x, shape}, {"y"})[0]);
  return b;
}

TEST(Session, ShapeInputsAreWrittenBeforeResizeAndTracked) {
  auto interp = Load(ShapeFromInputValues());
  auto s = interp->createSession({});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session* sess = *s;
  // Shape inputs have memory before resize, so the app writes them first.
  Tensor* n = sess->getInput("n");
  ASSERT_NE(n->hostData(), nullptr);
  n->host<int64_t>()[0] = 5;  // Reshape(x, [5, -1]) with 24 elements: a clear error
  Status bad = sess->resize();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("'reshape' (Reshape)"), std::string::npos) << bad.message();
  std::vector<float> x = RandomFloats(24, 3);
  for (int64_t rows : {2, 6, 4}) {
    n->host<int64_t>()[0] = rows;  // run() notices the new value and resizes
    if (rows == 2) {
      ASSERT_TRUE(sess->resize().ok());
    }
    ASSERT_TRUE(Feed(sess, "x", {2, 3, 4}, x).ok());
    Status st = sess->run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(sess->getOutput()->shape(), (std::vector<int64_t>{rows, 24 / rows}));
    ExpectNear(Fetch(sess), x, 0);
  }
}

TEST(Session, ReleaseCacheThenRunResizesAgain) {
  // Shape(x) is computed at resize and is also a graph output.
  NetBuilder b("shape_out");
  int x = b.addInput("x", fb::DataType::F32, {2, 3, 4});
  int shape = b.addOp(fb::OpType::Shape, "shape", {x}, {"shape"})[0];
  b.addOutput(b.addOp(fb::OpType::Reshape, "reshape", {x, shape}, {"y"})[0]);
  b.addOutput(shape);
  auto interp = Load(b);
  Session* s = *interp->createSession({});
  ASSERT_TRUE(s->run().ok());
  s->releaseCache();
  ASSERT_TRUE(s->run().ok());
  Tensor* out = s->getOutput("shape");
  ASSERT_EQ(out->elementCount(), 3);
  EXPECT_EQ(std::vector<int64_t>(out->host<int64_t>(), out->host<int64_t>() + 3), (std::vector<int64_t>{2, 3, 4}));
}

TEST(Session, ZeroElementTensorsCopy) {
  NetBuilder b("empty");
  int x = b.addInput("x", fb::DataType::F32, {0, 3});
  b.addOutput(b.addOp(fb::OpType::Relu, "relu", {x}, {"y"})[0]);
  auto interp = Load(b);
  Session* s = *interp->createSession({});
  std::vector<float> none;
  auto host = Tensor::wrap({0, 3}, fb::DataType::F32, none.data());
  EXPECT_TRUE(s->getInput()->copyFromHostTensor(*host).ok());
  ASSERT_TRUE(s->run().ok());
  EXPECT_TRUE(s->getOutput()->copyToHostTensor(host.get()).ok());
  EXPECT_EQ(s->getOutput()->shape(), (std::vector<int64_t>{0, 3}));
}

// The profile's work figures (kiln-bench's GFLOP/s and GB/s columns).
TEST(Session, ProfileCountsFlopsAndBytes) {
  auto interp = Load(test::TinyCnn());
  ScheduleConfig config;
  config.profile = true;
  Session* s = *interp->createSession(config);
  ASSERT_TRUE(s->resizeTensor(s->getInput(), {1, 3, 10, 6}).ok());
  ASSERT_TRUE(s->run().ok());
  std::map<std::string, OpProfile> by_type;
  for (const OpProfile& p : s->profile()) by_type[p.type] = p;
  ASSERT_EQ(by_type.size(), 7u);
  // Conv 3x3 pad 1, 3 -> 8 channels on 10x6: each output sums 27 products.
  const double conv_out = 8 * 10 * 6;
  EXPECT_DOUBLE_EQ(by_type["Conv"].flops, 2 * conv_out * 27);
  EXPECT_DOUBLE_EQ(by_type["Conv"].bytes, 4 * (3 * 10 * 6 + 8 * 3 * 3 * 3 + 8 + conv_out));
  EXPECT_DOUBLE_EQ(by_type["Relu"].flops, conv_out);
  // Gemm [1, 8] x [4, 8]^T: 4 outputs of 8 products.
  EXPECT_DOUBLE_EQ(by_type["Gemm"].flops, 2 * 4 * 8);
  EXPECT_DOUBLE_EQ(by_type["MaxPool"].flops, 0);
  EXPECT_DOUBLE_EQ(by_type["MaxPool"].bytes, 4 * (conv_out + 8 * 5 * 3));
}

// Precision low stores the weights the host packs at resize (here the
// Conv's GEMM panels: 8 output channels x 27, rows padded to the
// micro-kernel's mr, and the Gemm's packed B: 4 columns x 8, padded to its
// nr) as fp16: the backend's constant bytes halve, and the output stays
// within fp16 weight rounding.
TEST(Session, HostPrecisionLowHalvesPackedWeights) {
  auto interp = Load(test::TinyCnn());
  std::vector<float> x = test::RandomFloats(3 * 10 * 6, 5);
  auto run = [&](Precision precision, size_t* weight_bytes) {
    ScheduleConfig config;
    config.type = ForwardType::kHost;
    config.precision = precision;
    Session* s = *interp->createSession(config);
    EXPECT_TRUE(interp->resizeTensor(s->getInput(), {1, 3, 10, 6}).ok());
    EXPECT_TRUE(interp->resizeSession(s).ok());
    EXPECT_TRUE(Feed(s, "", {1, 3, 10, 6}, x).ok());
    EXPECT_TRUE(s->run().ok());
    *weight_bytes = 0;
    for (const MemoryUse& m : s->memory())
      if (m.backend == "host") *weight_bytes = m.constant_bytes;
    return Fetch(s);
  };
  size_t normal_bytes = 0, low_bytes = 0;
  std::vector<float> normal = run(Precision::kNormal, &normal_bytes), low = run(Precision::kLow, &low_bytes);
  // The Gemm's packed B (8 x 4, padded to the micro-kernel's nr) and the
  // 3-channel conv's weights in the first-layer kernel's channel blocks
  // (8 of 27 padded to a block, 4 or 16 channels).
  const gemm_detail::GemmKernel& kr = gemm_detail::KernelForIsa(GemmBestIsa());
  const size_t n_pad = (4 + kr.nr - 1) / kr.nr * kr.nr;
  const size_t conv_floats = (normal_bytes / sizeof(float)) - n_pad * 8;
  EXPECT_TRUE(conv_floats == 8 * 27 || conv_floats == 16 * 27) << normal_bytes;
  EXPECT_EQ(low_bytes, normal_bytes / 2);
  test::ExpectNear(low, normal, 2e-3f, "fp16 weights");
}

// A Conv resized from a plane that takes Winograd F(2x2, 3x3) (7x7) to one
// that takes F(4x4, 3x3) (20x20) keeps the F(4x4) transformed weights only,
// and the backend's constant bytes count only them: 36 positions x 16 input
// channels x the output channels padded to the micro-kernel's nr.
TEST(Session, HostWinogradTileChangeCountsOneTransform) {
  NetBuilder b("wino");
  int x = b.addInput("x", fb::DataType::F32, {1, 16, "h", "w"});
  int w = b.addConstant("w", {16, 16, 3, 3}, test::RandomFloats(16 * 16 * 9, 7));
  fb::ConvParamsT conv;
  conv.kernel_shape = {3, 3};
  conv.pads = {1, 1, 1, 1};
  b.addOutput(b.addOp(fb::OpType::Conv, "conv", {x, w}, {"y"}, conv)[0]);
  auto interp = Load(b);
  ScheduleConfig config;
  config.type = ForwardType::kHost;
  Session* s = *interp->createSession(config);
  auto weight_bytes = [&] {
    size_t bytes = 0;
    for (const MemoryUse& m : s->memory())
      if (m.backend == "host") bytes = m.constant_bytes;
    return bytes;
  };
  const gemm_detail::GemmKernel& kr = gemm_detail::KernelForIsa(GemmBestIsa());
  const size_t m_pad = (16 + kr.nr - 1) / kr.nr * kr.nr;
  for (int64_t side : {7, 20}) {
    SCOPED_TRACE(side);
    ASSERT_TRUE(interp->resizeTensor(s->getInput(), {1, 16, side, side}).ok());
    ASSERT_TRUE(interp->resizeSession(s).ok());
    ASSERT_TRUE(Feed(s, "", {1, 16, side, side}, test::RandomFloats(static_cast<size_t>(16 * side * side), 8)).ok());
    ASSERT_TRUE(s->run().ok());
    const size_t positions = side == 7 ? 16 : 36;
    EXPECT_EQ(weight_bytes(), positions * 16 * m_pad * sizeof(float));
  }
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Adaptive host threading (SessionImpl::run) runs a session's host steps on
// one thread, on all of them, or mixed, run by run: its first two runs take
// all threads, the next two one and mixed, then the fastest (another every
// 8th run). The bits must not change
// with the form: a CNN through the few-channel stem conv, Winograd, the
// 3x3 stride-2 MaxPool, a depthwise conv, a 1x1 conv on a small plane and
// a matrix-vector Gemm of 300 outputs from 512 (10 panels of 32: one
// thread takes them 8 and 2, two threads 5 and 5, so panel 4 fell in a
// group of four on one and among the odd ones on the other, summed in
// another order before the kernels summed both alike), ten runs on 2
// threads, each equal to the first.
TEST(Session, AdaptiveThreadsKeepTheBits) {
  NetBuilder b("adaptive");
  int x = b.addInput("x", fb::DataType::F32, {1, 3, 32, 32});
  auto conv = [&](const char* name, int in, int m, int c, int k, int stride, int group) {
    const int cg = c / group;
    int w = b.addConstant(std::string(name) + ".w", {m, cg, k, k}, RandomFloats(static_cast<size_t>(m * cg * k * k), 11 + m + c));
    int bias = b.addConstant(std::string(name) + ".b", {m}, RandomFloats(static_cast<size_t>(m), 5 + m));
    fb::ConvParamsT p;
    p.kernel_shape = {k, k};
    p.strides = {stride, stride};
    p.pads = {k / 2, k / 2, k / 2, k / 2};
    p.group = group;
    p.activation = fb::Activation::Relu;
    return b.addOp(fb::OpType::Conv, name, {in, w, bias}, {std::string(name) + ".out"}, p)[0];
  };
  int h = conv("stem", x, 16, 3, 3, 2, 1);  // 16x16
  h = conv("wino", h, 16, 16, 3, 1, 1);
  fb::PoolParamsT pool;
  pool.kernel_shape = {3, 3};
  pool.strides = {2, 2};
  pool.pads = {1, 1, 1, 1};
  h = b.addOp(fb::OpType::MaxPool, "pool", {h}, {"pool.out"}, pool)[0];  // 8x8
  h = conv("dw", h, 16, 16, 3, 1, 16);
  h = conv("pw", h, 512, 16, 1, 1, 1);
  h = b.addOp(fb::OpType::GlobalAveragePool, "gap", {h}, {"gap.out"})[0];
  fb::AxisParamsT flat;
  flat.axis = 1;
  h = b.addOp(fb::OpType::Flatten, "flatten", {h}, {"flat.out"}, flat)[0];
  int fw = b.addConstant("fc.w", {300, 512}, RandomFloats(300 * 512, 3));
  fb::GemmParamsT gemm;
  gemm.trans_b = true;
  b.addOutput(b.addOp(fb::OpType::Gemm, "fc", {h, fw}, {"logits"}, gemm)[0]);
  auto interp = Load(b);
  ScheduleConfig config;
  config.numThread = 2;
  auto session = interp->createSession(config);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  ASSERT_TRUE(Feed(*session, "x", {1, 3, 32, 32}, RandomFloats(3 * 32 * 32, 9)).ok());
  std::vector<float> first;
  for (int run = 0; run < 10; ++run) {
    ASSERT_TRUE((*session)->run().ok());
    const std::vector<float> got = Fetch(*session);
    if (run == 0) first = got;
    else ASSERT_EQ(0, std::memcmp(got.data(), first.data(), first.size() * sizeof(float))) << "run " << run;
  }
}

}  // namespace
}  // namespace kiln
