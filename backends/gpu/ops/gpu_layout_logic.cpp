// Dtype-changing elementwise ops on GPU, with the host kernels'
// semantics (host_fallback/ops/elementwise.cpp):
//   * Cast between f32, f16, i32, i64, bool, u8 and i8 (cast.glsl:
//     integer-only conversions, bit-exact with the host): cast.comp when
//     both sides are whole words, cast_u8.comp (byte addressed) when a side
//     is f16, bool, u8 or i8;
//     a cast to the same dtype is a buffer copy;
//   * Equal, Less, Greater, GreaterOrEqual, LessOrEqual, And on f32 / i32 /
//     i64 (compare.comp), Equal and And on bool / u8 and Not, Or, Xor on
//     bool (compare_bool.comp), broadcasting;
//   * Where (where.comp): bool condition, 4- or 8-byte values, broadcasting.
// Bool tensors are one byte an element: every kernel that reads or writes
// them needs the device's 8-bit storage (storageBuffer8BitAccess), so that
// invocations store single bytes without racing on shared words; without
// it these ops are Unsupported and run on the host.
#include "gpu_layout.h"

namespace kiln {
namespace {

constexpr int kMaxRank = 6;  // KILN_MAX_RANK of common.glsl

// Element kinds of cast.glsl (KIND_*).
enum GpuCastKind : uint32_t { kF32 = 0, kF16, kI32, kI64, kBool, kU8, kI8 };

StatusOr<uint32_t> CastKind(fb::DataType t) {
  switch (t) {
    case fb::DataType::F32: return kF32;
    case fb::DataType::F16: return kF16;
    case fb::DataType::I32: return kI32;
    case fb::DataType::I64: return kI64;
    case fb::DataType::BOOL: return kBool;
    case fb::DataType::U8: return kU8;
    case fb::DataType::I8: return kI8;
    default: return Unsupported("GPU Cast takes f32, f16, i32, i64, bool, u8 and i8, not %s", fb::EnumNameDataType(t));
  }
}

// The shader of a cast between two kinds: words when both sides are whole
// words, bytes otherwise (8-bit storage).
StatusOr<const char*> CastShader(uint32_t src, uint32_t dst, const GpuCaps& caps) {
  const bool words = (src == kF32 || src == kI32 || src == kI64) && (dst == kF32 || dst == kI32 || dst == kI64);
  if (!words && !caps.storage_8bit)
    return Unsupported("GPU Cast to or from f16 / bool / u8 / i8 addresses bytes, which needs 8-bit storage");
  return words ? "cast" : "cast_u8";
}

class CastExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  using GpuExecution::GpuExecution;

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    KILN_ASSIGN_OR_RETURN(uint32_t src, CastKind(gpu()->storageType(*in[0])));
    KILN_ASSIGN_OR_RETURN(uint32_t dst, CastKind(gpu()->storageType(*out[0])));
    if (src == dst) {
      addCopy(in[0], out[0]);
      return Status::Ok();
    }
    KILN_RETURN_IF_ERROR(RequireUnits32(*in[0], 2));
    struct {
      uint32_t n;
    } push{static_cast<uint32_t>(in[0]->elementCount())};
    KILN_ASSIGN_OR_RETURN(const char* shader, CastShader(src, dst, gpu()->gpuCaps()));
    return add1D(shader, {{in[0]}, {out[0], nullptr, true}}, push, push.n, {src, dst});
  }
};

// The shader and specialization of a comparison or logic op on `t`.
struct CompareKernel {
  const char* shader;
  std::vector<uint32_t> spec;
};

StatusOr<CompareKernel> CompareKernelFor(fb::OpType op, fb::DataType t) {
  const bool logic = op == fb::OpType::And || op == fb::OpType::Equal;
  if (op == fb::OpType::Not || op == fb::OpType::Or || op == fb::OpType::Xor) {
    if (t != fb::DataType::BOOL)
      return Unsupported("GPU %s takes bool, not %s", fb::EnumNameOpType(op), fb::EnumNameDataType(t));
    return CompareKernel{"compare_bool", {op == fb::OpType::Not ? 2u : op == fb::OpType::Or ? 3u : 4u}};
  }
  if (logic && (t == fb::DataType::BOOL || t == fb::DataType::U8))
    return CompareKernel{"compare_bool", {op == fb::OpType::And ? 0u : 1u}};
  uint32_t type, code;
  switch (t) {
    case fb::DataType::F32: type = 0; break;
    case fb::DataType::I32: type = 1; break;
    case fb::DataType::I64: type = 2; break;
    default:
      return Unsupported("GPU %s takes f32, i32 and i64%s, not %s", fb::EnumNameOpType(op),
                         logic ? " (and bool, u8)" : "", fb::EnumNameDataType(t));
  }
  switch (op) {
    case fb::OpType::Equal: code = 0; break;
    case fb::OpType::Less: code = 1; break;
    case fb::OpType::Greater: code = 2; break;
    case fb::OpType::And: code = 3; break;
    case fb::OpType::GreaterOrEqual: code = 4; break;
    case fb::OpType::LessOrEqual: code = 5; break;
    default: return Unsupported("no GPU comparison for %s", fb::EnumNameOpType(op));
  }
  return CompareKernel{"compare", {type, code}};
}

class CompareExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  CompareExecution(GpuBackend* b, fb::OpType type) : GpuExecution(b), type_(type) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor* b = in.size() > 1 ? in[1] : in[0];  // Not reads one input
    if (b->dtype() != in[0]->dtype()) return Unsupported("GPU comparison of different dtypes");
    KILN_ASSIGN_OR_RETURN(CompareKernel kernel, CompareKernelFor(type_, gpu()->storageType(*in[0])));
    for (const Tensor* t : in) KILN_RETURN_IF_ERROR(RequireUnits32(*t, 2));
    KILN_RETURN_IF_ERROR(RequireUnits32(*out[0], 2));
    KILN_ASSIGN_OR_RETURN(Broadcast bc, MakeBroadcast(out[0]->shape(), {in[0]->shape(), b->shape()}));
    const BroadcastPush push = MakeBroadcastPush(bc, static_cast<uint32_t>(out[0]->elementCount()));
    return add1D(kernel.shader, {{in[0]}, {b}, {out[0], nullptr, true}}, push, push.n, kernel.spec);
  }

  fb::OpType type_;
};

class WhereExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  using GpuExecution::GpuExecution;

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    if (in[0]->dtype() != fb::DataType::BOOL || in[1]->dtype() != in[2]->dtype())
      return Unsupported("GPU Where takes a bool condition and values of one dtype");
    KILN_ASSIGN_OR_RETURN(MoveUnits units, UnitsFor(gpu()->storageType(*in[1]), gpu()->gpuCaps(), "where", nullptr));
    const uint32_t words = units.units;
    KILN_RETURN_IF_ERROR(RequireUnits32(*out[0], words));
    KILN_ASSIGN_OR_RETURN(Broadcast bc, MakeBroadcast(out[0]->shape(), {in[0]->shape(), in[1]->shape(), in[2]->shape()}));
    struct {
      uint32_t n, rank, dims[kMaxRank], sc[kMaxRank], sa[kMaxRank], sb[kMaxRank];
    } push{};
    push.n = static_cast<uint32_t>(out[0]->elementCount() * words);
    push.rank = bc.rank;
    for (int d = 0; d < kMaxRank; ++d) {
      push.dims[d] = bc.dims[d];
      push.sc[d] = bc.strides[0][d];
      push.sa[d] = bc.strides[1][d];
      push.sb[d] = bc.strides[2][d];
    }
    return add1D(units.shader.c_str(), {{in[0]}, {in[1]}, {in[2]}, {out[0], nullptr, true}}, push, push.n, {words});
  }
};

// IsNaN and IsInf: a float tensor to bool bytes (is_special.comp).
class IsSpecialExecution final : public GpuExecution {
 public:
  IsSpecialExecution(GpuBackend* b, uint32_t mode, uint32_t detect) : GpuExecution(b), mode_(mode), detect_(detect) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    if (in[0]->dtype() != fb::DataType::F32) return Unsupported("GPU IsNaN/IsInf take f32");
    KILN_RETURN_IF_ERROR(RequireUnits32(*in[0], 1));
    struct {
      uint32_t n;
    } push{static_cast<uint32_t>(in[0]->elementCount())};
    if (push.n == 0) return Status::Ok();
    return add1D("is_special", {{in[0]}, {out[0], nullptr, true}}, push, push.n, {mode_, detect_});
  }

  uint32_t mode_, detect_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuIsSpecial(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(Require8BitStorage(b->gpuCaps(), op));
  if (DeclaredInputDtype(op, graph, 0) != fb::DataType::F32)
    return Unsupported("GPU %s takes f32, not %s", op.typeName(), fb::EnumNameDataType(DeclaredInputDtype(op, graph, 0)));
  const fb::IsInfParams* p = op.params<fb::IsInfParams>();
  const uint32_t detect = (!p || p->detect_positive() ? 1u : 0u) | (!p || p->detect_negative() ? 2u : 0u);
  return Make(std::make_unique<IsSpecialExecution>(b, op.type == fb::OpType::IsNaN ? 0u : 1u, detect));
}

// Cast, and CastLike (the target type is input 1's; input 1 is not read).
StatusOr<std::unique_ptr<Execution>> CreateGpuCast(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  const fb::CastParams* p = op.params<fb::CastParams>();
  if (!p && op.type == fb::OpType::Cast) return Unsupported("Cast without CastParams");
  const fb::DataType to = op.type == fb::OpType::CastLike ? DeclaredInputDtype(op, graph, 1) : p->to();
  KILN_ASSIGN_OR_RETURN(uint32_t src, CastKind(b->storageType(DeclaredInputDtype(op, graph, 0))));
  KILN_ASSIGN_OR_RETURN(uint32_t dst, CastKind(b->storageType(to)));
  if (src != dst) KILN_RETURN_IF_ERROR(CastShader(src, dst, b->gpuCaps()).status());
  return Make(std::make_unique<CastExecution>(b));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuCompare(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(Require8BitStorage(b->gpuCaps(), op));
  const fb::DataType t = DeclaredInputDtype(op, graph, 0);
  if (op.inputs.size() > 1 && DeclaredInputDtype(op, graph, 1) != t)
    return Unsupported("GPU %s: inputs of different dtypes", op.typeName());
  KILN_RETURN_IF_ERROR(CompareKernelFor(op.type, b->storageType(t)).status());
  return Make(std::make_unique<CompareExecution>(b, op.type));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuWhere(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(Require8BitStorage(b->gpuCaps(), op));
  if (DeclaredInputDtype(op, graph, 0) != fb::DataType::BOOL)
    return Unsupported("GPU Where takes a bool condition, not %s", fb::EnumNameDataType(DeclaredInputDtype(op, graph, 0)));
  const fb::DataType t = DeclaredInputDtype(op, graph, 1);
  if (DeclaredInputDtype(op, graph, 2) != t) return Unsupported("GPU Where: values of different dtypes");
  KILN_RETURN_IF_ERROR(UnitsFor(b->storageType(t), b->gpuCaps(), "where", nullptr).status());
  return Make(std::make_unique<WhereExecution>(b));
}

}  // namespace kiln
