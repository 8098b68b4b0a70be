// The work of one op, for profiles (kiln-bench --profile): floating-point
// operations (a multiply-add counts 2) for the ops whose cost is arithmetic
// (convolutions, matrix products, elementwise math), and the least memory
// traffic any kernel could have (each distinct input read once, each output
// written once). Other ops report flops = 0: their rate is their bandwidth.
#pragma once

#include <vector>

#include "graph.h"
#include "kiln/tensor.h"

namespace kiln {

struct OpCost {
  double flops = 0;
  double bytes = 0;
};

OpCost EstimateOpCost(const GraphOp& op, const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs);

}  // namespace kiln
