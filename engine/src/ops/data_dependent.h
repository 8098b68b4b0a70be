// The ops whose output shapes depend on their input values (NonZero,
// Compress, Unique, NonMaxSuppression): their results are computed here, once
// for the shape function at resize (the session computes the value inputs
// then, and plans again at run when they change) and once by the host
// kernel, which checks that the count is the one planned. Einsum's equation
// is parsed here for its shape function and its kernel alike.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// NonZero: the flat indices of the non-zero elements, in order.
std::vector<int64_t> NonZeroFlat(const Tensor& x);

// Compress: the selected indices along the axis (condition true, at most
// the axis' length of them).
std::vector<int64_t> CompressSelection(const Tensor& condition, int64_t axis_len);

// Unique over the whole tensor (flattened) or along an axis (unique slices).
struct UniqueResult {
  std::vector<int64_t> first;    // per unique item: the index of its first occurrence
  std::vector<int64_t> inverse;  // per input item: its unique item
  std::vector<int64_t> counts;   // per unique item
  int axis = -1;                 // -1: flattened
  int64_t items = 0;             // input items (elements, or slices along axis)
};
StatusOr<UniqueResult> ComputeUnique(const GraphOp& op, const Tensor& x);

// NonMaxSuppression: the selected [batch, class, box] triples.
StatusOr<std::vector<std::array<int64_t, 3>>> ComputeNms(const GraphOp& op, const std::vector<Tensor*>& in);

// Einsum's equation: one subscript string per input and the output's, with
// ellipses expanded to upper-case letters; every letter's size.
struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
  std::vector<int64_t> size;  // per letter, indexed by the char
};
StatusOr<EinsumSpec> ParseEinsum(const GraphOp& op, const std::vector<const std::vector<int64_t>*>& shapes);

}  // namespace kiln
