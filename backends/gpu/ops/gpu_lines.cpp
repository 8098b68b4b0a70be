// Ops computed a line at a time along one axis, on GPU (f32; one invocation
// a line, shaders/vulkan/lines.comp): Hardmax, CumSum (the axis a value
// input, read at resize) and LRN (across channels); TopK (topk.comp, k a
// value input). Lines are short in the
// models that use these (classes, sequence steps, channels), so one
// invocation walks each, with the host kernels' arithmetic.
#include "ops/op_params.h"
#include "gpu_layout.h"
#include "gpu_reduce.h"

namespace kiln {
namespace {

enum LineMode : uint32_t { kHardmax = 0, kCumSum = 1, kLrn = 2 };

struct LinesPush {
  uint32_t lines, n, inner, flags;
  float alpha, beta, bias;
  uint32_t size;
};

class LinesExecution final : public GpuExecution {
 public:
  LinesExecution(GpuBackend* b, const GraphOp& op, LineMode mode) : GpuExecution(b), op_(op), mode_(mode) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    KILN_RETURN_IF_ERROR(RequireF32Input(x, op_.typeName()));
    int64_t axis = 1;
    LinesPush push{};
    if (mode_ == kHardmax) {
      const fb::AxisParams* p = op_.params<fb::AxisParams>();
      axis = p ? p->axis() : -1;
    } else if (mode_ == kCumSum) {
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> a, TensorInts(*in[1]), "CumSum axis");
      if (a.size() != 1) return InvalidArgument("CumSum: axis must have one element, has %zu", a.size());
      axis = a[0];
      const fb::CumSumParams* p = op_.params<fb::CumSumParams>();
      push.flags = (p && p->exclusive() ? 1u : 0u) | (p && p->reverse() ? 2u : 0u);
    } else {
      const fb::LrnParams* p = op_.params<fb::LrnParams>();
      if (!p || p->size() < 1) return InvalidArgument("LRN: size must be positive");
      if (x.dimensions() < 2) return InvalidArgument("LRN: input must be [N, C, ...]");
      push.alpha = p->alpha();
      push.beta = p->beta();
      push.bias = p->bias();
      push.size = static_cast<uint32_t>(p->size());
    }
    KILN_ASSIGN_OR_RETURN(int ax, NormalizeAxis(axis, x.dimensions()), "%s", op_.typeName());
    KILN_RETURN_IF_ERROR(RequireUnits32(x, 1));
    int64_t outer, n, inner;
    AroundAxis(x.shape(), ax, &outer, &n, &inner);
    push.lines = static_cast<uint32_t>(outer * inner);
    push.n = static_cast<uint32_t>(n);
    push.inner = static_cast<uint32_t>(inner);
    if (push.lines == 0 || push.n == 0) return Status::Ok();
    return add1D("lines", {{in[0]}, {out[0], nullptr, true}}, push, push.lines, {static_cast<uint32_t>(mode_)});
  }

  const GraphOp& op_;
  LineMode mode_;
};

// TopK: values and i64 indices, one invocation a line (topk.comp).
class TopKExecution final : public GpuExecution {
 public:
  TopKExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    KILN_RETURN_IF_ERROR(RequireF32Input(x, "TopK"));
    const fb::TopKParams* p = op_.params<fb::TopKParams>();
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : -1, x.dimensions()), "TopK");
    int64_t outer, n, inner;
    AroundAxis(x.shape(), axis, &outer, &n, &inner);
    const int64_t k = out[0]->length(axis);
    KILN_RETURN_IF_ERROR(RequireUnits32(x, 1));
    KILN_RETURN_IF_ERROR(RequireUnits32(*out[1], 2));
    struct {
      uint32_t lines, n, inner, k;
    } push{static_cast<uint32_t>(outer * inner), static_cast<uint32_t>(n), static_cast<uint32_t>(inner),
           static_cast<uint32_t>(k)};
    if (push.lines == 0 || push.k == 0) return Status::Ok();
    return add1D("topk", {{in[0]}, {out[0], nullptr, true}, {out[1], nullptr, true}}, push, push.lines,
                 {p && !p->largest() ? 0u : 1u});
  }

  const GraphOp& op_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuTopK(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32Declared(op, graph));
  return Make(std::make_unique<TopKExecution>(b, op));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuLines(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32Declared(op, graph));
  const LineMode mode = op.type == fb::OpType::Hardmax ? kHardmax : op.type == fb::OpType::CumSum ? kCumSum : kLrn;
  return Make(std::make_unique<LinesExecution>(b, op, mode));
}

}  // namespace kiln
