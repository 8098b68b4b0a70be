// Softmax and LogSoftmax on GPU (f32) along one axis (ONNX opset 13, the
// host's semantics; default -1): X viewed as [outer, n, inner], one row per
// (outer, inner) pair, numerically stable (shaders/vulkan/softmax.comp).
// Rows along the last axis get a work group each when long (a 30k-class
// softmax spreads over 256 invocations); rows along an inner axis, one
// invocation each, so that neighbours read neighbouring columns.
#include "ops/op_params.h"
#include "gpu_reduce.h"

namespace kiln {
namespace {

class SoftmaxExecution final : public RowExecution {
 public:
  SoftmaxExecution(GpuBackend* b, int axis, bool log) : RowExecution(b), axis_(axis), log_(log) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    KILN_RETURN_IF_ERROR(RequireF32Input(x, "Softmax"));
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x.dimensions()), "Softmax");
    struct {
      uint32_t rows, n, inner;
    } push{1, static_cast<uint32_t>(x.length(axis)), 1};
    for (int d = 0; d < x.dimensions(); ++d)
      if (d != axis) push.rows *= static_cast<uint32_t>(x.length(d));
    for (int d = axis + 1; d < x.dimensions(); ++d) push.inner *= static_cast<uint32_t>(x.length(d));
    if (push.n == 0) push.rows = 0;  // nothing to write
    return addRows("softmax", {{in[0]}, {out[0], nullptr, true}}, push, push.rows,
                   RowGroupSize(gpu()->gpuCaps(), push.rows, push.n, push.inner == 1), {log_});
  }

  int axis_;
  bool log_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuSoftmax(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  const fb::AxisParams* p = op.params<fb::AxisParams>();
  return Make(std::make_unique<SoftmaxExecution>(b, p ? p->axis() : -1, op.type == fb::OpType::LogSoftmax));
}

}  // namespace kiln
