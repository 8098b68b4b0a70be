#include "ops/op_defs.h"

#include "ops/op_cost.h"
#include "ops/shape_inference.h"

namespace kiln {

// The shape and cost functions the rows name (defined in shape_*.cpp and
// op_cost.cpp); a row naming one that does not exist fails to link.
#define KILN_OP(Name, Params, Required, MinIn, MaxIn, MinOut, MaxOut, Shape, ValueInputs, InPlace, CostOf, Out) \
  Status InferShape##Shape(ShapeContext&);                                                                  \
  double Cost##CostOf(const GraphOp&, const std::vector<Tensor*>&, const std::vector<Tensor*>&);
#include "ops/op_defs.inc"
#undef KILN_OP

namespace {

constexpr ShapeFn kNoShape = nullptr;
#define InferShapeNone kNoShape

constexpr OpDef kOpDefs[] = {
#define KILN_OP(Name, Params, Required, MinIn, MaxIn, MinOut, MaxOut, Shape, ValueInputs, InPlace, CostOf, Out) \
  {fb::OpType::Name, #Name,         fb::OpParams::Params, Required, MinIn, MaxIn, MinOut, MaxOut, InferShape##Shape, \
   ValueInputs,      InPlace, &Cost##CostOf, OutType::k##Out},
#include "ops/op_defs.inc"
#undef KILN_OP
};
#undef InferShapeNone

constexpr size_t kNumOps = sizeof(kOpDefs) / sizeof(kOpDefs[0]);
static_assert(kNumOps == static_cast<size_t>(fb::OpType::MAX),
              "op_defs.inc must list every OpType of kiln.fbs except Invalid");

constexpr bool ListedInSchemaOrder() {
  for (size_t i = 0; i < kNumOps; ++i)
    if (static_cast<size_t>(kOpDefs[i].type) != i + 1) return false;
  return true;
}
static_assert(ListedInSchemaOrder(), "op_defs.inc must follow the OpType order of kiln.fbs");

}  // namespace

const OpDef* FindOpDef(fb::OpType type) {
  auto i = static_cast<size_t>(type);
  if (i == 0 || i > kNumOps) return nullptr;
  return &kOpDefs[i - 1];
}

}  // namespace kiln
