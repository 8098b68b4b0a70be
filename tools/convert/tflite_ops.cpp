// TFLite -> Kiln: the importer's op table (TfliteImporter::ImportOp) and the
// converters of the builtins it maps (tflite_importer.h; the quantized forms
// are in tflite_quant.cpp, LSTMs in tflite_rnn.cpp, IF / WHILE in
// tflite_control_flow.cpp, DENSIFY in tflite_densify.cpp).
#include "tflite_importer.h"

namespace kiln::tflite_import {

Status TfliteImporter::Unary(OpType type, const tfl::Operator& op, fb::OpParamsUnion p) {
  KILN_ASSIGN_OR_RETURN(int x, Act(In(op, 0)));
  return Emit(type, {x}, op.outputs[0], std::move(p));
}

Status TfliteImporter::Binary(OpType type, const tfl::Operator& op, int8_t act, bool square) {
  int r = 0;
  for (int32_t i : op.inputs) r = std::max(r, Rank(i));
  std::vector<int> in;
  for (int32_t i : op.inputs) {
    Ints s = Shape(i);
    if (r != 4 || Rank(i) == 4 || std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()) == 1) {
      KILN_ASSIGN_OR_RETURN(in.emplace_back(), r == 4 ? Act(i) : Nhwc(i));
      continue;
    }
    s.insert(s.begin(), static_cast<size_t>(4 - Rank(i)), 1);
    if (IsConst(i)) {
      KILN_ASSIGN_OR_RETURN(ConstData d, Const(i));
      d.shape = s;
      KILN_RETURN_IF_ERROR(PermuteConst(&d, kToNchw), "constant '%s'", T(i).name.c_str());
      KILN_ASSIGN_OR_RETURN(in.emplace_back(), AddConst(T(i).name + "/nchw", d));
    } else {
      KILN_ASSIGN_OR_RETURN(int t, Act(i));
      int r4 = Op(OpType::Reshape, {t, IntsConst(T(i).name + "/4d_shape", s)}, T(i).name + "/4d");
      in.push_back(Permute(r4, s, kToNchw, T(i).name + "/nchw"));
    }
  }
  if (square) {  // SQUARED_DIFFERENCE
    int d = Op(type, in, Tmp("diff"));
    in = {d, d};
  }
  return Emit(square ? OpType::Mul : type, in, op.outputs[0], {}, r != 4, act);
}

Status TfliteImporter::Conv(const tfl::Operator& op, int32_t code, const tfl::Window& win, int x_in, int w_in, int b_in) {
  const int out = op.outputs[0];
  if (!Is4D(x_in) || !Is4D(out) || Rank(w_in) != 4) return InvalidArgument("conv needs 4-D input, output, weights");
  if (!IsConst(w_in)) return Keep(op, code == tfl::CONV_2D ? "CONV_2D" : "conv", "non-constant weights");
  KILN_ASSIGN_OR_RETURN(int x, Act(x_in));
  const Ints ws = Shape(w_in);  // OHWI; depthwise 1HWO
  const bool depthwise = code == tfl::DEPTHWISE_CONV_2D, transposed = code == tfl::TRANSPOSE_CONV;
  fb::ConvParamsT p;
  p.kernel_shape = {static_cast<int32_t>(ws[1]), static_cast<int32_t>(ws[2])};
  p.strides = {win.stride_h, win.stride_w};
  p.dilations = {win.dilation_h, win.dilation_w};
  const int64_t c_in = Shape(x_in)[3];
  if (ws[3] <= 0 || (!depthwise && c_in % ws[3] != 0))
    return InvalidArgument("weights of %lld input channels for %lld channels", static_cast<long long>(ws[3]),
                           static_cast<long long>(c_in));
  p.group = static_cast<int32_t>(depthwise ? c_in : transposed ? 1 : c_in / ws[3]);
  if (transposed) {  // explicit pads from the recorded input and output sizes
    int64_t pads[6];
    for (int d = 0; d < 2; ++d)
      tfl::TransposeConvPadding(Shape(x_in)[1 + d], Shape(out)[1 + d], ws[1 + d], d ? win.stride_w : win.stride_h,
                                &pads[d], &pads[d + 2], &pads[d + 4]);
    p.pads.assign(pads, pads + 4);
    if (pads[4] || pads[5]) p.output_padding = {static_cast<int32_t>(pads[4]), static_cast<int32_t>(pads[5])};
  } else {
    p.auto_pad = win.padding == tfl::kValid ? fb::AutoPad::Valid : fb::AutoPad::SameUpper;
  }
  int8_t rest = win.activation;
  if (FuseInto(rest, &p.activation, &p.activation_min, &p.activation_max)) rest = tfl::kActNone;
  KILN_ASSIGN_OR_RETURN(int wt, Weights(w_in, depthwise || transposed ? Ints{3, 0, 1, 2} : Ints{0, 3, 1, 2}),
                        "weights");
  std::vector<int> in = {x, wt};
  if (b_in >= 0) {
    KILN_ASSIGN_OR_RETURN(in.emplace_back(), Bias(b_in));
  }
  return Emit(transposed ? OpType::ConvTranspose : OpType::Conv, in, out, U(p), false, rest);
}

Status TfliteImporter::Pool(OpType type, const tfl::Operator& op, const tfl::Window& win) {
  if (!Is4D(In(op, 0))) return InvalidArgument("pooling needs a 4-D input");
  KILN_ASSIGN_OR_RETURN(int x, Act(op.inputs[0]));
  fb::PoolParamsT p;
  p.kernel_shape = {win.filter_h, win.filter_w};
  p.strides = {win.stride_h, win.stride_w};
  p.auto_pad = win.padding == tfl::kValid ? fb::AutoPad::Valid : fb::AutoPad::SameUpper;
  if (op.outputs.size() == 1) return Emit(type, {x}, op.outputs[0], U(p), false, win.activation);
  MultiOp(type, {x}, op, U(p));  // MaxPoolingWithArgmax2D: indices as ONNX MaxPool's (flat NCHW, int64)
  argmax_[op.outputs[1]] = {win, op.inputs[0]};
  return Status::Ok();
}

Status TfliteImporter::MaxUnpool(const tfl::Operator& op, const tfl::OperatorCode& code, const std::string& type) {
  const int x_in = In(op, 0), idx_in = In(op, 1), out = op.outputs[0];
  if (!Is4D(x_in) || (T(out).has_shape && !Is4D(out))) return InvalidArgument("unpooling needs 4-D tensors");
  auto pool = argmax_.find(idx_in);
  if (pool == argmax_.end()) return Keep(op, type, "indices not from a MaxPoolingWithArgmax2D");
  tfl::OperatorCode as_pool = code;
  as_pool.custom_code = "MaxPoolingWithArgmax2D";
  StatusOr<tfl::Window> read = tfl::ReadWindow(as_pool, op);
  const tfl::Window w = read.ok() ? *read : pool->second.window;
  Ints shape = KShape(out);  // as recorded, else MediaPipe's rule
  if (!Is4D(out)) {
    const Ints s = Shape(x_in);
    const bool same = w.padding != tfl::kValid;
    shape = {s[0], s[3], same ? s[1] * w.stride_h : (s[1] - 1) * w.stride_h + w.filter_h,
             same ? s[2] * w.stride_w : (s[2] - 1) * w.stride_w + w.filter_w};
  }
  if (shape != KShape(pool->second.input))
    return Keep(op, type, "output shape differs from its MaxPoolingWithArgmax2D's input");
  fb::MaxUnpoolParamsT p;
  p.indices_in_output_shape = true;  // Kiln's MaxPool indices, in the pool input's (= output's) shape
  p.kernel_shape = {w.filter_h, w.filter_w};
  p.strides = {w.stride_h, w.stride_w};
  KILN_ASSIGN_OR_RETURN(int x, Act(x_in));
  KILN_ASSIGN_OR_RETURN(int idx, Act(idx_in));
  return Emit(OpType::MaxUnpool, {x, idx, IntsConst(Tmp("output_shape"), shape)}, out, U(p));
}

Status TfliteImporter::FullyConnected(const tfl::Operator& op) {
  const int x_in = In(op, 0), w_in = In(op, 1), b_in = op.inputs.size() > 2 ? op.inputs[2] : -1;
  const int out = op.outputs[0];
  if (op.options.Byte(tfl::opt::kFcWeightsFormat, 0) != 0) return Keep(op, "FULLY_CONNECTED", "shuffled weights");
  if (Rank(w_in) != 2) return InvalidArgument("weights must be 2-D");
  KILN_ASSIGN_OR_RETURN(int x, Nhwc(x_in));  // flattened in TFLite's order
  if (Rank(x_in) != 2) x = Op(OpType::Reshape, {x, IntsConst(Tmp("flat_shape"), {-1, Shape(w_in)[1]})}, Tmp("flat"));
  KILN_ASSIGN_OR_RETURN(int w, IsConst(w_in) ? Weights(w_in, {0, 1}) : Act(w_in), "weights");
  std::vector<int> in = {x, w};
  if (b_in >= 0) {
    KILN_ASSIGN_OR_RETURN(in.emplace_back(), Bias(b_in));
  }
  fb::GemmParamsT p;
  p.trans_b = true;
  int8_t act = op.options.Byte(tfl::opt::kFcActivation, 0);
  if (FuseInto(act, &p.activation, &p.activation_min, &p.activation_max)) act = tfl::kActNone;
  if (Rank(out) == 2) return Emit(OpType::Gemm, in, out, U(p), true, act);
  int y = Op(OpType::Gemm, in, Tmp("gemm"), U(p));  // keep_num_dims
  return Emit(OpType::Reshape, {y, IntsConst(Tmp("out_shape"), Shape(out))}, out, {}, true, act);
}

Status TfliteImporter::Reshape(const tfl::Operator& op) {
  const int out = op.outputs[0];
  Ints shape = Shape(out);
  bool known = T(out).has_shape && std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d >= 0; });
  if (!known && op.inputs.size() > 1 && IsConst(op.inputs[1])) {
    KILN_ASSIGN_OR_RETURN(shape, ConstInts(op.inputs[1]), "shape");
    known = true;
  }
  if (!known) return InvalidArgument("output shape is not static");
  KILN_ASSIGN_OR_RETURN(int x, Nhwc(In(op, 0)));
  return Emit(OpType::Reshape, {x, IntsConst(name_ + "/shape", shape)}, out, {}, true);
}

Status TfliteImporter::DropDims(int y, Ints s, int out) {
  y = Permute(y, s, kToNhwc, Tmp("nhwc"));
  return Emit(OpType::Reshape, {y, IntsConst(Tmp("shape"), Shape(out))}, out, {}, true);
}

Status TfliteImporter::Reduce(OpType type, const tfl::Operator& op) {
  const int x_in = In(op, 0), out = op.outputs[0], r = Rank(x_in);
  KILN_ASSIGN_OR_RETURN(Ints axes, ConstInts(In(op, 1)), "axes");
  KILN_ASSIGN_OR_RETURN(axes, tfl::NormalizeAxes(axes, r));
  fb::ReduceParamsT p;
  p.keepdims = op.options.Bool(tfl::opt::kKeepDims, false);
  std::set<int64_t> red(axes.begin(), axes.end());
  bool in_order = true;  // the kept dims have the same order in NCHW and NHWC
  for (int64_t a = 0, last = -1; r == 4 && a < 4; ++a)
    if (!red.count(a)) in_order = in_order && NchwAxis(a) > last, last = NchwAxis(a);
  KILN_ASSIGN_OR_RETURN(int x, Act(x_in));
  p.axes = I32(KAxes(Ints(red.begin(), red.end()), r));
  if (p.keepdims || in_order) return Emit(type, {x}, out, U(p), r != 4);
  p.keepdims = true;  // reduce in NCHW keeping dims, then drop them in NHWC order
  Ints kept = KShape(x_in);
  for (int64_t a : red) kept[static_cast<size_t>(NchwAxis(a))] = 1;
  return DropDims(Op(type, {x}, Tmp("keepdims"), U(p)), kept, out);
}

Status TfliteImporter::Pad(const tfl::Operator& op, fb::PadMode mode) {
  const int r = Rank(In(op, 0));
  KILN_ASSIGN_OR_RETURN(Ints pads, ConstInts(In(op, 1)), "paddings");
  if (static_cast<int>(pads.size()) != 2 * r) return InvalidArgument("paddings must be [%d, 2]", r);
  fb::PadParamsT p;
  p.mode = mode;
  p.pads.resize(static_cast<size_t>(2 * r));
  for (int k = 0; k < r; ++k) {  // [[begin, end] per TFLite dim] -> [begins..., ends...] in Kiln's dims
    const size_t src = static_cast<size_t>(r == 4 ? kToNchw[static_cast<size_t>(k)] : k);
    p.pads[static_cast<size_t>(k)] = pads[2 * src];
    p.pads[static_cast<size_t>(k + r)] = pads[2 * src + 1];
  }
  if (op.inputs.size() > 2 && op.inputs[2] >= 0) {  // PADV2's constant value
    KILN_ASSIGN_OR_RETURN(ConstData v, ConstF32(op.inputs[2]), "constant value");
    if (v.bytes.size() != 4) return InvalidArgument("the pad value must be one float");
    std::memcpy(&p.value, v.bytes.data(), 4);
  }
  return Unary(OpType::Pad, op, U(p));
}

Status TfliteImporter::Resize(const tfl::Operator& op, bool bilinear) {
  const int x_in = In(op, 0), out = op.outputs[0];
  if (!Is4D(x_in) || !Is4D(out)) return InvalidArgument("resize needs 4-D tensors");
  namespace o = tfl::opt;
  const tfl::Options& opt = op.options;
  const bool align = opt.Bool(bilinear ? o::kResizeBilinearAlignCorners : o::kResizeNearestAlignCorners, false);
  const bool half = opt.Bool(bilinear ? o::kResizeBilinearHalfPixel : o::kResizeNearestHalfPixel, false);
  fb::ResizeParamsT p;  // TF's rules: nearest floors (rounds with align_corners); half pixel for nearest is TF's
  p.mode = bilinear ? fb::ResizeMode::Linear : fb::ResizeMode::Nearest;
  p.coordinate_transform = align  ? fb::CoordinateTransform::AlignCorners
                           : !half ? fb::CoordinateTransform::Asymmetric
                           : bilinear ? fb::CoordinateTransform::HalfPixel
                                      : fb::CoordinateTransform::TfHalfPixelForNn;
  p.nearest_mode = align ? fb::NearestMode::RoundPreferCeil : fb::NearestMode::Floor;
  KILN_ASSIGN_OR_RETURN(int x, Act(x_in));
  return Emit(OpType::Resize, {x, -1, -1, IntsConst(Tmp("sizes"), KShape(out))}, out, U(p));
}

Status TfliteImporter::Transpose(const tfl::Operator& op) {
  const int x_in = In(op, 0), r = Rank(x_in);
  KILN_ASSIGN_OR_RETURN(Ints perm, ConstInts(In(op, 1)), "perm");
  KILN_ASSIGN_OR_RETURN(perm, tfl::NormalizeAxes(perm, r));
  if (static_cast<int>(perm.size()) != r) return InvalidArgument("perm has %zu entries for rank %d", perm.size(), r);
  if (r == 4) {  // NCHW in -> NHWC -> perm -> NCHW out, as one permutation
    Ints total;
    for (int64_t q : kToNchw) total.push_back(kToNhwc[static_cast<size_t>(perm[static_cast<size_t>(q)])]);
    perm = total;
  }
  KILN_ASSIGN_OR_RETURN(int x, Act(x_in));
  Define(op.outputs[0], Permute(x, KShape(x_in), perm, T(op.outputs[0]).name), false);
  return Status::Ok();
}

Status TfliteImporter::Slice(const tfl::Operator& op, bool strided) {
  const int x_in = In(op, 0), out = op.outputs[0], r = Rank(x_in);
  KILN_ASSIGN_OR_RETURN(Ints begin, ConstInts(In(op, 1)), "begin");
  KILN_ASSIGN_OR_RETURN(Ints end, ConstInts(In(op, 2)), "end / size");
  Ints steps(begin.size(), 1);
  const tfl::SliceMasks m = tfl::ReadSliceMasks(op, strided);
  if (m.unsupported) return Keep(op, "STRIDED_SLICE", "ellipsis or new-axis mask");
  if (strided) {
    KILN_ASSIGN_OR_RETURN(steps, ConstInts(In(op, 3)), "strides");
  }
  KILN_ASSIGN_OR_RETURN(tfl::SliceSpec spec, tfl::ResolveSlice(begin, end, steps, m, Shape(x_in)));
  Ints axes(begin.size());
  std::iota(axes.begin(), axes.end(), 0);
  KILN_ASSIGN_OR_RETURN(int x, Act(x_in));
  std::vector<int> in = {x, IntsConst(Tmp("starts"), spec.starts), IntsConst(Tmp("ends"), spec.ends),
                         IntsConst(Tmp("axes"), KAxes(axes, r)), IntsConst(Tmp("steps"), spec.steps)};
  if (!m.shrink) return Emit(OpType::Slice, in, out, {});
  Ints kept = Shape(out);  // shrunk axes: slice keeping them, then drop them in TFLite's layout
  for (size_t d = 0; d < static_cast<size_t>(r); ++d)
    if (m.shrink >> d & 1) kept.insert(kept.begin() + static_cast<std::ptrdiff_t>(std::min(d, kept.size())), 1);
  if (static_cast<int>(kept.size()) != r) return InvalidArgument("output shape does not match the shrink mask");
  int y = Op(OpType::Slice, in, Tmp("slice"));
  if (r != 4) return Emit(OpType::Reshape, {y, IntsConst(Tmp("shape"), Shape(out))}, out, {}, true);
  return DropDims(y, PermuteDims(kept, kToNchw), out);
}

Status TfliteImporter::Split(const tfl::Operator& op, int x_in, int axis_in, int sizes_in) {
  KILN_ASSIGN_OR_RETURN(const int64_t axis, OneAxis(axis_in, Rank(x_in)));
  fb::SplitParamsT p;
  p.axis = static_cast<int32_t>(KAxes({axis}, Rank(x_in))[0]);
  if (sizes_in >= 0) {  // SPLIT_V; one size may be -1: the rest
    KILN_ASSIGN_OR_RETURN(p.split, ConstInts(sizes_in), "size_splits");
    auto free = std::find(p.split.begin(), p.split.end(), -1);
    const int64_t sum = std::accumulate(p.split.begin(), p.split.end(), int64_t{0});
    if (free != p.split.end()) *free = Shape(x_in)[static_cast<size_t>(axis)] + 1 - sum;
  }
  KILN_ASSIGN_OR_RETURN(int x, Act(x_in));
  MultiOp(OpType::Split, {x}, op, U(p));
  return Status::Ok();
}

Status TfliteImporter::Gather(const tfl::Operator& op) {
  const int x_in = In(op, 0), idx_in = In(op, 1), r = Rank(x_in);
  if (op.options.Int(tfl::opt::kGatherBatchDims, 0) != 0) return Keep(op, "GATHER", "batch_dims");
  KILN_ASSIGN_OR_RETURN(Ints axis, tfl::NormalizeAxes({op.options.Int(tfl::opt::kGatherAxis, 0)}, r));
  KILN_ASSIGN_OR_RETURN(int idx, Nhwc(idx_in));
  const bool nchw = r == 4 && Rank(idx_in) == 1;  // the output is 4-D too: gather in NCHW
  fb::AxisParamsT p;
  p.axis = static_cast<int32_t>(nchw ? NchwAxis(axis[0]) : axis[0]);
  KILN_ASSIGN_OR_RETURN(int x, nchw ? Act(x_in) : Nhwc(x_in));
  return Emit(OpType::Gather, {x, idx}, op.outputs[0], U(p), !nchw);
}

Status TfliteImporter::ArgMax(OpType type, const tfl::Operator& op) {
  const int x_in = In(op, 0), out = op.outputs[0];
  fb::ArgParamsT p;
  KILN_ASSIGN_OR_RETURN(int64_t axis, OneAxis(In(op, 1), Rank(x_in)));
  p.axis = static_cast<int32_t>(axis);
  p.keepdims = false;
  KILN_ASSIGN_OR_RETURN(int x, Nhwc(x_in));
  if (T(out).type == tfl::kInt64) return Emit(type, {x}, out, U(p), true);
  KILN_ASSIGN_OR_RETURN(fb::DataType to, MapType(T(out).type));  // Kiln's ArgMax gives int64
  auto cast = Make<fb::CastParamsT>([&](auto& q) { q.to = to; });
  return Emit(OpType::Cast, {Op(type, {x}, Tmp("i64"), U(p))}, out, std::move(cast), true);
}

Status TfliteImporter::BatchMatMul(const tfl::Operator& op) {
  std::vector<int> in;
  for (int k = 0; k < 2; ++k) {
    const int i = In(op, static_cast<size_t>(k)), r = Rank(i);
    KILN_ASSIGN_OR_RETURN(int t, Nhwc(i));
    if (op.options.Bool(k == 0 ? tfl::opt::kAdjX : tfl::opt::kAdjY, false)) {
      if (r < 2) return InvalidArgument("adjoint of a rank-%d input", r);
      Ints perm(static_cast<size_t>(r));
      std::iota(perm.begin(), perm.end(), 0);
      std::swap(perm[static_cast<size_t>(r - 1)], perm[static_cast<size_t>(r - 2)]);
      t = Permute(t, Shape(i), perm, Tmp(k == 0 ? "adj_x" : "adj_y"));
    }
    in.push_back(t);
  }
  return Emit(OpType::MatMul, in, op.outputs[0], {}, true);
}

Status TfliteImporter::Dequantize(const tfl::Operator& op) {
  const int x_in = In(op, 0);
  if (!IsConst(x_in)) {  // ImportOpQuantized made x_in's f32 view; f16 activations are cast
    KILN_ASSIGN_OR_RETURN(int x, Act(x_in));
    if (T(x_in).type == tfl::kFloat16)
      return Unary(OpType::Cast, op, Make<fb::CastParamsT>([](auto& p) { p.to = fb::DataType::F32; }));
    if (!tfl::IsQuantized(T(x_in))) return Keep(op, "DEQUANTIZE", "of a tensor without quantization scales");
    return Emit(OpType::Identity, {x}, op.outputs[0]);
  }
  KILN_ASSIGN_OR_RETURN(ConstData d, Const(x_in));
  Status s = tfl::ToFloat32(&d, T(x_in).quant);
  if (s.code() == StatusCode::kUnsupported) return Keep(op, "DEQUANTIZE", s.message());
  KILN_RETURN_IF_ERROR(s, "constant '%s'", T(x_in).name.c_str());
  folded_[op.outputs[0]] = std::move(d);
  return Status::Ok();
}

Status TfliteImporter::Densify(const tfl::Operator& op) {
  const int x_in = In(op, 0), out = op.outputs[0];
  if (!IsConst(x_in)) return Keep(op, "DENSIFY", "of a non-constant tensor");
  KILN_ASSIGN_OR_RETURN(ConstData d, Const(x_in));
  if (T(out).has_shape && Ints(T(out).shape.begin(), T(out).shape.end()) != d.shape)
    return InvalidArgument("output shape %s differs from its input's %s", ShapeToString(Shape(out)).c_str(),
                           ShapeToString(d.shape).c_str());
  if (T(out).type != d.type)
    return InvalidArgument("output type %s differs from its input's %s", tfl::TensorTypeName(T(out).type),
                           tfl::TensorTypeName(d.type));
  folded_[out] = std::move(d);
  return Status::Ok();
}

Status TfliteImporter::Keep(const tfl::Operator& op, const std::string& type, const std::string& why) {
  missing_[type + (why.empty() ? "" : " (" + why + ")")].push_back(name_);
  ++kept_;
  report_->unsupported[type]++;
  std::vector<int> in;
  for (int32_t i : op.inputs) in.push_back(Act(i).ok() ? *Act(i) : -1);
  fb::CustomParamsT p;
  p.type_name = type;
  p.domain = "tflite";
  MultiOp(OpType::Custom, in, op, U(p));
  return Status::Ok();
}

Status TfliteImporter::ImportOp(const tfl::Operator& op, const tfl::OperatorCode& code, const std::string& type) {
  const tfl::Options& o = op.options;
  const int32_t c = code.builtin;
  auto in = [&](size_t k) { return k < op.inputs.size() ? op.inputs[k] : -1; };
  static const std::map<int32_t, OpType> kUnary = {
      {tfl::RELU, OpType::Relu}, {tfl::LOGISTIC, OpType::Sigmoid}, {tfl::TANH, OpType::Tanh},
      {tfl::HARD_SWISH, OpType::HardSwish}, {tfl::EXP, OpType::Exp}, {tfl::LOG, OpType::Log},
      {tfl::SQRT, OpType::Sqrt}, {tfl::NEG, OpType::Neg}, {tfl::ABS, OpType::Abs}, {tfl::LOGICAL_NOT, OpType::Not}};
  static const std::map<int32_t, OpType> kBinary = {
      {tfl::ADD, OpType::Add}, {tfl::SUB, OpType::Sub}, {tfl::MUL, OpType::Mul}, {tfl::DIV, OpType::Div},
      {tfl::MAXIMUM, OpType::Max}, {tfl::MINIMUM, OpType::Min}, {tfl::POW, OpType::Pow}, {tfl::PRELU, OpType::PRelu},
      {tfl::LESS, OpType::Less}, {tfl::GREATER, OpType::Greater}, {tfl::EQUAL, OpType::Equal},
      {tfl::SELECT, OpType::Where}, {tfl::SELECT_V2, OpType::Where}, {tfl::SQUARED_DIFFERENCE, OpType::Sub}};
  static const std::map<int32_t, OpType> kReduce = {
      {tfl::MEAN, OpType::ReduceMean}, {tfl::SUM, OpType::ReduceSum}, {tfl::REDUCE_MAX, OpType::ReduceMax},
      {tfl::REDUCE_MIN, OpType::ReduceMin}, {tfl::REDUCE_PROD, OpType::ReduceProd}};
  if (kUnary.count(c)) return Unary(kUnary.at(c), op);
  if (kBinary.count(c)) {  // ADD, SUB, MUL, DIV carry a fused activation
    const bool fused = c == tfl::ADD || c == tfl::SUB || c == tfl::MUL || c == tfl::DIV;
    return Binary(kBinary.at(c), op, fused ? o.Byte(tfl::opt::kBinaryActivation, 0) : int8_t{tfl::kActNone},
                  c == tfl::SQUARED_DIFFERENCE);
  }
  if (kReduce.count(c)) return Reduce(kReduce.at(c), op);
  const bool mp_deconv = c == tfl::CUSTOM && code.custom_code == "Convolution2DTransposeBias";
  const bool mp_argmax = c == tfl::CUSTOM && code.custom_code == "MaxPoolingWithArgmax2D";
  switch (mp_deconv ? int32_t{tfl::TRANSPOSE_CONV} : mp_argmax ? int32_t{tfl::MAX_POOL_2D} : c) {
    case tfl::CONV_2D: case tfl::DEPTHWISE_CONV_2D: case tfl::TRANSPOSE_CONV:
    case tfl::AVERAGE_POOL_2D: case tfl::MAX_POOL_2D: {
      KILN_ASSIGN_OR_RETURN(tfl::Window w, tfl::ReadWindow(code, op));
      if (c == tfl::AVERAGE_POOL_2D) return Pool(OpType::AveragePool, op, w);
      if (c == tfl::MAX_POOL_2D || mp_argmax) return Pool(OpType::MaxPool, op, w);
      if (mp_deconv) return Conv(op, tfl::TRANSPOSE_CONV, w, in(0), in(1), in(2));  // input, weights (OHWI), bias
      if (c == tfl::TRANSPOSE_CONV) return Conv(op, c, w, in(2), in(1), in(3));  // output_shape, weights, input, bias
      return Conv(op, c, w, in(0), in(1), in(2));
    }
    case tfl::FULLY_CONNECTED: return FullyConnected(op);
    case tfl::UNIDIRECTIONAL_SEQUENCE_LSTM: return SequenceLstm(op, false);
    case tfl::IF: return IfOp(op);
    case tfl::WHILE: return WhileOp(op);
    case tfl::BIDIRECTIONAL_SEQUENCE_LSTM: return SequenceLstm(op, true);
    case tfl::RELU6: return Unary(OpType::Clip, op, Clip(0.f, 6.f));
    case tfl::RELU_N1_TO_1: return Unary(OpType::Clip, op, Clip(-1.f, 1.f));
    case tfl::ELU: return Unary(OpType::Elu, op, U(fb::EluParamsT()));
    case tfl::RSQRT: case tfl::SQUARE: {
      KILN_ASSIGN_OR_RETURN(int x, Act(in(0)));
      if (c == tfl::SQUARE) return Emit(OpType::Mul, {x, x}, op.outputs[0]);
      return Emit(OpType::Reciprocal, {Op(OpType::Sqrt, {x}, Tmp("sqrt"))}, op.outputs[0]);
    }
    case tfl::LEAKY_RELU:
      return Unary(OpType::LeakyRelu, op,
                   Make<fb::LeakyReluParamsT>([&](auto& p) { p.alpha = o.Float(tfl::opt::kLeakyAlpha, 0.2f); }));
    case tfl::GELU:
      return Unary(OpType::Gelu, op, Make<fb::GeluParamsT>([&](auto& p) {
                     if (o.Bool(tfl::opt::kGeluApproximate, false)) p.approximate = fb::GeluApproximation::Tanh;
                   }));
    case tfl::CONCATENATION: {
      const int r = Rank(op.outputs[0]);
      KILN_ASSIGN_OR_RETURN(Ints axis, tfl::NormalizeAxes({o.Int(tfl::opt::kConcatAxis, 0)}, r));
      fb::AxisParamsT p;
      p.axis = static_cast<int32_t>(KAxes(axis, r)[0]);
      std::vector<int> xs;
      for (int32_t i : op.inputs) {
        KILN_ASSIGN_OR_RETURN(xs.emplace_back(), Act(i));
      }
      return Emit(OpType::Concat, xs, op.outputs[0], U(p), false, o.Byte(tfl::opt::kConcatActivation, 0));
    }
    case tfl::RESHAPE: case tfl::SQUEEZE: case tfl::EXPAND_DIMS: return Reshape(op);
    case tfl::SOFTMAX: case tfl::LOG_SOFTMAX: {
      KILN_ASSIGN_OR_RETURN(int x, Act(in(0)));
      const float beta = c == tfl::SOFTMAX ? o.Float(tfl::opt::kSoftmaxBeta, 1.f) : 1.f;
      if (beta != 1.f)
        x = Op(OpType::Mul, {x, b_.addConstant(Unique(Tmp("beta")), {}, std::vector<float>{beta})}, Tmp("scaled"));
      fb::AxisParamsT p;
      p.axis = Is4D(in(0)) ? 1 : -1;
      return Emit(c == tfl::SOFTMAX ? OpType::Softmax : OpType::LogSoftmax, {x}, op.outputs[0], U(p));
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
      KILN_ASSIGN_OR_RETURN(Ints reps, ConstInts(in(1)), "multiples");
      if (Rank(in(0)) == 4 && reps.size() == 4) reps = PermuteDims(reps, kToNchw);
      KILN_ASSIGN_OR_RETURN(int x, Act(in(0)));
      return Emit(OpType::Tile, {x, IntsConst(Tmp("repeats"), reps)}, op.outputs[0]);
    }
    case tfl::DEPTH_TO_SPACE: case tfl::SPACE_TO_DEPTH:  // TF's NHWC channel order is DCR (the default mode)
      return Unary(c == tfl::DEPTH_TO_SPACE ? OpType::DepthToSpace : OpType::SpaceToDepth, op,
                   Make<fb::SpaceDepthParamsT>([&](auto& p) { p.blocksize = o.Int(tfl::opt::kBlockSize, 0); }));
    case tfl::CAST: {
      auto to = MapType(T(op.outputs[0]).type);
      if (!to.ok()) return Keep(op, type, to.status().message());
      return Unary(OpType::Cast, op, Make<fb::CastParamsT>([&](auto& p) { p.to = *to; }));
    }
    case tfl::ARG_MAX: return ArgMax(OpType::ArgMax, op);
    case tfl::ARG_MIN: return ArgMax(OpType::ArgMin, op);
    case tfl::BATCH_MATMUL: return BatchMatMul(op);
    case tfl::DEQUANTIZE: return Dequantize(op);
    case tfl::QUANTIZE: {  // f32 (or another quantization's f32 view) -> ImportOpQuantized quantizes the output
      if (!tfl::IsQuantized(T(op.outputs[0]))) return Keep(op, type, "output without quantization scales");
      KILN_ASSIGN_OR_RETURN(int x, Act(in(0)));
      return Emit(OpType::Identity, {x}, op.outputs[0]);
    }
    case tfl::DENSIFY: return Densify(op);
    case tfl::CUSTOM:
      if (code.custom_code == "MaxUnpooling2D") return MaxUnpool(op, code, type);
      return Keep(op, type.empty() ? "CUSTOM" : type, "custom op");
    default: return Keep(op, type, "");
  }
}

}  // namespace kiln::tflite_import
