// Sampling ops on GPU, f32 (fp16-stored in fp16 mode), one invocation an
// output element with the host kernels' arithmetic
// (host_fallback/ops/signal.cpp):
//   * GridSample (grid_sample.comp): 4-D, nearest / bilinear / bicubic,
//     zeros / border / reflection padding, align_corners. The sample
//     positions come from the grid, a tensor on the device, so the shader
//     computes its taps itself (Resize's come from the host instead);
//   * RoiAlign (roi_align.comp): avg and max modes, half_pixel or opset
//     10's output_half_pixel, sampling_ratio 0 (adaptive) or fixed,
//     batch_indices i64 or i32. A batch index out of range, a box that is
//     not finite, or a sampling grid the host would refuse (CheckHostWork)
//     gives 0s where the host reports an error.
// Every read is in bounds whatever the grid, ROIs or indices hold; an input
// whose planes are empty (the host reads outside them) stays on the host.
#include <algorithm>

#include "ops/op_params.h"
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

class RoiAlignExecution final : public GpuExecution {
 public:
  RoiAlignExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const Tensor& rois = *in[1];
    const Tensor& idx = *in[2];
    const Tensor& y = *out[0];
    if (x.dtype() != fb::DataType::F32 || rois.dtype() != fb::DataType::F32)
      return Unsupported("GPU RoiAlign takes f32 X and rois, not %s and %s", DataTypeName(x.dtype()),
                         DataTypeName(rois.dtype()));
    if (idx.dtype() != fb::DataType::I64 && idx.dtype() != fb::DataType::I32)
      return Unsupported("GPU RoiAlign takes i64 or i32 batch_indices, not %s", DataTypeName(idx.dtype()));
    KILN_RETURN_IF_ERROR(Require32Bit(x));
    KILN_RETURN_IF_ERROR(Require32Bit(rois));
    KILN_RETURN_IF_ERROR(Require32Bit(y));
    if (y.elementCount() == 0) return Status::Ok();
    if (x.elementCount() == 0)
      return Unsupported("GPU RoiAlign: the input %s is empty", ShapeToString(x.shape()).c_str());
    const fb::RoiAlignParams* p = op_.params<fb::RoiAlignParams>();
    const int64_t c = x.length(1), oh = y.length(2), ow = y.length(3);
    struct {
      uint32_t total, batch, c, h, w, oh, ow, ratio;
      float scale, max_grid;
    } push{};
    push.total = static_cast<uint32_t>(y.elementCount());
    push.batch = static_cast<uint32_t>(x.length(0));
    push.c = static_cast<uint32_t>(c);
    push.h = static_cast<uint32_t>(x.length(2));
    push.w = static_cast<uint32_t>(x.length(3));
    push.oh = static_cast<uint32_t>(oh);
    push.ow = static_cast<uint32_t>(ow);
    push.ratio = static_cast<uint32_t>(std::max(p ? p->sampling_ratio() : 0, 0));
    push.scale = p ? p->spatial_scale() : 1.f;
    // The sampling points a bin may take: the host's bound on one ROI's work
    // (kMaxHostOpWork over its C * out_h * out_w bins), at most 2^31 so that
    // a grid side fits the shader's uint.
    push.max_grid = static_cast<float>(std::min(kMaxHostOpWork / static_cast<double>(c * oh * ow), 2147483648.0));
    const uint32_t max_mode = p && p->max_mode() ? 1u : 0u, half = !p || p->half_pixel() ? 1u : 0u;
    const uint32_t idx64 = idx.dtype() == fb::DataType::I64 ? 1u : 0u;
    return add1D("roi_align", {{in[0]}, {in[1]}, {in[2]}, {out[0], nullptr, true}}, push, push.total,
                 {max_mode, half, idx64});
  }

  const GraphOp& op_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuGridSample(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  return Make(std::make_unique<GridSampleExecution>(b, op));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuRoiAlign(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  for (size_t k = 0; k < 2; ++k) {
    const fb::DataType t = DeclaredInputDtype(op, graph, k);
    if (t != fb::DataType::F32) return Unsupported("GPU RoiAlign takes f32 X and rois, not %s", fb::EnumNameDataType(t));
  }
  const fb::DataType idx = DeclaredInputDtype(op, graph, 2);
  if (idx != fb::DataType::I64 && idx != fb::DataType::I32)
    return Unsupported("GPU RoiAlign takes i64 or i32 batch_indices, not %s", fb::EnumNameDataType(idx));
  return Make(std::make_unique<RoiAlignExecution>(b, op));
}

}  // namespace kiln
