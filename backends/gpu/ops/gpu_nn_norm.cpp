// BatchNormalization (inference form) on GPU: one elementwise pass over
// X [N, C, ...] (shaders/vulkan/batchnorm.comp); scale, B, mean and var may
// be constants or computed.
#include "gpu_common.h"

namespace kiln {
namespace {

class BatchNormExecution final : public GpuExecution {
 public:
  BatchNormExecution(GpuBackend* b, float eps) : GpuExecution(b), eps_(eps) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    KILN_RETURN_IF_ERROR(Require32Bit(*out[0]));
    const Tensor& x = *in[0];
    const int64_t planes = x.length(0) * x.length(1);
    struct {
      uint32_t total, c, plane;
      float eps;
    } push{static_cast<uint32_t>(x.elementCount()), static_cast<uint32_t>(x.length(1)),
           static_cast<uint32_t>(planes ? x.elementCount() / planes : 0), eps_};
    return add1D("batchnorm", {{in[0]}, {in[1]}, {in[2]}, {in[3]}, {in[4]}, {out[0], nullptr, true}}, push,
                 push.total);
  }
  float eps_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuBatchNorm(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  if (op.inputs.size() < 5) return Unsupported("BatchNormalization with %zu inputs (needs 5)", op.inputs.size());
  const fb::NormParams* p = op.params<fb::NormParams>();
  return Make(std::make_unique<BatchNormExecution>(b, p ? p->epsilon() : 1e-5f));
}

}  // namespace kiln
