// If, Loop and Scan on the host: results against C++ references, what is
// decided at resize and what at run time, and the errors of bad control
// flow (trip counts, branch types, subgraph references, recursion, depth).
// tests/gpu/gpu_control_flow_test.cpp runs the same models on the GPUs.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kiln/interpreter.h"
#include "kiln/passes.h"
#include "support/control_flow_models.h"
#include "support/op_test.h"

namespace kiln {
namespace {

using test::ExpectNear;

StatusOr<std::unique_ptr<Interpreter>> Load(const NetBuilder& b) {
  KILN_ASSIGN_OR_RETURN(auto bytes, b.finish());
  return Interpreter::createFromBuffer(bytes.data(), bytes.size());
}

template <typename T>
Status Write(Session* s, const std::string& name, const std::vector<int64_t>& shape, std::vector<T> v,
             fb::DataType dtype) {
  Tensor* in = s->getInput(name);
  if (!in) return NotFound("no input %s", name.c_str());
  KILN_RETURN_IF_ERROR(s->resizeTensor(in, shape));
  auto host = Tensor::wrap(shape, dtype, v.data());
  return in->copyFromHostTensor(*host);
}

std::vector<float> Read(Session* s, const std::string& name) {
  Tensor* t = s->getOutput(name);
  std::vector<float> v(static_cast<size_t>(t->elementCount()));
  auto host = Tensor::wrap(t->shape(), fb::DataType::F32, v.data());
  EXPECT_TRUE(t->copyToHostTensor(host.get()).ok());
  return v;
}

Session* NewSession(Interpreter* interp) {
  ScheduleConfig c;
  auto s = interp->createSession(c);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : nullptr;
}

TEST(ControlFlow, IfOnDataPicksTheBranchAtRunTime) {
  auto interp = Load(test::IfOnData());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Session* s = NewSession(interp->get());
  ASSERT_NE(s, nullptr);
  const std::vector<float> y = {0.5f, -1.f, 2.f, 3.f};
  for (std::vector<float> x : {std::vector<float>{1, 2, -1, 0.5f}, std::vector<float>{-1, -2, 1, 0.5f}}) {
    ASSERT_TRUE(Write(s, "x", {4}, x, fb::DataType::F32).ok());
    ASSERT_TRUE(Write(s, "y", {4}, y, fb::DataType::F32).ok());
    Status st = s->run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    ExpectNear(Read(s, "out"), test::IfOnDataRef(x, y), 1e-6f);
  }
}

TEST(ControlFlow, IfOnConfigurationFoldsAtResizeAndFollowsNewValues) {
  auto interp = Load(test::IfOnSampleRate());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Session* s = NewSession(interp->get());
  ASSERT_NE(s, nullptr);
  const std::vector<float> x = {1, -2, 3, -4};
  for (int64_t sr : {16000, 8000, 16000}) {
    Status w = Write(s, "sr", {}, std::vector<int64_t>{sr}, fb::DataType::I64);
    ASSERT_TRUE(w.ok()) << w.ToString();
    ASSERT_TRUE(s->resize().ok());  // sr decides the plan: written before resize
    ASSERT_TRUE(Write(s, "x", {4}, x, fb::DataType::F32).ok());
    Status st = s->run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::vector<float> want;
    for (float v : x) want.push_back(sr == 16000 ? std::max(v, 0.f) : -v);
    ExpectNear(Read(s, "out"), want, 0.f);
  }
  // The condition is a resize value: Equal ran at resize, on the host.
  for (const OpPlacement& p : s->placement().ops) EXPECT_TRUE(p.reason.empty()) << p.type << ": " << p.reason;
}

TEST(ControlFlow, LoopWithTripCountCarriesAndScans) {
  auto interp = Load(test::LoopWithTripCount());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Session* s = NewSession(interp->get());
  ASSERT_NE(s, nullptr);
  const std::vector<float> x = {1, -2, 4};
  ASSERT_TRUE(Write(s, "x", {3}, x, fb::DataType::F32).ok());
  Status st = s->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<float> acc, scans;
  test::LoopWithTripCountRef(x, 4, &acc, &scans);
  EXPECT_EQ(s->getOutput("scans")->shape(), (std::vector<int64_t>{4, 3}));
  ExpectNear(Read(s, "acc"), acc, 1e-6f);
  ExpectNear(Read(s, "scans"), scans, 1e-6f);
}

TEST(ControlFlow, LoopUntilAConditionRunsAtResize) {
  auto interp = Load(test::LoopUntil());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Session* s = NewSession(interp->get());
  ASSERT_NE(s, nullptr);
  for (std::vector<float> v : {std::vector<float>{1, 2}, std::vector<float>{10, 30}}) {
    ASSERT_TRUE(Write(s, "v", {2}, v, fb::DataType::F32).ok());
    Status st = s->run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::vector<float> last, scans;
    test::LoopUntilRef(v, &last, &scans);
    EXPECT_EQ(s->getOutput("scans")->shape(), (std::vector<int64_t>{static_cast<int64_t>(scans.size() / 2), 2}));
    ExpectNear(Read(s, "last"), last, 0.f);
    ExpectNear(Read(s, "scans"), scans, 0.f);
  }
}

TEST(ControlFlow, ScanReversedAlongAxisOne) {
  auto interp = Load(test::ScanReverse());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Session* s = NewSession(interp->get());
  ASSERT_NE(s, nullptr);
  const std::vector<float> s0 = {0.25f, -1}, seq = {1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
  ASSERT_TRUE(Write(s, "s0", {2}, s0, fb::DataType::F32).ok());
  ASSERT_TRUE(Write(s, "seq", {2, 5}, seq, fb::DataType::F32).ok());
  Status st = s->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<float> state, out;
  test::ScanReverseRef(s0, seq, &state, &out);
  ExpectNear(Read(s, "s"), state, 1e-6f);
  ExpectNear(Read(s, "out"), out, 1e-6f);
}

// ---- streaming state ----

TEST(StreamingState, BoundOutputFeedsTheNextRun) {
  auto interp = Load(test::StreamingCell());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Session* s = NewSession(interp->get());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->bindState("h_out", "h").ok());
  ASSERT_TRUE(s->resetState().ok());
  std::vector<std::vector<float>> xs;
  for (int r = 0; r < 4; ++r) {
    xs.push_back({0.1f * r, -0.5f, 1.f, 0.25f * r});
    ASSERT_TRUE(Write(s, "x", {1, 4}, xs.back(), fb::DataType::F32).ok());
    ASSERT_TRUE(s->run().ok());
    ExpectNear(Read(s, "out"), test::StreamingCellRef(xs), 1e-6f);
  }
  // A new stream: the state is zeros again.
  ASSERT_TRUE(s->resetState().ok());
  ASSERT_TRUE(s->run().ok());
  ExpectNear(Read(s, "out"), test::StreamingCellRef({xs.back()}), 1e-6f);
}

TEST(StreamingState, BadBindings) {
  auto interp = Load(test::StreamingCell());
  ASSERT_TRUE(interp.ok());
  Session* s = NewSession(interp->get());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->bindState("nope", "h").code(), StatusCode::kNotFound);
  EXPECT_EQ(s->bindState("h_out", "nope").code(), StatusCode::kNotFound);
  ASSERT_TRUE(s->bindState("h_out", "h").ok());
  Status twice = s->bindState("out", "h");
  EXPECT_NE(twice.message().find("already bound"), std::string::npos) << twice.message();
}

// ---- bad control flow ----

void ExpectError(const Status& s, const std::string& want) {
  ASSERT_FALSE(s.ok()) << "expected an error containing: " << want;
  EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
}

Status RunLoopWithM(int64_t m) {
  KILN_ASSIGN_OR_RETURN(auto interp, Load(test::LoopWithTripCount(/*m_input=*/true)));
  ScheduleConfig c;
  KILN_ASSIGN_OR_RETURN(Session * s, interp->createSession(c));
  KILN_RETURN_IF_ERROR(Write(s, "m", {}, std::vector<int64_t>{m}, fb::DataType::I64));
  KILN_RETURN_IF_ERROR(s->resize());
  KILN_RETURN_IF_ERROR(Write(s, "x", {3}, std::vector<float>{1, 2, 3}, fb::DataType::F32));
  return s->run();
}

TEST(ControlFlowErrors, NegativeTripCount) { ExpectError(RunLoopWithM(-3), "trip count M is -3 (negative)"); }

TEST(ControlFlowErrors, TripCountAboveTheLimit) {
  ASSERT_TRUE(RunLoopWithM(10).ok());
  setenv("KILN_MAX_LOOP_ITERATIONS", "8", 1);
  Status s = RunLoopWithM(10);
  unsetenv("KILN_MAX_LOOP_ITERATIONS");
  ExpectError(s, "above the limit of 8 iterations");
}

TEST(ControlFlowErrors, LoopThatNeverEnds) {
  // No M and a condition the body passes through: refused, not run forever.
  NetBuilder b = test::LoopWithTripCount();
  b.net().ops.back()->inputs[0] = -1;
  auto interp = Load(b);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ScheduleConfig c;
  // Shapes are static, so createSession resizes: the scan outputs' length
  // is needed there, and the error comes then.
  ExpectError((*interp)->createSession(c).status(), "it would run forever");
}

TEST(ControlFlowErrors, ScanOutputPastTheTensorLimit) {
  // LoopUntil's scans grow 8 bytes an iteration to 48: a 32-byte limit stops them.
  auto interp = Load(test::LoopUntil());
  ASSERT_TRUE(interp.ok());
  ScheduleConfig c;
  c.maxTensorBytes = 32;
  auto s = (*interp)->createSession(c);
  Status st = s.ok() ? Write(*s, "v", {2}, std::vector<float>{1, 2}, fb::DataType::F32) : s.status();
  if (st.ok()) st = (*s)->run();
  ExpectError(st, "scan output 0 grows past the tensor limit (32 bytes)");
}

TEST(ControlFlowErrors, BranchOutputOfAnotherType) {
  NetBuilder b = test::IfOnSampleRate();
  // The else branch now gives an i64 (Cast), the op still declares f32.
  fb::SubGraphT& els = *b.net().subgraphs[1];
  auto cast_out = std::make_unique<fb::TensorT>();
  cast_out->name = "as_i64";
  cast_out->dtype = fb::DataType::I64;
  cast_out->unknown_rank = true;
  els.tensors.push_back(std::move(cast_out));
  auto cast = std::make_unique<fb::OpT>();
  cast->type = fb::OpType::Cast;
  cast->name = "cast";
  cast->inputs = {els.outputs[0]};
  cast->outputs = {static_cast<int>(els.tensors.size()) - 1};
  fb::CastParamsT cp;
  cp.to = fb::DataType::I64;
  cast->params.Set(cp);
  els.ops.push_back(std::move(cast));
  els.outputs = {static_cast<int>(els.tensors.size()) - 1};
  auto interp = Load(b);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ScheduleConfig c;
  auto s = (*interp)->createSession(c);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(Write(*s, "sr", {}, std::vector<int64_t>{8000}, fb::DataType::I64).ok());
  ExpectError((*s)->resize(), "else_branch output 0 'as_i64' is i64, the op declares f32");
}

TEST(ControlFlowErrors, SubgraphIndexOutOfRange) {
  NetBuilder b = test::IfOnData();
  b.net().ops.back()->params.AsIfParams()->else_branch = 7;
  ExpectError(Load(b).status(), "If refers to subgraph 7 (the model has 2)");
}

TEST(ControlFlowErrors, SubgraphCountsMustMatchTheOp) {
  NetBuilder b = test::IfOnData();
  b.net().subgraphs[0]->inputs.pop_back();
  ExpectError(Load(b).status(), "then_branch (subgraph 0) has 1 inputs and 1 outputs; the op needs 2 and 1");
}

// A body that holds a Loop over the body itself.
TEST(ControlFlowErrors, RecursiveSubgraph) {
  NetBuilder b = test::LoopWithTripCount();
  fb::SubGraphT& body = *b.net().subgraphs[0];
  auto inner = std::make_unique<fb::OpT>();
  inner->type = fb::OpType::Loop;
  inner->name = "again";
  fb::LoopParamsT p;
  p.body = 0;
  p.num_captures = 1;
  inner->params.Set(p);
  const int m = body.inputs[0], cond = body.inputs[1], acc = body.inputs[2], x = body.inputs[3];
  inner->inputs = {m, cond, acc, x};
  for (const char* n : {"r_acc", "r_scan"}) {
    auto t = std::make_unique<fb::TensorT>();
    t->name = n;
    t->unknown_rank = true;
    body.tensors.push_back(std::move(t));
    inner->outputs.push_back(static_cast<int>(body.tensors.size()) - 1);
  }
  body.ops.push_back(std::move(inner));
  ExpectError(Load(b).status(), "subgraph 0 runs itself (recursive control flow)");
}

// `levels` subgraphs, each an If naming the next level as both branches
// (the last a Not), under a top-level If.
NetBuilder NestedIfs(int levels) {
  NetBuilder b("nested");
  int c = b.addInput("c", fb::DataType::BOOL, {});
  int next = -1;
  for (int level = levels - 1; level >= 0; --level) {
    NetBuilder g("level" + std::to_string(level));
    int gc = g.addInput("c", fb::DataType::BOOL, {});
    if (next < 0) {
      g.addOutput(g.addOp(fb::OpType::Not, "not", {gc}, {"o"})[0]);
    } else {
      fb::IfParamsT p;
      p.then_branch = p.else_branch = next;
      int o = g.addOp(fb::OpType::If, "if", {gc, gc}, {"o"}, p)[0];
      g.net().tensors[static_cast<size_t>(o)]->dtype = fb::DataType::BOOL;
      g.addOutput(o);
    }
    next = b.addSubgraph(std::move(g));
  }
  fb::IfParamsT p;
  p.then_branch = p.else_branch = next;
  b.addOutput(b.addOp(fb::OpType::If, "top", {c, c}, {"out"}, p)[0]);
  return b;
}

TEST(ControlFlowErrors, NestingBeyondTheDepthLimit) {
  ExpectError(Load(NestedIfs(20)).status(), "is nested 17 deep (the limit is 16)");
}

// 12 levels naming the next one twice: 2^13 - 2 child sessions, refused.
TEST(ControlFlowErrors, SubgraphsThatFanOut) {
  ExpectError(Load(NestedIfs(12)).status(), "control flow expands to more than 1024 subgraph instances");
}

// Counts from the file so large that nin - num_scan_inputs - num_captures
// overflows int (found by kiln-fuzz-loader): an error, not undefined
// arithmetic.
TEST(ControlFlowErrors, ScanCountsThatOverflow) {
  for (const bool loop : {false, true}) {
    NetBuilder b(loop ? "huge_loop" : "huge_scan");
    int x = b.addInput("x", fb::DataType::F32, {2});
    NetBuilder g("body");
    g.addOutput(g.addOp(fb::OpType::Relu, "relu", {g.addInput("x", fb::DataType::F32, {2})}, {"y"})[0]);
    const int body = b.addSubgraph(std::move(g));
    if (loop) {
      fb::LoopParamsT p;
      p.body = body;
      p.num_captures = INT32_MIN + 1;
      b.addOutput(b.addOp(fb::OpType::Loop, "loop", {-1, -1, x}, {"out"}, p)[0]);
    } else {
      fb::ScanParamsT p;
      p.body = body;
      p.num_scan_inputs = INT32_MAX;
      p.num_captures = INT32_MAX;
      b.addOutput(b.addOp(fb::OpType::Scan, "scan", {x}, {"out"}, p)[0]);
    }
    ExpectError(Load(b).status(), loop ? "Loop: " : "Scan: ");
  }
}

}  // namespace
}  // namespace kiln
