// Signal processing on GPU (f32, fp16 storage too): DFT and STFT through one
// kernel (shaders/vulkan/dft.comp), one invocation an output bin with the
// host kernel's direct sum (host_fallback/ops/signal.cpp). The lengths
// (dft_length, frame_step, frame_length) are value inputs, read at resize,
// when the twiddle table is computed here in double. Devices with f64
// arithmetic sum in double (the _f64 variant), as the host does; others in
// float. The models that use these (spectrogram front ends) take short
// frames, so the O(n^2) sum is what the host computes too.
#include <cmath>

#include "ops/op_params.h"
#include "gpu_reduce.h"

namespace kiln {
namespace {

struct DftPush {
  uint32_t n, bins, inner, frames, hi, lo, step, count, len, comp;
};

// A scalar value input as int64, or `dflt` when it is missing.
StatusOr<int64_t> ScalarInput(const std::vector<Tensor*>& in, size_t k, int64_t dflt, const char* what) {
  if (k >= in.size() || !in[k]) return dflt;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, TensorInts(*in[k]), "%s", what);
  if (v.size() != 1) return InvalidArgument("%s must have one element, has %zu", what, v.size());
  return v[0];
}

class DftExecution final : public GpuExecution {
 public:
  DftExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}
  ~DftExecution() override { gpu()->freeBuffer(&twiddles_); }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const Tensor& y = *out[0];
    KILN_RETURN_IF_ERROR(RequireF32Input(x, op_.typeName()));
    KILN_RETURN_IF_ERROR(Require32Bit(y));
    const fb::DftParams* p = op_.params<fb::DftParams>();
    const int64_t comp = x.shape().back();
    if (comp != 1 && comp != 2) return InvalidArgument("%s: the last dim must be 1 or 2, is %lld", op_.typeName(), (long long)comp);
    DftPush push{};
    push.comp = static_cast<uint32_t>(comp);
    const Tensor* window = &x;  // bound, not read, without a window
    uint32_t flags = p && p->inverse() ? 1u : 0u;
    if (op_.type == fb::OpType::DFT) {
      KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 1, x.dimensions()), "DFT");
      const int64_t len = x.length(axis);
      KILN_ASSIGN_OR_RETURN(int64_t n, ScalarInput(in, 1, len, "DFT dft_length"));
      if (n < 1) return InvalidArgument("DFT: dft_length %lld", (long long)n);
      int64_t outer, axis_len, inner;
      AroundAxis(std::vector<int64_t>(x.shape().begin(), x.shape().end() - 1), axis, &outer, &axis_len, &inner);
      push.bins = static_cast<uint32_t>(y.length(axis));
      push.inner = static_cast<uint32_t>(inner);
      push.frames = 1;
      push.hi = static_cast<uint32_t>(len * inner * comp);
      push.step = static_cast<uint32_t>(inner * comp);
      push.count = static_cast<uint32_t>(std::min(len, n));
      push.len = static_cast<uint32_t>(n);
      push.n = static_cast<uint32_t>(outer) * push.bins * push.inner;
    } else {  // STFT: x [batch, samples, comp] -> y [batch, frames, bins, 2]
      KILN_ASSIGN_OR_RETURN(int64_t step, ScalarInput(in, 1, 0, "STFT frame_step"));
      if (in.size() > 2 && in[2]) {
        window = in[2];
        KILN_RETURN_IF_ERROR(RequireF32Input(*window, "STFT window"));
        flags |= 2u;
      }
      KILN_ASSIGN_OR_RETURN(int64_t len, ScalarInput(in, 3, window != &x ? window->elementCount() : 0, "STFT frame_length"));
      if (window != &x && window->elementCount() != len)
        return InvalidArgument("STFT: the window has %lld values for frames of %lld", (long long)window->elementCount(),
                               (long long)len);
      const int64_t frames = y.length(1), samples = x.length(1);
      if (len < 1 || step < 1 || (frames > 0 && (frames - 1) * step + len > samples))
        return InvalidArgument("STFT: %lld frames of %lld samples every %lld do not fit %lld samples", (long long)frames,
                               (long long)len, (long long)step, (long long)samples);
      push.bins = static_cast<uint32_t>(y.length(2));
      push.inner = 1;
      push.frames = static_cast<uint32_t>(frames);
      push.hi = static_cast<uint32_t>(samples * comp);
      push.lo = static_cast<uint32_t>(step * comp);
      push.step = static_cast<uint32_t>(comp);
      push.count = static_cast<uint32_t>(len);
      push.len = static_cast<uint32_t>(len);
      push.n = static_cast<uint32_t>(x.length(0) * frames) * push.bins;
    }
    if (push.n == 0) return Status::Ok();
    // cos and sin of 2 pi j / len, each as a float and the float remainder.
    std::vector<float> tw(static_cast<size_t>(push.len) * 4);
    for (uint32_t j = 0; j < push.len; ++j) {
      const double a = 2.0 * 3.14159265358979323846 * j / push.len, c = std::cos(a), s = std::sin(a);
      float* t = &tw[static_cast<size_t>(j) * 4];
      t[0] = static_cast<float>(c);
      t[1] = static_cast<float>(c - t[0]);
      t[2] = static_cast<float>(s);
      t[3] = static_cast<float>(s - t[2]);
    }
    gpu()->freeBuffer(&twiddles_);
    KILN_ASSIGN_OR_RETURN(twiddles_, gpu()->createBuffer(tw.size() * sizeof(float), tw.data()));
    const bool f64 = gpu()->gpuCaps().float64 && !gpu()->halfStorage();
    return add1D(f64 ? "dft_f64" : "dft", {{&x}, {window}, {nullptr, &twiddles_, false}, {out[0], nullptr, true}}, push,
                 push.n, {flags});
  }

  const GraphOp& op_;
  GpuBuffer twiddles_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuDft(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireDtypes(op, graph, {fb::DataType::F32, fb::DataType::I32, fb::DataType::I64}));
  KILN_RETURN_IF_ERROR(RequireF32Declared(op, graph));
  return Make(std::make_unique<DftExecution>(b, op));
}

}  // namespace kiln
