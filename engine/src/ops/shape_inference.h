// Shape inference: one function an op computes its outputs' shapes and
// dtypes from its inputs' shapes, dtypes and params, and, for the inputs
// an op declares as "value inputs" (Reshape's shape, Slice's starts, ...),
// from their values, which the session computes at resize.
//
// Registration: the op's row in engine/src/ops/op_defs.inc names its shape
// function (`Status InferShape<Shape>(ShapeContext&)`, defined in
// ops/shape_<family>.cpp) and its value-input mask (bit k: input k's values
// are needed).
#pragma once

#include <cstdint>
#include <vector>

#include "graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "ops/op_defs.h"

namespace kiln {

class ShapeContext {
 public:
  ShapeContext(const GraphOp& op, const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs)
      : op_(op), inputs_(inputs), outputs_(outputs) {}

  const GraphOp& op() const { return op_; }
  template <typename P>
  const P* params() const { return op_.params<P>(); }

  int numInputs() const { return static_cast<int>(inputs_.size()); }
  int numOutputs() const { return static_cast<int>(outputs_.size()); }
  // False for an optional input left out (or past the end).
  bool hasInput(int i) const { return i < numInputs() && inputs_[static_cast<size_t>(i)] != nullptr; }
  const Tensor& input(int i) const { return *inputs_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& inShape(int i) const { return input(i).shape(); }
  fb::DataType inType(int i) const { return input(i).dtype(); }
  int inRank(int i) const { return input(i).dimensions(); }

  // The values of input i (i32 or i64, or bool/u8 as 0/1), known at resize.
  StatusOr<std::vector<int64_t>> inInts(int i) const;
  // The values of input i as floats (f32, f16-free types only).
  StatusOr<std::vector<float>> inFloats(int i) const;

  void setOutput(int i, std::vector<int64_t> shape, fb::DataType dtype);
  const Tensor* output(int i) const { return outputs_[static_cast<size_t>(i)]; }
  // Output i's dtype as the model declares it (before setOutput).
  fb::DataType declaredOutType(int i) const;
  // Output i like input j (same shape and dtype).
  void setOutputLike(int i, int j) { setOutput(i, inShape(j), inType(j)); }


 private:
  const GraphOp& op_;
  const std::vector<Tensor*>& inputs_;
  const std::vector<Tensor*>& outputs_;
};

struct ShapeDef {
  ShapeFn fn = nullptr;
  uint32_t value_inputs = 0;
};

// The shape function of `type` and its value inputs, from its op_defs.inc
// row; {nullptr, 0} when it has none.
ShapeDef FindShapeDef(fb::OpType type);

// Numpy broadcasting of two shapes; fails naming both when incompatible.
StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// Product of dims (0 for an empty dim, 1 for a scalar); kDimOverflow
// (checked_math.h) when a dim is negative or the product overflows.
int64_t ShapeElementCount(const std::vector<int64_t>& shape);
std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace kiln
