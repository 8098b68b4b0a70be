// fold_constants: constant subgraphs are computed once at conversion by the
// engine; Shape of a statically shaped tensor folds, and with it whole
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains.
#include <cstring>

#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::FindOp;
using test::RandomFloats;

std::vector<int64_t> Int64s(const fb::TensorT& t) {
  std::vector<int64_t> v(t.data.size() / 8);
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

TEST(PassesFoldConstants, FoldsConstantSubgraph) {
  NetBuilder b("consts");
  int x = b.addInput("x", fb::DataType::F32, {2, 3});
  int c1 = b.addConstant("c1", {3}, RandomFloats(3, 1));
  int c2 = b.addConstant("c2", {2, 3}, RandomFloats(6, 2));
  int s = b.addOp(fb::OpType::Add, "c_add", {c1, c2}, {"s"})[0];
  int e = b.addOp(fb::OpType::Exp, "c_exp", {s}, {"e"})[0];
  int y = b.addOp(fb::OpType::Mul, "mul", {x, e}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = ApplyPass(b.net(), FoldConstants, 2);
  ASSERT_EQ(after.ops.size(), 1u);
  EXPECT_EQ(after.ops[0]->type, fb::OpType::Mul);
  const fb::TensorT& folded = *after.tensors[static_cast<size_t>(after.ops[0]->inputs[1])];
  EXPECT_TRUE(folded.is_constant);
  EXPECT_EQ(folded.data.size(), 6u * 4);
  ASSERT_EQ(folded.shape.size(), 2u);
  EXPECT_EQ(folded.shape[0]->size, 2);
  EXPECT_EQ(folded.shape[1]->size, 3);
}

// y = Reshape(Relu(x), [Shape(Relu(x))[0], -1]) with x [2, 3, 4]: everything
// but the Relu and the Reshape folds, and the Reshape reads [2, -1].
NetBuilder ShapeChain(std::vector<Dim> dims) {
  NetBuilder b("shape_chain");
  int x = b.addInput("x", fb::DataType::F32, dims);
  int r = b.addOp(fb::OpType::Relu, "relu", {x}, {"r"})[0];
  int s = b.addOp(fb::OpType::Shape, "shape", {r}, {"s"})[0];
  int i0 = b.addConstant("i0", {}, std::vector<int64_t>{0});
  fb::AxisParamsT g;
  g.axis = 0;
  int d0 = b.addOp(fb::OpType::Gather, "gather", {s, i0}, {"d0"}, g)[0];
  fb::AxesParamsT u;
  u.axes = {0};
  int d0v = b.addOp(fb::OpType::Unsqueeze, "unsqueeze", {d0}, {"d0v"}, u)[0];
  int minus1 = b.addConstant("minus1", {1}, std::vector<int64_t>{-1});
  fb::AxisParamsT cat;
  cat.axis = 0;
  int shape = b.addOp(fb::OpType::Concat, "concat", {d0v, minus1}, {"new_shape"}, cat)[0];
  int y = b.addOp(fb::OpType::Reshape, "reshape", {r, shape}, {"y"})[0];
  b.addOutput(y);
  return b;
}

TEST(PassesFoldConstants, FoldsShapeChainWithStaticInput) {
  NetBuilder b = ShapeChain({2, 3, 4});
  fb::NetT after = ApplyPass(b.net(), FoldConstants, 4);
  ASSERT_EQ(after.ops.size(), 2u) << test::OpTypes(after);
  EXPECT_EQ(after.ops[0]->type, fb::OpType::Relu);
  EXPECT_EQ(after.ops[1]->type, fb::OpType::Reshape);
  const fb::TensorT& shape = *after.tensors[static_cast<size_t>(after.ops[1]->inputs[1])];
  EXPECT_EQ(shape.dtype, fb::DataType::I64);
  EXPECT_EQ(Int64s(shape), (std::vector<int64_t>{2, -1}));
}

TEST(PassesFoldConstants, ShapeWithStartEnd) {
  NetBuilder b("shape_slice");
  int x = b.addInput("x", fb::DataType::F32, {2, 3, 4, 5});
  fb::ShapeParamsT sp;
  sp.start = 1;
  sp.end = -1;
  int s = b.addOp(fb::OpType::Shape, "shape", {x}, {"s"}, sp)[0];
  fb::CastParamsT cast;
  cast.to = fb::DataType::F32;
  int f = b.addOp(fb::OpType::Cast, "cast", {s}, {"f"}, cast)[0];
  int y = b.addOp(fb::OpType::Add, "add", {f, f}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = ApplyPass(b.net(), FoldConstants, 2);  // Shape, Cast; the Add writes the output
  ASSERT_EQ(after.ops.size(), 1u) << test::OpTypes(after);
  const fb::TensorT& folded = *after.tensors[static_cast<size_t>(after.ops[0]->inputs[0])];
  std::vector<float> v(folded.data.size() / 4);
  std::memcpy(v.data(), folded.data.data(), folded.data.size());
  EXPECT_EQ(v, (std::vector<float>{3, 4}));
}

TEST(PassesFoldConstants, KeepsShapeOfSymbolicInput) {
  NetBuilder b = ShapeChain({"batch", 3, 4});
  fb::NetT after = ApplyPass(b.net(), FoldConstants, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Shape), 1);
  EXPECT_EQ(after.ops.size(), b.net().ops.size());
}

TEST(PassesFoldConstants, SkipsHugeOutputs) {
  // Expand of a scalar to 2048 x 2048 x 2 f32 (32 MiB) stays an op; the
  // shape constant feeding it still folds.
  NetBuilder b("huge");
  int x = b.addInput("x", fb::DataType::F32, {1});
  int one = b.addConstant("one", {}, std::vector<float>{1.f});
  int dims = b.addConstant("dims", {3}, std::vector<int64_t>{1024, 2048, 2});
  int two = b.addConstant("two", {3}, std::vector<int64_t>{2, 1, 1});
  int shape = b.addOp(fb::OpType::Mul, "shape_mul", {dims, two}, {"shape"})[0];
  int big = b.addOp(fb::OpType::Expand, "expand", {one, shape}, {"big"})[0];
  fb::ReduceParamsT rp;
  rp.keepdims = false;
  int sum = b.addOp(fb::OpType::ReduceSum, "sum", {big}, {"sum"}, rp)[0];
  int y = b.addOp(fb::OpType::Add, "add", {x, sum}, {"y"})[0];
  b.addOutput(y);
  fb::NetT after = b.net();
  StatusOr<int> n = FoldConstants(after);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(CountOps(after, fb::OpType::Expand), 1);
  EXPECT_EQ(CountOps(after, fb::OpType::ReduceSum), 1);
  EXPECT_EQ(CountOps(after, fb::OpType::Mul), 0);
}

// An empty result whose other dims are large ([1,1,0,400000000]: 1.6 GB were
// it not empty): 0 bytes, but the session that evaluates it is bounded by
// the fold limit, so it is kept, not evaluated with tables sized by its dims
// (4.5 s and 3 GB on a fuzzed TFLite model).
TEST(PassesFoldConstants, KeepsEmptyResultsWithHugeDims) {
  NetBuilder b("empty_huge");
  int x = b.addInput("x", fb::DataType::F32, {1});
  int c = b.addConstant("c", {1, 1, 0, 1}, std::vector<float>{});
  int sizes = b.addConstant("sizes", {4}, std::vector<int64_t>{1, 1, 0, 400000000});
  fb::ResizeParamsT rp;
  int r = b.addOp(fb::OpType::Resize, "resize", {c, -1, -1, sizes}, {"r"}, rp)[0];
  int shape = b.addOp(fb::OpType::Shape, "shape", {r}, {"shape"})[0];
  fb::CastParamsT cast;
  cast.to = fb::DataType::F32;
  int f = b.addOp(fb::OpType::Cast, "cast", {shape}, {"f"}, cast)[0];
  b.addOutput(b.addOp(fb::OpType::Add, "add", {x, f}, {"y"})[0]);
  fb::NetT after = b.net();
  StatusOr<int> n = FoldConstants(after);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(CountOps(after, fb::OpType::Resize), 1);
}

TEST(PassesFoldConstants, KeepsOpsWritingGraphOutputs) {
  NetBuilder b("const_out");
  int x = b.addInput("x", fb::DataType::F32, {3});
  int c = b.addConstant("c", {3}, RandomFloats(3, 4));
  int n = b.addOp(fb::OpType::Neg, "neg_const", {c}, {"n"})[0];
  int y = b.addOp(fb::OpType::Relu, "relu", {x}, {"y"})[0];
  b.addOutput(y);
  b.addOutput(n);
  fb::NetT after = ApplyPass(b.net(), FoldConstants, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Neg), 1);
}

}  // namespace
}  // namespace kiln
