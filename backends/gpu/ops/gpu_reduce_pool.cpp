// MaxPool (with the optional int64 Indices output) and AveragePool on GPU
// (f32; MaxPool without Indices also on u8 / i8, pool_bytes), 1 to 3 spatial axes: strides, dilations, explicit pads or auto_pad
// (the host's nn::WindowPads), ceil_mode (through the output shape, which
// the shape function computed), count_include_pad. One output element per
// invocation (shaders/vulkan/pool.comp), which visits only the window's
// taps inside the input.
#include "ops/op_params.h"
#include "gpu_reduce.h"

namespace kiln {
namespace {

class PoolExecution final : public GpuExecution {
 public:
  PoolExecution(GpuBackend* b, const fb::PoolParams* p, bool is_max)
      : GpuExecution(b), p_(p), is_max_(is_max) {}
  // A flat kernel over stored elements; zero lanes pool to zero. Not with
  // MaxPool's Indices (flat NCHW indices).
  PackRule packRule(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) const override {
    if ((out.size() > 1 && out[1]) || Bytes(*in[0])) return {};
    return {1, 1, true};
  }
  static bool Bytes(const Tensor& t) { return t.dtype() == fb::DataType::U8 || t.dtype() == fb::DataType::I8; }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const Tensor& y = *out[0];
    const Tensor* indices = out.size() > 1 && out[1] ? out[1] : nullptr;
    const bool bytes = Bytes(x);
    if (bytes) {
      if (!is_max_ || indices || y.dtype() != x.dtype())
        return Unsupported("GPU MaxPool without Indices takes u8 / i8; not this %s", is_max_ ? "MaxPool" : "AveragePool");
      if (!gpu()->gpuCaps().storage_8bit)
        return Unsupported("GPU MaxPool on %s needs 8-bit storage (storageBuffer8BitAccess), which the device lacks",
                           fb::EnumNameDataType(x.dtype()));
    } else {
      KILN_RETURN_IF_ERROR(RequireF32Input(x, is_max_ ? "MaxPool" : "AveragePool"));
      KILN_RETURN_IF_ERROR(Require32Bit(y));
    }
    const size_t n = static_cast<size_t>(x.dimensions() - 2);  // 1 to 3: the shape function and onCreate check
    if (n < 1 || n > 3) return Unsupported("pool over %zu spatial axes", n);
    const std::vector<int64_t> xin(x.shape().begin() + 2, x.shape().end());
    const std::vector<int64_t> yout(y.shape().begin() + 2, y.shape().end());
    const std::vector<int64_t> kernel = nn::IntsOr(p_->kernel_shape(), n, 1);
    const std::vector<int64_t> strides = nn::IntsOr(p_->strides(), n, 1);
    const std::vector<int64_t> dilations = nn::IntsOr(p_->dilations(), n, 1);
    const std::vector<int64_t> pads =
        nn::WindowPads(p_->auto_pad(), nn::IntsOr(p_->pads(), 0, 0), xin, yout, kernel, strides, dilations);
    struct {
      uint32_t total;
      uint32_t in[3], out[3], kernel[3], stride[3], dilation[3];
      int32_t pad_begin[3], pad_end[3];
    } push{};
    push.total = static_cast<uint32_t>(gpu()->storageElements(y));
    for (size_t j = 0; j < 3; ++j) {  // axis j of 3; the leading 3 - n are size 1
      const bool real = j >= 3 - n;
      const size_t i = real ? j - (3 - n) : 0;
      push.in[j] = real ? static_cast<uint32_t>(xin[i]) : 1;
      push.out[j] = real ? static_cast<uint32_t>(yout[i]) : 1;
      push.kernel[j] = real ? static_cast<uint32_t>(kernel[i]) : 1;
      push.stride[j] = real ? static_cast<uint32_t>(strides[i]) : 1;
      push.dilation[j] = real ? static_cast<uint32_t>(dilations[i]) : 1;
      push.pad_begin[j] = real ? static_cast<int32_t>(pads[i]) : 0;
      push.pad_end[j] = real ? static_cast<int32_t>(pads[i + n]) : 0;
    }
    if (bytes)
      return add1D("pool_bytes", {{in[0]}, {out[0], nullptr, true}}, push, push.total,
                   {x.dtype() == fb::DataType::I8 ? 1u : 0u});
    // Without Indices, Y stands in for the unused (never written) binding.
    // Packed without Indices on CPU drivers: a pixel's four lanes an invocation.
    const bool vec4 = packed(&y) && !indices && gpu()->gpuCaps().cpu_kernels;
    // And on PoCL, 2-D with dilation 1: a row's XB output pixels an item
    // (GpuCaps::pool_row_outputs).
    const bool rows = vec4 && n == 2 && push.dilation[1] == 1 && push.dilation[2] == 1 && push.out[1] * push.out[2] > 0;
    const uint32_t xb = rows ? gpu()->gpuCaps().pool_row_outputs : 1;
    const uint64_t items = xb > 1 ? uint64_t{push.total} / 4 / push.out[2] * ((push.out[2] + xb - 1) / xb)
                           : vec4 ? push.total / 4
                                  : push.total;
    return add1D("pool", {{in[0]}, {out[0], nullptr, true}, {indices ? indices : out[0], nullptr, indices != nullptr}},
                 push, items, {is_max_, p_->count_include_pad(), indices != nullptr, packed(&y), vec4, xb});
  }

  const fb::PoolParams* p_;
  bool is_max_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuPool(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  const fb::PoolParams* p = op.params<fb::PoolParams>();
  if (!p) return InvalidArgument("%s: PoolParams are required", op.typeName());
  const GraphTensor& x = graph.tensors[static_cast<size_t>(op.inputs[0])];
  const bool bytes_max = op.type == fb::OpType::MaxPool && (op.outputs.size() < 2 || op.outputs[1] < 0) &&
                         (x.dtype == fb::DataType::U8 || x.dtype == fb::DataType::I8);
  if (x.dtype != fb::DataType::F32 && !bytes_max)
    return Unsupported("%s on %s; the GPU kernel takes f32 (MaxPool without Indices also u8, i8)", op.typeName(),
                       fb::EnumNameDataType(x.dtype));
  if (x.has_shape && x.dims.size() > 5)
    return Unsupported("%s over %zu spatial axes (the GPU kernel takes 1 to 3)", op.typeName(), x.dims.size() - 2);
  return Make(std::make_unique<PoolExecution>(b, p, op.type == fb::OpType::MaxPool));
}

}  // namespace kiln
