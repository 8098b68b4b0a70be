// OnnxImporter: ONNX -> Kiln, one instance per graph (the model's, and one
// per control-flow subgraph, which resolves names of enclosing graphs
// through its parent). The node mapping is here; subgraph import is in
// onnx_control_flow.cpp.
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <list>
#include <set>

#include "kiln/convert.h"
#include "kiln/passes.h"
#include "alloc_guard.h"
#include "elements.h"
#include "onnx_util.h"
#include "ops/op_defs.h"

namespace kiln::onnx_import {

inline fb::AutoPad MapAutoPad(const std::string& s) {
  if (s == "SAME_UPPER") return fb::AutoPad::SameUpper;
  if (s == "SAME_LOWER") return fb::AutoPad::SameLower;
  if (s == "VALID") return fb::AutoPad::Valid;
  return fb::AutoPad::NotSet;
}

class OnnxImporter {
 public:
  OnnxImporter(const ConvertOptions& opt, ConvertReport* report, std::string base_dir)
      : b_("onnx"), opt_(opt), report_(report), base_dir_(std::move(base_dir)) {}

  StatusOr<NetBuilder> Import(const onnx::ModelProto& model) {
    for (const auto& o : model.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
    report_->source_format = "onnx";
    report_->opset = opset_;
    const onnx::GraphProto& g = model.graph();
    b_.net().name = g.name().empty() ? "onnx_model" : g.name();
    b_.setMetadata("kiln-convert", "onnx", static_cast<int>(opset_));
    if (!model.producer_name().empty()) b_.setProperty("onnx.producer", model.producer_name() + " " + model.producer_version());

    report_->ops_in = g.node_size();
    KILN_RETURN_IF_ERROR(ImportGraph(g, {}));
    if (!missing_.empty() && !opt_.allow_unsupported) {
      std::string msg = "unsupported ONNX ops:";
      for (auto& [type, names] : missing_) {
        msg += StrFormat("\n  %s x%zu:", type.c_str(), names.size());
        for (size_t k = 0; k < names.size() && k < 5; ++k) msg += " '" + names[k] + "'";
        if (names.size() > 5) msg += " ...";
      }
      return Unsupported("%s\n(use --allow-unsupported to keep them as Custom ops)", msg.c_str());
    }
    for (const auto& out : g.output()) {
      auto it = tensors_.find(out.name());
      if (it == tensors_.end()) return InvalidArgument("graph output '%s' is never produced", out.name().c_str());
      b_.addOutput(it->second);
    }
    report_->ops_out = static_cast<int>(b_.net().ops.size());
    // ONNX nodes do not say their outputs' types: infer them, so that the
    // file declares real ones (the GPU backends choose kernels by them).
    KILN_RETURN_IF_ERROR(InferDtypes(b_.net()).status(), "inferring dtypes");
    return std::move(b_);
  }

 private:
  // Initializers, inputs and nodes of g (the model's graph or a subgraph,
  // whose inputs may leave their types to `formal`, the op's); in
  // onnx_importer.cpp with the entry points.
  Status ImportGraph(const onnx::GraphProto& g, const std::vector<fb::DataType>& formal);
  Status AddInput(const onnx::ValueInfoProto& in, const fb::DataType* hint = nullptr);

  StatusOr<int> Input(const onnx::NodeProto& n, int k) {
    if (k >= n.input_size() || n.input(k).empty()) return -1;
    return Resolve(n.input(k), k);
  }

  // The tensor named `name` here, or captured from an enclosing graph: a
  // constant there is copied in, anything else becomes an input of this
  // subgraph (the op passes it in; schema/kiln.fbs SubGraph).
  StatusOr<int> Resolve(const std::string& name, int k = -1);  // onnx_control_flow.cpp

  StatusOr<std::vector<int>> Inputs(const onnx::NodeProto& n) {
    std::vector<int> v;
    for (int k = 0; k < n.input_size(); ++k) {
      KILN_ASSIGN_OR_RETURN(int t, Input(n, k));
      v.push_back(t);
    }
    while (!v.empty() && v.back() < 0) v.pop_back();  // trailing optional inputs left out
    return v;
  }

  std::vector<std::string> OutputNames(const onnx::NodeProto& n, int max_outputs) {
    std::vector<std::string> names;
    int last = -1;
    for (int k = 0; k < n.output_size() && k < max_outputs; ++k)
      if (!n.output(k).empty()) last = k;
    for (int k = 0; k <= last; ++k)
      names.push_back(n.output(k).empty() ? n.name() + ":unused" + std::to_string(k) : n.output(k));
    return names;
  }

  // Adds the Kiln op for node n, its inputs and outputs checked against the
  // op's arity first (a required input left empty is an error here, not a
  // null tensor later).
  Status Emit(fb::OpType type, const onnx::NodeProto& n, const std::vector<int>& inputs, fb::OpParamsUnion params = {},
              int max_outputs = 1 << 20) {
    std::vector<std::string> names = OutputNames(n, max_outputs);
    if (const OpDef* def = FindOpDef(type)) {
      const int nin = static_cast<int>(inputs.size()), nout = static_cast<int>(names.size());
      if (nin < def->min_inputs || nin > def->max_inputs)
        return InvalidArgument("%s takes %d to %d inputs, the node gives %d", def->name, def->min_inputs,
                               def->max_inputs, nin);
      for (int k = 0; k < def->min_inputs; ++k)
        if (inputs[static_cast<size_t>(k)] < 0)
          return InvalidArgument("%s input %d is required but missing (empty name)", def->name, k);
      if (nout < def->min_outputs || nout > def->max_outputs)
        return InvalidArgument("%s has %d to %d outputs, the node names %d", def->name, def->min_outputs,
                               def->max_outputs, nout);
    }
    std::vector<int> outs = b_.addOp(type, n.name(), inputs, names, std::move(params));
    for (size_t k = 0; k < outs.size(); ++k) tensors_[names[k]] = outs[k];
    return Status::Ok();
  }

  template <typename P>
  fb::OpParamsUnion U(P p) {
    fb::OpParamsUnion u;
    u.Set(std::move(p));
    return u;
  }

  Status ImportConstant(const onnx::NodeProto& n) {
    TensorData d;
    if (auto* a = FindAttr(n, "value")) {
      KILN_ASSIGN_OR_RETURN(d, ReadTensor(a->t(), base_dir_));
    } else if (auto* f = FindAttr(n, "value_float")) {
      d.dtype = fb::DataType::F32;
      d.bytes.resize(4);
      float v = f->f();
      std::memcpy(d.bytes.data(), &v, 4);
    } else if (auto* fs = FindAttr(n, "value_floats")) {
      d.dtype = fb::DataType::F32;
      d.shape = {fs->floats_size()};
      d.bytes.resize(4 * static_cast<size_t>(fs->floats_size()));
      std::memcpy(d.bytes.data(), fs->floats().data(), d.bytes.size());
    } else if (auto* i = FindAttr(n, "value_int")) {
      d.dtype = fb::DataType::I64;
      d.bytes.resize(8);
      int64_t v = i->i();
      std::memcpy(d.bytes.data(), &v, 8);
    } else if (auto* is = FindAttr(n, "value_ints")) {
      d.dtype = fb::DataType::I64;
      d.shape = {is->ints_size()};
      d.bytes.resize(8 * static_cast<size_t>(is->ints_size()));
      std::memcpy(d.bytes.data(), is->ints().data(), d.bytes.size());
    } else {
      return Unsupported("Constant without a value/value_float(s)/value_int(s) attribute");
    }
    if (n.output_size() != 1 || n.output(0).empty()) return InvalidArgument("Constant must have one named output");
    tensors_[n.output(0)] = b_.addConstant(n.output(0), d.dtype, d.shape, d.bytes.data(), d.bytes.size());
    report_->weight_bytes += d.bytes.size();
    return Status::Ok();
  }

  StatusOr<fb::ConvParamsT> ConvParams(const onnx::NodeProto& n) {
    fb::ConvParamsT p;
    KILN_ASSIGN_OR_RETURN(p.kernel_shape, AttrInts32(n, "kernel_shape"));
    KILN_ASSIGN_OR_RETURN(p.strides, AttrInts32(n, "strides"));
    KILN_ASSIGN_OR_RETURN(p.pads, AttrInts32(n, "pads"));
    KILN_ASSIGN_OR_RETURN(p.dilations, AttrInts32(n, "dilations"));
    KILN_ASSIGN_OR_RETURN(p.group, AttrInt32(n, "group", 1));
    p.auto_pad = MapAutoPad(AttrString(n, "auto_pad", "NOTSET"));
    KILN_ASSIGN_OR_RETURN(p.output_padding, AttrInts32(n, "output_padding"));
    KILN_ASSIGN_OR_RETURN(p.output_shape, AttrInts32(n, "output_shape"));
    return p;
  }

  StatusOr<fb::PoolParamsT> PoolParams(const onnx::NodeProto& n) {
    fb::PoolParamsT p;
    KILN_ASSIGN_OR_RETURN(p.kernel_shape, AttrInts32(n, "kernel_shape"));
    KILN_ASSIGN_OR_RETURN(p.strides, AttrInts32(n, "strides"));
    KILN_ASSIGN_OR_RETURN(p.pads, AttrInts32(n, "pads"));
    KILN_ASSIGN_OR_RETURN(p.dilations, AttrInts32(n, "dilations"));
    p.auto_pad = MapAutoPad(AttrString(n, "auto_pad", "NOTSET"));
    p.ceil_mode = AttrInt(n, "ceil_mode", 0) != 0;
    p.count_include_pad = AttrInt(n, "count_include_pad", 0) != 0;
    return p;
  }

  StatusOr<fb::AxisParamsT> Axis(const onnx::NodeProto& n, int64_t def) {
    fb::AxisParamsT p;
    KILN_ASSIGN_OR_RETURN(p.axis, AttrInt32(n, "axis", def));
    return p;
  }

  // Softmax / LogSoftmax before opset 13 normalize over all dims from `axis`
  // on: flatten to 2-D there, softmax the rows, reshape back.
  Status ImportLegacySoftmax(fb::OpType type, const onnx::NodeProto& n, int x) {
    KILN_ASSIGN_OR_RETURN(int32_t axis, AttrInt32(n, "axis", 1));
    if (axis == -1) {
      KILN_ASSIGN_OR_RETURN(fb::AxisParamsT p, Axis(n, -1));
      return Emit(type, n, {x}, U(p));
    }
    fb::AxisParamsT fa;
    fa.axis = axis;
    int flat = b_.addOp(fb::OpType::Flatten, n.name() + "/flatten", {x}, {n.name() + "/flat"}, fa)[0];
    fb::AxisParamsT last;
    last.axis = -1;
    int sm = b_.addOp(type, n.name(), {flat}, {n.name() + "/rows"}, last)[0];
    int shape = b_.addOp(fb::OpType::Shape, n.name() + "/shape", {x}, {n.name() + "/x_shape"})[0];
    return Emit(fb::OpType::Reshape, n, {sm, shape});
  }

  Status ImportNode(const onnx::NodeProto& n) {
    if (n.domain() == "com.microsoft" && n.op_type() == "QLinearAdd") {  // onnxruntime's QOperator form
      KILN_ASSIGN_OR_RETURN(std::vector<int> in, Inputs(n));
      return Emit(fb::OpType::QLinearAdd, n, in, U(fb::QuantActivationParamsT{}));
    }
    if (!n.domain().empty() && n.domain() != "ai.onnx") return Keep(n, "domain " + n.domain());
    const std::string& t = n.op_type();
    if (t == "Constant") return ImportConstant(n);
    if (t == "If" || t == "Loop" || t == "Scan") return ImportControlFlow(n);
    if (t.rfind("Sequence", 0) == 0 || t == "SplitToSequence" || t == "ConcatFromSequence" ||
        t.rfind("Optional", 0) == 0)
      return ImportSequence(n);
    KILN_ASSIGN_OR_RETURN(std::vector<int> in, Inputs(n));
    if (t == "Conv" || t == "ConvTranspose") {
      // ONNX's Conv takes X, W and B; Kiln's fourth input (a fused residual)
      // is the passes' own.
      if (in.size() > 3) return InvalidArgument("%s takes 2 to 3 inputs, the node gives %zu", t.c_str(), in.size());
      KILN_ASSIGN_OR_RETURN(fb::ConvParamsT p, ConvParams(n));
      return Emit(t == "Conv" ? fb::OpType::Conv : fb::OpType::ConvTranspose, n, in, U(p));
    } else if (t == "ConvInteger" || t == "QLinearConv") {
      KILN_ASSIGN_OR_RETURN(fb::ConvParamsT p, ConvParams(n));
      return Emit(OpByName(t), n, in, U(p));
    } else if (t == "QuantizeLinear" || t == "DequantizeLinear") {
      // Per-axis scales along `axis` (default 1; opset 13+).
      if (FindAttr(n, "block_size") && AttrInt(n, "block_size", 0) != 0) return Keep(n, "blocked quantization");
      if (FindAttr(n, "output_dtype") && AttrInt(n, "output_dtype", 0) != 0) return Keep(n, "output_dtype");
      KILN_ASSIGN_OR_RETURN(fb::AxisParamsT p, Axis(n, 1));
      return Emit(OpByName(t), n, in, U(p));
    } else if (t == "MaxPool" && AttrInt(n, "storage_order", 0) != 0 && OutputNames(n, 2).size() > 1) {
      return Keep(n, "storage_order 1 (column-major Indices)");
    } else if (t == "PRelu" && opset_ < 7 && in.size() == 2) {
      // Before opset 7 a 1-D slope of C values is per channel (axis 1): make
      // it [C, 1, ...] so it broadcasts the way numpy rules now require.
      auto rank = ranks_.find(n.input(0));
      auto& slope = *b_.net().tensors[static_cast<size_t>(in[1])];
      if (rank != ranks_.end() && rank->second >= 3 && slope.shape.size() == 1 && !slope.data.empty())
        for (int k = 2; k < rank->second; ++k) {
          auto one = std::make_unique<fb::DimT>();
          one->size = 1;
          slope.shape.push_back(std::move(one));
        }
      return Emit(fb::OpType::PRelu, n, in);
    } else if (t == "MaxPool" || t == "AveragePool") {
      KILN_ASSIGN_OR_RETURN(fb::PoolParamsT p, PoolParams(n));
      return Emit(t == "MaxPool" ? fb::OpType::MaxPool : fb::OpType::AveragePool, n, in, U(p));
    } else if (t == "MaxUnpool") {
      fb::MaxUnpoolParamsT p;  // (X, I, output_shape?): I flat over the output, as MaxPool's Indices
      KILN_ASSIGN_OR_RETURN(p.kernel_shape, AttrInts32(n, "kernel_shape"));
      KILN_ASSIGN_OR_RETURN(p.strides, AttrInts32(n, "strides"));
      KILN_ASSIGN_OR_RETURN(p.pads, AttrInts32(n, "pads"));
      return Emit(fb::OpType::MaxUnpool, n, in, U(p));
    } else if (t == "Gemm") {
      fb::GemmParamsT p;
      p.alpha = AttrFloat(n, "alpha", 1.0f);
      p.beta = AttrFloat(n, "beta", 1.0f);
      p.trans_a = AttrInt(n, "transA", 0) != 0;
      p.trans_b = AttrInt(n, "transB", 0) != 0;
      return Emit(fb::OpType::Gemm, n, in, U(p));
    } else if (t == "BatchNormalization" && (AttrInt(n, "training_mode", 0) || OutputNames(n, 5).size() > 1)) {
      return Keep(n, "training mode");
    } else if (t == "BatchNormalization" || t == "InstanceNormalization" || t == "LayerNormalization") {
      fb::NormParamsT p;
      p.epsilon = AttrFloat(n, "epsilon", 1e-5f);
      KILN_ASSIGN_OR_RETURN(p.axis, AttrInt32(n, "axis", -1));
      fb::OpType type = t == "BatchNormalization" ? fb::OpType::BatchNormalization
                        : t == "LayerNormalization" ? fb::OpType::LayerNormalization
                                                    : fb::OpType::InstanceNormalization;
      return Emit(type, n, in, U(p), t == "BatchNormalization" ? 1 : 3);
    } else if (t == "LeakyRelu") {
      fb::LeakyReluParamsT p;
      p.alpha = AttrFloat(n, "alpha", 0.01f);
      return Emit(fb::OpType::LeakyRelu, n, in, U(p));
    } else if (t == "Elu") {
      fb::EluParamsT p;
      p.alpha = AttrFloat(n, "alpha", 1.0f);
      return Emit(fb::OpType::Elu, n, in, U(p));
    } else if (t == "HardSigmoid") {
      fb::HardSigmoidParamsT p;
      p.alpha = AttrFloat(n, "alpha", 0.2f);
      p.beta = AttrFloat(n, "beta", 0.5f);
      return Emit(fb::OpType::HardSigmoid, n, in, U(p));
    } else if (t == "Clip") {
      fb::ClipParamsT p;
      p.min = AttrFloat(n, "min", -INFINITY);
      p.max = AttrFloat(n, "max", INFINITY);
      return Emit(fb::OpType::Clip, n, in, U(p));
    } else if (t == "Gelu") {
      fb::GeluParamsT p;
      p.approximate = AttrString(n, "approximate", "none") == "tanh" ? fb::GeluApproximation::Tanh
                                                                     : fb::GeluApproximation::None;
      return Emit(fb::OpType::Gelu, n, in, U(p));
    } else if (t.rfind("Reduce", 0) == 0 && fb::OpType::Invalid != OpByName(t)) {
      fb::ReduceParamsT p;
      KILN_ASSIGN_OR_RETURN(p.axes, AttrInts32(n, "axes"));
      p.keepdims = AttrInt(n, "keepdims", 1) != 0;
      p.noop_with_empty_axes = AttrInt(n, "noop_with_empty_axes", 0) != 0;
      return Emit(OpByName(t), n, in, U(p));
    } else if (t == "Softmax" || t == "LogSoftmax") {
      fb::OpType type = t == "Softmax" ? fb::OpType::Softmax : fb::OpType::LogSoftmax;
      if (in.size() != 1 || in[0] < 0) return InvalidArgument("%s takes one input, the node gives %zu", t.c_str(), in.size());
      if (opset_ < 13) return ImportLegacySoftmax(type, n, in[0]);
      KILN_ASSIGN_OR_RETURN(fb::AxisParamsT p, Axis(n, -1));
      return Emit(type, n, in, U(p));
    } else if (t == "Concat") {
      KILN_ASSIGN_OR_RETURN(fb::AxisParamsT p, Axis(n, 0));
      return Emit(fb::OpType::Concat, n, in, U(p));
    } else if (t == "Flatten") {
      KILN_ASSIGN_OR_RETURN(fb::AxisParamsT p, Axis(n, 1));
      return Emit(fb::OpType::Flatten, n, in, U(p));
    } else if (t == "Gather") {
      KILN_ASSIGN_OR_RETURN(fb::AxisParamsT p, Axis(n, 0));
      return Emit(fb::OpType::Gather, n, in, U(p));
    } else if (t == "Squeeze" || t == "Unsqueeze") {
      fb::AxesParamsT p;
      KILN_ASSIGN_OR_RETURN(p.axes, AttrInts32(n, "axes"));
      return Emit(t == "Squeeze" ? fb::OpType::Squeeze : fb::OpType::Unsqueeze, n, in, U(p));
    } else if (t == "Transpose") {
      fb::TransposeParamsT p;
      KILN_ASSIGN_OR_RETURN(p.perm, AttrInts32(n, "perm"));
      return Emit(fb::OpType::Transpose, n, in, U(p));
    } else if (t == "Split") {
      fb::SplitParamsT p;
      KILN_ASSIGN_OR_RETURN(p.axis, AttrInt32(n, "axis", 0));
      p.split = AttrInts(n, "split");
      return Emit(fb::OpType::Split, n, in, U(p));
    } else if (t == "Slice") {
      fb::SliceParamsT p;
      p.starts = AttrInts(n, "starts");
      p.ends = AttrInts(n, "ends");
      p.axes = AttrInts(n, "axes");
      return Emit(fb::OpType::Slice, n, in, U(p));
    } else if (t == "Pad") {
      fb::PadParamsT p;
      std::string mode = AttrString(n, "mode", "constant");
      if (mode == "reflect") p.mode = fb::PadMode::Reflect;
      else if (mode == "edge") p.mode = fb::PadMode::Edge;
      else if (mode != "constant") return Keep(n, "Pad mode " + mode);
      p.pads = AttrInts(n, "pads");
      p.value = AttrFloat(n, "value", 0.0f);
      return Emit(fb::OpType::Pad, n, in, U(p));
    } else if (t == "Resize" || t == "Upsample") {
      fb::ResizeParamsT p;
      std::string mode = AttrString(n, "mode", "nearest");
      p.mode = mode == "linear" || mode == "bilinear" ? fb::ResizeMode::Linear
               : mode == "cubic"                      ? fb::ResizeMode::Cubic
                                                      : fb::ResizeMode::Nearest;
      std::string ct = AttrString(n, "coordinate_transformation_mode", opset_ < 11 ? "asymmetric" : "half_pixel");
      static const std::map<std::string, fb::CoordinateTransform> kCt = {
          {"half_pixel", fb::CoordinateTransform::HalfPixel},
          {"asymmetric", fb::CoordinateTransform::Asymmetric},
          {"pytorch_half_pixel", fb::CoordinateTransform::PytorchHalfPixel},
          {"align_corners", fb::CoordinateTransform::AlignCorners},
          {"tf_half_pixel_for_nn", fb::CoordinateTransform::TfHalfPixelForNn},
          {"tf_crop_and_resize", fb::CoordinateTransform::TfCropAndResize}};
      auto it = kCt.find(ct);
      if (it == kCt.end()) return Keep(n, "coordinate_transformation_mode " + ct);
      p.coordinate_transform = it->second;
      std::string nm = AttrString(n, "nearest_mode", opset_ < 11 ? "floor" : "round_prefer_floor");
      p.nearest_mode = nm == "round_prefer_ceil" ? fb::NearestMode::RoundPreferCeil
                       : nm == "floor"           ? fb::NearestMode::Floor
                       : nm == "ceil"            ? fb::NearestMode::Ceil
                                                 : fb::NearestMode::RoundPreferFloor;
      p.cubic_coeff_a = AttrFloat(n, "cubic_coeff_a", -0.75f);
      p.exclude_outside = AttrInt(n, "exclude_outside", 0) != 0;
      p.extrapolation_value = AttrFloat(n, "extrapolation_value", 0.0f);
      p.scales = AttrFloats(n, "scales");  // Upsample-7
      // Resize-10 and Upsample-9: (X, scales) -> Kiln's (X, roi, scales).
      if ((t == "Upsample" || opset_ < 11) && in.size() == 2) in = {in[0], -1, in[1]};
      return Emit(fb::OpType::Resize, n, in, U(p));
    } else if (t == "DepthToSpace" || t == "SpaceToDepth") {
      fb::SpaceDepthParamsT p;
      KILN_ASSIGN_OR_RETURN(p.blocksize, AttrInt32(n, "blocksize", 0));
      p.mode = AttrString(n, "mode", "DCR") == "CRD" ? fb::DepthToSpaceMode::CRD : fb::DepthToSpaceMode::DCR;
      return Emit(t == "DepthToSpace" ? fb::OpType::DepthToSpace : fb::OpType::SpaceToDepth, n, in, U(p));
    } else if (t == "Cast") {
      fb::CastParamsT p;
      auto to = MapDataType(static_cast<int>(AttrInt(n, "to", 1)));
      if (!to.ok()) return Keep(n, to.status().message());
      p.to = *to;
      return Emit(fb::OpType::Cast, n, in, U(p));
    } else if (t == "ArgMax" || t == "ArgMin") {
      fb::ArgParamsT p;
      KILN_ASSIGN_OR_RETURN(p.axis, AttrInt32(n, "axis", 0));
      p.keepdims = AttrInt(n, "keepdims", 1) != 0;
      p.select_last_index = AttrInt(n, "select_last_index", 0) != 0;
      return Emit(t == "ArgMax" ? fb::OpType::ArgMax : fb::OpType::ArgMin, n, in, U(p));
    } else if (t == "Shape") {
      fb::ShapeParamsT p;
      p.start = AttrInt(n, "start", 0);
      p.end = AttrInt(n, "end", INT64_MAX);
      return Emit(fb::OpType::Shape, n, in, U(p));
    } else if (t == "Reshape") {
      fb::ReshapeParamsT p;
      p.allowzero = AttrInt(n, "allowzero", 0) != 0;
      return Emit(fb::OpType::Reshape, n, in, U(p));
    } else if (t == "Selu") {
      fb::SeluParamsT p;
      p.alpha = AttrFloat(n, "alpha", 1.67326319217681884765625f);
      p.gamma = AttrFloat(n, "gamma", 1.05070102214813232421875f);
      return Emit(fb::OpType::Selu, n, in, U(p));
    } else if (t == "Celu" || t == "ThresholdedRelu") {
      fb::EluParamsT p;
      p.alpha = AttrFloat(n, "alpha", 1.0f);
      return Emit(t == "Celu" ? fb::OpType::Celu : fb::OpType::ThresholdedRelu, n, in, U(p));
    } else if (t == "Shrink") {
      fb::ShrinkParamsT p;
      p.bias = AttrFloat(n, "bias", 0.0f);
      p.lambd = AttrFloat(n, "lambd", 0.5f);
      return Emit(fb::OpType::Shrink, n, in, U(p));
    } else if (t == "IsInf") {
      fb::IsInfParamsT p;
      p.detect_positive = AttrInt(n, "detect_positive", 1) != 0;
      p.detect_negative = AttrInt(n, "detect_negative", 1) != 0;
      return Emit(fb::OpType::IsInf, n, in, U(p));
    } else if (t == "BitShift") {
      fb::BitShiftParamsT p;
      std::string dir = AttrString(n, "direction", "");
      if (dir != "LEFT" && dir != "RIGHT") return InvalidArgument("BitShift direction must be LEFT or RIGHT, is '%s'", dir.c_str());
      p.left = dir == "LEFT";
      return Emit(fb::OpType::BitShift, n, in, U(p));
    } else if (t == "Mod") {
      fb::ModParamsT p;
      p.fmod = AttrInt(n, "fmod", 0) != 0;
      return Emit(fb::OpType::Mod, n, in, U(p));
    } else if (t == "EyeLike") {
      fb::EyeLikeParamsT p;
      p.k = AttrInt(n, "k", 0);
      if (FindAttr(n, "dtype")) {
        auto dt = MapDataType(static_cast<int>(AttrInt(n, "dtype", 1)));
        if (!dt.ok()) return Keep(n, dt.status().message());
        p.dtype = *dt;
        p.has_dtype = true;
      }
      return Emit(fb::OpType::EyeLike, n, in, U(p));
    } else if (t == "Trilu") {
      fb::TriluParamsT p;
      p.upper = AttrInt(n, "upper", 1) != 0;
      return Emit(fb::OpType::Trilu, n, in, U(p));
    } else if (t == "OneHot" || t == "GatherElements" || t == "Hardmax") {
      fb::OpType type = t == "OneHot" ? fb::OpType::OneHot : t == "Hardmax" ? fb::OpType::Hardmax : fb::OpType::GatherElements;
      if (type == fb::OpType::Hardmax && opset_ < 13) {
        if (in.size() != 1 || in[0] < 0) return InvalidArgument("Hardmax takes one input, the node gives %zu", in.size());
        return ImportLegacySoftmax(type, n, in[0]);
      }
      KILN_ASSIGN_OR_RETURN(fb::AxisParamsT p, Axis(n, t == "GatherElements" ? 0 : -1));
      return Emit(type, n, in, U(p));
    } else if (t == "GatherND") {
      fb::GatherNDParamsT p;
      KILN_ASSIGN_OR_RETURN(p.batch_dims, AttrInt32(n, "batch_dims", 0));
      return Emit(fb::OpType::GatherND, n, in, U(p));
    } else if (t == "ScatterElements" || t == "Scatter" || t == "ScatterND") {
      fb::ScatterParamsT p;
      KILN_ASSIGN_OR_RETURN(p.axis, AttrInt32(n, "axis", 0));
      static const std::map<std::string, fb::ScatterReduction> kRed = {
          {"none", fb::ScatterReduction::None}, {"add", fb::ScatterReduction::Add}, {"mul", fb::ScatterReduction::Mul},
          {"max", fb::ScatterReduction::Max}, {"min", fb::ScatterReduction::Min}};
      auto r = kRed.find(AttrString(n, "reduction", "none"));
      if (r == kRed.end()) return Keep(n, "reduction " + AttrString(n, "reduction", ""));
      p.reduction = r->second;
      return Emit(t == "ScatterND" ? fb::OpType::ScatterND : fb::OpType::ScatterElements, n, in, U(p));
    } else if (t == "CumSum") {
      fb::CumSumParamsT p;
      p.exclusive = AttrInt(n, "exclusive", 0) != 0;
      p.reverse = AttrInt(n, "reverse", 0) != 0;
      return Emit(fb::OpType::CumSum, n, in, U(p));
    } else if (t == "TopK") {
      fb::TopKParamsT p;
      KILN_ASSIGN_OR_RETURN(p.axis, AttrInt32(n, "axis", -1));
      p.largest = AttrInt(n, "largest", 1) != 0;
      p.sorted = AttrInt(n, "sorted", 1) != 0;
      if (opset_ < 10 && in.size() == 1) {  // TopK-1: k is an attribute
        int64_t k = AttrInt(n, "k", -1);
        in.push_back(b_.addConstant(n.name() + "/k", fb::DataType::I64, {1}, &k, sizeof k));
      }
      return Emit(fb::OpType::TopK, n, in, U(p));
    } else if (t == "LRN") {
      fb::LrnParamsT p;
      p.alpha = AttrFloat(n, "alpha", 0.0001f);
      p.beta = AttrFloat(n, "beta", 0.75f);
      p.bias = AttrFloat(n, "bias", 1.0f);
      KILN_ASSIGN_OR_RETURN(p.size, AttrInt32(n, "size", 0));
      return Emit(fb::OpType::LRN, n, in, U(p));
    } else if (t == "MeanVarianceNormalization") {
      fb::AxesParamsT p;
      KILN_ASSIGN_OR_RETURN(p.axes, AttrInts32(n, "axes"));
      if (!FindAttr(n, "axes")) p.axes = {0, 2, 3};
      return Emit(fb::OpType::MeanVarianceNormalization, n, in, U(p));
    } else if (t == "NegativeLogLikelihoodLoss" || t == "SoftmaxCrossEntropyLoss") {
      fb::LossParamsT p;
      std::string red = AttrString(n, "reduction", "mean");
      if (red == "none") p.reduction = fb::LossReduction::None;
      else if (red == "sum") p.reduction = fb::LossReduction::Sum;
      else if (red == "mean") p.reduction = fb::LossReduction::Mean;
      else return InvalidArgument("%s reduction must be none, sum or mean, is '%s'", t.c_str(), red.c_str());
      p.has_ignore_index = FindAttr(n, "ignore_index") != nullptr;
      p.ignore_index = AttrInt(n, "ignore_index", 0);
      return Emit(t == "SoftmaxCrossEntropyLoss" ? fb::OpType::SoftmaxCrossEntropyLoss : fb::OpType::NegativeLogLikelihoodLoss,
                  n, in, U(p));
    } else if (t == "ConstantOfShape") {
      if (auto* a = FindAttr(n, "value")) {
        KILN_ASSIGN_OR_RETURN(TensorData d, ReadTensor(a->t(), base_dir_), "ConstantOfShape value");
        if (d.bytes.size() != DataTypeSize(d.dtype))
          return InvalidArgument("ConstantOfShape value must have one element, has %zu bytes", d.bytes.size());
        if (in.size() != 1) return InvalidArgument("ConstantOfShape takes one input, the node gives %zu", in.size());
        in.push_back(b_.addConstant(n.name() + "/value", d.dtype, {1}, d.bytes.data(), d.bytes.size()));
      }
      return Emit(fb::OpType::ConstantOfShape, n, in);
    } else if (t == "Compress" || t == "Unique") {
      const bool has_axis = FindAttr(n, "axis") != nullptr;
      KILN_ASSIGN_OR_RETURN(int32_t axis, AttrInt32(n, "axis", 0));
      if (t == "Compress") {
        fb::CompressParamsT p;
        p.axis = axis;
        p.has_axis = has_axis;
        return Emit(fb::OpType::Compress, n, in, U(p));
      }
      fb::UniqueParamsT p;
      p.axis = axis;
      p.has_axis = has_axis;
      p.sorted = AttrInt(n, "sorted", 1) != 0;
      return Emit(fb::OpType::Unique, n, in, U(p));
    } else if (t == "NonMaxSuppression") {
      fb::NmsParamsT p;
      p.center_point_box = AttrInt(n, "center_point_box", 0) != 0;
      return Emit(fb::OpType::NonMaxSuppression, n, in, U(p));
    } else if (t == "ReverseSequence") {
      fb::ReverseSequenceParamsT p;
      KILN_ASSIGN_OR_RETURN(p.batch_axis, AttrInt32(n, "batch_axis", 1));
      KILN_ASSIGN_OR_RETURN(p.time_axis, AttrInt32(n, "time_axis", 0));
      return Emit(fb::OpType::ReverseSequence, n, in, U(p));
    } else if (t == "Einsum") {
      fb::EinsumParamsT p;
      p.equation = AttrString(n, "equation", "");
      if (p.equation.empty()) return InvalidArgument("Einsum without an equation");
      return Emit(fb::OpType::Einsum, n, in, U(p));
    } else if (t == "GridSample") {
      fb::GridSampleParamsT p;
      std::string mode = AttrString(n, "mode", opset_ >= 20 ? "linear" : "bilinear");
      if (mode == "bilinear" || mode == "linear") p.mode = fb::ResizeMode::Linear;
      else if (mode == "nearest") p.mode = fb::ResizeMode::Nearest;
      else if (mode == "bicubic" || mode == "cubic") p.mode = fb::ResizeMode::Cubic;
      else return InvalidArgument("GridSample mode '%s'", mode.c_str());
      std::string pad = AttrString(n, "padding_mode", "zeros");
      if (pad == "zeros") p.padding = fb::GridPadding::Zeros;
      else if (pad == "border") p.padding = fb::GridPadding::Border;
      else if (pad == "reflection") p.padding = fb::GridPadding::Reflection;
      else return InvalidArgument("GridSample padding_mode '%s'", pad.c_str());
      p.align_corners = AttrInt(n, "align_corners", 0) != 0;
      return Emit(fb::OpType::GridSample, n, in, U(p));
    } else if (t == "RoiAlign") {
      fb::RoiAlignParamsT p;
      std::string mode = AttrString(n, "mode", "avg");
      if (mode != "avg" && mode != "max") return InvalidArgument("RoiAlign mode '%s'", mode.c_str());
      p.max_mode = mode == "max";
      KILN_ASSIGN_OR_RETURN(p.output_height, AttrInt32(n, "output_height", 1));
      KILN_ASSIGN_OR_RETURN(p.output_width, AttrInt32(n, "output_width", 1));
      KILN_ASSIGN_OR_RETURN(p.sampling_ratio, AttrInt32(n, "sampling_ratio", 0));
      p.spatial_scale = AttrFloat(n, "spatial_scale", 1.0f);
      p.half_pixel = AttrString(n, "coordinate_transformation_mode", opset_ >= 16 ? "half_pixel" : "output_half_pixel") ==
                     "half_pixel";
      return Emit(fb::OpType::RoiAlign, n, in, U(p));
    } else if (t == "DFT" || t == "STFT") {
      fb::DftParamsT p;
      KILN_ASSIGN_OR_RETURN(p.axis, AttrInt32(n, "axis", opset_ >= 20 ? -2 : 1));
      p.inverse = AttrInt(n, "inverse", 0) != 0;
      p.onesided = AttrInt(n, "onesided", t == "STFT" ? 1 : 0) != 0;
      if (t == "DFT" && in.size() > 2) {  // DFT-20: the axis is input 2
        std::optional<double> axis = in[2] >= 0 ? ConstantScalar(in[2]) : std::optional<double>(-2);
        if (!axis) return Keep(n, "axis computed at run time");
        p.axis = static_cast<int32_t>(*axis);
        in.resize(2);
        while (!in.empty() && in.back() < 0) in.pop_back();
      }
      return Emit(t == "DFT" ? fb::OpType::DFT : fb::OpType::STFT, n, in, U(p));
    } else if (t == "HannWindow" || t == "HammingWindow" || t == "BlackmanWindow" || t == "MelWeightMatrix") {
      fb::WindowParamsT p;
      p.periodic = AttrInt(n, "periodic", 1) != 0;
      auto dt = MapDataType(static_cast<int>(AttrInt(n, "output_datatype", 1)));
      if (!dt.ok()) return Keep(n, dt.status().message());
      p.dtype = *dt;
      return Emit(OpByName(t), n, in, U(p));
    } else if (t == "RNN" || t == "GRU" || t == "LSTM") {
      fb::RnnParamsT p;
      std::string dir = AttrString(n, "direction", "forward");
      if (dir == "forward") p.direction = fb::RnnDirection::Forward;
      else if (dir == "reverse") p.direction = fb::RnnDirection::Reverse;
      else if (dir == "bidirectional") p.direction = fb::RnnDirection::Bidirectional;
      else return InvalidArgument("%s direction '%s'", t.c_str(), dir.c_str());
      KILN_ASSIGN_OR_RETURN(p.hidden_size, AttrInt32(n, "hidden_size", 0));
      // One alpha and beta per activation, ONNX's lists consumed in order by
      // the activations that take them, defaults for the rest.
      std::vector<float> alphas = AttrFloats(n, "activation_alpha"), betas = AttrFloats(n, "activation_beta");
      size_t ai = 0, bi = 0;
      if (const auto* acts = FindAttr(n, "activations")) {
        for (const std::string& name : acts->strings()) {
          fb::OpType type = OpByName(name);
          float alpha = 0, beta = 0;
          if (name == "LeakyRelu") alpha = 0.01f;
          else if (name == "HardSigmoid") alpha = 0.2f, beta = 0.5f;
          else if (name == "Elu" || name == "ThresholdedRelu") alpha = 1.0f;
          else if (name != "Sigmoid" && name != "Tanh" && name != "Relu" && name != "Softsign" && name != "Softplus")
            return Keep(n, "activation " + name);
          if (name == "LeakyRelu" || name == "HardSigmoid" || name == "Elu" || name == "ThresholdedRelu")
            if (ai < alphas.size()) alpha = alphas[ai++];
          if (name == "HardSigmoid" && bi < betas.size()) beta = betas[bi++];
          p.activations.push_back(type);
          p.activation_alpha.push_back(alpha);
          p.activation_beta.push_back(beta);
        }
      }
      if (FindAttr(n, "clip")) p.clip = AttrFloat(n, "clip", INFINITY);
      p.input_forget = AttrInt(n, "input_forget", 0) != 0;
      p.batch_first = AttrInt(n, "layout", 0) != 0;
      p.linear_before_reset = AttrInt(n, "linear_before_reset", 0) != 0;
      return Emit(OpByName(t), n, in, U(p));
    } else if (t == "Dropout") {
      // Inference: the identity, and a mask of all true. In training mode
      // Dropout is random, unless its ratio is a constant 0.
      if (in.empty() || in[0] < 0) return InvalidArgument("Dropout needs its input 0");
      if (in.size() > 2 && in[2] >= 0) {
        std::optional<double> training = ConstantScalar(in[2]);
        std::optional<double> ratio = in[1] >= 0 ? ConstantScalar(in[1]) : std::optional<double>(0.5);
        if (!training) return Keep(n, "training_mode computed at run time");
        if (*training != 0 && (!ratio || *ratio != 0)) return Keep(n, "training mode (random)");
      }
      KILN_RETURN_IF_ERROR(Emit(fb::OpType::Identity, n, {in[0]}, {}, 1));
      if (n.output_size() > 1 && !n.output(1).empty()) {
        int shape = b_.addOp(fb::OpType::Shape, n.name() + "/shape", {in[0]}, {n.name() + "/x_shape"})[0];
        uint8_t yes = 1;
        int value = b_.addConstant(n.name() + "/true", fb::DataType::BOOL, {1}, &yes, 1);
        tensors_[n.output(1)] = b_.addOp(fb::OpType::ConstantOfShape, n.name() + "/mask", {shape, value}, {n.output(1)})[0];
      }
      return Status::Ok();
    } else if (OpByName(t) != fb::OpType::Invalid && OpByName(t) != fb::OpType::Custom) {
      KILN_RETURN_IF_ERROR(Emit(OpByName(t), n, in));  // ops without attributes: Relu, Add, MatMul, Where, ...
      if (t == "Identity" && !in.empty()) SetKind(tensors_[n.output(0)], Kind(in[0]));
      return Status::Ok();
    } else {
      return Keep(n, "");
    }
    return Status::Ok();
  }

  // The value of a one-element constant tensor, if tensor t is one.
  std::optional<double> ConstantScalar(int t) {
    const auto& tensor = *b_.net().tensors[static_cast<size_t>(t)];
    const size_t es = DataTypeSize(tensor.dtype);
    if (es == 0 || tensor.data.size() != es) return std::nullopt;
    return LoadDouble(tensor.data.data(), tensor.dtype, 0);
  }

  static fb::OpType OpByName(const std::string& name) {
    for (int i = 1; i <= static_cast<int>(fb::OpType::MAX); ++i)
      if (name == fb::EnumNamesOpType()[i]) return static_cast<fb::OpType>(i);
    return fb::OpType::Invalid;
  }

  // An op Kiln cannot run: recorded, and kept as a Custom op when allowed.
  Status Keep(const onnx::NodeProto& n, const std::string& why) {
    std::string type = n.op_type() + (why.empty() ? "" : " (" + why + ")");
    missing_[type].push_back(n.name());
    report_->unsupported[n.op_type()]++;
    std::vector<int> in;
    for (int k = 0; k < n.input_size(); ++k) {
      auto t = Input(n, k);
      in.push_back(t.ok() ? *t : -1);
    }
    fb::CustomParamsT p;
    p.type_name = n.op_type();
    p.domain = n.domain();
    return Emit(fb::OpType::Custom, n, in, U(p));
  }

  // Control flow and sequences (onnx_control_flow.cpp).
  Status ImportControlFlow(const onnx::NodeProto& n);
  Status ImportSequence(const onnx::NodeProto& n);
  Status ImportSequenceMap(const onnx::NodeProto& n);
  Status ImportOptional(const onnx::NodeProto& n);
  std::list<onnx::GraphProto> expanded_;  // nodes made by ImportSequenceMap (stable addresses)
  bool IsSequence(int t) const {
    return t >= 0 && b_.net().tensors[static_cast<size_t>(t)]->sequence && !b_.net().tensors[static_cast<size_t>(t)]->optional;
  }
  // A value's kind: bit 0 a sequence (or an optional sequence), bit 1 an optional.
  int Kind(int t) const {
    if (t < 0) return 0;
    const fb::TensorT& x = *b_.net().tensors[static_cast<size_t>(t)];
    return (x.sequence ? 1 : 0) | (x.optional ? 2 : 0);
  }
  void SetKind(int t, int kind) {
    b_.net().tensors[static_cast<size_t>(t)]->sequence = (kind & 1) != 0;
    b_.net().tensors[static_cast<size_t>(t)]->optional = (kind & 2) != 0;
  }
  StatusOr<std::unique_ptr<OnnxImporter>> ImportBody(const onnx::GraphProto& g, const std::vector<fb::DataType>& formal);
  StatusOr<int> Package(OnnxImporter& child, size_t num_formal, const std::vector<std::string>& captures);

  NetBuilder b_;
  OnnxImporter* parent_ = nullptr;  // the enclosing graph's importer (subgraphs)
  std::vector<std::string> captures_;  // names this subgraph reads from enclosing graphs, in order
  int depth_ = 0;
  const ConvertOptions& opt_;
  ConvertReport* report_;
  std::string base_dir_;
  int64_t opset_ = 1;
  int imported_ = 0;
  std::map<std::string, int> tensors_;
  std::map<std::string, int> ranks_;  // graph inputs' ranks
  std::map<std::string, std::vector<std::string>> missing_;
};

}  // namespace kiln::onnx_import
