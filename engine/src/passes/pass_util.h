// Helpers shared by the graph passes (kiln/passes.h): who produces and who
// reads each tensor, constant access, op removal, and static shapes from the
// engine's own shape functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/format.h"
#include "kiln/status.h"

namespace kiln::passes {

// Fails naming the pass when an op, graph input or graph output refers to a
// tensor index out of range, or an op has more or fewer inputs or outputs
// than its type allows (the passes index without further checks).
Status CheckIndices(const fb::NetT& net, const char* pass);

// Producers and consumers of every tensor, ignoring ops marked removed.
struct NetIndex {
  NetIndex(const fb::NetT& net, const std::vector<uint8_t>& removed);
  std::vector<int> producer;                // op index, -1 for none
  std::vector<std::vector<int>> consumers;  // op indices, one per use
  std::vector<uint8_t> is_output, is_input;

  int uses(int t) const { return static_cast<int>(consumers[static_cast<size_t>(t)].size()); }
  // Read by exactly one op and not a graph output: safe to fuse through.
  bool singleUse(int t) const { return t >= 0 && uses(t) == 1 && !is_output[static_cast<size_t>(t)]; }
  int producerOf(int t) const { return t < 0 ? -1 : producer[static_cast<size_t>(t)]; }
};

// A constant whose values are in the net (inline data, or an empty constant);
// tensors with external or quantized data are not treated as constants.
bool IsConstant(const fb::TensorT& t);
bool IsConstant(const fb::NetT& net, int t);
// The shape of a tensor with a fully static declared shape.
bool StaticShapeOf(const fb::TensorT& t, std::vector<int64_t>* shape);
int64_t NumElements(const std::vector<int64_t>& shape);

// Values of a constant f32 tensor.
bool ConstFloats(const fb::NetT& net, int t, std::vector<float>* v);
// Values (one byte each, 0 or not) and shape of a constant bool tensor.
bool ConstBools(const fb::NetT& net, int t, std::vector<uint8_t>* v, std::vector<int64_t>* shape);
// Values of a constant integer tensor (i32 / i64).
bool ConstInts(const fb::NetT& net, int t, std::vector<int64_t>* v);
// A constant with one element (any rank), as double (f32, i32, i64).
bool ConstScalar(const fb::NetT& net, int t, double* v);
// A one-element constant of rank <= 1 within `tol` (relative) of `want`.
bool IsScalarNear(const fb::NetT& net, int t, double want, double tol = 1e-4);

// Adds a tensor of unknown rank (shape inference gives it one) with a name
// not used yet (base, base_1, ...).
int AddTensor(fb::NetT& net, const std::string& base, fb::DataType dtype);
// Adds a constant tensor with a name not used yet (base, base_1, ...).
int AddConstant(fb::NetT& net, const std::string& base, fb::DataType dtype, const std::vector<int64_t>& shape,
                const void* data, size_t bytes);
int AddConstantF32(fb::NetT& net, const std::string& base, const std::vector<int64_t>& shape,
                   const std::vector<float>& v);
// Makes tensor `t` a constant with these values (for folded op outputs).
void SetConstant(fb::TensorT& t, fb::DataType dtype, const std::vector<int64_t>& shape, std::vector<uint8_t> bytes);

// Ops read `to` where they read `from` (graph outputs are not changed).
void ReplaceInputs(fb::NetT& net, int from, int to);
// Drops the ops marked in `removed`, keeping the order of the rest.
void EraseOps(fb::NetT& net, const std::vector<uint8_t>& removed);
// The other input of a two-input op, or -2 when `t` is not one of them.
int OtherInput(const fb::OpT& op, int t);
// The single reader of t when it is an op of `type`; -1 otherwise.
int OnlyReader(const fb::NetT& net, const NetIndex& idx, int t, fb::OpType type);
// The bounds of a Clip op: attributes, overridden by constant inputs 1 and
// 2 (opset >= 11); infinite where absent. False when an input bound is not
// a constant scalar, or a bound is NaN, or lo > hi.
bool ClipBounds(const fb::NetT& net, const fb::OpT& clip, double* lo, double* hi);

// Static shapes, from graph inputs with fixed dims and constants forward
// through the engine's shape functions. Unknown where any input is unknown
// or a value input (Reshape's shape, ...) is not a constant.
struct StaticShapes {
  std::vector<uint8_t> known;
  std::vector<std::vector<int64_t>> shape;
  std::vector<fb::DataType> dtype;
  bool has(int t) const { return t >= 0 && known[static_cast<size_t>(t)]; }
};
StaticShapes SeedShapes(const fb::NetT& net);
// Infers the output shapes of op `i` into `s`; false when they cannot be known.
bool InferOpShapes(const fb::NetT& net, size_t i, StaticShapes* s);
StaticShapes InferStaticShapes(const fb::NetT& net);

}  // namespace kiln::passes
