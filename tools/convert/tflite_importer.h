// TFLite -> Kiln: walks subgraph 0 in order, maps each builtin (and the MediaPipe
// custom ops) to Kiln ops, constants to constants, folds DEQUANTIZE of
// constant (fp16, int8) weights into f32 constants, and DENSIFY of sparse
// constants (SparsityParameters) into dense ones.
//
// Layout. TFLite is NHWC, Kiln NCHW. Every 4-D TFLite tensor is held in Kiln in
// NCHW order (dims 0,3,1,2); other ranks as they are. So 4-D graph inputs and
// outputs are NCHW ([1,256,256,3] becomes [1,3,256,256]); 4-D constants are
// transposed at import; conv weights go OHWI -> OIHW, depthwise 1HWO -> O1HW
// (group = channels), transpose-conv OHWI -> IOHW; axes of 4-D ops (concat,
// mean, pad, split, slice, softmax, gather, tile, transpose) are remapped. Ops
// whose meaning depends on the memory order (reshape, squeeze, fully-connected
// over 4-D, batch matmul, arg max, reductions dropping dims out of order) see an
// NHWC view: a Transpose (a Reshape when only size-1 dims move) before and after.
// Shapes: the importer uses the static shapes the file records (reshape
// targets, resize sizes, transpose-conv padding).
//
// Quantized models (full-integer int8 / uint8, and quantized ops inside float
// models) are imported in QDQ form. A quantized activation is an 8-bit Kiln
// tensor; an op reading one reads its DequantizeLinear (made once per
// tensor), computes in f32, and a QuantizeLinear with the output tensor's
// scale and zero point makes its 8-bit output, which keeps the TFLite name.
// Quantized conv and fully-connected weights become 8-bit constants behind a
// DequantizeLinear (per output channel where the file quantizes per channel),
// int32 biases too. The optimizer's fuse_qdq then turns the convolutions,
// additions and matmuls into QLinearConv / QLinearAdd / QLinearMatMul, which
// keep the activations 8-bit between them; every other op runs in f32
// between its DequantizeLinear and QuantizeLinear. TFLite requantizes with
// a fixed-point multiplier, Kiln in f32 (onnxruntime's arithmetic), so an
// output may differ from TFLite's by one quantization step. Dynamic-range
// models (int8 weights, f32 activations) compute in f32 with the weights
// dequantized. 16-bit quantized activations are reported unsupported.
//
// TfliteImporter lives in this header so that its op families can be split
// over several files (tflite_rnn.cpp: the sequence LSTMs).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <set>

#include "kiln/convert.h"
#include "alloc_guard.h"
#include "checked_math.h"
#include "ops/shape_inference.h"
#include "tflite_reader.h"

namespace kiln::tflite_import {

namespace tfl = tflite;
using Ints = std::vector<int64_t>;
using ConstData = tfl::TensorData;
using tfl::PermuteDims;
using fb::OpType;

inline const Ints kToNchw = {0, 3, 1, 2};  // Kiln dim k of a 4-D tensor = TFLite (NHWC) dim kToNchw[k]
inline const Ints kToNhwc = {0, 2, 3, 1};
inline int64_t NchwAxis(int64_t nhwc_axis) { return kToNhwc[static_cast<size_t>(nhwc_axis)]; }

inline StatusOr<fb::DataType> MapType(int t) {
  static const std::map<int, fb::DataType> types = {
      {tfl::kFloat32, fb::DataType::F32}, {tfl::kFloat16, fb::DataType::F16}, {tfl::kInt32, fb::DataType::I32},
      {tfl::kInt64, fb::DataType::I64},   {tfl::kUInt8, fb::DataType::U8},    {tfl::kInt8, fb::DataType::I8},
      {tfl::kBool, fb::DataType::BOOL}};
  if (!types.count(t)) return Unsupported("tensor type %s", tfl::TensorTypeName(t));
  return types.at(t);
}

template <typename P>
fb::OpParamsUnion U(P p) {
  fb::OpParamsUnion u;
  u.Set(std::move(p));
  return u;
}
// Params of type P set by f: Make<fb::LeakyReluParamsT>([&](auto& p) { p.alpha = 0.1f; }).
template <typename P, typename F>
fb::OpParamsUnion Make(F f) {
  P p;
  f(p);
  return U(std::move(p));
}
inline fb::OpParamsUnion Clip(float lo, float hi) { return Make<fb::ClipParamsT>([&](auto& c) { c.min = lo, c.max = hi; }); }
inline std::vector<int32_t> I32(const Ints& v) { return std::vector<int32_t>(v.begin(), v.end()); }
inline Status PermuteConst(ConstData* d, const Ints& perm) {
  if (d->shape.size() != perm.size())
    return InvalidArgument("constant data of rank %zu where rank %zu is declared", d->shape.size(), perm.size());
  size_t bytes = 0;
  if (!CheckedShapeBytes(d->shape, tfl::TypeSize(d->type), &bytes) || bytes != d->bytes.size())
    return InvalidArgument("constant data of %zu bytes for shape %s", d->bytes.size(), ShapeToString(d->shape).c_str());
  d->bytes = tfl::PermuteData(d->bytes, d->shape, perm, tfl::TypeSize(d->type));
  d->shape = PermuteDims(d->shape, perm);
  return Status::Ok();
}

class TfliteImporter {
 public:
  TfliteImporter(const tfl::Model& m, const ConvertOptions& opt, ConvertReport* report, size_t graph = 0)
      : m_(m), g_(m.subgraphs[graph]), b_("tflite"), opt_(opt), report_(report), kiln_(g_.tensors.size(), -1),
        graph_(graph) {}

  StatusOr<NetBuilder> Import() {
    report_->source_format = "tflite";
    report_->opset = m_.version;
    report_->ops_in = static_cast<int>(g_.operators.size());
    b_.net().name = g_.name.empty() ? "tflite_model" : g_.name;
    b_.setMetadata("kiln-convert", "tflite", static_cast<int>(m_.version));
    if (!m_.description.empty()) b_.setProperty("tflite.description", m_.description);
    b_.setProperty("tflite.layout", "4-D inputs and outputs are NCHW (transposed from the model's NHWC)");
    KILN_RETURN_IF_ERROR(ImportGraph());
    if (!missing_.empty() && !opt_.allow_unsupported) {
      std::string msg = "unsupported TFLite ops:";
      for (auto& [type, names] : missing_) {
        msg += StrFormat("\n  %s x%zu:", type.c_str(), names.size());
        for (size_t k = 0; k < names.size() && k < 5; ++k) msg += " '" + names[k] + "'";
        if (names.size() > 5) msg += " ...";
      }
      return Unsupported("%s\n(use --allow-unsupported to keep them as Custom ops)", msg.c_str());
    }
    report_->ops_out = static_cast<int>(b_.net().ops.size());
    return std::move(b_);
  }

  // The subgraph's inputs, operators and outputs into b_ (the model's
  // graph, or a control-flow body imported by a child importer).
  Status ImportGraph() {
    for (int32_t i : g_.inputs) KILN_RETURN_IF_ERROR(AddInput(i), "graph input '%s'", T(i).name.c_str());
    for (size_t k = 0; k < g_.operators.size(); ++k) {
      const tfl::Operator& op = g_.operators[k];
      const tfl::OperatorCode& code = m_.operator_codes[op.opcode_index];
      std::string type = code.builtin == tfl::CUSTOM ? code.custom_code : tfl::BuiltinName(code.builtin);
      if (op.outputs.empty()) return InvalidArgument("operator %zu (%s) has no outputs", k, type.c_str());
      name_ = T(op.outputs[0]).name.empty() ? StrFormat("op%zu", k) : T(op.outputs[0]).name;
      KILN_RETURN_IF_ERROR(CheckArity(op, code), "operator %zu '%s' (%s)", k, name_.c_str(), type.c_str());
      KILN_RETURN_IF_ERROR(ImportOpQuantized(op, code, type), "operator %zu '%s' (%s)", k, name_.c_str(), type.c_str());
      if (opt_.progress && g_.operators.size() > 200 && (k + 1) % 200 == 0)
        opt_.progress(StrFormat("imported %zu of %zu operators", k + 1, g_.operators.size()));
    }
    for (int32_t o : g_.outputs) {
      KILN_ASSIGN_OR_RETURN(int t, Act(o), "graph output '%s'", T(o).name.c_str());
      b_.addOutput(t);
    }
    return Status::Ok();
  }

 private:
  // Input k of an operator; -1 (missing) past its inputs.
  static int In(const tfl::Operator& op, size_t k) { return k < op.inputs.size() ? op.inputs[k] : -1; }
  // The inputs an operator must have, checked before any is read: the
  // TFLite schema's arity of the builtins imported here (trailing optional
  // inputs, such as a conv's bias, may be -1).
  static Status CheckArity(const tfl::Operator& op, const tfl::OperatorCode& code) {
    int required = 1;
    switch (code.builtin) {
      case tfl::ADD: case tfl::SUB: case tfl::MUL: case tfl::DIV: case tfl::MAXIMUM: case tfl::MINIMUM:
      case tfl::POW: case tfl::PRELU: case tfl::LESS: case tfl::GREATER: case tfl::EQUAL:
      case tfl::SQUARED_DIFFERENCE: case tfl::MEAN: case tfl::SUM: case tfl::REDUCE_MAX: case tfl::REDUCE_MIN:
      case tfl::REDUCE_PROD: case tfl::CONV_2D: case tfl::DEPTHWISE_CONV_2D: case tfl::FULLY_CONNECTED:
      case tfl::PAD: case tfl::PADV2: case tfl::MIRROR_PAD: case tfl::RESIZE_BILINEAR:
      case tfl::RESIZE_NEAREST_NEIGHBOR: case tfl::TRANSPOSE: case tfl::SPLIT: case tfl::GATHER: case tfl::TILE:
      case tfl::ARG_MAX: case tfl::ARG_MIN: case tfl::BATCH_MATMUL: case tfl::EXPAND_DIMS:
        required = 2;
        break;
      case tfl::SELECT: case tfl::SELECT_V2: case tfl::TRANSPOSE_CONV: case tfl::SLICE: case tfl::SPLIT_V:
        required = 3;
        break;
      case tfl::STRIDED_SLICE: required = 4; break;
      case tfl::CUSTOM:
        required = code.custom_code == "Convolution2DTransposeBias" || code.custom_code == "MaxUnpooling2D" ? 2 : 0;
        break;
      default: break;
    }
    if (static_cast<int>(op.inputs.size()) < required)
      return InvalidArgument("has %zu inputs, needs %d", op.inputs.size(), required);
    for (int k = 0; k < required; ++k)
      if (op.inputs[static_cast<size_t>(k)] < 0) return InvalidArgument("input %d is required but missing", k);
    return Status::Ok();
  }
  // Tensor i; an empty placeholder for a missing optional input (-1).
  const tfl::Tensor& T(int i) const {
    static const tfl::Tensor missing;
    return i >= 0 && static_cast<size_t>(i) < g_.tensors.size() ? g_.tensors[static_cast<size_t>(i)] : missing;
  }
  Ints Shape(int i) const { return Ints(T(i).shape.begin(), T(i).shape.end()); }
  bool Is4D(int i) const { return T(i).has_shape && T(i).shape.size() == 4; }
  int Rank(int i) const { return static_cast<int>(T(i).shape.size()); }
  Ints KShape(int i) const { return Is4D(i) ? PermuteDims(Shape(i), kToNchw) : Shape(i); }  // Kiln's shape

  std::string Unique(std::string n) {
    if (n.empty()) n = "t";
    std::string r = n;
    for (int k = 1; names_.count(r); ++k) r = n + "_" + std::to_string(k);
    names_.insert(r);
    return r;
  }
  std::string Tmp(const char* what) { return name_ + "/" + what; }
  int Op(OpType type, const std::vector<int>& in, const std::string& out, fb::OpParamsUnion p = {}) {
    std::string o = Unique(out);
    return b_.addOp(type, o, in, {o}, std::move(p))[0];
  }
  // An op with a Kiln output for each TFLite output (4-D ones taken as NCHW).
  void MultiOp(OpType type, const std::vector<int>& in, const tfl::Operator& op, fb::OpParamsUnion p) {
    std::vector<std::string> names;
    for (int32_t o : op.outputs) names.push_back(Unique(T(o).name));
    std::vector<int> outs = b_.addOp(type, names[0], in, names, std::move(p));
    for (size_t k = 0; k < outs.size(); ++k) kiln_[static_cast<size_t>(op.outputs[k])] = outs[k];
  }
  StatusOr<int> AddConst(const std::string& name, const ConstData& d) {
    KILN_ASSIGN_OR_RETURN(fb::DataType dtype, MapType(d.type), "constant '%s'", name.c_str());
    report_->weight_bytes += d.bytes.size();
    return b_.addConstant(Unique(name), dtype, d.shape, d.bytes.data(), d.bytes.size());
  }
  int IntsConst(const std::string& name, const Ints& v) {
    report_->weight_bytes += v.size() * 8;
    return b_.addConstant(Unique(name), {static_cast<int64_t>(v.size())}, v);
  }
  Status AddInput(int i) {
    KILN_ASSIGN_OR_RETURN(fb::DataType dtype, MapType(T(i).type));
    Ints shape = KShape(i);
    auto over = opt_.input_shapes.find(T(i).name);
    if (over != opt_.input_shapes.end() && over->second != shape)
      return Unsupported("--input-shape differs from the model's static (NCHW) shape; TFLite import keeps it");
    kiln_[static_cast<size_t>(i)] = b_.addInput(Unique(T(i).name), dtype, std::vector<Dim>(shape.begin(), shape.end()));
    return Status::Ok();
  }
  // ---- constants ----
  bool IsConst(int i) const { return i >= 0 && (folded_.count(i) || tfl::HasData(m_, T(i))); }
  StatusOr<ConstData> Const(int i) {
    auto f = folded_.find(i);
    if (f != folded_.end()) return f->second;
    if (i < 0) return InvalidArgument("a required input is missing");
    if (!IsConst(i)) return Unsupported("tensor '%s' must be a constant", T(i).name.c_str());
    KILN_ASSIGN_OR_RETURN(ConstData d, tfl::ReadData(m_, T(i)));
    if (tfl::IsQuantized(T(i)))  // an 8-bit quantized constant read by an op computing in f32
      KILN_RETURN_IF_ERROR(tfl::ToFloat32(&d, T(i).quant), "constant '%s'", T(i).name.c_str());
    return d;
  }
  // A float constant (weights, biases) as f32; f16 widened.
  StatusOr<ConstData> ConstF32(int i) {
    KILN_ASSIGN_OR_RETURN(ConstData d, Const(i));
    if (d.type != tfl::kFloat32 && d.type != tfl::kFloat16)
      return Unsupported("constant '%s' is %s, not float (nor 8-bit with quantization scales)", T(i).name.c_str(),
                         tfl::TensorTypeName(d.type));
    KILN_RETURN_IF_ERROR(tfl::ToFloat32(&d, T(i).quant), "constant '%s'", T(i).name.c_str());
    return d;
  }
  StatusOr<int> F32Const(int i, const char* what) {
    KILN_ASSIGN_OR_RETURN(ConstData d, ConstF32(i), "%s", what);
    return AddConst(T(i).name, d);
  }
  // ---- quantization (the QDQ form, see the top of this file; tflite_quant.cpp) ----
  // Tensor i's scale and zero point as Kiln constants of its type (scalars
  // per tensor, vectors per channel), checked.
  StatusOr<std::pair<int, int>> QuantConsts(int i);
  // A (De)QuantizeLinear of Kiln tensor x with TFLite tensor i's quantization;
  // per-channel along Kiln axis `axis`.
  StatusOr<int> QdqOp(OpType type, int x, int i, int64_t axis, const std::string& name);
  // The Kiln axis of a per-channel activation's quantized dimension.
  int64_t QuantAxis(int i) const { return Is4D(i) ? NchwAxis(T(i).quant.dimension) : T(i).quant.dimension; }
  // The f32 view of quantized activation i: its DequantizeLinear, made once.
  StatusOr<int> FloatView(int i) {
    auto f = fview_.find(i);
    if (f != fview_.end()) return f->second;
    KILN_ASSIGN_OR_RETURN(int q, Act(i));
    KILN_ASSIGN_OR_RETURN(int y, QdqOp(OpType::DequantizeLinear, q, i, QuantAxis(i), T(i).name + "/dequantized"));
    return fview_[i] = y;
  }
  // Constant weights in Kiln's layout (dims permuted by `perm`): f32, or for
  // 8-bit quantized weights the 8-bit constant behind a DequantizeLinear
  // (per channel along the permuted quantized dimension).
  StatusOr<int> Weights(int i, const Ints& perm);
  // A conv's or fully-connected's bias: f32, or an int32 quantized one behind a DequantizeLinear.
  StatusOr<int> Bias(int i);
  // Imports one operator in QDQ form where it reads or writes quantized
  // activations: its quantized inputs are replaced by their f32 views while
  // ImportOp runs, and each quantized output it defined in f32 is quantized.
  Status ImportOpQuantized(const tfl::Operator& op, const tfl::OperatorCode& code, const std::string& type);
  StatusOr<Ints> ConstInts(int i) {
    KILN_ASSIGN_OR_RETURN(ConstData d, Const(i));
    return tfl::ToInt64(d);
  }
  // A constant holding one axis of a rank-r tensor, normalized.
  StatusOr<int64_t> OneAxis(int i, int r) {
    KILN_ASSIGN_OR_RETURN(Ints axis, ConstInts(i), "axis");
    if (axis.size() != 1) return InvalidArgument("axis must be one value");
    KILN_ASSIGN_OR_RETURN(axis, tfl::NormalizeAxes(axis, r));
    return axis[0];
  }
  Ints KAxes(const Ints& axes, int r) {  // TFLite axes -> Kiln axes
    Ints k;
    for (int64_t a : axes) k.push_back(r == 4 ? NchwAxis(a) : a);
    return k;
  }
  // ---- layout ----
  // Kiln tensor t (of `shape`) with its dims permuted; a Reshape when only size-1 dims move.
  int Permute(int t, const Ints& shape, const Ints& perm, const std::string& name) {
    Ints order;
    for (int64_t p : perm)
      if (shape[static_cast<size_t>(p)] != 1) order.push_back(p);
    if (std::is_sorted(order.begin(), order.end()))
      return Op(OpType::Reshape, {t, IntsConst(name + "/shape", PermuteDims(shape, perm))}, name);
    fb::TransposeParamsT p;
    p.perm = I32(perm);
    return Op(OpType::Transpose, {t}, name, U(p));
  }
  // The TFLite tensor in Kiln's layout (NCHW for 4-D); -1 for a missing input.
  StatusOr<int> Act(int i) {
    if (i < 0) return -1;
    if (kiln_[static_cast<size_t>(i)] >= 0) return kiln_[static_cast<size_t>(i)];
    if (!IsConst(i)) return InvalidArgument("tensor '%s' is read before it is produced", T(i).name.c_str());
    KILN_ASSIGN_OR_RETURN(ConstData d, Const(i));
    if (Is4D(i)) KILN_RETURN_IF_ERROR(PermuteConst(&d, kToNchw), "constant '%s'", T(i).name.c_str());
    KILN_ASSIGN_OR_RETURN(int t, AddConst(T(i).name, d));
    return kiln_[static_cast<size_t>(i)] = t;
  }
  // The TFLite tensor in TFLite's layout (NHWC for 4-D).
  StatusOr<int> Nhwc(int i) {
    if (!Is4D(i)) return Act(i);
    if (nhwc_.count(i)) return nhwc_[i];
    KILN_ASSIGN_OR_RETURN(int t, Act(i));
    return nhwc_[i] = Permute(t, KShape(i), kToNhwc, T(i).name + "/nhwc");
  }
  // Records Kiln tensor t as TFLite tensor `out`; `nhwc`: t is in TFLite's layout.
  void Define(int out, int t, bool nhwc) {
    if (Is4D(out) && nhwc) {
      nhwc_[out] = t;
      t = Permute(t, Shape(out), kToNchw, T(out).name);
    }
    kiln_[static_cast<size_t>(out)] = t;
  }
  // ---- emitting ----
  // A TFLite fused activation as a Conv/Gemm activation; false if there is none for it.
  static bool FuseInto(int8_t act, fb::Activation* a, float* lo, float* hi) {
    if (act == tfl::kActReluN1To1) *lo = -1.f, *hi = 1.f;
    *a = act == tfl::kActRelu ? fb::Activation::Relu : act == tfl::kActRelu6 ? fb::Activation::Relu6
         : act == tfl::kActReluN1To1 ? fb::Activation::Clip : fb::Activation::None;
    return act == tfl::kActNone || *a != fb::Activation::None;
  }
  // Emits the op producing TFLite tensor `out` (in TFLite's layout when `nhwc`), then its fused activation.
  Status Emit(OpType type, const std::vector<int>& in, int out, fb::OpParamsUnion p = {}, bool nhwc = false,
              int8_t act = tfl::kActNone) {
    const std::string name = Is4D(out) && nhwc ? T(out).name + "/nhwc" : T(out).name;
    int y = Op(type, in, act == tfl::kActNone ? name : name + "/pre_act", std::move(p));
    switch (act) {
      case tfl::kActNone: break;
      case tfl::kActRelu: y = Op(OpType::Relu, {y}, name); break;
      case tfl::kActTanh: y = Op(OpType::Tanh, {y}, name); break;
      case tfl::kActRelu6: y = Op(OpType::Clip, {y}, name, Clip(0.f, 6.f)); break;
      case tfl::kActReluN1To1: y = Op(OpType::Clip, {y}, name, Clip(-1.f, 1.f)); break;
      default: return Unsupported("fused activation %d", act);
    }
    Define(out, y, nhwc);
    return Status::Ok();
  }
  Status Unary(OpType type, const tfl::Operator& op, fb::OpParamsUnion p = {});
  // Broadcasting ops: inputs aligned as TFLite aligns them (from the last dim);
  // lower-rank inputs of a 4-D op are made 4-D NCHW.
  Status Binary(OpType type, const tfl::Operator& op, int8_t act = tfl::kActNone, bool square = false);

  // Conv, depthwise and transposed conv: weights permuted to Kiln's layout.
  Status Conv(const tfl::Operator& op, int32_t code, const tfl::Window& win, int x_in, int w_in, int b_in);
  Status Pool(OpType type, const tfl::Operator& op, const tfl::Window& win);
  // MediaPipe's MaxUnpooling2D (values, indices) -> MaxUnpool. MediaPipe writes value k at offset
  // indices[k] of its batch of the NHWC output; the indices here are Kiln's (flat NCHW over the
  // pool's input) from the MaxPool that MaxPoolingWithArgmax2D became, so both name the same
  // element exactly when the output has the pool input's shape (the usual encoder/decoder pair);
  // any other pairing is kept unsupported. The options are a TfLitePoolParams, as the pool's:
  // read the same way, or the paired pool's window when they do not decode.
  Status MaxUnpool(const tfl::Operator& op, const tfl::OperatorCode& code, const std::string& type);
  // UNIDIRECTIONAL / BIDIRECTIONAL_SEQUENCE_LSTM (tflite_rnn.cpp).
  Status SequenceLstm(const tfl::Operator& op, bool bidirectional);
  // IF and WHILE (tflite_control_flow.cpp): TFLite subgraph `graph` as a
  // Kiln subgraph of the root model (its index), and the ops over them.
  StatusOr<int> Subgraph(int graph, std::vector<fb::DataType>* out_dtypes);
  Status IfOp(const tfl::Operator& op);
  Status WhileOp(const tfl::Operator& op);
  TfliteImporter* root() { return parent_ ? parent_->root() : this; }
  Status FullyConnected(const tfl::Operator& op);
  // RESHAPE, SQUEEZE, EXPAND_DIMS: TFLite's layout in and out, to the recorded shape.
  Status Reshape(const tfl::Operator& op);
  // A 4-D Kiln tensor y (of Kiln shape `s`) to TFLite tensor `out` of lower rank: NHWC view, reshape.
  Status DropDims(int y, Ints s, int out);
  Status Reduce(OpType type, const tfl::Operator& op);
  Status Pad(const tfl::Operator& op, fb::PadMode mode);
  Status Resize(const tfl::Operator& op, bool bilinear);
  Status Transpose(const tfl::Operator& op);

  // STRIDED_SLICE (no ellipsis / new axes) and SLICE.
  Status Slice(const tfl::Operator& op, bool strided);
  Status Split(const tfl::Operator& op, int x_in, int axis_in, int sizes_in);
  Status Gather(const tfl::Operator& op);
  Status ArgMax(OpType type, const tfl::Operator& op);
  Status BatchMatMul(const tfl::Operator& op);
  // DEQUANTIZE of a constant (f16, or int8/uint8 with scales) folds to f32.
  Status Dequantize(const tfl::Operator& op);
  // DENSIFY of a sparse constant: the importer densifies the constant
  // (tfl::Densify, through ReadData) and DENSIFY becomes the identity on it,
  // folded away like DEQUANTIZE, so that its readers see a plain constant.
  Status Densify(const tfl::Operator& op);
  // An op Kiln cannot run: recorded, and kept as a Custom op when allowed.
  Status Keep(const tfl::Operator& op, const std::string& type, const std::string& why);
  Status ImportOp(const tfl::Operator& op, const tfl::OperatorCode& code, const std::string& type);

  const tfl::Model& m_;
  const tfl::SubGraph& g_;
  NetBuilder b_;
  const ConvertOptions& opt_;
  ConvertReport* report_;
  std::vector<int> kiln_;            // TFLite tensor -> Kiln tensor (NCHW for 4-D); -1 until produced
  std::map<int, int> nhwc_;          // TFLite tensor -> Kiln tensor in NHWC (4-D only)
  std::map<int, ConstData> folded_;  // DEQUANTIZE outputs folded to f32, DENSIFY outputs (dense)
  std::map<int, int> fview_;         // quantized TFLite tensor -> its DequantizeLinear (f32, NCHW for 4-D)
  std::map<int, int> fview_nhwc_;    // ... and that f32 view in NHWC
  struct ArgmaxPool {
    tfl::Window window;
    int input;  // the pooled TFLite tensor
  };
  std::map<int, ArgmaxPool> argmax_;  // MaxPoolingWithArgmax2D indices tensor -> its pool
  std::set<std::string> names_;
  std::map<std::string, std::vector<std::string>> missing_;  // unsupported "TYPE (why)" -> op names
  std::string name_;                 // the current operator's name (its first output's)
  size_t kept_ = 0;                  // operators kept unsupported so far
  size_t graph_ = 0;                 // the TFLite subgraph this importer reads
  TfliteImporter* parent_ = nullptr;  // the importer of the graph whose IF / WHILE runs this one
};

}  // namespace kiln::tflite_import
