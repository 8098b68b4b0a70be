// remove_identity: Identity ops go, readers read the input; an Identity that
// writes a graph output keeps the output's name (the producer writes it).
#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::RandomFloats;

TEST(PassesIdentity, RemovesIdentityAndKeepsOutputName) {
  NetBuilder b("identity");
  int x = b.addInput("x", fb::DataType::F32, {2, 3});
  int r = b.addOp(fb::OpType::Relu, "relu", {x}, {"r"})[0];
  int i1 = b.addOp(fb::OpType::Identity, "dropout", {r}, {"r_id"})[0];  // Dropout as imported
  int c = b.addConstant("c", {3}, RandomFloats(3, 1));
  int a = b.addOp(fb::OpType::Add, "add", {i1, c}, {"a"})[0];
  int out = b.addOp(fb::OpType::Identity, "to_output", {a}, {"y"})[0];
  b.addOutput(out);
  fb::NetT after = ApplyPass(b.net(), RemoveIdentity, 2);
  EXPECT_EQ(CountOps(after, fb::OpType::Identity), 0);
  EXPECT_EQ(after.ops.size(), 2u);
  // The Add now writes the graph output "y" directly.
  EXPECT_EQ(after.tensors[static_cast<size_t>(after.ops.back()->outputs[0])]->name, "y");
  EXPECT_EQ(after.ops.back()->outputs[0], after.outputs[0]);
}

TEST(PassesIdentity, KeepsIdentityFromGraphInputToOutput) {
  NetBuilder b("passthrough");
  int x = b.addInput("x", fb::DataType::F32, {4});
  int y = b.addOp(fb::OpType::Identity, "id", {x}, {"y"})[0];
  int z = b.addOp(fb::OpType::Sigmoid, "sig", {x}, {"z"})[0];
  b.addOutput(y);
  b.addOutput(z);
  fb::NetT after = ApplyPass(b.net(), RemoveIdentity, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Identity), 1);
}

TEST(PassesIdentity, ChainOfIdentitiesToOutput) {
  NetBuilder b("chain");
  int x = b.addInput("x", fb::DataType::F32, {4});
  int t = b.addOp(fb::OpType::Tanh, "tanh", {x}, {"t"})[0];
  int i1 = b.addOp(fb::OpType::Identity, "id1", {t}, {"i1"})[0];
  int i2 = b.addOp(fb::OpType::Identity, "id2", {i1}, {"out"})[0];
  int n = b.addOp(fb::OpType::Neg, "neg", {i1}, {"n"})[0];
  b.addOutput(i2);
  b.addOutput(n);
  fb::NetT after = ApplyPass(b.net(), RemoveIdentity, 2);
  EXPECT_EQ(CountOps(after, fb::OpType::Identity), 0);
}

TEST(PassesIdentity, RejectsOutOfRangeIndex) {
  NetBuilder b("bad");
  int x = b.addInput("x", fb::DataType::F32, {4});
  int y = b.addOp(fb::OpType::Identity, "id", {x}, {"y"})[0];
  b.addOutput(y);
  b.net().ops[0]->inputs[0] = 99;
  StatusOr<int> n = RemoveIdentity(b.net());
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(n.status().message().find("remove_identity"), std::string::npos) << n.status().message();
}

}  // namespace
}  // namespace kiln
