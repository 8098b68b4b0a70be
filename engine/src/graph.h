// Graph: the engine's view of a verified model: tensors with their
// producers and consumers, ops in execution order. Built once per
// Interpreter; sessions add shapes and placements on top.
//
// Thread-safety: immutable after Build().
#pragma once

#include <string>
#include <vector>

#include "kiln/format.h"
#include "model.h"

namespace kiln {

struct GraphTensor {
  std::string name;
  fb::DataType dtype = fb::DataType::F32;
  bool has_shape = false;            // false: rank unknown until inference
  std::vector<int64_t> dims;         // -1 for symbolic dims
  std::vector<std::string> symbols;  // symbol name per dim ("" when none)
  ConstantView constant;             // data != nullptr: a constant
  int producer = -1;                 // op index, -1 for inputs and constants
  std::vector<int> consumers;        // op indices, in order, one per use
  bool is_input = false;
  bool is_output = false;
  bool is_sequence = false;  // an ONNX sequence (host only); with is_optional: an optional sequence
  bool is_optional = false;  // an ONNX optional (host only)

  bool isConstant() const { return constant.data != nullptr; }
};

struct GraphOp {
  fb::OpType type = fb::OpType::Invalid;
  std::string name;
  const fb::Op* op = nullptr;  // the params live here
  std::vector<int> inputs;     // -1: optional input not given
  std::vector<int> outputs;

  template <typename P>
  const P* params() const {
    return op->params_as<P>();
  }
  // "Conv"; for a Custom op, the source framework's type ("NonZero").
  const char* typeName() const {
    if (type == fb::OpType::Custom && op && op->params_as_CustomParams())
      return op->params_as_CustomParams()->type_name()->c_str();
    return fb::EnumNameOpType(type);
  }
};

class Graph {
 public:
  static Graph Build(const Model& model);
  // Subgraph `sub` of the model (Net.subgraphs; control flow's bodies).
  static Graph BuildSubgraph(const Model& model, int sub);

  std::vector<GraphTensor> tensors;
  std::vector<GraphOp> ops;
  std::vector<int> inputs;
  std::vector<int> outputs;
  int subgraph = -1;  // Net.subgraphs index; -1: the model's graph
};

}  // namespace kiln
