// ONNX sequence ops, evaluated on the host: one function computes a
// sequence op's result from its inputs' values, which the session knows at
// resize (every input of these ops is a value input). The shape functions
// (ops/shape_sequence.cpp) read the result's shape from it, the host kernels
// (host_fallback/ops/sequence.cpp) its values.
#pragma once

#include <memory>
#include <vector>

#include "graph.h"
#include "kiln/tensor.h"

namespace kiln {

struct SequenceResult {
  bool is_sequence = false;
  bool is_optional = false;                           // an optional: items holds 0 or 1 value
  std::vector<std::shared_ptr<const Tensor>> items;  // is_sequence, is_optional
  std::shared_ptr<Tensor> tensor;                     // otherwise
};

StatusOr<SequenceResult> EvalSequenceOp(const GraphOp& op, const std::vector<Tensor*>& inputs, fb::DataType out_dtype);

}  // namespace kiln
