// TFLite -> Kiln: walks subgraph 0 in order, maps each builtin (and the
// MediaPipe custom ops) to Kiln ops, constants to constants, and folds
// DEQUANTIZE of constant (fp16 or int8) weights into f32 constants.
//
// Layout. TFLite is NHWC, Kiln is NCHW. Every 4-D TFLite tensor is held in
// Kiln in NCHW order (dims 0,3,1,2 of the TFLite shape); other ranks are
// held as they are. So 4-D graph inputs and outputs are NCHW
// ([1,256,256,3] becomes [1,3,256,256]); 4-D constants are transposed at
// import; conv weights go OHWI -> OIHW, depthwise 1HWO -> O1HW (group =
// channels), transpose-conv OHWI -> IOHW; axis attributes of 4-D ops
// (concat, mean, pad, split, slice, softmax, gather, tile, transpose) are
// remapped. Ops whose meaning depends on the memory order (reshape, squeeze,
// fully-connected over a 4-D input, batch matmul, arg max, reductions that
// drop dims out of order) see an NHWC view: a Transpose (or a Reshape when
// only size-1 dims move) is inserted before them and after them.
//
// Shapes. TFLite files record static shapes of every tensor; the importer
// uses them (reshape targets, resize sizes, transpose-conv padding), so the
// Kiln model has the same static shapes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "kiln/convert.h"
#include "tflite_reader.h"

namespace kiln {
namespace {

namespace tfl = tflite;
using Ints = std::vector<int64_t>;

const Ints kToNchw = {0, 3, 1, 2};  // kiln dim k = TFLite (NHWC) dim kToNchw[k]
const Ints kToNhwc = {0, 2, 3, 1};
int64_t NchwAxis(int64_t nhwc_axis) { return kToNhwc[static_cast<size_t>(nhwc_axis)]; }

using ConstData = tfl::TensorData;
using tfl::PermuteData;
using tfl::PermuteDims;

int64_t Numel(const Ints& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

StatusOr<fb::DataType> MapType(int t) {
  switch (t) {
    case tfl::kFloat32: return fb::DataType::F32;
    case tfl::kFloat16: return fb::DataType::F16;
    case tfl::kInt32: return fb::DataType::I32;
    case tfl::kInt64: return fb::DataType::I64;
    case tfl::kUInt8: return fb::DataType::U8;
    case tfl::kInt8: return fb::DataType::I8;
    case tfl::kBool: return fb::DataType::BOOL;
    default: return Unsupported("tensor type %s", tfl::TensorTypeName(t));
  }
}

template <typename P>
fb::OpParamsUnion U(P p) {
  fb::OpParamsUnion u;
  u.Set(std::move(p));
  return u;
}

std::vector<int32_t> I32(const Ints& v) { return std::vector<int32_t>(v.begin(), v.end()); }

class TfliteImporter {
 public:
  TfliteImporter(const tfl::Model& m, const ConvertOptions& opt, ConvertReport* report)
      : m_(m), g_(m.subgraphs[0]), b_("tflite"), opt_(opt), report_(report), kiln_(g_.tensors.size(), -1) {}

  StatusOr<NetBuilder> Import() {
    report_->source_format = "tflite";
    report_->opset = m_.version;
    report_->ops_in = static_cast<int>(g_.operators.size());
    b_.net().name = g_.name.empty() ? "tflite_model" : g_.name;
    b_.setMetadata("kiln-convert", "tflite", static_cast<int>(m_.version));
    if (!m_.description.empty()) b_.setProperty("tflite.description", m_.description);
    b_.setProperty("tflite.layout", "4-D inputs and outputs are NCHW (transposed from the model's NHWC)");
    for (int32_t i : g_.inputs) RETURN_IF_ERROR(AddInput(i), "graph input '%s'", T(i).name.c_str());
    for (size_t k = 0; k < g_.operators.size(); ++k) {
      const tfl::Operator& op = g_.operators[k];
      const tfl::OperatorCode& code = m_.operator_codes[op.opcode_index];
      std::string type = code.builtin == tfl::CUSTOM ? code.custom_code : tfl::BuiltinName(code.builtin);
      if (op.outputs.empty()) return InvalidArgument("operator %zu (%s) has no outputs", k, type.c_str());
      name_ = T(op.outputs[0]).name.empty() ? StrFormat("op%zu", k) : T(op.outputs[0]).name;
      Status st;
      try {
        st = ImportOp(op, code, type);
      } catch (const std::out_of_range&) {  // op.inputs.at(k) of an operator with too few inputs
        st = InvalidArgument("too few inputs (%zu)", op.inputs.size());
      }
      RETURN_IF_ERROR(st, "operator %zu '%s' (%s)", k, name_.c_str(), type.c_str());
      if (opt_.progress && g_.operators.size() > 200 && (k + 1) % 200 == 0)
        opt_.progress(StrFormat("imported %zu of %zu operators", k + 1, g_.operators.size()));
    }
    if (!missing_.empty() && !opt_.allow_unsupported) {
      std::string msg = "unsupported TFLite ops:";
      for (auto& [type, names] : missing_) {
        msg += StrFormat("\n  %s x%zu:", type.c_str(), names.size());
        for (size_t k = 0; k < names.size() && k < 5; ++k) msg += " '" + names[k] + "'";
        if (names.size() > 5) msg += " ...";
      }
      return Unsupported("%s\n(use --allow-unsupported to keep them as Custom ops)", msg.c_str());
    }
    for (int32_t o : g_.outputs) {
      ASSIGN_OR_RETURN(int t, Act(o), "graph output '%s'", T(o).name.c_str());
      b_.addOutput(t);
    }
    report_->ops_out = static_cast<int>(b_.net().ops.size());
    return std::move(b_);
  }

 private:
  // Tensor i; an empty placeholder for a missing optional input (-1).
  const tfl::Tensor& T(int i) const {
    static const tfl::Tensor missing;
    return i >= 0 && static_cast<size_t>(i) < g_.tensors.size() ? g_.tensors[static_cast<size_t>(i)] : missing;
  }
  Ints Shape(int i) const { return Ints(T(i).shape.begin(), T(i).shape.end()); }
  bool Is4D(int i) const { return T(i).has_shape && T(i).shape.size() == 4; }
  int Rank(int i) const { return static_cast<int>(T(i).shape.size()); }
  // The Kiln shape of a TFLite tensor (NCHW for 4-D).
  Ints KShape(int i) const { return Is4D(i) ? PermuteDims(Shape(i), kToNchw) : Shape(i); }

  std::string Unique(std::string n) {
    if (n.empty()) n = "t";
    std::string r = n;
    for (int k = 1; names_.count(r); ++k) r = n + "_" + std::to_string(k);
    names_.insert(r);
    return r;
  }
  std::string Tmp(const char* what) { return name_ + "/" + what; }

  int Op(fb::OpType type, const std::vector<int>& in, const std::string& out, fb::OpParamsUnion p = {},
         const std::string& op_name = "") {
    std::string o = Unique(out);
    return b_.addOp(type, op_name.empty() ? o : op_name, in, {o}, std::move(p))[0];
  }

  StatusOr<int> AddConst(const std::string& name, const ConstData& d) {
    ASSIGN_OR_RETURN(fb::DataType dtype, MapType(d.type), "constant '%s'", name.c_str());
    report_->weight_bytes += d.bytes.size();
    return b_.addConstant(Unique(name), dtype, d.shape, d.bytes.data(), d.bytes.size());
  }
  int IntsConst(const std::string& name, const Ints& v) {
    report_->weight_bytes += v.size() * 8;
    return b_.addConstant(Unique(name), {static_cast<int64_t>(v.size())}, v);
  }

  Status AddInput(int i) {
    ASSIGN_OR_RETURN(fb::DataType dtype, MapType(T(i).type));
    Ints shape = KShape(i);
    auto over = opt_.input_shapes.find(T(i).name);
    if (over != opt_.input_shapes.end() && over->second != shape)
      return Unsupported("--input-shape %s differs from the model's static shape %s (NCHW); TFLite import keeps "
                         "the recorded shapes", ShapeStr(over->second).c_str(), ShapeStr(shape).c_str());
    std::vector<Dim> dims(shape.begin(), shape.end());
    kiln_[static_cast<size_t>(i)] = b_.addInput(Unique(T(i).name), dtype, dims);
    return Status::Ok();
  }
  static std::string ShapeStr(const Ints& s) {
    std::string r = "[";
    for (size_t k = 0; k < s.size(); ++k) r += (k ? "," : "") + std::to_string(s[k]);
    return r + "]";
  }

  // ---- constants ----
  bool IsConst(int i) const { return i >= 0 && (folded_.count(i) || tfl::HasData(m_, T(i))); }
  StatusOr<ConstData> Const(int i) {
    auto f = folded_.find(i);
    if (f != folded_.end()) return f->second;
    if (i < 0) return InvalidArgument("a required input is missing");
    if (!IsConst(i)) return Unsupported("tensor '%s' must be a constant", T(i).name.c_str());
    return tfl::ReadData(m_, T(i));
  }
  // A float constant (weights, biases) as f32; f16 widened.
  StatusOr<ConstData> ConstF32(int i) {
    ASSIGN_OR_RETURN(ConstData d, Const(i));
    if (d.type != tfl::kFloat32 && d.type != tfl::kFloat16)
      return Unsupported("constant '%s' is %s, not float (quantized weights are not supported)", T(i).name.c_str(),
                         tfl::TensorTypeName(d.type));
    RETURN_IF_ERROR(tfl::ToFloat32(&d, T(i).quant), "constant '%s'", T(i).name.c_str());
    return d;
  }
  StatusOr<Ints> ConstInts(int i) {
    ASSIGN_OR_RETURN(ConstData d, Const(i));
    return tfl::ToInt64(d);
  }

  // ---- layout ----
  // A Kiln tensor of `shape` with its dims permuted; a Reshape when only size-1 dims move.
  int Permute(int t, const Ints& shape, const Ints& perm, const std::string& name) {
    Ints order;
    for (int64_t p : perm)
      if (shape[static_cast<size_t>(p)] != 1) order.push_back(p);
    if (std::is_sorted(order.begin(), order.end()))
      return Op(fb::OpType::Reshape, {t, IntsConst(name + "/shape", PermuteDims(shape, perm))}, name);
    fb::TransposeParamsT p;
    p.perm = I32(perm);
    return Op(fb::OpType::Transpose, {t}, name, U(p));
  }
  // The TFLite tensor in Kiln's layout (NCHW for 4-D).
  StatusOr<int> Act(int i) {
    if (i < 0) return -1;
    if (kiln_[static_cast<size_t>(i)] >= 0) return kiln_[static_cast<size_t>(i)];
    if (!IsConst(i)) return InvalidArgument("tensor '%s' is read before it is produced", T(i).name.c_str());
    ASSIGN_OR_RETURN(ConstData d, Const(i));
    if (Is4D(i)) {
      d.bytes = PermuteData(d.bytes, d.shape, kToNchw, tfl::TypeSize(d.type));
      d.shape = PermuteDims(d.shape, kToNchw);
    }
    ASSIGN_OR_RETURN(int t, AddConst(T(i).name, d));
    return kiln_[static_cast<size_t>(i)] = t;
  }
  // The TFLite tensor in TFLite's layout (NHWC for 4-D).
  StatusOr<int> Nhwc(int i) {
    if (!Is4D(i)) return Act(i);
    auto it = nhwc_.find(i);
    if (it != nhwc_.end()) return it->second;
    ASSIGN_OR_RETURN(int t, Act(i));
    return nhwc_[i] = Permute(t, KShape(i), kToNhwc, T(i).name + "/nhwc");
  }
  std::string OutName(int out, bool nhwc) { return Is4D(out) && nhwc ? T(out).name + "/nhwc" : T(out).name; }
  // Records Kiln tensor `t` as TFLite tensor `out`; `nhwc`: t is in TFLite's layout.
  void Define(int out, int t, bool nhwc) {
    if (Is4D(out) && nhwc) {
      nhwc_[out] = t;
      t = Permute(t, Shape(out), kToNchw, T(out).name);
    }
    kiln_[static_cast<size_t>(out)] = t;
  }

  // ---- activations ----
  static bool FuseInto(int8_t act, fb::Activation* a, float* lo, float* hi) {
    switch (act) {
      case tfl::kActNone: return true;
      case tfl::kActRelu: *a = fb::Activation::Relu; return true;
      case tfl::kActRelu6: *a = fb::Activation::Relu6; return true;
      case tfl::kActReluN1To1: *a = fb::Activation::Clip; *lo = -1.f; *hi = 1.f; return true;
      default: return false;
    }
  }
  StatusOr<int> ActivationOp(int8_t act, int x, const std::string& out) {
    fb::ClipParamsT c;
    switch (act) {
      case tfl::kActNone: return x;
      case tfl::kActRelu: return Op(fb::OpType::Relu, {x}, out);
      case tfl::kActTanh: return Op(fb::OpType::Tanh, {x}, out);
      case tfl::kActRelu6: c.min = 0.f; c.max = 6.f; return Op(fb::OpType::Clip, {x}, out, U(c));
      case tfl::kActReluN1To1: c.min = -1.f; c.max = 1.f; return Op(fb::OpType::Clip, {x}, out, U(c));
      default: return Unsupported("fused activation %d", act);
    }
  }
  // Emits the op producing TFLite tensor `out`, then its fused activation.
  Status Emit(fb::OpType type, const std::vector<int>& in, int out, fb::OpParamsUnion p = {}, bool nhwc = false,
              int8_t act = tfl::kActNone) {
    std::string name = OutName(out, nhwc);
    int y = Op(type, in, act == tfl::kActNone ? name : name + "/pre_act", std::move(p));
    ASSIGN_OR_RETURN(y, ActivationOp(act, y, name));
    Define(out, y, nhwc);
    return Status::Ok();
  }

  // Inputs of a broadcasting op, aligned as TFLite aligns them (from the last dim).
  StatusOr<std::vector<int>> Broadcast(const std::vector<int32_t>& ins, bool* nhwc) {
    int r = 0;
    for (int32_t i : ins) r = std::max(r, Rank(i));
    *nhwc = r != 4;
    std::vector<int> out;
    for (int32_t i : ins) {
      Ints s = Shape(i);
      if (r != 4 || Rank(i) == 4 || Numel(s) == 1) {
        ASSIGN_OR_RETURN(int t, r == 4 ? Act(i) : Nhwc(i));
        out.push_back(t);
        continue;
      }
      s.insert(s.begin(), static_cast<size_t>(4 - Rank(i)), 1);
      if (IsConst(i)) {
        ASSIGN_OR_RETURN(ConstData d, Const(i));
        d.bytes = PermuteData(d.bytes, s, kToNchw, tfl::TypeSize(d.type));
        d.shape = PermuteDims(s, kToNchw);
        ASSIGN_OR_RETURN(int t, AddConst(T(i).name + "/nchw", d));
        out.push_back(t);
      } else {
        ASSIGN_OR_RETURN(int t, Act(i));
        int r4 = Op(fb::OpType::Reshape, {t, IntsConst(T(i).name + "/4d_shape", s)}, T(i).name + "/4d");
        out.push_back(Permute(r4, s, kToNchw, T(i).name + "/nchw"));
      }
    }
    return out;
  }

  Status Binary(fb::OpType type, const tfl::Operator& op, int8_t act = tfl::kActNone) {
    bool nhwc;
    ASSIGN_OR_RETURN(std::vector<int> in, Broadcast(op.inputs, &nhwc));
    return Emit(type, in, op.outputs[0], {}, nhwc, act);
  }

  Status Unary(fb::OpType type, const tfl::Operator& op, fb::OpParamsUnion p = {}) {
    ASSIGN_OR_RETURN(int x, Act(op.inputs.at(0)));
    return Emit(type, {x}, op.outputs[0], std::move(p));
  }

  // Conv / depthwise / transposed conv: weights permuted to Kiln's layout.
  Status Conv(const tfl::Operator& op, int32_t code, const tfl::Window& win, int x_in, int w_in, int b_in) {
    const Ints strides = {win.stride_h, win.stride_w};
    if (!Is4D(x_in) || Rank(w_in) != 4) return InvalidArgument("conv needs a 4-D input and 4-D weights");
    if (!IsConst(w_in)) return Keep(op, code == tfl::CONV_2D ? "CONV_2D" : "conv", "non-constant weights");
    ASSIGN_OR_RETURN(int x, Act(x_in));
    ASSIGN_OR_RETURN(ConstData w, ConstF32(w_in), "weights");
    const Ints ws = w.shape;  // OHWI; depthwise 1HWO
    const bool depthwise = code == tfl::DEPTHWISE_CONV_2D, transposed = code != tfl::CONV_2D && !depthwise;
    const Ints perm = depthwise || transposed ? Ints{3, 0, 1, 2} : Ints{0, 3, 1, 2};
    w.bytes = PermuteData(w.bytes, ws, perm, 4);
    w.shape = PermuteDims(ws, perm);
    fb::ConvParamsT p;
    p.kernel_shape = {static_cast<int32_t>(ws[1]), static_cast<int32_t>(ws[2])};
    p.strides = I32(strides);
    p.dilations = {win.dilation_h, win.dilation_w};
    const int64_t c_in = Shape(x_in)[3];
    if (depthwise) {
      p.group = static_cast<int32_t>(c_in);
    } else if (!transposed) {
      if (ws[3] <= 0 || c_in % ws[3] != 0)
        return InvalidArgument("weights have %lld input channels, the input %lld", static_cast<long long>(ws[3]),
                               static_cast<long long>(c_in));
      p.group = static_cast<int32_t>(c_in / ws[3]);
    }
    if (transposed) {
      if (!Is4D(op.outputs[0])) return InvalidArgument("transposed conv needs a 4-D output");
      int64_t pads[6];
      for (int d = 0; d < 2; ++d)
        tfl::TransposeConvPadding(Shape(x_in)[1 + d], Shape(op.outputs[0])[1 + d], ws[1 + d], strides[d], &pads[d],
                                  &pads[d + 2], &pads[d + 4]);
      p.pads.assign(pads, pads + 4);
      if (pads[4] || pads[5]) p.output_padding = {static_cast<int32_t>(pads[4]), static_cast<int32_t>(pads[5])};
    } else {
      p.auto_pad = win.padding == tfl::kValid ? fb::AutoPad::Valid : fb::AutoPad::SameUpper;
    }
    int8_t rest = win.activation;
    if (FuseInto(rest, &p.activation, &p.activation_min, &p.activation_max)) rest = tfl::kActNone;
    ASSIGN_OR_RETURN(int wt, AddConst(T(w_in).name, w));
    std::vector<int> in = {x, wt};
    if (b_in >= 0) {
      ASSIGN_OR_RETURN(ConstData b, ConstF32(b_in), "bias");
      ASSIGN_OR_RETURN(int bt, AddConst(T(b_in).name, b));
      in.push_back(bt);
    }
    return Emit(transposed ? fb::OpType::ConvTranspose : fb::OpType::Conv, in, op.outputs[0], U(p), false, rest);
  }

  Status Pool(fb::OpType type, const tfl::Operator& op, const tfl::Window& win) {
    if (!Is4D(op.inputs.at(0))) return InvalidArgument("pooling needs a 4-D input");
    ASSIGN_OR_RETURN(int x, Act(op.inputs[0]));
    fb::PoolParamsT p;
    p.kernel_shape = {win.filter_h, win.filter_w};
    p.strides = {win.stride_h, win.stride_w};
    p.auto_pad = win.padding == tfl::kValid ? fb::AutoPad::Valid : fb::AutoPad::SameUpper;
    if (op.outputs.size() == 1) return Emit(type, {x}, op.outputs[0], U(p), false, win.activation);
    // MaxPoolingWithArgmax2D: values, and indices as ONNX's MaxPool gives them (flat NCHW, int64).
    MultiOp(type, {x}, op, U(p));
    return Status::Ok();
  }

  // An op with one Kiln output a TFLite output (4-D ones NCHW).
  void MultiOp(fb::OpType type, const std::vector<int>& in, const tfl::Operator& op, fb::OpParamsUnion p) {
    std::vector<std::string> names;
    for (int32_t o : op.outputs) names.push_back(Unique(T(o).name));
    std::vector<int> outs = b_.addOp(type, names[0], in, names, std::move(p));
    for (size_t k = 0; k < outs.size(); ++k) kiln_[static_cast<size_t>(op.outputs[k])] = outs[k];
  }

  Status FullyConnected(const tfl::Operator& op) {
    const int x_in = op.inputs.at(0), w_in = op.inputs.at(1), b_in = op.inputs.size() > 2 ? op.inputs[2] : -1;
    const int out = op.outputs[0];
    if (op.options.Byte(tfl::opt::kFcWeightsFormat, 0) != 0) return Keep(op, "FULLY_CONNECTED", "shuffled weights");
    if (Rank(w_in) != 2) return InvalidArgument("weights must be 2-D");
    const int64_t k = Shape(w_in)[1];
    int x, w;
    if (Rank(x_in) == 2) {
      ASSIGN_OR_RETURN(x, Act(x_in));
    } else {
      ASSIGN_OR_RETURN(int xn, Nhwc(x_in));
      x = Op(fb::OpType::Reshape, {xn, IntsConst(Tmp("flat_shape"), {-1, k})}, Tmp("flat"));
    }
    if (IsConst(w_in)) {
      ASSIGN_OR_RETURN(ConstData wd, ConstF32(w_in), "weights");
      ASSIGN_OR_RETURN(w, AddConst(T(w_in).name, wd));
    } else {
      ASSIGN_OR_RETURN(w, Act(w_in));
    }
    std::vector<int> in = {x, w};
    if (b_in >= 0) {
      ASSIGN_OR_RETURN(ConstData bd, ConstF32(b_in), "bias");
      ASSIGN_OR_RETURN(int bt, AddConst(T(b_in).name, bd));
      in.push_back(bt);
    }
    fb::GemmParamsT p;
    p.trans_b = true;
    int8_t act = op.options.Byte(tfl::opt::kFcActivation, 0);
    if (FuseInto(act, &p.activation, &p.activation_min, &p.activation_max)) act = tfl::kActNone;
    if (Rank(out) == 2) return Emit(fb::OpType::Gemm, in, out, U(p), true, act);
    int y = Op(fb::OpType::Gemm, in, Tmp("gemm"), U(p));
    return Emit(fb::OpType::Reshape, {y, IntsConst(Tmp("out_shape"), Shape(out))}, out, {}, true, act);
  }

  // Reshape-like ops: the TFLite layout in and out, to the recorded shape.
  Status Reshape(const tfl::Operator& op) {
    const int out = op.outputs[0];
    Ints shape = Shape(out);
    bool known = T(out).has_shape;
    for (int64_t d : shape) known = known && d >= 0;
    if (!known && op.inputs.size() > 1 && IsConst(op.inputs[1])) {
      ASSIGN_OR_RETURN(shape, ConstInts(op.inputs[1]), "shape");
      known = true;
    }
    if (!known) return InvalidArgument("output shape is not static");
    ASSIGN_OR_RETURN(int x, Nhwc(op.inputs.at(0)));
    return Emit(fb::OpType::Reshape, {x, IntsConst(name_ + "/shape", shape)}, out, {}, true);
  }

  Ints KAxes(const Ints& axes, int r) {
    Ints k;
    for (int64_t a : axes) k.push_back(r == 4 ? NchwAxis(a) : a);
    return k;
  }

  Status Reduce(fb::OpType type, const tfl::Operator& op) {
    const int x_in = op.inputs.at(0), out = op.outputs[0], r = Rank(x_in);
    ASSIGN_OR_RETURN(Ints axes, ConstInts(op.inputs.at(1)), "axes");
    ASSIGN_OR_RETURN(axes, tfl::NormalizeAxes(axes, r));
    fb::ReduceParamsT p;
    p.keepdims = op.options.Bool(tfl::opt::kKeepDims, false);
    std::set<int64_t> red(axes.begin(), axes.end());
    bool in_order = true;  // the kept dims have the same order in NCHW and NHWC
    for (int64_t a = 0, last = -1; r == 4 && a < 4; ++a)
      if (!red.count(a)) {
        in_order = in_order && NchwAxis(a) > last;
        last = NchwAxis(a);
      }
    ASSIGN_OR_RETURN(int x, Act(x_in));
    p.axes = I32(KAxes(Ints(red.begin(), red.end()), r));
    if (p.keepdims || in_order) return Emit(type, {x}, out, U(p), r != 4);
    p.keepdims = true;  // reduce in NCHW keeping dims, then drop them in NHWC order
    int y = Op(type, {x}, Tmp("keepdims"), U(p));
    Ints kept = KShape(x_in);
    for (int64_t a : red) kept[static_cast<size_t>(NchwAxis(a))] = 1;
    int yn = Permute(y, kept, kToNhwc, Tmp("keepdims_nhwc"));
    return Emit(fb::OpType::Reshape, {yn, IntsConst(Tmp("shape"), Shape(out))}, out, {}, true);
  }

  Status Pad(const tfl::Operator& op, fb::PadMode mode) {
    const int x_in = op.inputs.at(0), r = Rank(x_in);
    ASSIGN_OR_RETURN(Ints pads, ConstInts(op.inputs.at(1)), "paddings");
    if (static_cast<int>(pads.size()) != 2 * r) return InvalidArgument("paddings must be [%d, 2]", r);
    fb::PadParamsT p;
    p.mode = mode;
    p.pads.assign(static_cast<size_t>(2 * r), 0);
    for (int k = 0; k < r; ++k) {
      size_t src = static_cast<size_t>(r == 4 ? kToNchw[static_cast<size_t>(k)] : k);
      p.pads[static_cast<size_t>(k)] = pads[2 * src];
      p.pads[static_cast<size_t>(k + r)] = pads[2 * src + 1];
    }
    if (op.inputs.size() > 2 && op.inputs[2] >= 0) {
      ASSIGN_OR_RETURN(ConstData v, ConstF32(op.inputs[2]), "constant value");
      if (v.bytes.size() != 4) return InvalidArgument("the pad value must be one float");
      std::memcpy(&p.value, v.bytes.data(), 4);
    }
    return Unary(fb::OpType::Pad, op, U(p));
  }

  Status Resize(const tfl::Operator& op, bool bilinear) {
    const int x_in = op.inputs.at(0), out = op.outputs[0];
    if (!Is4D(x_in) || !Is4D(out)) return InvalidArgument("resize needs 4-D tensors");
    const bool align = op.options.Bool(bilinear ? tfl::opt::kResizeBilinearAlignCorners : tfl::opt::kResizeNearestAlignCorners, false);
    const bool half = op.options.Bool(bilinear ? tfl::opt::kResizeBilinearHalfPixel : tfl::opt::kResizeNearestHalfPixel, false);
    fb::ResizeParamsT p;
    p.mode = bilinear ? fb::ResizeMode::Linear : fb::ResizeMode::Nearest;
    p.coordinate_transform = align ? fb::CoordinateTransform::AlignCorners
                             : half ? (bilinear ? fb::CoordinateTransform::HalfPixel : fb::CoordinateTransform::TfHalfPixelForNn)
                                    : fb::CoordinateTransform::Asymmetric;
    p.nearest_mode = align ? fb::NearestMode::RoundPreferCeil : fb::NearestMode::Floor;
    ASSIGN_OR_RETURN(int x, Act(x_in));
    int sizes = IntsConst(Tmp("sizes"), KShape(out));
    return Emit(fb::OpType::Resize, {x, -1, -1, sizes}, out, U(p));
  }

  Status Transpose(const tfl::Operator& op) {
    const int x_in = op.inputs.at(0), r = Rank(x_in);
    ASSIGN_OR_RETURN(Ints perm, ConstInts(op.inputs.at(1)), "perm");
    ASSIGN_OR_RETURN(perm, tfl::NormalizeAxes(perm, r));
    if (static_cast<int>(perm.size()) != r) return InvalidArgument("perm has %zu entries for rank %d", perm.size(), r);
    if (r == 4) {  // NCHW in -> NHWC -> perm -> NCHW out, as one permutation
      Ints total;
      for (int64_t q : kToNchw) total.push_back(kToNhwc[static_cast<size_t>(perm[static_cast<size_t>(q)])]);
      perm = total;
    }
    ASSIGN_OR_RETURN(int x, Act(x_in));
    Define(op.outputs[0], Permute(x, KShape(x_in), perm, T(op.outputs[0]).name), false);
    return Status::Ok();
  }

  // STRIDED_SLICE (no ellipsis / new axes) and SLICE.
  Status Slice(const tfl::Operator& op, bool strided) {
    const int x_in = op.inputs.at(0), out = op.outputs[0], r = Rank(x_in);
    const Ints shape = Shape(x_in);
    ASSIGN_OR_RETURN(Ints begin, ConstInts(op.inputs.at(1)), "begin");
    ASSIGN_OR_RETURN(Ints end, ConstInts(op.inputs.at(2)), "end / size");
    Ints steps(begin.size(), 1);
    tfl::SliceMasks masks;
    masks.sizes = !strided;
    if (strided) {
      ASSIGN_OR_RETURN(steps, ConstInts(op.inputs.at(3)), "strides");
      masks.begin = op.options.Int(tfl::opt::kBeginMask, 0);
      masks.end = op.options.Int(tfl::opt::kEndMask, 0);
      masks.shrink = op.options.Int(tfl::opt::kShrinkAxisMask, 0);
      masks.offset = op.options.Bool(tfl::opt::kSliceOffset, false);
      if (op.options.Int(tfl::opt::kEllipsisMask, 0) || op.options.Int(tfl::opt::kNewAxisMask, 0))
        return Keep(op, "STRIDED_SLICE", "ellipsis or new-axis mask");
    }
    ASSIGN_OR_RETURN(tfl::SliceSpec spec, tfl::ResolveSlice(begin, end, steps, masks, shape));
    Ints axes;
    for (size_t d = 0; d < begin.size(); ++d) axes.push_back(r == 4 ? NchwAxis(static_cast<int64_t>(d)) : static_cast<int64_t>(d));
    ASSIGN_OR_RETURN(int x, Act(x_in));
    std::vector<int> in = {x, IntsConst(Tmp("starts"), spec.starts), IntsConst(Tmp("ends"), spec.ends),
                           IntsConst(Tmp("axes"), axes), IntsConst(Tmp("steps"), spec.steps)};
    const int32_t shrink = masks.shrink;
    if (!shrink) return Emit(fb::OpType::Slice, in, out, {});
    // Shrunk axes: slice (rank kept), then reshape to the recorded shape in TFLite's layout.
    int y = Op(fb::OpType::Slice, in, Tmp("slice"));
    Ints kept = Shape(out);
    for (int d = 0; d < r; ++d)
      if (shrink >> d & 1) kept.insert(kept.begin() + d, 1);
    if (static_cast<int>(kept.size()) != r) return InvalidArgument("output shape does not match the shrink mask");
    if (r == 4) y = Permute(y, PermuteDims(kept, kToNchw), kToNhwc, Tmp("slice_nhwc"));
    return Emit(fb::OpType::Reshape, {y, IntsConst(Tmp("shape"), Shape(out))}, out, {}, true);
  }

  Status Split(const tfl::Operator& op, int x_in, int axis_in, int sizes_in) {
    ASSIGN_OR_RETURN(Ints axis, ConstInts(axis_in), "axis");
    if (axis.size() != 1) return InvalidArgument("axis must be one value");
    ASSIGN_OR_RETURN(axis, tfl::NormalizeAxes(axis, Rank(x_in)));
    fb::SplitParamsT p;
    p.axis = static_cast<int32_t>(KAxes(axis, Rank(x_in))[0]);
    if (sizes_in >= 0) {
      ASSIGN_OR_RETURN(p.split, ConstInts(sizes_in), "size_splits");
      int64_t known = 0;
      int free = -1;
      for (size_t k = 0; k < p.split.size(); ++k) {
        if (p.split[k] < 0) free = static_cast<int>(k);
        else known += p.split[k];
      }
      if (free >= 0) p.split[static_cast<size_t>(free)] = Shape(x_in)[static_cast<size_t>(axis[0])] - known;
    }
    ASSIGN_OR_RETURN(int x, Act(x_in));
    MultiOp(fb::OpType::Split, {x}, op, U(p));
    return Status::Ok();
  }

  Status Gather(const tfl::Operator& op) {
    const int x_in = op.inputs.at(0), idx_in = op.inputs.at(1), r = Rank(x_in);
    if (op.options.Int(tfl::opt::kGatherBatchDims, 0) != 0) return Keep(op, "GATHER", "batch_dims");
    ASSIGN_OR_RETURN(Ints axis, tfl::NormalizeAxes({op.options.Int(tfl::opt::kGatherAxis, 0)}, r));
    ASSIGN_OR_RETURN(int idx, Nhwc(idx_in));
    fb::AxisParamsT p;
    if (r == 4 && Rank(idx_in) == 1) {  // output 4-D too: gather in NCHW
      p.axis = static_cast<int32_t>(NchwAxis(axis[0]));
      ASSIGN_OR_RETURN(int x, Act(x_in));
      return Emit(fb::OpType::Gather, {x, idx}, op.outputs[0], U(p));
    }
    p.axis = static_cast<int32_t>(axis[0]);
    ASSIGN_OR_RETURN(int x, Nhwc(x_in));
    return Emit(fb::OpType::Gather, {x, idx}, op.outputs[0], U(p), true);
  }

  Status ArgMax(fb::OpType type, const tfl::Operator& op) {
    const int x_in = op.inputs.at(0), out = op.outputs[0];
    ASSIGN_OR_RETURN(Ints axis, ConstInts(op.inputs.at(1)), "axis");
    if (axis.size() != 1) return InvalidArgument("axis must be one value");
    ASSIGN_OR_RETURN(axis, tfl::NormalizeAxes(axis, Rank(x_in)));
    fb::ArgParamsT p;
    p.axis = static_cast<int32_t>(axis[0]);
    p.keepdims = false;
    ASSIGN_OR_RETURN(int x, Nhwc(x_in));
    if (T(out).type == tfl::kInt64) return Emit(type, {x}, out, U(p), true);
    int y = Op(type, {x}, Tmp("i64"), U(p));
    fb::CastParamsT c;
    ASSIGN_OR_RETURN(c.to, MapType(T(out).type));
    return Emit(fb::OpType::Cast, {y}, out, U(c), true);
  }

  Status BatchMatMul(const tfl::Operator& op) {
    std::vector<int> in;
    for (int k = 0; k < 2; ++k) {
      const int i = op.inputs.at(static_cast<size_t>(k)), r = Rank(i);
      ASSIGN_OR_RETURN(int t, Nhwc(i));
      if (op.options.Bool(k == 0 ? tfl::opt::kAdjX : tfl::opt::kAdjY, false)) {
        if (r < 2) return InvalidArgument("adjoint of a rank-%d input", r);
        Ints perm;
        for (int d = 0; d < r; ++d) perm.push_back(d);
        std::swap(perm[static_cast<size_t>(r - 1)], perm[static_cast<size_t>(r - 2)]);
        t = Permute(t, Shape(i), perm, Tmp(k == 0 ? "adj_x" : "adj_y"));
      }
      in.push_back(t);
    }
    return Emit(fb::OpType::MatMul, in, op.outputs[0], {}, true);
  }

  // DEQUANTIZE of a constant (f16, or int8/uint8 with scales) folds to f32.
  Status Dequantize(const tfl::Operator& op) {
    const int x_in = op.inputs.at(0);
    if (!IsConst(x_in)) return Keep(op, "DEQUANTIZE", "of a non-constant tensor");
    ASSIGN_OR_RETURN(ConstData d, Const(x_in));
    Status s = tfl::ToFloat32(&d, T(x_in).quant);
    if (s.code() == StatusCode::kUnsupported) return Keep(op, "DEQUANTIZE", s.message());
    RETURN_IF_ERROR(s, "constant '%s'", T(x_in).name.c_str());
    folded_[op.outputs[0]] = std::move(d);
    return Status::Ok();
  }

  // An op Kiln cannot run: recorded, and kept as a Custom op when allowed.
  Status Keep(const tfl::Operator& op, const std::string& type, const std::string& why) {
    missing_[type + (why.empty() ? "" : " (" + why + ")")].push_back(name_);
    report_->unsupported[type]++;
    std::vector<int> in;
    for (int32_t i : op.inputs) {
      auto t = Act(i);
      in.push_back(t.ok() ? *t : -1);
    }
    fb::CustomParamsT p;
    p.type_name = type;
    p.domain = "tflite";
    MultiOp(fb::OpType::Custom, in, op, U(p));
    return Status::Ok();
  }

  Status ImportOp(const tfl::Operator& op, const tfl::OperatorCode& code, const std::string& type) {
    const tfl::Options& o = op.options;
    for (int32_t i : op.inputs)  // quantized activations (not weights behind a DEQUANTIZE)
      if (i >= 0 && !IsConst(i) && !T(i).quant.scale.empty() &&
          (T(i).type == tfl::kInt8 || T(i).type == tfl::kUInt8 || T(i).type == tfl::kInt16))
        return Keep(op, type, "quantized");
    auto in = [&](size_t k) { return k < op.inputs.size() ? op.inputs[k] : -1; };
    static const std::map<int32_t, fb::OpType> kUnary = {
        {tfl::RELU, fb::OpType::Relu}, {tfl::LOGISTIC, fb::OpType::Sigmoid}, {tfl::TANH, fb::OpType::Tanh},
        {tfl::HARD_SWISH, fb::OpType::HardSwish}, {tfl::EXP, fb::OpType::Exp}, {tfl::LOG, fb::OpType::Log},
        {tfl::SQRT, fb::OpType::Sqrt}, {tfl::NEG, fb::OpType::Neg}, {tfl::ABS, fb::OpType::Abs},
        {tfl::LOGICAL_NOT, fb::OpType::Not}};
    static const std::map<int32_t, fb::OpType> kBinary = {
        {tfl::ADD, fb::OpType::Add}, {tfl::SUB, fb::OpType::Sub}, {tfl::MUL, fb::OpType::Mul},
        {tfl::DIV, fb::OpType::Div}, {tfl::MAXIMUM, fb::OpType::Max}, {tfl::MINIMUM, fb::OpType::Min},
        {tfl::POW, fb::OpType::Pow}, {tfl::PRELU, fb::OpType::PRelu}, {tfl::LESS, fb::OpType::Less},
        {tfl::GREATER, fb::OpType::Greater}, {tfl::EQUAL, fb::OpType::Equal}, {tfl::SELECT, fb::OpType::Where},
        {tfl::SELECT_V2, fb::OpType::Where}};
    static const std::map<int32_t, fb::OpType> kReduce = {
        {tfl::MEAN, fb::OpType::ReduceMean}, {tfl::SUM, fb::OpType::ReduceSum}, {tfl::REDUCE_MAX, fb::OpType::ReduceMax},
        {tfl::REDUCE_MIN, fb::OpType::ReduceMin}, {tfl::REDUCE_PROD, fb::OpType::ReduceProd}};
    if (kUnary.count(code.builtin)) return Unary(kUnary.at(code.builtin), op);
    if (kBinary.count(code.builtin)) {  // ADD, SUB, MUL, DIV carry a fused activation; the others none
      const int32_t c = code.builtin;
      const bool fused = c == tfl::ADD || c == tfl::SUB || c == tfl::MUL || c == tfl::DIV;
      return Binary(kBinary.at(c), op, fused ? o.Byte(tfl::opt::kBinaryActivation, 0) : int8_t{tfl::kActNone});
    }
    if (kReduce.count(code.builtin)) return Reduce(kReduce.at(code.builtin), op);
    const bool mp_deconv = code.builtin == tfl::CUSTOM && code.custom_code == "Convolution2DTransposeBias";
    const bool mp_argmax = code.builtin == tfl::CUSTOM && code.custom_code == "MaxPoolingWithArgmax2D";
    switch (mp_deconv ? int32_t{tfl::TRANSPOSE_CONV} : mp_argmax ? int32_t{tfl::MAX_POOL_2D} : code.builtin) {
      case tfl::CONV_2D: case tfl::DEPTHWISE_CONV_2D: case tfl::TRANSPOSE_CONV: case tfl::AVERAGE_POOL_2D:
      case tfl::MAX_POOL_2D: {
        ASSIGN_OR_RETURN(tfl::Window w, tfl::ReadWindow(code, op));
        if (code.builtin == tfl::AVERAGE_POOL_2D) return Pool(fb::OpType::AveragePool, op, w);
        if (code.builtin == tfl::MAX_POOL_2D || mp_argmax) return Pool(fb::OpType::MaxPool, op, w);
        if (mp_deconv) return Conv(op, tfl::TRANSPOSE_CONV, w, in(0), in(1), in(2));  // input, weights (OHWI), bias
        if (code.builtin == tfl::TRANSPOSE_CONV) return Conv(op, code.builtin, w, in(2), in(1), in(3));  // output_shape first
        return Conv(op, code.builtin, w, in(0), in(1), in(2));
      }
      case tfl::FULLY_CONNECTED: return FullyConnected(op);
      case tfl::SQUARED_DIFFERENCE: {
        bool nhwc;
        ASSIGN_OR_RETURN(std::vector<int> ab, Broadcast(op.inputs, &nhwc));
        int d = Op(fb::OpType::Sub, ab, Tmp("diff"));
        return Emit(fb::OpType::Mul, {d, d}, op.outputs[0], {}, nhwc);
      }
      case tfl::RELU6: case tfl::RELU_N1_TO_1: {
        fb::ClipParamsT c;
        c.min = code.builtin == tfl::RELU6 ? 0.f : -1.f;
        c.max = code.builtin == tfl::RELU6 ? 6.f : 1.f;
        return Unary(fb::OpType::Clip, op, U(c));
      }
      case tfl::ELU: return Unary(fb::OpType::Elu, op, U(fb::EluParamsT()));
      case tfl::RSQRT: {
        ASSIGN_OR_RETURN(int x, Act(in(0)));
        return Emit(fb::OpType::Reciprocal, {Op(fb::OpType::Sqrt, {x}, Tmp("sqrt"))}, op.outputs[0]);
      }
      case tfl::SQUARE: {
        ASSIGN_OR_RETURN(int x, Act(in(0)));
        return Emit(fb::OpType::Mul, {x, x}, op.outputs[0]);
      }
      case tfl::LEAKY_RELU: {
        fb::LeakyReluParamsT p;
        p.alpha = o.Float(tfl::opt::kLeakyAlpha, 0.2f);
        return Unary(fb::OpType::LeakyRelu, op, U(p));
      }
      case tfl::GELU: {
        fb::GeluParamsT p;
        p.approximate = o.Bool(tfl::opt::kGeluApproximate, false) ? fb::GeluApproximation::Tanh : fb::GeluApproximation::None;
        return Unary(fb::OpType::Gelu, op, U(p));
      }
      case tfl::CONCATENATION: {
        const int r = Rank(op.outputs[0]);
        ASSIGN_OR_RETURN(Ints axis, tfl::NormalizeAxes({o.Int(tfl::opt::kConcatAxis, 0)}, r));
        fb::AxisParamsT p;
        p.axis = static_cast<int32_t>(KAxes(axis, r)[0]);
        std::vector<int> xs;
        for (int32_t i : op.inputs) {
          ASSIGN_OR_RETURN(int t, Act(i));
          xs.push_back(t);
        }
        return Emit(fb::OpType::Concat, xs, op.outputs[0], U(p), false, o.Byte(tfl::opt::kConcatActivation, 0));
      }
      case tfl::RESHAPE: case tfl::SQUEEZE: case tfl::EXPAND_DIMS: return Reshape(op);
      case tfl::SOFTMAX: case tfl::LOG_SOFTMAX: {
        ASSIGN_OR_RETURN(int x, Act(in(0)));
        const float beta = code.builtin == tfl::SOFTMAX ? o.Float(tfl::opt::kSoftmaxBeta, 1.f) : 1.f;
        if (beta != 1.f) {
          ConstData c{tfl::kFloat32, {}, std::vector<uint8_t>(4)};
          std::memcpy(c.bytes.data(), &beta, 4);
          ASSIGN_OR_RETURN(int bt, AddConst(Tmp("beta"), c));
          x = Op(fb::OpType::Mul, {x, bt}, Tmp("scaled"));
        }
        fb::AxisParamsT p;
        p.axis = Is4D(in(0)) ? 1 : -1;
        return Emit(code.builtin == tfl::SOFTMAX ? fb::OpType::Softmax : fb::OpType::LogSoftmax, {x}, op.outputs[0], U(p));
      }
      case tfl::PAD: case tfl::PADV2: return Pad(op, fb::PadMode::Constant);
      case tfl::MIRROR_PAD:
        if (o.Byte(tfl::opt::kMirrorPadMode, 0) != 0) return Keep(op, type, "SYMMETRIC mode");
        return Pad(op, fb::PadMode::Reflect);
      case tfl::RESIZE_BILINEAR: return Resize(op, true);
      case tfl::RESIZE_NEAREST_NEIGHBOR: return Resize(op, false);
      case tfl::TRANSPOSE: return Transpose(op);
      case tfl::STRIDED_SLICE: return Slice(op, true);
      case tfl::SLICE: return Slice(op, false);
      case tfl::SPLIT: return Split(op, in(1), in(0), -1);
      case tfl::SPLIT_V: return Split(op, in(0), in(2), in(1));
      case tfl::GATHER: return Gather(op);
      case tfl::TILE: {
        ASSIGN_OR_RETURN(Ints reps, ConstInts(in(1)), "multiples");
        if (Rank(in(0)) == 4 && reps.size() == 4) reps = PermuteDims(reps, kToNchw);
        ASSIGN_OR_RETURN(int x, Act(in(0)));
        return Emit(fb::OpType::Tile, {x, IntsConst(Tmp("repeats"), reps)}, op.outputs[0]);
      }
      case tfl::DEPTH_TO_SPACE: case tfl::SPACE_TO_DEPTH: {
        fb::SpaceDepthParamsT p;
        p.blocksize = o.Int(tfl::opt::kBlockSize, 0);
        p.mode = fb::DepthToSpaceMode::DCR;  // TF's NHWC channel order is DCR
        return Unary(code.builtin == tfl::DEPTH_TO_SPACE ? fb::OpType::DepthToSpace : fb::OpType::SpaceToDepth, op, U(p));
      }
      case tfl::CAST: {
        fb::CastParamsT p;
        auto to = MapType(T(op.outputs[0]).type);
        if (!to.ok()) return Keep(op, type, to.status().message());
        p.to = *to;
        return Unary(fb::OpType::Cast, op, U(p));
      }
      case tfl::ARG_MAX: return ArgMax(fb::OpType::ArgMax, op);
      case tfl::ARG_MIN: return ArgMax(fb::OpType::ArgMin, op);
      case tfl::BATCH_MATMUL: return BatchMatMul(op);
      case tfl::DEQUANTIZE: return Dequantize(op);
      case tfl::CUSTOM:
        if (code.custom_code == "MaxUnpooling2D") return Keep(op, type, "Kiln has no MaxUnpool op");
        return Keep(op, type.empty() ? "CUSTOM" : type, "custom op");
      default: return Keep(op, type, "");
    }
  }

  const tfl::Model& m_;
  const tfl::SubGraph& g_;
  NetBuilder b_;
  const ConvertOptions& opt_;
  ConvertReport* report_;
  std::vector<int> kiln_;          // TFLite tensor -> Kiln tensor (NCHW for 4-D); -1 until produced
  std::map<int, int> nhwc_;        // TFLite tensor -> Kiln tensor in NHWC (4-D only)
  std::map<int, ConstData> folded_;  // DEQUANTIZE outputs folded to f32
  std::set<std::string> names_;
  std::map<std::string, std::vector<std::string>> missing_;
  std::string name_;               // the current operator's name (its first output)
};

}  // namespace

StatusOr<NetBuilder> ImportTflite(const std::string& path, const ConvertOptions& options, ConvertReport* report) {
  ConvertReport local;
  if (!report) report = &local;
  ASSIGN_OR_RETURN(tflite::Model model, tflite::ReadModelFile(path));
  if (model.subgraphs.size() > 1 && options.progress)
    options.progress(StrFormat("%zu subgraphs: importing subgraph 0 only", model.subgraphs.size()));
  TfliteImporter importer(model, options, report);
  auto r = importer.Import();
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

}  // namespace kiln
