// Helpers shared by the GPU op families.
#pragma once

#include <cstdint>
#include <vector>

#include "graph.h"
#include "gpu_backend.h"

namespace kiln {

// UnaryFn's numbering (shaders/vulkan/unary_fn.glsl, shaders/opencl/common.cl):
// an op type's function has the op type's value, and the two functions no op
// type names follow the last. The shaders read the same numbers from
// kiln_op_codes.h, generated from the schema (checked in gpu_elementwise.cpp).
constexpr uint32_t UnaryCode(fb::OpType t) { return static_cast<uint32_t>(t); }
constexpr uint32_t kUnaryGeluTanh = static_cast<uint32_t>(fb::OpType::MAX) + 1;  // Gelu, tanh approximation
constexpr uint32_t kUnarySilu = kUnaryGeluTanh + 1;                             // x * sigmoid(x)

// Unsupported unless every non-missing input and output of `op` has one of
// the dtypes (GPU kernels are f32 unless they say otherwise).
Status RequireDtypes(const GraphOp& op, const Graph& graph, std::initializer_list<fb::DataType> allowed);
inline Status RequireF32(const GraphOp& op, const Graph& graph) { return RequireDtypes(op, graph, {fb::DataType::F32}); }

// Input `k` as a constant of the model, or nullptr.
const GraphTensor* ConstantInput(const GraphOp& op, const Graph& graph, size_t k);
// A buffer of an execution's own with `values` stored as the backend stores
// floats (fp16 with halfStorage), its bytes counted with the session's
// weights (GpuBackend::addOwnWeightBytes; the execution frees and uncounts it).
StatusOr<GpuBuffer> CreateWeightBuffer(GpuBackend* gpu, const std::vector<float>& values);
// A scratch buffer of an execution's own holding at least `bytes`: kept
// across resizes, replaced by a larger one where it is too small.
Status ReserveBuffer(GpuBackend* gpu, GpuBuffer* buf, uint64_t bytes);
// The first value of constant input `k` widened to float, or `fallback` when
// the input is missing. Unsupported when it is not a constant.
StatusOr<float> ConstantScalar(const GraphOp& op, const Graph& graph, size_t k, float fallback);

// unary.comp's push constants: `c` and `plane` only for packed tensors
// whose channels are not a multiple of four (the kernel keeps their zero
// lanes zero).
struct UnaryPush {
  uint32_t n;
  float alpha, beta;
  uint32_t c = 0, plane = 1;
};

// Numpy broadcasting of inputs onto `out`, collapsed to at most
// KILN_MAX_RANK (6) dims: out dims and each input's strides (0 where
// broadcast).
struct Broadcast {
  uint32_t rank = 0;
  uint32_t dims[6] = {};
  std::vector<std::vector<uint32_t>> strides;  // per input, 6 each
};
StatusOr<Broadcast> MakeBroadcast(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins);

// The push constants of the broadcasting two-input kernels (binary*,
// pow_mixed, compare*; KILN_BROADCAST_PUSH in common.glsl, BroadcastPush in
// common.cl): n output elements, and `bc`'s dims and its first two inputs'
// strides.
struct BroadcastPush {
  uint32_t n, rank, dims[6], sa[6], sb[6];
};
BroadcastPush MakeBroadcastPush(const Broadcast& bc, uint32_t n);

// Shapes and counts beyond 32 bits are not for these kernels.
Status Require32Bit(const Tensor& t);


// Wraps an execution in the factory return type.
template <typename E>
StatusOr<std::unique_ptr<Execution>> Make(std::unique_ptr<E> e) {
  return std::unique_ptr<Execution>(std::move(e));
}

}  // namespace kiln
