// Elementwise ops on GPU: one unary shader (the function is a
// specialization constant) and broadcasting binary shaders: binary.comp for
// float tensors (fp16 storage too), binary_int.comp for i32 / i64 Add, Sub,
// Mul, Div, Max and Min (the host kernel's integer semantics).
#include <cmath>
#include <cstring>

#include "gpu_layout.h"
#include "kiln_op_codes.h"

namespace kiln {
namespace {

// The shaders' numbering is generated from the schema; the op layer's is the
// schema's own enum. They agree (kiln_op_codes.h):
static_assert(KILN_OP_Relu == UnaryCode(fb::OpType::Relu) && KILN_OP_MaxUnpool == UnaryCode(fb::OpType::MaxUnpool),
              "kiln_op_codes.h disagrees with fb::OpType");
static_assert(KILN_FN_GELU_TANH == kUnaryGeluTanh && KILN_FN_SILU == kUnarySilu,
              "kiln_op_codes.h disagrees with gpu_common.h");

// The executions that dispatch unary.comp: several elements an invocation
// on CPU drivers, where an invocation costs more than an element's
// arithmetic (ReLU in ResNet18 on lavapipe: 3.9 ms for 8 ops before).
class UnaryDispatch : public GpuExecution {
 protected:
  using GpuExecution::GpuExecution;
  Status addUnary(const Tensor* in, const Tensor* out, const UnaryPush& push, uint32_t code) {
    const uint32_t epi = ElementsPerInvocation(push.n);
    return add1D("unary", {{in}, {out, nullptr, true}}, push, (uint64_t{push.n} + epi - 1) / epi, {code, epi});
  }
  // Elements an invocation for n of them: 1 on GPUs, 8 on CPU drivers, and
  // GpuCaps::elementwise_items_large where n keeps 16 work groups of 64
  // busy at that count (an invocation, and a work group more, costs a CPU
  // driver far more than an element's arithmetic).
  uint32_t ElementsPerInvocation(uint64_t n) const {
    const GpuCaps& caps = gpu()->gpuCaps();
    if (!caps.cpu_kernels) return 1;
    const uint32_t large = caps.elementwise_items_large;
    return large > 8 && n >= uint64_t{16} * 64 * large ? large : 8;
  }
};

class UnaryExecution final : public UnaryDispatch {
 public:
  UnaryExecution(GpuBackend* b, uint32_t code, float alpha, float beta)
      : UnaryDispatch(b), code_(code), alpha_(alpha), beta_(beta) {}
  // Elementwise over the stored elements, whichever the layout.
  PackRule packRule(const std::vector<Tensor*>&, const std::vector<Tensor*>&) const override { return {1, 1, true}; }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    KILN_RETURN_IF_ERROR(Require32Bit(*out[0]));
    UnaryPush push{static_cast<uint32_t>(gpu()->storageElements(*out[0])), alpha_, beta_};
    if (packed(out[0]) && out[0]->length(1) % 4 != 0) {
      push.c = static_cast<uint32_t>(out[0]->length(1));
      push.plane = static_cast<uint32_t>(out[0]->elementCount() / out[0]->length(0) / out[0]->length(1));
    }
    return addUnary(in[0], out[0], push, code_);
  }
  uint32_t code_;
  float alpha_, beta_;
};

// Reshape-likes: the same bytes under a new shape (a copy unless the
// planner gave the output the input's memory).
class ReshapeExecution final : public GpuExecution {
 public:
  using GpuExecution::GpuExecution;
  bool resolvesDtypesAtResize() const override { return true; }  // moves bytes

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    addCopy(in[0], out[0]);
    return Status::Ok();
  }
};

// Broadcasting binary dispatches (binary.comp), shared by the binary ops and
// Clip with bounds computed at run time.
class BinaryBase : public UnaryDispatch {
 protected:
  using UnaryDispatch::UnaryDispatch;
  // out = a (code) b, broadcast; out may be a. The element type is the
  // bound tensors': binary.comp for f32, binary_int.comp (TYPE 1 i32, 2 i64)
  // for 32- and 64-bit integers, binary_bytes.comp (TYPE 0 u8, 1 i8, 2 f16)
  // for byte-addressed ones; codes as in binary_fn.glsl, plus 10 / 11
  // BitShift (u8).
  Status addBinary(uint32_t code, const Tensor* a, const Tensor* b, const Tensor* out) {
    if (b->dtype() != a->dtype() || out->dtype() != a->dtype())
      return Unsupported("GPU binary op on %s, %s into %s: one dtype expected", fb::EnumNameDataType(a->dtype()),
                         fb::EnumNameDataType(b->dtype()), fb::EnumNameDataType(out->dtype()));
    const char* shader = "binary_int";
    uint32_t type = 0, words = 1;
    switch (a->dtype()) {
      case fb::DataType::F32: shader = "binary"; break;
      case fb::DataType::I32: type = 1; break;
      case fb::DataType::I64: type = 2, words = 2; break;
      case fb::DataType::U8: shader = "binary_bytes", type = 0; break;
      case fb::DataType::I8: shader = "binary_bytes", type = 1; break;
      case fb::DataType::F16: shader = "binary_bytes", type = 2; break;
      default:
        return Unsupported("GPU binary ops take f32, f16, i64, i32, i8 and u8, not %s", fb::EnumNameDataType(a->dtype()));
    }
    const bool floating = a->dtype() == fb::DataType::F32 || a->dtype() == fb::DataType::F16;
    if (!floating && (code == 4 || code == 7)) return Unsupported("GPU Pow and PRelu here take floats (integer Pow: pow_mixed)");
    if ((code == 10 || code == 11) && a->dtype() != fb::DataType::U8)
      return Unsupported("GPU BitShift takes u8, not %s", fb::EnumNameDataType(a->dtype()));
    if (std::strcmp(shader, "binary_bytes") == 0 && !gpu()->gpuCaps().storage_8bit)
      return Unsupported("GPU %s arithmetic needs 8-bit storage (storageBuffer8BitAccess), which the device lacks",
                         fb::EnumNameDataType(a->dtype()));
    KILN_RETURN_IF_ERROR(RequireUnits32(*out, words));
    // Storage shapes: packed tensors (BinaryExecution::packRule) broadcast
    // as [N, C/4, S..., 4].
    KILN_ASSIGN_OR_RETURN(Broadcast bc, MakeBroadcast(gpu()->storageShape(*out),
                                                 {gpu()->storageShape(*a), gpu()->storageShape(*b)}));
    BroadcastPush push = MakeBroadcastPush(bc, static_cast<uint32_t>(gpu()->storageElements(*out)));
    if (std::strcmp(shader, "binary") == 0) {
      // f32: several elements an invocation on CPU drivers (binary.comp's
      // EPI); a and b as texel buffers of one float where the device reads
      // them faster so (GpuCaps::texel_elements; binary_tx).
      uint32_t epi = ElementsPerInvocation(push.n);
      // A dense operand times one broadcast along the middle of three dims
      // (binary.comp's per-channel scale path): four times the elements an
      // invocation on CPU drivers (32, or 4 x elementwise_items_large on
      // large tensors), where the first element's divisions are the cost
      // (EfficientNet-B0's 16 SE Muls on lavapipe 40 -> 18-22 ms at 32).
      if (epi >= 4 && push.rank == 3 && push.dims[2] % 4 == 0) {
        const uint32_t d2 = push.dims[2], plane = push.dims[1] * d2;
        auto dense = [&](const uint32_t* st) { return st[0] == plane && st[1] == d2 && st[2] == 1; };
        auto scale = [&](const uint32_t* st) { return st[0] == d2 && st[1] == 0 && st[2] == 1; };
        if ((dense(push.sa) && scale(push.sb)) || (scale(push.sa) && dense(push.sb))) epi *= 4;
      } else if (epi >= 4 && push.rank == 2 && push.dims[1] % 4 == 0) {  // NCHW: [N * C, H * W] x [N * C, 1]
        const uint32_t d1 = push.dims[1];
        auto dense = [&](const uint32_t* st) { return st[0] == d1 && st[1] == 1; };
        auto row = [&](const uint32_t* st) { return st[0] == 1 && st[1] == 0; };
        if ((dense(push.sa) && row(push.sb)) || (row(push.sa) && dense(push.sb))) epi *= 4;
      }
      const uint8_t tx = texelsOf(gpu()->storageBytes(*a), 1) && texelsOf(gpu()->storageBytes(*b), 1) ? 1 : 0;
      return add1D(shader, {{a, nullptr, false, tx}, {b, nullptr, false, tx}, {out, nullptr, true}}, push,
                   (uint64_t{push.n} + epi - 1) / epi, {code, type, epi});
    }
    return add1D(shader, {{a}, {b}, {out, nullptr, true}}, push, push.n, {code, type});
  }
};

class BinaryExecution final : public BinaryBase {
 public:
  // mean: Mean, the Adds' sum then scaled by 1 / n (unary.comp).
  BinaryExecution(GpuBackend* b, uint32_t code, bool mean = false) : BinaryBase(b), code_(code), mean_(mean) {}
  // The kernel follows the bound dtypes: an integer intermediate that the
  // model declares with a placeholder dtype still runs here.
  bool resolvesDtypesAtResize() const override { return true; }
  // Packed when both inputs have the output's rank and channels (other dims
  // equal or broadcast) and f(0, 0) = 0 keeps the zero lanes zero.
  PackRule packRule(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) const override {
    if (in.size() != 2 || !in[0] || !in[1] || code_ == 3 || code_ == 4 || code_ >= 8 || mean_) return {};  // Div, Pow, Mod: f(0, 0) != 0
    const Tensor& y = *out[0];
    for (const Tensor* t : in) {
      if (t->dtype() != fb::DataType::F32 || t->dimensions() != y.dimensions() || y.dimensions() < 3) return {};
      for (int d = 0; d < y.dimensions(); ++d)
        if (t->length(d) != y.length(d) && (d == 1 || t->length(d) != 1)) return {};
    }
    return {3, 1, true};
  }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    if (in.size() == 1) {  // Max/Min of one input
      addCopy(in[0], out[0]);
      return Status::Ok();
    }
    // Variadic Max/Min/Sum/Mean: out = in0 op in1, then out = out op in_k.
    for (size_t k = 1; k < in.size(); ++k) KILN_RETURN_IF_ERROR(addBinary(code_, k == 1 ? in[0] : out[0], in[k], out[0]));
    if (mean_) {
      if (out[0]->dtype() != fb::DataType::F32) return Unsupported("GPU Mean takes f32");
      UnaryPush push{static_cast<uint32_t>(out[0]->elementCount()), 1.0f / static_cast<float>(in.size()), 0.0f};
      return addUnary(out[0], out[0], push, UnaryCode(fb::OpType::Mean));
    }
    return Status::Ok();
  }
  uint32_t code_;
  bool mean_;
};

// Clip whose bounds are tensors computed at run time: y = max(x, lo), then
// y = min(y, hi) (binary.comp codes 5 and 6); a bound left out falls back to
// the attribute (opset < 11), applied by unary.comp.
class ClipBoundsExecution final : public BinaryBase {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  ClipBoundsExecution(GpuBackend* b, float lo, float hi) : BinaryBase(b), lo_(lo), hi_(hi) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    KILN_RETURN_IF_ERROR(Require32Bit(*out[0]));
    const Tensor* src = in[0];
    for (size_t k = 1; k < 3; ++k) {
      if (k >= in.size() || !in[k]) continue;
      if (in[k]->elementCount() != 1) return InvalidArgument("Clip bound %zu has %lld elements", k, (long long)in[k]->elementCount());
      KILN_RETURN_IF_ERROR(addBinary(k == 1 ? 5u : 6u, src, in[k], out[0]));
      src = out[0];
    }
    const bool lo_missing = in.size() < 2 || !in[1], hi_missing = in.size() < 3 || !in[2];
    const float lo = lo_missing ? lo_ : -INFINITY, hi = hi_missing ? hi_ : INFINITY;
    if (out[0]->dtype() != fb::DataType::F32) {  // integers and f16: bound tensors only
      if (std::isfinite(lo) || std::isfinite(hi)) return Unsupported("GPU Clip bounds as attributes on f32 only");
      if (src == in[0]) addCopy(in[0], out[0]);
      return Status::Ok();
    }
    if (src == in[0] || std::isfinite(lo) || std::isfinite(hi)) {
      UnaryPush push{static_cast<uint32_t>(out[0]->elementCount()), lo, hi};
      KILN_RETURN_IF_ERROR(addUnary(src, out[0], push, UnaryCode(fb::OpType::Clip)));
    }
    return Status::Ok();
  }
  float lo_, hi_;
};

// Pow: binary.comp / binary_bytes.comp when base and exponent share a
// float type, pow_mixed.comp otherwise (f32, i32, i64 in any pairing; the
// output has the base's type).
class PowExecution final : public BinaryBase {
 public:
  using BinaryBase::BinaryBase;
  bool resolvesDtypesAtResize() const override { return true; }

 private:
  static int MixedType(fb::DataType t) {
    switch (t) {
      case fb::DataType::F32: return 0;
      case fb::DataType::I32: return 1;
      case fb::DataType::I64: return 2;
      default: return -1;
    }
  }
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor &a = *in[0], &b = *in[1], &y = *out[0];
    const bool same_float = a.dtype() == b.dtype() && (a.dtype() == fb::DataType::F32 || a.dtype() == fb::DataType::F16);
    if (same_float) return addBinary(4, &a, &b, &y);
    const int ta = MixedType(a.dtype()), tb = MixedType(b.dtype());
    if (ta < 0 || tb < 0 || y.dtype() != a.dtype())
      return Unsupported("GPU Pow of %s ^ %s into %s", fb::EnumNameDataType(a.dtype()), fb::EnumNameDataType(b.dtype()),
                         fb::EnumNameDataType(y.dtype()));
    for (const Tensor* t : {&a, &b, &y}) KILN_RETURN_IF_ERROR(RequireUnits32(*t, t->dtype() == fb::DataType::I64 ? 2 : 1));
    KILN_ASSIGN_OR_RETURN(Broadcast bc, MakeBroadcast(y.shape(), {a.shape(), b.shape()}));
    BroadcastPush push = MakeBroadcastPush(bc, static_cast<uint32_t>(y.elementCount()));
    return add1D("pow_mixed", {{&a}, {&b}, {&y, nullptr, true}}, push, push.n,
                 {static_cast<uint32_t>(ta), static_cast<uint32_t>(tb)});
  }
};

StatusOr<std::unique_ptr<Execution>> CreateGpuPow(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  const fb::DataType ta = DeclaredInputDtype(op, graph, 0), tb = DeclaredInputDtype(op, graph, 1);
  const auto mixed = [](fb::DataType t) {
    return t == fb::DataType::F32 || t == fb::DataType::I32 || t == fb::DataType::I64;
  };
  if (!(ta == tb && ta == fb::DataType::F16) && !(mixed(ta) && mixed(tb)))
    return Unsupported("GPU Pow takes f32, i32 and i64 (or f16 ^ f16), not %s ^ %s", fb::EnumNameDataType(ta),
                       fb::EnumNameDataType(tb));
  return Make(std::make_unique<PowExecution>(b));
}

// The dtypes addBinary computes on, checked on the declared inputs (an
// intermediate's may be a placeholder, resolved at resize).
Status RequireBinaryDtypes(const GraphOp& op, const Graph& graph) {
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    if (op.inputs[k] < 0) continue;
    switch (DeclaredInputDtype(op, graph, k)) {
      case fb::DataType::F32: case fb::DataType::F16: case fb::DataType::I64: case fb::DataType::I32:
      case fb::DataType::I8: case fb::DataType::U8: break;
      default:
        return Unsupported("GPU %s takes f32, f16, i64, i32, i8 and u8, not %s", op.typeName(),
                           fb::EnumNameDataType(DeclaredInputDtype(op, graph, k)));
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuUnary(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  if (op.type == fb::OpType::Clip && DeclaredInputDtype(op, graph, 0) != fb::DataType::F32) {
    KILN_RETURN_IF_ERROR(RequireBinaryDtypes(op, graph));  // max and min of bound tensors (opset 11 on)
    return Make(std::make_unique<ClipBoundsExecution>(b, -INFINITY, INFINITY));
  }
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  float alpha = 0, beta = 0;
  uint32_t code = UnaryCode(op.type);  // UnaryFn's case for this op type; the ones with params set them
  switch (op.type) {
    case fb::OpType::LeakyRelu: {
      auto* p = op.params<fb::LeakyReluParams>();
      alpha = p ? p->alpha() : 0.01f;
      break;
    }
    case fb::OpType::Clip: {
      auto* p = op.params<fb::ClipParams>();
      const float lo = p ? p->min() : -INFINITY, hi = p ? p->max() : INFINITY;
      auto clo = ConstantScalar(op, graph, 1, lo);
      auto chi = ConstantScalar(op, graph, 2, hi);
      if (!clo.ok() || !chi.ok()) return Make(std::make_unique<ClipBoundsExecution>(b, lo, hi));
      alpha = *clo;
      beta = *chi;
      break;
    }
    case fb::OpType::HardSigmoid: {
      auto* p = op.params<fb::HardSigmoidParams>();
      alpha = p ? p->alpha() : 0.2f;
      beta = p ? p->beta() : 0.5f;
      break;
    }
    case fb::OpType::Elu: {
      auto* p = op.params<fb::EluParams>();
      alpha = p ? p->alpha() : 1.0f;
      break;
    }
    case fb::OpType::Celu:
    case fb::OpType::ThresholdedRelu: {
      auto* p = op.params<fb::EluParams>();
      alpha = p ? p->alpha() : 1.0f;
      break;
    }
    case fb::OpType::Selu: {
      auto* p = op.params<fb::SeluParams>();
      alpha = p ? p->alpha() : 1.67326319f;
      beta = p ? p->gamma() : 1.05070102f;
      break;
    }
    case fb::OpType::Shrink: {
      auto* p = op.params<fb::ShrinkParams>();
      alpha = p ? p->bias() : 0.0f;
      beta = p ? p->lambd() : 0.5f;
      break;
    }
    case fb::OpType::Gelu: {
      auto* p = op.params<fb::GeluParams>();
      if (p && p->approximate() == fb::GeluApproximation::Tanh) code = kUnaryGeluTanh;
      break;
    }
    default: break;  // parameter-free: the op type's own code
  }
  return Make(std::make_unique<UnaryExecution>(b, code, alpha, beta));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuReshape(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  // Any dtype: the bytes are moved, not interpreted. Value inputs (the new
  // shape, the axes) were used by shape inference and are not read here.
  const GraphTensor& in = graph.tensors[static_cast<size_t>(op.inputs[0])];
  if (DataTypeSize(in.dtype) == 0) return Unsupported("dtype %s", fb::EnumNameDataType(in.dtype));
  return Make(std::make_unique<ReshapeExecution>(b));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuBinary(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  // Integers for the ops the host also computes on them. Only the inputs'
  // declared dtypes are checked here: an intermediate's (and the output's)
  // may be a placeholder, and shape inference gives every input and the
  // output one real dtype, which addBinary takes at resize.
  if (op.type == fb::OpType::Mod && DeclaredInputDtype(op, graph, 0) == fb::DataType::F32) {
    auto* p = op.params<fb::ModParams>();
    if (!p || !p->fmod()) return Unsupported("Mod of f32 without fmod (the host names the error)");
  }
  if (op.type == fb::OpType::Pow) return CreateGpuPow(op, graph, b);
  if (op.type == fb::OpType::PRelu) {
    KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  } else {
    KILN_RETURN_IF_ERROR(RequireBinaryDtypes(op, graph));
  }
  uint32_t code = 0;
  switch (op.type) {
    case fb::OpType::Add: code = 0; break;
    case fb::OpType::Sub: code = 1; break;
    case fb::OpType::Mul: code = 2; break;
    case fb::OpType::Div: code = 3; break;
    case fb::OpType::Pow: code = 4; break;
    case fb::OpType::Max: code = 5; break;
    case fb::OpType::Min: code = 6; break;
    case fb::OpType::PRelu: code = 7; break;
    case fb::OpType::Sum: code = 0; break;  // variadic: a chain of Adds
    case fb::OpType::Mean:
      KILN_RETURN_IF_ERROR(RequireF32(op, graph));
      return Make(std::make_unique<BinaryExecution>(b, 0, true));
    case fb::OpType::Mod: {
      auto* p = op.params<fb::ModParams>();
      code = p && p->fmod() ? 8 : 9;
      break;
    }
    case fb::OpType::BitShift: {
      auto* p = op.params<fb::BitShiftParams>();
      code = p && p->left() ? 10 : 11;
      break;
    }
    default: return Unsupported("no GPU binary function for %s", op.typeName());
  }
  return Make(std::make_unique<BinaryExecution>(b, code));
}

}  // namespace kiln
