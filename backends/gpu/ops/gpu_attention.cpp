// Attention on GPU (the fuse_attention pass's op, f32): one dispatch of
// attention.comp / attention.cl, Y = softmax(scale * Q KT + mask) V with an
// online softmax over the keys, the scores never stored (they were a
// MatMul's output, a scale pass and a Softmax's input and output before).
// An invocation owns RB query rows and all of a row's Dv outputs in
// registers: 4 rows on lavapipe (each key row of KT and V loaded once for
// four query rows), 1 on GPUs (more invocations); on PoCL 2 rows of the
// 16-key form, attention.cl's attention_k16 variant
// (GpuCaps::attention_keys). Heads (D, Dv) up to 128.
#include <algorithm>
#include <cstdlib>

#include "gpu_common.h"
#include "ops/attention_mask.h"

namespace kiln {
namespace {

constexpr int64_t kMaxHead = 128;  // D and Dv: D4, DV4 <= 32 vec4 registers a row

class AttentionExecution final : public GpuExecution {
 public:
  AttentionExecution(GpuBackend* b, float scale) : GpuExecution(b), scale_(scale) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    // Shapes are checked by InferShapeAttention.
    const Tensor &q = *in[0], &kt = *in[1], &v = *in[2];
    const Tensor* mask = in.size() > 3 ? in[3] : nullptr;
    const int r = q.dimensions();
    const int64_t L = q.length(r - 2), D = q.length(r - 1), S = kt.length(r - 1), Dv = v.length(r - 1);
    if (D > kMaxHead || Dv > kMaxHead)
      return Unsupported("Attention with heads of %lld and %lld (the GPU kernel takes up to %lld)",
                         static_cast<long long>(D), static_cast<long long>(Dv), static_cast<long long>(kMaxHead));
    int64_t batches = 1;
    for (int d = 0; d < r - 2; ++d) batches *= q.length(d);
    // The form by device (GpuCaps::attention_keys, attention_rows): 16 keys
    // a block where S and the heads allow vector loads of 16, else 4.
    const GpuCaps& caps = gpu()->gpuCaps();
    const bool aligned = D % 4 == 0 && S % 4 == 0 && Dv % 4 == 0;
    const bool k16 = caps.attention_keys == 16 && aligned && S % 16 == 0;
    static const char* rows_env = std::getenv("KILN_GPU_ATTN_ROWS");
    const uint32_t rb = rows_env ? static_cast<uint32_t>(std::max(1, std::atoi(rows_env))) : caps.attention_rows;
    const uint64_t total = L == 0 || Dv == 0 ? 0 : uint64_t(batches) * ((L + rb - 1) / rb);
    if (total > UINT32_MAX || q.elementCount() > UINT32_MAX || kt.elementCount() > UINT32_MAX ||
        v.elementCount() > UINT32_MAX)
      return Unsupported("Attention of %lld batches of %lld x %lld", static_cast<long long>(batches),
                         static_cast<long long>(L), static_cast<long long>(S));
    struct {
      uint32_t l, d, s, dv, total;
      float scale;
      uint32_t m_row, m_col;
      uint32_t m_extent[AttentionMask::kMaxRuns], m_stride[AttentionMask::kMaxRuns];
    } push{static_cast<uint32_t>(L), static_cast<uint32_t>(D), static_cast<uint32_t>(S),
           static_cast<uint32_t>(Dv), static_cast<uint32_t>(total), scale_, 0, 0, {1, 1, 1}, {0, 0, 0}};
    if (mask) {
      // The mask's strides by run of batch dims, row and key; 0 where it broadcasts.
      AttentionMask ms;
      const std::vector<int64_t> batch(q.shape().begin(), q.shape().end() - 2);
      if (!MakeAttentionMask(batch, L, S, mask->shape(), &ms) || mask->elementCount() > UINT32_MAX)
        return InvalidArgument("Attention: mask '%s' does not broadcast to the scores", mask->name().c_str());
      push.m_row = static_cast<uint32_t>(ms.row);
      push.m_col = static_cast<uint32_t>(ms.col);
      for (int k = 0; k < AttentionMask::kMaxRuns; ++k) {
        push.m_extent[k] = static_cast<uint32_t>(ms.extent[k]);
        push.m_stride[k] = static_cast<uint32_t>(ms.stride[k]);
      }
    }
    const uint32_t dv4 = static_cast<uint32_t>((Dv + 3) / 4), d4 = static_cast<uint32_t>((D + 3) / 4);
    return add1D(k16 ? "attention_k16" : "attention",
                 {{in[0]}, {in[1]}, {in[2]}, {mask ? mask : in[0]}, {out[0], nullptr, true}}, push, total,
                 {rb, std::max(dv4, 1u), mask != nullptr, aligned, std::max(d4, 1u)});
  }

  float scale_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuAttention(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  // D and Dv from Q's and V's declared shapes, where the graph knows them
  // (the pass fuses only static shapes): larger heads run where the op can.
  for (int k : {0, 2}) {
    const GraphTensor& t = graph.tensors[static_cast<size_t>(op.inputs[static_cast<size_t>(k)])];
    if (t.has_shape && !t.dims.empty() && t.dims.back() > kMaxHead)
      return Unsupported("Attention with heads of %lld (the GPU kernel takes up to %lld)",
                         static_cast<long long>(t.dims.back()), static_cast<long long>(kMaxHead));
  }
  const fb::AttentionParams* p = op.params<fb::AttentionParams>();
  return Make(std::make_unique<AttentionExecution>(b, p ? p->scale() : 1.f));
}

}  // namespace kiln
