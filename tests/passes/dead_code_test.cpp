// dead_code: ops that reach no graph output and tensors nothing refers to
// are removed; indices are renumbered and the model still loads and runs.
#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::RandomFloats;

TEST(PassesDeadCode, RemovesUnreachableOpsAndTensors) {
  NetBuilder b("dead");
  int x = b.addInput("x", fb::DataType::F32, {2, 4});
  int unused_c = b.addConstant("unused", {4}, RandomFloats(4, 1));
  (void)unused_c;
  int c = b.addConstant("c", {4}, RandomFloats(4, 2));
  int s = b.addOp(fb::OpType::Sigmoid, "dead_sigmoid", {x}, {"s"})[0];
  b.addOp(fb::OpType::Mul, "dead_mul", {s, c}, {"m"});  // a chain whose end nobody reads
  int a = b.addOp(fb::OpType::Add, "add", {x, c}, {"a"})[0];
  int y = b.addOp(fb::OpType::Relu, "relu", {a}, {"y"})[0];
  b.addOutput(y);
  const size_t tensors_before = b.net().tensors.size();
  fb::NetT after = ApplyPass(b.net(), RemoveDeadCode, 2);
  EXPECT_EQ(after.ops.size(), 2u);
  EXPECT_EQ(CountOps(after, fb::OpType::Sigmoid), 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Mul), 0);
  // x, c, a, y remain; "unused", s, m are gone.
  EXPECT_EQ(after.tensors.size(), tensors_before - 3);
  for (const auto& t : after.tensors) EXPECT_NE(t->name, "unused");
  EXPECT_EQ(after.tensors[static_cast<size_t>(after.inputs[0])]->name, "x");
  EXPECT_EQ(after.tensors[static_cast<size_t>(after.outputs[0])]->name, "y");
}

TEST(PassesDeadCode, KeepsUnusedGraphInputs) {
  NetBuilder b("inputs");
  int x = b.addInput("x", fb::DataType::F32, {3});
  b.addInput("unused_input", fb::DataType::F32, {3});
  int y = b.addOp(fb::OpType::Neg, "neg", {x}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = ApplyPass(b.net(), RemoveDeadCode, 0);
  EXPECT_EQ(after.inputs.size(), 2u);
  EXPECT_EQ(after.tensors.size(), 3u);
}

}  // namespace
}  // namespace kiln
