// ONNX sequences and optionals on the host, beyond the conformance cases:
// SplitToSequence and ConcatFromSequence round trip (with split sizes and
// a new axis), SequenceAt / SequenceErase positions out of range, and an
// empty optional read: each a clear error at resize, never a crash.
#include <gtest/gtest.h>

#include "kiln/interpreter.h"
#include "kiln/passes.h"
#include "support/op_test.h"

namespace kiln {
namespace {

using test::ExpectNear;

void MarkSequence(NetBuilder& b, int t, bool optional = false) {
  b.net().tensors[static_cast<size_t>(t)]->sequence = !optional;
  b.net().tensors[static_cast<size_t>(t)]->optional = optional;
}

StatusOr<std::vector<float>> RunModel(NetBuilder& b, const std::vector<float>& x, const std::vector<int64_t>& shape) {
  KILN_ASSIGN_OR_RETURN(auto bytes, b.finish());
  KILN_ASSIGN_OR_RETURN(auto interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  ScheduleConfig c;
  KILN_ASSIGN_OR_RETURN(Session * s, interp->createSession(c));
  Tensor* in = s->getInput("x");
  KILN_RETURN_IF_ERROR(s->resizeTensor(in, shape));
  KILN_RETURN_IF_ERROR(in->copyFromHostTensor(*Tensor::wrap(shape, fb::DataType::F32, const_cast<float*>(x.data()))));
  KILN_RETURN_IF_ERROR(s->run());
  Tensor* out = s->getOutput();
  std::vector<float> v(static_cast<size_t>(out->elementCount()));
  KILN_RETURN_IF_ERROR(out->copyToHostTensor(Tensor::wrap(out->shape(), fb::DataType::F32, v.data()).get()));
  return v;
}

// x[2, 5] -> SplitToSequence(axis 1, split [2, 3]) -> ConcatFromSequence(axis 1) == x;
// and with split 1 and keepdims 0, ConcatFromSequence(new_axis, axis 1) == x.
TEST(Sequences, SplitAndConcatRoundTrip) {
  const std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (bool stack : {false, true}) {
    NetBuilder b("split_concat");
    int in = b.addInput("x", fb::DataType::F32, {2, 5});
    fb::SequenceParamsT sp;
    sp.axis = 1;
    sp.keepdims = !stack;
    std::vector<int> split_in = {in};
    if (!stack) split_in.push_back(b.addConstant("split", {2}, std::vector<int64_t>{2, 3}));
    int seq = b.addOp(fb::OpType::SplitToSequence, "split", split_in, {"seq"}, sp)[0];
    MarkSequence(b, seq);
    fb::SequenceParamsT cp;
    cp.axis = 1;
    cp.new_axis = stack;
    b.addOutput(b.addOp(fb::OpType::ConcatFromSequence, "concat", {seq}, {"y"}, cp)[0]);
    (void)InferDtypes(b.net());
    auto y = RunModel(b, x, {2, 5});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    ExpectNear(*y, x, 0.f);
  }
}

TEST(Sequences, PositionsOutOfRangeAndEmptyOptional) {
  for (int64_t pos : {2, -3}) {
    NetBuilder b("at");
    int in = b.addInput("x", fb::DataType::F32, {3});
    int seq = b.addOp(fb::OpType::SequenceConstruct, "make", {in, in}, {"seq"})[0];
    MarkSequence(b, seq);
    int p = b.addConstant("pos", {}, std::vector<int64_t>{pos});
    b.addOutput(b.addOp(fb::OpType::SequenceAt, "at", {seq, p}, {"y"})[0]);
    auto y = RunModel(b, {1, 2, 3}, {3});
    ASSERT_FALSE(y.ok());
    EXPECT_NE(y.status().message().find("position " + std::to_string(pos) + " is out of range for a sequence of 2"),
              std::string::npos)
        << y.status().message();
  }
  NetBuilder b("empty_optional");
  int in = b.addInput("x", fb::DataType::F32, {3});
  int opt = b.addOp(fb::OpType::Optional, "none", {}, {"opt"})[0];
  MarkSequence(b, opt, /*optional=*/true);
  int v = b.addOp(fb::OpType::OptionalGetElement, "get", {opt}, {"v"})[0];
  b.addOutput(b.addOp(fb::OpType::Add, "add", {v, in}, {"y"})[0]);
  auto y = RunModel(b, {1, 2, 3}, {3});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("OptionalGetElement: the optional 'opt' is empty"), std::string::npos)
      << y.status().message();
}

}  // namespace
}  // namespace kiln
