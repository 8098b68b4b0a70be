// Shape functions: the nn family (Conv, ConvTranspose, pools, normalizations,
// MatMul, Gemm, Softmax). ONNX semantics throughout; every error names the op
// and the offending value, e.g. "Conv: input has 5 channels but weights
// expect 3 (group 1)".
#include <algorithm>
#include <string>

#include "checked_math.h"
#include "elements.h"
#include "ops/attention_mask.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {
namespace {

using IntVec = std::vector<int64_t>;
using FbInts = flatbuffers::Vector<int32_t>;

std::string Join(const IntVec& v) { return ShapeToString(v); }

// An attribute list with one entry per spatial axis (or `per` entries per
// axis, for pads): absent or empty gives `n * per` copies of `dflt`.
StatusOr<IntVec> SpatialList(const char* op, const char* what, const FbInts* v, int n, int per, int64_t dflt,
                             int64_t min_value) {
  size_t want = static_cast<size_t>(n * per);
  if (!v || v->size() == 0) return IntVec(want, dflt);
  if (v->size() != want)
    return InvalidArgument("%s: %s has %u entries, expected %zu (%s for %d spatial axes)", op, what, v->size(), want,
                           per == 1 ? "one" : "two", n);
  IntVec out(v->begin(), v->end());
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] < min_value)
      return InvalidArgument("%s: %s[%zu] is %lld, must be >= %lld", op, what, i, static_cast<long long>(out[i]),
                             static_cast<long long>(min_value));
  return out;
}

// Output size of a sliding window (Conv, pools) along every spatial axis.
// in: spatial input dims; kernel/strides/dilations per axis; pads explicit
// [begins..., ends...] (ignored for SAME_*/VALID).
StatusOr<IntVec> WindowOutput(const char* op, const IntVec& in, const IntVec& kernel, const IntVec& strides,
                              const IntVec& dilations, const IntVec& pads, fb::AutoPad auto_pad, bool ceil_mode) {
  size_t n = in.size();
  IntVec out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t ek = SatAdd(SatMulSigned(kernel[i] - 1, dilations[i]), 1);  // effective (dilated) kernel extent
    switch (auto_pad) {
      case fb::AutoPad::SameUpper:
      case fb::AutoPad::SameLower:
        out[i] = (in[i] + strides[i] - 1) / strides[i];
        continue;
      case fb::AutoPad::Valid:
      case fb::AutoPad::NotSet:
      default: {
        int64_t pb = auto_pad == fb::AutoPad::Valid ? 0 : pads[i];
        int64_t pe = auto_pad == fb::AutoPad::Valid ? 0 : pads[i + n];
        int64_t span = SatAdd(SatAdd(in[i], pb), pe);
        if (span == kDimOverflow) {  // refused by the session's tensor limit
          out[i] = kDimOverflow;
          continue;
        }
        if (span < ek)
          return InvalidArgument("%s: kernel extent %lld (kernel %lld, dilation %lld) on spatial axis %zu is larger "
                                 "than the padded input %lld (input %lld, pads %lld+%lld)",
                                 op, static_cast<long long>(ek), static_cast<long long>(kernel[i]),
                                 static_cast<long long>(dilations[i]), i, static_cast<long long>(span),
                                 static_cast<long long>(in[i]), static_cast<long long>(pb), static_cast<long long>(pe));
        int64_t o = (span - ek) / strides[i] + 1;
        if (ceil_mode) {
          o = (span - ek + strides[i] - 1) / strides[i] + 1;
          // A window must start inside the input or its begin padding.
          if ((o - 1) * strides[i] >= in[i] + pb) --o;
        }
        out[i] = o;
      }
    }
  }
  return out;
}

Status SameType(ShapeContext& c, int a, int b, const char* what_a, const char* what_b) {
  if (c.hasInput(a) && c.hasInput(b) && c.inType(a) != c.inType(b)) {
    const bool quant = c.inType(a) == fb::DataType::U8 || c.inType(a) == fb::DataType::I8;
    return InvalidArgument("%s: %s '%s' is %s but %s '%s' is %s%s", c.op().typeName(), what_a, c.input(a).name().c_str(),
                           DataTypeName(c.inType(a)), what_b, c.input(b).name().c_str(), DataTypeName(c.inType(b)),
                           quant ? " (a quantized tensor needs a DequantizeLinear first)" : "");
  }
  return Status::Ok();
}

// Input k must be 1-D with `n` entries (per-channel parameters).
Status PerChannel(ShapeContext& c, int k, const char* what, int64_t n) {
  const char* op = c.op().typeName();
  if (c.inRank(k) != 1 || c.inShape(k)[0] != n)
    return InvalidArgument("%s: %s (input %d) must have shape [%lld], has %s", op, what, k, static_cast<long long>(n),
                           Join(c.inShape(k)).c_str());
  return SameType(c, 0, k, "X", what);
}

}  // namespace

// ---- Conv / ConvTranspose ----

namespace {

// Conv's shape, X and W at inputs xi and wi (QLinearConv's are 0 and 3),
// the bias (checked like X's type when bi >= 0) and the output of `out`
// (like X when `out_like_x`).
Status ConvShape(ShapeContext& c, int xi, int wi, int bi, bool out_like_x, fb::DataType out_dtype) {
  const char* op = c.op().typeName();
  const bool transpose = c.op().type == fb::OpType::ConvTranspose;
  const fb::ConvParams* p = c.params<fb::ConvParams>();
  const IntVec& x = c.inShape(xi);
  const IntVec& w = c.inShape(wi);
  if (x.size() < 3)
    return InvalidArgument("%s: input must be [N, C, spatial...] with at least one spatial axis, is %s", op,
                           Join(x).c_str());
  if (w.size() != x.size())
    return InvalidArgument("%s: weights %s have rank %zu but the input %s has rank %zu", op, Join(w).c_str(),
                           w.size(), Join(x).c_str(), x.size());
  if (out_like_x) KILN_RETURN_IF_ERROR(SameType(c, xi, wi, "X", "W"));
  const int n = static_cast<int>(x.size()) - 2;
  const int64_t group = p ? p->group() : 1;
  if (group < 1) return InvalidArgument("%s: group is %lld, must be >= 1", op, static_cast<long long>(group));
  int64_t out_channels;
  if (!transpose) {
    // W: [M, C / group, k...]
    if (x[1] != SatMul(w[1], group))
      return InvalidArgument("%s: input has %lld channels but weights expect %lld (group %lld)", op,
                             static_cast<long long>(x[1]), static_cast<long long>(SatMul(w[1], group)),
                             static_cast<long long>(group));
    if (w[0] % group != 0)
      return InvalidArgument("%s: %lld output channels (weights %s) do not divide into %lld groups", op,
                             static_cast<long long>(w[0]), Join(w).c_str(), static_cast<long long>(group));
    out_channels = w[0];
  } else {
    // W: [C, M / group, k...]
    if (x[1] != w[0])
      return InvalidArgument("%s: input has %lld channels but weights %s expect %lld", op,
                             static_cast<long long>(x[1]), Join(w).c_str(), static_cast<long long>(w[0]));
    if (x[1] % group != 0)
      return InvalidArgument("%s: %lld input channels do not divide into %lld groups", op,
                             static_cast<long long>(x[1]), static_cast<long long>(group));
    out_channels = SatMul(w[1], group);
  }
  if (bi >= 0 && c.hasInput(bi)) {
    if (out_like_x) {
      KILN_RETURN_IF_ERROR(PerChannel(c, bi, "bias", out_channels));
    } else if (c.inRank(bi) != 1 || c.inShape(bi)[0] != out_channels) {
      return InvalidArgument("%s: bias (input %d) must have shape [%lld], has %s", op, bi,
                             static_cast<long long>(out_channels), Join(c.inShape(bi)).c_str());
    }
  }

  IntVec kernel(w.begin() + 2, w.end());
  if (p && p->kernel_shape() && p->kernel_shape()->size() > 0) {
    KILN_ASSIGN_OR_RETURN(IntVec ks, SpatialList(op, "kernel_shape", p->kernel_shape(), n, 1, 1, 1));
    if (ks != kernel)
      return InvalidArgument("%s: kernel_shape %s does not match the weights' spatial dims %s (weights %s)", op,
                             Join(ks).c_str(), Join(kernel).c_str(), Join(w).c_str());
  }
  for (int i = 0; i < n; ++i)
    if (kernel[i] < 1) return InvalidArgument("%s: weights %s have an empty kernel", op, Join(w).c_str());
  KILN_ASSIGN_OR_RETURN(IntVec strides, SpatialList(op, "strides", p ? p->strides() : nullptr, n, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(IntVec dilations, SpatialList(op, "dilations", p ? p->dilations() : nullptr, n, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(IntVec pads, SpatialList(op, "pads", p ? p->pads() : nullptr, n, 2, 0, 0));
  const fb::AutoPad auto_pad = p ? p->auto_pad() : fb::AutoPad::NotSet;
  IntVec in(x.begin() + 2, x.end());
  IntVec out_shape = {x[0], out_channels};

  if (!transpose) {
    KILN_ASSIGN_OR_RETURN(IntVec out, WindowOutput(op, in, kernel, strides, dilations, pads, auto_pad, false));
    out_shape.insert(out_shape.end(), out.begin(), out.end());
  } else {
    KILN_ASSIGN_OR_RETURN(IntVec out_pad, SpatialList(op, "output_padding", p ? p->output_padding() : nullptr, n, 1, 0, 0));
    for (int i = 0; i < n; ++i)
      if (out_pad[i] >= strides[i] && out_pad[i] >= dilations[i])
        return InvalidArgument("%s: output_padding[%d] = %lld must be smaller than the stride (%lld) or the dilation "
                               "(%lld)", op, i, static_cast<long long>(out_pad[i]),
                               static_cast<long long>(strides[i]), static_cast<long long>(dilations[i]));
    const FbInts* os = p ? p->output_shape() : nullptr;
    for (int i = 0; i < n; ++i) {
      int64_t o;
      if (os && os->size() > 0) {
        // output_shape gives the spatial dims (a full [N, M, ...] shape is accepted too).
        if (os->size() != static_cast<size_t>(n) && os->size() != static_cast<size_t>(n + 2))
          return InvalidArgument("%s: output_shape has %u entries, expected %d", op, os->size(), n);
        o = os->Get(os->size() - static_cast<size_t>(n) + static_cast<size_t>(i));
        if (o < 1) return InvalidArgument("%s: output_shape[%d] is %lld", op, i, static_cast<long long>(o));
      } else if (auto_pad == fb::AutoPad::SameUpper || auto_pad == fb::AutoPad::SameLower) {
        o = SatMul(in[i], strides[i]);
      } else {
        int64_t pb = auto_pad == fb::AutoPad::Valid ? 0 : pads[i];
        int64_t pe = auto_pad == fb::AutoPad::Valid ? 0 : pads[i + n];
        o = SatAdd(SatAdd(SatMulSigned(strides[i], in[i] - 1), out_pad[i]), SatMulSigned(kernel[i] - 1, dilations[i]));
        if (o != kDimOverflow) o = o + 1 - pb - pe;
        if (o < 1)
          return InvalidArgument("%s: pads %lld+%lld leave no output on spatial axis %d (input %lld, kernel %lld, "
                                 "stride %lld)", op, static_cast<long long>(pb), static_cast<long long>(pe), i,
                                 static_cast<long long>(in[i]), static_cast<long long>(kernel[i]),
                                 static_cast<long long>(strides[i]));
      }
      out_shape.push_back(o);
    }
  }
  c.setOutput(0, out_shape, out_like_x ? c.inType(xi) : out_dtype);
  return Status::Ok();
}

// MatMul's shape, A and B at inputs ai and bi.
Status MatMulShape(ShapeContext& c, int ai, int bi, bool out_like_a, fb::DataType out_dtype) {
  const char* op = c.op().typeName();
  IntVec a = c.inShape(ai), b = c.inShape(bi);
  if (a.empty() || b.empty())
    return InvalidArgument("%s: operands must have rank >= 1, are %s and %s", op, Join(a).c_str(), Join(b).c_str());
  if (out_like_a) KILN_RETURN_IF_ERROR(SameType(c, ai, bi, "A", "B"));
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);  // [K] -> [1, K]
  if (b_vec) b.push_back(1);          // [K] -> [K, 1]
  if (a.back() != b[b.size() - 2])
    return InvalidArgument("%s: A %s and B %s: inner dims %lld and %lld differ", op, Join(c.inShape(ai)).c_str(),
                           Join(c.inShape(bi)).c_str(), static_cast<long long>(a.back()),
                           static_cast<long long>(b[b.size() - 2]));
  IntVec ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  KILN_ASSIGN_OR_RETURN(IntVec out, BroadcastShapes(ba, bb), "%s: batch dims", op);
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  c.setOutput(0, out, out_like_a ? c.inType(ai) : out_dtype);
  return Status::Ok();
}

// "'name' (input k)": the quantized ops' errors name the tensor.
std::string Named(ShapeContext& c, int k) { return "'" + c.input(k).name() + "' (input " + std::to_string(k) + ")"; }

bool IsQuant8(fb::DataType t) { return t == fb::DataType::I8 || t == fb::DataType::U8; }

// Input k (when given) must be i8 or u8.
Status NeedQuant8(ShapeContext& c, int k, const char* what) {
  if (c.hasInput(k) && !IsQuant8(c.inType(k)))
    return InvalidArgument("%s: %s %s must be int8 or uint8, is %s", c.op().typeName(), what, Named(c, k).c_str(),
                           DataTypeName(c.inType(k)));
  return Status::Ok();
}

// Zero point k (when given) must have the type of its operand j.
Status ZeroPointType(ShapeContext& c, int k, int j, const char* what) {
  if (c.hasInput(k) && c.inType(k) != c.inType(j))
    return InvalidArgument("%s: %s %s is %s but its operand %s is %s", c.op().typeName(), what, Named(c, k).c_str(),
                           DataTypeName(c.inType(k)), Named(c, j).c_str(), DataTypeName(c.inType(j)));
  return Status::Ok();
}

// Scale k must be a float type.
Status ScaleType(ShapeContext& c, int k, const char* what) {
  if (!IsFloating(c.inType(k)))
    return InvalidArgument("%s: %s %s must be a float tensor, is %s", c.op().typeName(), what, Named(c, k).c_str(),
                           DataTypeName(c.inType(k)));
  return Status::Ok();
}

// The QLinear ops' operand checks: 8-bit operands at a, b, y (the output's
// zero point) with zero points of their types and float scales.
Status QLinearTypes(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(NeedQuant8(c, 0, "a/x"));
  KILN_RETURN_IF_ERROR(NeedQuant8(c, 3, "b/w"));
  KILN_RETURN_IF_ERROR(NeedQuant8(c, 7, "y_zero_point"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 2, 0, "a/x zero point"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 5, 3, "b/w zero point"));
  KILN_RETURN_IF_ERROR(ScaleType(c, 1, "a/x scale"));
  KILN_RETURN_IF_ERROR(ScaleType(c, 4, "b/w scale"));
  return ScaleType(c, 6, "y_scale");
}

}  // namespace

// Input 3, when present, is a residual added before the activation
// (fuse_residual): it has the output's shape and dtype.
Status InferShapeConv(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(ConvShape(c, 0, 1, 2, true, fb::DataType::F32));
  if (!c.hasInput(3)) return Status::Ok();
  const Tensor& y = *c.output(0);
  if (c.inShape(3) != y.shape() || c.inType(3) != y.dtype())
    return InvalidArgument("Conv: the residual (input 3) is %s %s, the output %s %s", DataTypeName(c.inType(3)),
                           Join(c.inShape(3)).c_str(), DataTypeName(y.dtype()), Join(y.shape()).c_str());
  return Status::Ok();
}

Status InferShapeConvInteger(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(NeedQuant8(c, 0, "x"));
  KILN_RETURN_IF_ERROR(NeedQuant8(c, 1, "w"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 2, 0, "x_zero_point"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 3, 1, "w_zero_point"));
  return ConvShape(c, 0, 1, -1, false, fb::DataType::I32);
}

Status InferShapeQLinearConv(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(QLinearTypes(c));
  if (c.hasInput(8) && c.inType(8) != fb::DataType::I32)
    return InvalidArgument("QLinearConv: bias B %s must be int32, is %s", Named(c, 8).c_str(), DataTypeName(c.inType(8)));
  return ConvShape(c, 0, 3, 8, false, c.inType(7));
}

Status InferShapeQLinearAdd(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(NeedQuant8(c, 0, "A"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 2, 0, "A_zero_point"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 3, 0, "B"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 5, 0, "B_zero_point"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 7, 0, "C_zero_point"));
  KILN_RETURN_IF_ERROR(ScaleType(c, 1, "A_scale"));
  KILN_RETURN_IF_ERROR(ScaleType(c, 4, "B_scale"));
  KILN_RETURN_IF_ERROR(ScaleType(c, 6, "C_scale"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, BroadcastShapes(c.inShape(0), c.inShape(3)), "QLinearAdd: A and B");
  c.setOutput(0, shape, c.inType(0));
  return Status::Ok();
}

Status InferShapeMatMulInteger(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(NeedQuant8(c, 0, "A"));
  KILN_RETURN_IF_ERROR(NeedQuant8(c, 1, "B"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 2, 0, "a_zero_point"));
  KILN_RETURN_IF_ERROR(ZeroPointType(c, 3, 1, "b_zero_point"));
  return MatMulShape(c, 0, 1, false, fb::DataType::I32);
}

// Input 8, Kiln's (fuse_qdq's form of a quantized Gemm; ONNX's op has 8
// inputs): an int32 bias of B's columns, added to the sum as QLinearConv's.
Status InferShapeQLinearMatMul(ShapeContext& c) {
  KILN_RETURN_IF_ERROR(QLinearTypes(c));
  if (c.hasInput(8)) {
    const IntVec& b = c.inShape(3);
    const IntVec& bias = c.inShape(8);
    if (c.inType(8) != fb::DataType::I32)
      return InvalidArgument("QLinearMatMul: bias %s must be int32, is %s", Named(c, 8).c_str(),
                             DataTypeName(c.inType(8)));
    if (bias.size() != 1 || b.size() < 2 || (b.back() >= 0 && bias[0] >= 0 && bias[0] != b.back()))
      return InvalidArgument("QLinearMatMul: bias %s must be 1-D with B's %lld columns, is %s", Named(c, 8).c_str(),
                             static_cast<long long>(b.empty() ? 0 : b.back()), Join(bias).c_str());
  }
  return MatMulShape(c, 0, 3, false, c.inType(7));
}

// ---- pools ----

Status InferShapePool(ShapeContext& c) {
  const char* op = c.op().typeName();
  const fb::PoolParams* p = c.params<fb::PoolParams>();
  const IntVec& x = c.inShape(0);
  if (x.size() < 3)
    return InvalidArgument("%s: input must be [N, C, spatial...] with at least one spatial axis, is %s", op,
                           Join(x).c_str());
  const int n = static_cast<int>(x.size()) - 2;
  if (!p || !p->kernel_shape() || p->kernel_shape()->size() == 0)
    return InvalidArgument("%s: kernel_shape is required", op);
  KILN_ASSIGN_OR_RETURN(IntVec kernel, SpatialList(op, "kernel_shape", p->kernel_shape(), n, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(IntVec strides, SpatialList(op, "strides", p->strides(), n, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(IntVec dilations, SpatialList(op, "dilations", p->dilations(), n, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(IntVec pads, SpatialList(op, "pads", p->pads(), n, 2, 0, 0));
  if (p->auto_pad() == fb::AutoPad::NotSet)
    for (int i = 0; i < n; ++i) {
      int64_t ek = SatAdd(SatMulSigned(kernel[i] - 1, dilations[i]), 1);
      if (pads[i] >= ek || pads[i + n] >= ek)
        return InvalidArgument("%s: pads %lld+%lld on spatial axis %d must be smaller than the kernel extent %lld", op,
                               static_cast<long long>(pads[i]), static_cast<long long>(pads[i + n]), i,
                               static_cast<long long>(ek));
    }
  IntVec in(x.begin() + 2, x.end());
  KILN_ASSIGN_OR_RETURN(IntVec out, WindowOutput(op, in, kernel, strides, dilations, pads, p->auto_pad(), p->ceil_mode()));
  IntVec shape = {x[0], x[1]};
  shape.insert(shape.end(), out.begin(), out.end());
  c.setOutput(0, shape, c.inType(0));
  if (c.numOutputs() > 1) c.setOutput(1, shape, fb::DataType::I64);  // MaxPool Indices
  return Status::Ok();
}

// MaxUnpool (X, I, output_shape?): I has X's shape and holds flat indices into
// the whole output tensor (as MaxPool's Indices). Output spatial size
// (in - 1) * stride - pad_begin - pad_end + kernel, or output_shape's values
// (the full [N, C, spatial...] shape as in ONNX; spatial dims alone accepted).
Status InferShapeMaxUnpool(ShapeContext& c) {
  const char* op = c.op().typeName();
  const fb::MaxUnpoolParams* p = c.params<fb::MaxUnpoolParams>();
  const IntVec& x = c.inShape(0);
  if (x.size() < 3)
    return InvalidArgument("%s: input must be [N, C, spatial...] with at least one spatial axis, is %s", op,
                           Join(x).c_str());
  if (c.inShape(1) != x)
    return InvalidArgument("%s: indices (input 1) %s must have the input's shape %s", op, Join(c.inShape(1)).c_str(),
                           Join(x).c_str());
  if (c.inType(1) != fb::DataType::I64)
    return InvalidArgument("%s: indices (input 1) must be i64, are %s", op, DataTypeName(c.inType(1)));
  const int n = static_cast<int>(x.size()) - 2;
  if (!p || !p->kernel_shape() || p->kernel_shape()->size() == 0)
    return InvalidArgument("%s: kernel_shape is required", op);
  KILN_ASSIGN_OR_RETURN(IntVec kernel, SpatialList(op, "kernel_shape", p->kernel_shape(), n, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(IntVec strides, SpatialList(op, "strides", p->strides(), n, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(IntVec pads, SpatialList(op, "pads", p->pads(), n, 2, 0, 0));
  IntVec shape = {x[0], x[1]};
  if (c.hasInput(2)) {
    KILN_ASSIGN_OR_RETURN(IntVec os, c.inInts(2), "%s: output_shape (input 2)", op);
    if (c.inRank(2) != 1 || (os.size() != x.size() && os.size() != static_cast<size_t>(n)))
      return InvalidArgument("%s: output_shape (input 2) %s must be 1-D with %zu entries (or %d spatial ones)", op,
                             Join(os).c_str(), x.size(), n);
    const size_t skip = os.size() - static_cast<size_t>(n);
    if (skip == 2 && (os[0] != x[0] || os[1] != x[1]))
      return InvalidArgument("%s: output_shape %s must keep the input's batch and channels [%lld,%lld]", op,
                             Join(os).c_str(), static_cast<long long>(x[0]), static_cast<long long>(x[1]));
    for (int i = 0; i < n; ++i) {
      int64_t o = os[skip + static_cast<size_t>(i)];
      if (o < 1) return InvalidArgument("%s: output_shape %s has spatial dim %lld", op, Join(os).c_str(),
                                        static_cast<long long>(o));
      shape.push_back(o);
    }
  } else {
    for (int i = 0; i < n; ++i) {
      int64_t o = SatAdd(SatMulSigned(x[2 + i] - 1, strides[i]), kernel[i]);
      if (o != kDimOverflow) o = o - pads[i] - pads[i + n];
      if (o < 1)
        return InvalidArgument("%s: pads %lld+%lld leave no output on spatial axis %d (input %lld, kernel %lld, "
                               "stride %lld)", op, static_cast<long long>(pads[i]), static_cast<long long>(pads[i + n]),
                               i, static_cast<long long>(x[2 + i]), static_cast<long long>(kernel[i]),
                               static_cast<long long>(strides[i]));
      shape.push_back(o);
    }
  }
  c.setOutput(0, shape, c.inType(0));
  return Status::Ok();
}

Status InferShapeGlobalPool(ShapeContext& c) {
  const IntVec& x = c.inShape(0);
  if (x.size() < 3)
    return InvalidArgument("%s: input must be [N, C, spatial...] with at least one spatial axis, is %s",
                           c.op().typeName(), Join(x).c_str());
  IntVec shape(x.size(), 1);
  shape[0] = x[0];
  shape[1] = x[1];
  c.setOutput(0, shape, c.inType(0));
  return Status::Ok();
}

// ---- normalizations ----

// BatchNormalization (X, scale, B, mean, var) and InstanceNormalization (X, scale, B).
Status InferShapeChannelNorm(ShapeContext& c) {
  const char* op = c.op().typeName();
  const bool instance = c.op().type == fb::OpType::InstanceNormalization;
  const IntVec& x = c.inShape(0);
  if (x.size() < (instance ? 3u : 2u))
    return InvalidArgument("%s: input must be [N, C%s], is %s", op, instance ? ", spatial..." : ", ...",
                           Join(x).c_str());
  static const char* const kNames[] = {"X", "scale", "B", "mean", "var"};
  for (int k = 1; k < c.numInputs(); ++k) {
    if (!c.hasInput(k)) return InvalidArgument("%s: input %d (%s) is required", op, k, kNames[k]);
    KILN_RETURN_IF_ERROR(PerChannel(c, k, kNames[k], x[1]));
  }
  c.setOutputLike(0, 0);
  return Status::Ok();
}

// Broadcasting `what` (input k) to the normalized shape `norm` (unidirectional).
static Status BroadcastsTo(ShapeContext& c, int k, const char* what, const IntVec& norm) {
  const IntVec& s = c.inShape(k);
  bool ok = s.size() <= norm.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    int64_t d = s[s.size() - 1 - i];
    ok = d == 1 || d == norm[norm.size() - 1 - i];
  }
  if (!ok)
    return InvalidArgument("%s: %s %s does not broadcast to the normalized shape %s", c.op().typeName(), what,
                           Join(s).c_str(), Join(norm).c_str());
  return SameType(c, 0, k, "X", what);
}

Status InferShapeLayerNorm(ShapeContext& c) {
  const char* op = c.op().typeName();
  const fb::NormParams* p = c.params<fb::NormParams>();
  const IntVec& x = c.inShape(0);
  const int rank = static_cast<int>(x.size());
  if (rank < 1) return InvalidArgument("%s: input must have rank >= 1, is a scalar", op);
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : -1, rank), "%s", op);
  IntVec norm(x.begin() + axis, x.end());
  KILN_RETURN_IF_ERROR(BroadcastsTo(c, 1, "scale", norm));
  if (c.hasInput(2)) KILN_RETURN_IF_ERROR(BroadcastsTo(c, 2, "B", norm));
  c.setOutputLike(0, 0);
  // Mean and InvStdDev: X's shape with the normalized axes set to 1 (float, stash_type 1).
  IntVec stat = x;
  for (int i = axis; i < rank; ++i) stat[i] = 1;
  for (int k = 1; k < c.numOutputs() && k < 3; ++k) c.setOutput(k, stat, fb::DataType::F32);
  return Status::Ok();
}

// ---- MatMul / Gemm ----

Status InferShapeMatMul(ShapeContext& c) { return MatMulShape(c, 0, 1, true, fb::DataType::F32); }

Status InferShapeGemm(ShapeContext& c) {
  const fb::GemmParams* p = c.params<fb::GemmParams>();
  const IntVec& a = c.inShape(0);
  const IntVec& b = c.inShape(1);
  if (a.size() != 2 || b.size() != 2)
    return InvalidArgument("Gemm: A and B must be 2-D, are %s and %s", Join(a).c_str(), Join(b).c_str());
  KILN_RETURN_IF_ERROR(SameType(c, 0, 1, "A", "B"));
  const bool ta = p && p->trans_a(), tb = p && p->trans_b();
  int64_t m = ta ? a[1] : a[0], ka = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (ka != kb)
    return InvalidArgument("Gemm: A %s%s and B %s%s: inner dims %lld and %lld differ", Join(a).c_str(),
                           ta ? " (transposed)" : "", Join(b).c_str(), tb ? " (transposed)" : "",
                           static_cast<long long>(ka), static_cast<long long>(kb));
  if (c.hasInput(2)) {
    const IntVec& cs = c.inShape(2);
    IntVec mn = {m, n};
    bool ok = cs.size() <= 2;
    for (size_t i = 0; ok && i < cs.size(); ++i) {
      int64_t d = cs[cs.size() - 1 - i];
      ok = d == 1 || d == mn[1 - i];
    }
    if (!ok)
      return InvalidArgument("Gemm: C %s does not broadcast to [%lld,%lld]", Join(cs).c_str(),
                             static_cast<long long>(m), static_cast<long long>(n));
    KILN_RETURN_IF_ERROR(SameType(c, 0, 2, "A", "C"));
  }
  c.setOutput(0, {m, n}, c.inType(0));
  return Status::Ok();
}

// ---- Attention (fuse_attention) ----

// Q [..., L, D], KT [..., D, S], V [..., S, Dv], the same batch dims; the
// mask's dims (right-aligned) each 1 or the scores' (ops/attention_mask.h).
Status InferShapeAttention(ShapeContext& c) {
  const IntVec& q = c.inShape(0);
  const IntVec& kt = c.inShape(1);
  const IntVec& v = c.inShape(2);
  for (int i = 0; i < 3; ++i) {
    if (c.inType(i) != fb::DataType::F32)
      return InvalidArgument("Attention: %s must be f32, is %s", Named(c, i).c_str(), DataTypeName(c.inType(i)));
  }
  const size_t r = q.size();
  if (r < 2 || kt.size() != r || v.size() != r || !std::equal(q.begin(), q.end() - 2, kt.begin()) ||
      !std::equal(q.begin(), q.end() - 2, v.begin()) || q[r - 1] != kt[r - 2] || kt[r - 1] != v[r - 2])
    return InvalidArgument("Attention: Q %s, KT %s and V %s must be [..., L, D], [..., D, S] and [..., S, Dv]",
                           Join(q).c_str(), Join(kt).c_str(), Join(v).c_str());
  IntVec scores(q.begin(), q.end() - 1);
  scores.push_back(kt[r - 1]);
  if (c.hasInput(3)) {
    if (c.inType(3) != fb::DataType::F32)
      return InvalidArgument("Attention: mask %s must be f32, is %s", Named(c, 3).c_str(), DataTypeName(c.inType(3)));
    AttentionMask m;
    if (!MakeAttentionMask(IntVec(q.begin(), q.end() - 2), q[r - 2], kt[r - 1], c.inShape(3), &m))
      return InvalidArgument("Attention: mask %s of shape %s does not broadcast to the scores' %s%s",
                             Named(c, 3).c_str(), Join(c.inShape(3)).c_str(), Join(scores).c_str(),
                             c.inShape(3).size() > scores.size() ? "" : " (or alternates more than 3 times)");
  }
  IntVec y(q.begin(), q.end() - 1);
  y.push_back(v[r - 1]);
  c.setOutput(0, y, fb::DataType::F32);
  return Status::Ok();
}

// ---- Softmax / LogSoftmax ----

Status InferShapeSoftmax(ShapeContext& c) {
  const fb::AxisParams* p = c.params<fb::AxisParams>();
  int rank = c.inRank(0);
  if (rank < 1) return InvalidArgument("%s: input must have rank >= 1, is a scalar", c.op().typeName());
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : -1, rank), "%s", c.op().typeName());
  (void)axis;
  c.setOutputLike(0, 0);
  return Status::Ok();
}

}  // namespace kiln
