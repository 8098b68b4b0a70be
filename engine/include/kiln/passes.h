// Graph passes: rewrites of a Kiln model (the FlatBuffers object API,
// fb::NetT) that keep its outputs but make it cheaper to run. kiln-convert
// runs OptimizeNet on every imported model; apps may run it (or single
// passes) on a NetBuilder's net() before writing.
//
//   NetBuilder b = ...;
//   PassReport report;
//   KILN_RETURN_IF_ERROR(OptimizeNet(b.net(), &report));
//   // report.applied: {"fold_constants", 12}, {"fold_batchnorm", 20}, ...
//
// Every pass keeps the op list in execution order, keeps the names of graph
// inputs and outputs (apps look them up by name), and never fuses through a
// tensor that is a graph output or has a second consumer. A pass that does
// not apply leaves the net unchanged. Individual passes (other than
// RemoveDeadCode) may leave tensors no op uses any more; RemoveDeadCode
// removes them and renumbers the rest.
//
// Each pass returns how many rewrites it made, or an error for a net whose
// indices are out of range.
//
// Thread-safety: a pass touches only the net it is given.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/format.h"
#include "kiln/status.h"

namespace kiln {

struct PassReport {
  // Passes that changed the net, in the order they ran: name, rewrites.
  std::vector<std::pair<std::string, int>> applied;
  // "fold_constants 12, fold_batchnorm 20" ("" when none applied).
  std::string toString() const;
};

// Runs, in order: RemoveIdentity, FoldConstants, LowerEinsum, FoldBatchNorm,
// FuseGelu, FuseHardSwish, FuseLayerNorm, FuseActivation, SinkDequantize, FuseQdq, RemoveDeadCode,
// FoldDequantize, FuseResidual, MatMulToGemm (then FuseActivation again on
// the Gemms it made), FuseAttention, RemoveDeadCode.
Status OptimizeNet(fb::NetT& net, PassReport* report = nullptr);

// "remove_identity": Identity ops (ONNX Dropout is imported as Identity).
// The input is read in place of the output; when the output is a graph
// output, the input's producer writes it directly instead.
StatusOr<int> RemoveIdentity(fb::NetT& net);

// "infer_dtypes": each op output's dtype from its inputs' (the op's OutType
// in engine/src/ops/op_defs.inc), for importers whose source format does not
// give intermediates' types (the ONNX importer runs it). Graph inputs and
// constants keep theirs; an output whose type cannot be told (an unknown
// input type, a Custom op) keeps what the file declares. Returns how many
// tensors changed.
StatusOr<int> InferDtypes(fb::NetT& net);

// "fold_constants": an op whose inputs are all constants is run once on the
// host (a one-op model through Interpreter and Session) and its outputs
// become constants. A Shape op whose input has a fully static shape folds to
// that shape, so Shape -> Gather -> Concat -> Reshape chains fold when the
// graph input sizes are fixed. Ops whose outputs would exceed
// kMaxFoldedBytes, graph outputs, Custom ops and ops the host cannot run are
// left alone.
constexpr size_t kMaxFoldedBytes = 16u << 20;
// A DequantizeLinear of constant integers (quantized weights) is not
// folded here: FuseQdq takes them as they are, FoldDequantize folds the rest.
StatusOr<int> FoldConstants(fb::NetT& net);

// "sink_dequantize": a per-tensor DequantizeLinear of an 8-bit activation
// moves below the Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice,
// DepthToSpace, SpaceToDepth, Identity, Concat and MaxPool ops that read it
// (which then run on the 8-bit tensor), and a QuantizeLinear of a DequantizeLinear
// with the same scale, zero point and type goes
// (engine/src/passes/sink_dequantize.cpp).
StatusOr<int> SinkDequantize(fb::NetT& net);

// "fuse_qdq": DequantizeLinear(xq) -> Conv(DequantizeLinear(wq), bias)
// [fused Relu / Relu6 / Clip] -> QuantizeLinear becomes one QLinearConv on
// the 8-bit tensors (per-tensor activations, per-tensor or per-channel
// weights, the bias made int32 at x_scale * w_scale), so activations stay
// 8-bit between quantized convolutions (engine/src/passes/fuse_qdq.cpp).
StatusOr<int> FuseQdq(fb::NetT& net);

// "fold_dequantize": the DequantizeLinear of constants that FuseQdq left
// become f32 constants (FoldConstants' evaluation).
StatusOr<int> FoldDequantize(fb::NetT& net);

// "lower_einsum": an f32 Einsum without diagonals becomes ReduceSum,
// Transpose, Reshape, Unsqueeze / Squeeze and one batched MatMul per pair of
// operands, which every backend runs (dynamic dims stay dynamic).
StatusOr<int> LowerEinsum(fb::NetT& net);

// "fold_batchnorm": BatchNormalization after a Conv (constant f32 weights,
// no fused activation) or after a Gemm with a constant B is folded into the
// weights and bias of the producer; so is a Mul, Div, Add or Sub of the
// output by a constant scalar or per-channel vector.
StatusOr<int> FoldBatchNorm(fb::NetT& net);

// "fuse_gelu": x * 0.5 * (1 + Erf(x / sqrt(2))) in the op orders torch
// exports (Div by sqrt(2) or Mul by 1/sqrt(2); the 0.5 applied to x, to the
// sum or to the product) becomes one Gelu.
StatusOr<int> FuseGelu(fb::NetT& net);

// "fuse_hardswish": x * Clip(x + 3, 0, 6) / 6 (the division as Div(6) or
// Mul(1/6), on the product or on the Clip) becomes one HardSwish.
StatusOr<int> FuseHardSwish(fb::NetT& net);

// "fuse_layernorm": ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) ->
// Sqrt -> Div -> Mul(scale) [-> Add(bias)] over the last axis, as torch
// exports LayerNorm before opset 17, becomes LayerNormalization(axis -1).
StatusOr<int> FuseLayerNorm(fb::NetT& net);

// "fuse_activation": Relu, Relu6 / Clip (constant bounds), LeakyRelu,
// Sigmoid, HardSwish and exact Gelu after a Conv or Gemm become the
// producer's fused activation (ConvParams / GemmParams .activation).
StatusOr<int> FuseActivation(fb::NetT& net);

// "fuse_residual": Add(Conv(x), r) with r of the Conv output's static shape,
// and a Relu after it, become the Conv with r as its fourth input
// (act(conv + bias + r)); runs after fuse_qdq, which leaves such Convs alone.
StatusOr<int> FuseResidual(fb::NetT& net);

// "matmul_to_gemm": MatMul(A, W) + B with A 2-D (static shape), W a constant
// 2-D f32 matrix and B a constant bias of shape [N] or [1, N] becomes
// Gemm(A, W, B).
StatusOr<int> MatMulToGemm(fb::NetT& net);

// "fuse_attention": MatMul(q, kt) [-> Div / Mul by a constant scalar]
// [-> Add(mask)] -> Softmax(last axis) -> MatMul(., v), with static shapes
// of Attention's form (and a scale on q taken in), becomes Attention(q, kt,
// v [, mask]) with the scale in its params.
StatusOr<int> FuseAttention(fb::NetT& net);

// "dead_code": removes ops none of whose outputs reach a graph output, then
// tensors no op, graph input or graph output refers to, renumbering the
// remaining tensors. Returns the number of ops removed.
StatusOr<int> RemoveDeadCode(fb::NetT& net);

// "upcast_fp16": a graph computing in float16 computes in float32 (f16
// constants widened, intermediates declared f32, Casts to f16 made Casts
// to f32); with keep_io, f16 graph inputs and outputs keep their type and
// names behind Casts. OptimizeNet runs it first (keep_io for the net, not
// for subgraphs). Returns the number of tensors and Casts changed.
StatusOr<int> UpcastFp16(fb::NetT& net, bool keep_io);

}  // namespace kiln
