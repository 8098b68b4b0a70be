// Shape functions: reductions (ReduceMean/Sum/Max/Min/Prod/L2) and
// ArgMax/ArgMin.
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

Status InferShapeReduce(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(ReduceSpec s, ResolveReduce(c.op(), c.inShape(0), ShapeValues(c)));
  c.setOutput(0, std::move(s.out_shape), c.inType(0));
  return Status::Ok();
}

Status InferShapeArg(ShapeContext& c) {
  const fb::ArgParams* p = c.params<fb::ArgParams>();
  const int rank = c.inRank(0);
  if (rank == 0) return InvalidArgument("%s: input is a scalar", c.op().typeName());
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 0, rank), "%s", c.op().typeName());
  std::vector<int64_t> out;
  for (int d = 0; d < rank; ++d) {
    if (d != axis)
      out.push_back(c.inShape(0)[static_cast<size_t>(d)]);
    else if (!p || p->keepdims())
      out.push_back(1);
  }
  c.setOutput(0, std::move(out), fb::DataType::I64);
  return Status::Ok();
}

}  // namespace kiln
