// lower_einsum: f32 Einsums become MatMul, Transpose, ReduceSum, Reshape and
// Unsqueeze / Squeeze with the host Einsum's results (matmuls, attention,
// sums, transposes, inner and outer products, ellipses broadcasting over
// different ranks, a dynamic batch, several contracted letters, three
// operands, an implicit output), every op it emits has a GPU kernel, and
// diagonals are left to the host's Einsum.
#include "passes/pass_test_util.h"

namespace kiln {
namespace {

using test::ApplyPass;
using test::CountOps;

struct EinsumCase {
  const char* equation;
  std::vector<std::vector<Dim>> shapes;
};

fb::NetT BuildEinsum(const EinsumCase& c) {
  NetBuilder b("einsum");
  std::vector<int> ins;
  for (size_t k = 0; k < c.shapes.size(); ++k)
    ins.push_back(b.addInput("x" + std::to_string(k), fb::DataType::F32, c.shapes[k]));
  fb::EinsumParamsT p;
  p.equation = c.equation;
  b.addOutput(b.addOp(fb::OpType::Einsum, "einsum", ins, {"y"}, p)[0]);
  return b.net();
}

// The op types the GPU backends run (backends/gpu/gpu_ops.inc).
bool OnGpu(fb::OpType t) {
  static const fb::OpType kGpuOps[] = {
#define KILN_GPU_OP(type, factory) fb::OpType::type,
#define KILN_GPU_EXCLUDE(backend, type, reason)
#include "gpu_ops.inc"
#undef KILN_GPU_OP
#undef KILN_GPU_EXCLUDE
  };
  for (fb::OpType g : kGpuOps)
    if (g == t) return true;
  return false;
}

TEST(PassesLowerEinsum, MatchesTheHostEinsum) {
  const EinsumCase cases[] = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}},
      {"bnd,dm->bnm", {{"batch", 3, 4}, {4, 6}}},
      {"ij->ji", {{3, 4}}},
      {"ij->i", {{3, 4}}},
      {"ij->", {{3, 4}}},
      {"ij->ij", {{3, 4}}},
      {"i,i->", {{7}, {7}}},
      {"i,j->ij", {{3}, {4}}},
      {"...ij,...jk->...ik", {{2, 3, 4}, {4, 5}}},
      {"b...d,b...d->b...", {{2, 3, 4, 5}, {2, 1, 4, 5}}},
      {"abcd,cdbe->ae", {{2, 3, 4, 5}, {4, 5, 3, 6}}},
      {"ab,bc,cd->ad", {{2, 3}, {3, 4}, {4, 5}}},
      {"ij,jk", {{3, 4}, {4, 5}}},
      {"ij,kj->ik", {{3, 4}, {5, 4}}},
      {"bij,bkj->bki", {{2, 3, 4}, {2, 5, 4}}},
      {"ijk,ik->j", {{2, 3, 4}, {2, 4}}},
  };
  for (const EinsumCase& c : cases) {
    SCOPED_TRACE(c.equation);
    fb::NetT after = ApplyPass(BuildEinsum(c), LowerEinsum, 1);
    EXPECT_EQ(CountOps(after, fb::OpType::Einsum), 0) << test::OpTypes(after);
    for (const auto& op : after.ops) EXPECT_TRUE(OnGpu(op->type)) << fb::EnumNameOpType(op->type) << " has no GPU kernel";
  }
}

TEST(PassesLowerEinsum, OneMatMulForAttention) {
  fb::NetT after = ApplyPass(BuildEinsum({"bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}}), LowerEinsum, 1);
  EXPECT_EQ(CountOps(after, fb::OpType::MatMul), 1);
  EXPECT_EQ(after.ops.size(), 2u) << test::OpTypes(after);  // K^T, then the MatMul
}

TEST(PassesLowerEinsum, DiagonalsStayOnTheHostEinsum) {
  for (const EinsumCase& c : {EinsumCase{"ii->i", {{4, 4}}}, EinsumCase{"bii,bij->bj", {{2, 3, 3}, {2, 3, 4}}}}) {
    SCOPED_TRACE(c.equation);
    fb::NetT after = ApplyPass(BuildEinsum(c), LowerEinsum, 0);
    EXPECT_EQ(CountOps(after, fb::OpType::Einsum), 1);
  }
}

}  // namespace
}  // namespace kiln
