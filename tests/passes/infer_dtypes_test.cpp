// infer_dtypes: op outputs get their real dtypes from their inputs' (the
// ONNX importer leaves a placeholder): a comparison's bool, Shape's i64,
// Cast's target, Where's values, TopK's indices; a Custom op's output keeps
// its declared type, and so does everything computed from it.
#include "passes/pass_test_util.h"

namespace kiln {
namespace {

fb::DataType DtypeOf(const fb::NetT& net, const std::string& name) {
  for (const auto& t : net.tensors)
    if (t->name == name) return t->dtype;
  ADD_FAILURE() << "no tensor " << name;
  return fb::DataType::F32;
}

TEST(PassesInferDtypes, FollowsEachOpsOutType) {
  NetBuilder b("dtypes");
  int x = b.addInput("x", fb::DataType::I64, {Dim(2), Dim(3)});
  int y = b.addInput("y", fb::DataType::I64, {Dim(2), Dim(3)});
  int lt = b.addOp(fb::OpType::Less, "lt", {x, y}, {"lt"})[0];                  // bool
  int sel = b.addOp(fb::OpType::Where, "where", {lt, x, y}, {"sel"})[0];        // like input 1: i64
  int shape = b.addOp(fb::OpType::Shape, "shape", {sel}, {"shape"})[0];         // i64
  fb::CastParamsT cast;
  cast.to = fb::DataType::F16;
  int h = b.addOp(fb::OpType::Cast, "cast", {sel}, {"h"}, cast)[0];            // f16
  int k = b.addConstant("k", {1}, std::vector<int64_t>{2});
  auto top = b.addOp(fb::OpType::TopK, "topk", {h, k}, {"values", "indices"});  // f16, i64
  fb::CustomParamsT custom;
  custom.type_name = "Mystery";
  int m = b.addOp(fb::OpType::Custom, "mystery", {x}, {"m"}, custom)[0];      // unknown: as declared
  int n = b.addOp(fb::OpType::Neg, "neg", {m}, {"n"})[0];                      // from an unknown: as declared
  for (int t : {shape, top[0], top[1], n}) b.addOutput(t);
  (void)sel;
  fb::NetT& net = b.net();
  for (auto& t : net.tensors)
    if (t->name != "x" && t->name != "y" && t->name != "k") t->dtype = fb::DataType::F32;  // the importer's placeholder
  auto changed = InferDtypes(net);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(*changed, 6);
  EXPECT_EQ(DtypeOf(net, "lt"), fb::DataType::BOOL);
  EXPECT_EQ(DtypeOf(net, "sel"), fb::DataType::I64);
  EXPECT_EQ(DtypeOf(net, "shape"), fb::DataType::I64);
  EXPECT_EQ(DtypeOf(net, "h"), fb::DataType::F16);
  EXPECT_EQ(DtypeOf(net, "values"), fb::DataType::F16);
  EXPECT_EQ(DtypeOf(net, "indices"), fb::DataType::I64);
  EXPECT_EQ(DtypeOf(net, "m"), fb::DataType::F32);
  EXPECT_EQ(DtypeOf(net, "n"), fb::DataType::F32);
  EXPECT_EQ(DtypeOf(net, "x"), fb::DataType::I64);
}

}  // namespace
}  // namespace kiln
