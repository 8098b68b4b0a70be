// fuse_attention: MatMul(q, kt) [-> scale] [-> Add(mask)] -> Softmax(last
// axis) -> MatMul(., v) becomes Attention(q, kt, v [, mask]) with the scale
// (a Div / Mul by a constant on the scores or on q) in its params, and a
// causal Where(c, -inf, s) made a constant mask; not for a scale after the
// mask, a Where filling a finite value, a softmax over another axis, an intermediate
// read twice, a Div of a constant by the scores, batch dims that broadcast,
// or shapes not known statically. Every rewrite is checked against the
// unfused net's numbers (ApplyPass).
#include <cmath>

#include "passes/pass_test_util.h"
#include "passes/pass_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;
using test::OpTypes;
using test::RandomFloats;

constexpr int64_t kH = 3, kL = 6, kD = 8, kS = 10, kDv = 5;

struct Options {
  enum Scale { kNone, kDivScores, kMulScores, kDivQ, kMulQ } scale = kNone;
  bool mask = false, mask_first = false;  // Add(mask, s) instead of Add(s, mask)
  bool scale_after_mask = false;
  int axis = -1;
  bool scores_read_twice = false;
  bool const_over_scores = false;  // Div(c, s)
  int64_t kt_batch = kH;          // 1: batch dims that broadcast
  bool symbolic = false;           // L unknown until run time
  float where_fill = 0;            // nonzero: Where(causal, fill, s) in place of the Add
};

struct Net {
  NetBuilder b{"attention"};
  int q = -1, kt = -1, v = -1, mask = -1, y = -1;
};

Net Attention(const Options& o) {
  Net n;
  NetBuilder& b = n.b;
  const Dim l = o.symbolic ? Dim("l") : Dim(kL);
  n.q = b.addInput("q", fb::DataType::F32, {kH, l, kD});
  n.kt = b.addInput("kt", fb::DataType::F32, {o.kt_batch, kD, kS});
  n.v = b.addInput("v", fb::DataType::F32, {kH, kS, kDv});
  const int c = b.addConstant("c", {}, std::vector<float>{2.5f});
  int q = n.q;
  if (o.scale == Options::kDivQ) q = b.addOp(fb::OpType::Div, "scale_q", {q, c}, {"qs"})[0];
  if (o.scale == Options::kMulQ) q = b.addOp(fb::OpType::Mul, "scale_q", {c, q}, {"qs"})[0];
  int s = b.addOp(fb::OpType::MatMul, "qk", {q, n.kt}, {"scores"})[0];
  auto scale_scores = [&] {
    if (o.scale == Options::kDivScores)
      s = b.addOp(fb::OpType::Div, "scale", o.const_over_scores ? std::vector<int>{c, s} : std::vector<int>{s, c},
                  {"scaled"})[0];
    if (o.scale == Options::kMulScores) s = b.addOp(fb::OpType::Mul, "scale", {s, c}, {"scaled"})[0];
  };
  if (!o.scale_after_mask) scale_scores();
  if (o.mask) {
    n.mask = b.addInput("mask", fb::DataType::F32, {1, l, kS});
    s = b.addOp(fb::OpType::Add, "mask_add", o.mask_first ? std::vector<int>{n.mask, s} : std::vector<int>{s, n.mask},
                {"masked"})[0];
  }
  if (o.where_fill != 0) {
    std::vector<uint8_t> causal(static_cast<size_t>(kL * kS));
    for (int64_t i = 0; i < kL; ++i)
      for (int64_t j = 0; j < kS; ++j) causal[static_cast<size_t>(i * kS + j)] = j > i;
    const int c2 = b.addConstant("causal", fb::DataType::BOOL, {kL, kS}, causal.data(), causal.size());
    const int fill = b.addConstant("fill", {}, std::vector<float>{o.where_fill});
    s = b.addOp(fb::OpType::Where, "masked_fill", {c2, fill, s}, {"filled"})[0];
  }
  if (o.scale_after_mask) scale_scores();
  fb::AxisParamsT ap;
  ap.axis = o.axis;
  const int p = b.addOp(fb::OpType::Softmax, "softmax", {s}, {"probs"}, ap)[0];
  n.y = b.addOp(fb::OpType::MatMul, "pv", {p, n.v}, {"y"})[0];
  b.addOutput(n.y);
  if (o.scores_read_twice) b.addOutput(s);
  return n;
}

TEST(PassesFuseAttention, EveryScaleAndMaskForm) {
  for (auto scale : {Options::kNone, Options::kDivScores, Options::kMulScores, Options::kDivQ, Options::kMulQ})
    for (bool mask : {false, true})
      for (bool mask_first : {false, true}) {
        if (!mask && mask_first) continue;
        SCOPED_TRACE("scale " + std::to_string(scale) + " mask " + std::to_string(mask) + " first " +
                     std::to_string(mask_first));
        Options o;
        o.scale = scale;
        o.mask = mask;
        o.mask_first = mask_first;
        o.axis = scale == Options::kMulQ ? 2 : -1;  // the last axis either way
        Net n = Attention(o);
        fb::NetT after = ApplyPass(n.b.net(), FuseAttention, 1);
        ASSERT_EQ(OpTypes(after), "Attention");
        const fb::OpT& a = *after.ops[0];
        EXPECT_EQ(a.inputs, mask ? std::vector<int>({n.q, n.kt, n.v, n.mask}) : std::vector<int>({n.q, n.kt, n.v}));
        EXPECT_EQ(a.outputs, std::vector<int>{n.y});
        EXPECT_EQ(a.name, "pv");
        const float want = scale == Options::kNone ? 1.f
                           : scale == Options::kDivScores || scale == Options::kDivQ ? 0.4f
                                                                                     : 2.5f;
        ASSERT_NE(a.params.AsAttentionParams(), nullptr);
        EXPECT_FLOAT_EQ(a.params.AsAttentionParams()->scale, want);
      }
}

TEST(PassesFuseAttention, NotForOtherForms) {
  auto unchanged = [](const Options& o, const std::string& what) {
    SCOPED_TRACE(what);
    Net n = Attention(o);
    fb::NetT after = ApplyPass(n.b.net(), FuseAttention, 0);
    EXPECT_EQ(CountOps(after, fb::OpType::Attention), 0);
    EXPECT_EQ(CountOps(after, fb::OpType::Softmax), 1);
  };
  Options o;
  o.scale = Options::kDivScores;
  o.mask = true;
  o.scale_after_mask = true;
  unchanged(o, "scale after the mask");
  o = Options();
  o.axis = 1;
  unchanged(o, "softmax over the rows");
  o = Options();
  o.scores_read_twice = true;
  unchanged(o, "scores also a graph output");
  o = Options();
  o.scale = Options::kDivScores;
  o.const_over_scores = true;
  unchanged(o, "c / scores");
  o = Options();
  o.kt_batch = 1;
  unchanged(o, "KT's batch dim broadcast");
  o = Options();
  o.symbolic = true;
  unchanged(o, "L unknown until run time");
}

// torch's masked_fill of a causal mask: Where(c, -inf, s) (or finfo.min)
// becomes a constant mask c ? fill : 0, Attention's fourth input.
TEST(PassesFuseAttention, CausalWhereBecomesAMask) {
  for (float fill : {-INFINITY, -3.4e38f}) {
    for (bool named : {true, false}) {  // ONNX nodes need no name
      SCOPED_TRACE(std::to_string(fill) + (named ? " named" : " unnamed"));
      Options o;
      o.scale = Options::kMulScores;
      o.where_fill = fill;
      Net n = Attention(o);
      if (!named)
        for (auto& op : n.b.net().ops)
          if (op->type == fb::OpType::Where) op->name.clear();
      fb::NetT after = ApplyPass(n.b.net(), FuseAttention, 1);
      ASSERT_EQ(OpTypes(after), "Attention");
      const fb::OpT& a = *after.ops[0];
      ASSERT_EQ(a.inputs.size(), 4u);
      std::vector<float> mask;
      ASSERT_TRUE(passes::ConstFloats(after, a.inputs[3], &mask));
      ASSERT_EQ(mask.size(), static_cast<size_t>(kL * kS));
      EXPECT_EQ(mask[1], fill);  // row 0, key 1: masked
      EXPECT_EQ(mask[kS + 1], 0.f);  // row 1, key 1: kept
    }
  }
  Options o;
  o.where_fill = -1.f;  // a finite fill a softmax would see: not a mask
  Net n = Attention(o);
  fb::NetT after = ApplyPass(n.b.net(), FuseAttention, 0);
  EXPECT_EQ(CountOps(after, fb::OpType::Where), 1);
}

// The scale on q is taken in only when q is read by the scores alone.
TEST(PassesFuseAttention, ScaleOnQReadElsewhereStays) {
  Options o;
  o.scale = Options::kDivQ;
  Net n = Attention(o);
  n.b.addOutput(n.b.net().ops[0]->outputs[0]);  // qs is a graph output too
  fb::NetT after = ApplyPass(n.b.net(), FuseAttention, 1);
  EXPECT_EQ(OpTypes(after), "Div Attention");
  EXPECT_EQ(after.ops[1]->inputs[0], after.ops[0]->outputs[0]);
  EXPECT_FLOAT_EQ(after.ops[1]->params.AsAttentionParams()->scale, 1.f);
}

// In the optimize pipeline, with the converter's other passes.
TEST(PassesFuseAttention, InTheOptimizePipeline) {
  Options o;
  o.scale = Options::kDivQ;
  o.mask = true;
  Net n = Attention(o);
  fb::NetT after = n.b.net();
  PassReport report;
  ASSERT_TRUE(OptimizeNet(after, &report).ok());
  EXPECT_EQ(OpTypes(after), "Attention");
  EXPECT_NE(report.toString().find("fuse_attention 1"), std::string::npos) << report.toString();
  test::ExpectSameOutputs(n.b.net(), after);
}

}  // namespace
}  // namespace kiln
