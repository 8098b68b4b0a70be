// Everything the engine knows about each op type, one row of op_defs.inc
// each: its params table, arity, shape function and value inputs, whether it
// may run in place, and its cost function. The model verifier, the graph
// passes, the session and the profiler all read it here; the kernels are the
// backends' own.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/status.h"
#include "kiln_generated.h"

namespace kiln {

class ShapeContext;
class Tensor;
struct GraphOp;
struct OpCost;

// Computes an op's output shapes and dtypes (ops/shape_inference.h).
using ShapeFn = Status (*)(ShapeContext&);
// Its flops for profiles (ops/op_cost.h); bytes are counted by the caller.
using CostFn = double (*)(const GraphOp& op, const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs);

// How an op's output dtypes follow from its inputs' (its row's OutType).
enum class OutType : uint8_t { kLike0, kLike1, kLike2, kBool, kI64, kIdx, kParam, kNone };

struct OpDef {
  fb::OpType type;
  const char* name;
  fb::OpParams params;   // NONE: the op takes no params table
  bool params_required;
  int min_inputs, max_inputs;
  int min_outputs, max_outputs;
  ShapeFn shape;          // nullptr: none (Custom)
  uint32_t value_inputs;  // bit k: input k's values decide the shapes (computed at resize)
  bool in_place;          // the output may share input 0's memory
  CostFn cost;
  OutType out_type;
};

// The definition of `type`, or nullptr for Invalid / unknown values.
const OpDef* FindOpDef(fb::OpType type);

}  // namespace kiln
