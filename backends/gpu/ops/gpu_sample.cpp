// Sampling ops on GPU, f32 (fp16-stored in fp16 mode), one invocation an
// output element with the host kernels' arithmetic
// (host_fallback/ops/signal.cpp):
//   * GridSample (grid_sample.comp): 4-D, nearest / bilinear / bicubic,
//     zeros / border / reflection padding, align_corners. The sample
//     positions come from the grid, a tensor on the device, so the shader
//     computes its taps itself (Resize's come from the host instead).
// Every read is in bounds whatever the grid holds; an input whose planes
// are empty (the host reads outside them) stays on the host.
#include "ops/shape_inference.h"
#include "gpu_layout.h"

namespace kiln {
namespace {

class GridSampleExecution final : public GpuExecution {
 public:
  GridSampleExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const Tensor& grid = *in[1];
    const Tensor& y = *out[0];
    if (x.dtype() != fb::DataType::F32 || grid.dtype() != fb::DataType::F32)
      return Unsupported("GPU GridSample takes an f32 input and grid, not %s and %s", DataTypeName(x.dtype()),
                         DataTypeName(grid.dtype()));
    KILN_RETURN_IF_ERROR(Require32Bit(x));
    KILN_RETURN_IF_ERROR(Require32Bit(grid));
    KILN_RETURN_IF_ERROR(Require32Bit(y));
    if (y.elementCount() == 0) return Status::Ok();
    if (x.length(2) == 0 || x.length(3) == 0)
      return Unsupported("GPU GridSample: the input %s has empty planes", ShapeToString(x.shape()).c_str());
    const fb::GridSampleParams* p = op_.params<fb::GridSampleParams>();
    struct {
      uint32_t total, c, h, w, plane;
    } push{static_cast<uint32_t>(y.elementCount()), static_cast<uint32_t>(x.length(1)),
           static_cast<uint32_t>(x.length(2)), static_cast<uint32_t>(x.length(3)),
           static_cast<uint32_t>(y.length(2) * y.length(3))};
    const uint32_t mode = static_cast<uint32_t>(p ? p->mode() : fb::ResizeMode::Linear);
    const uint32_t padding = static_cast<uint32_t>(p ? p->padding() : fb::GridPadding::Zeros);
    return add1D("grid_sample", {{in[0]}, {in[1]}, {out[0], nullptr, true}}, push, push.total,
                 {mode, padding, p && p->align_corners() ? 1u : 0u});
  }

  const GraphOp& op_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuGridSample(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  return Make(std::make_unique<GridSampleExecution>(b, op));
}

}  // namespace kiln
