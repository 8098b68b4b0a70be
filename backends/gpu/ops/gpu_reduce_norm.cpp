// LayerNormalization (with the optional Mean and InvStdDev outputs) and
// InstanceNormalization on GPU (f32), in one dispatch or two (and
// MeanVarianceNormalization, one, at the end):
//   1. norm_stats.comp: per-row mean and 1 / sqrt(variance + eps), X viewed
//      as [rows, len] (LayerNorm: len = the product of the axes from `axis`
//      on; InstanceNorm: the N x C planes). Written into the Mean and
//      InvStdDev outputs when the op has them, else into scratch buffers.
//      A LayerNorm whose scale and bias hold a whole row each (nearly
//      always) is done here (APPLY): the row normalized in a third pass
//      over it, where the rows fill the device (a work group a row on GPUs,
//      64 rows or more on CPU drivers). The transformer encoder's 8
//      LayerNorms (128 rows of 256): lavapipe 2.0-2.7 -> 1.3-1.4 ms, PoCL
//      0.53-0.57 -> 0.28-0.30 ms (2 threads).
//   2. Otherwise norm_apply.comp: one element per invocation, the affine
//      transform with scale and bias (LayerNorm: broadcast to the normalized
//      shape, or a whole row each with the row length a spec constant;
//      InstanceNorm: per channel), which keeps every invocation busy when
//      rows are few.
#include "ops/op_params.h"
#include "gpu_reduce.h"

namespace kiln {
namespace {

class NormExecution final : public RowExecution {
 public:
  // `axis`: the first normalized axis (InstanceNorm: 2).
  NormExecution(GpuBackend* b, bool instance, int axis, float eps)
      : RowExecution(b), instance_(instance), axis_(axis), eps_(eps) {}
  ~NormExecution() override {
    gpu()->freeBuffer(&mean_);
    gpu()->freeBuffer(&inv_);
  }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const char* name = instance_ ? "InstanceNormalization" : "LayerNormalization";
    KILN_RETURN_IF_ERROR(RequireF32Input(x, name));
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x.dimensions()), "%s", name);
    const std::vector<int64_t> norm(x.shape().begin() + axis, x.shape().end());
    uint64_t len = 1;
    for (int64_t d : norm) len *= static_cast<uint64_t>(d);
    const uint64_t rows = len ? static_cast<uint64_t>(x.elementCount()) / len : 0;

    // Statistics into the op's outputs where it has them, else scratch.
    auto stats = [&](size_t k, GpuBuffer* scratch) -> StatusOr<GpuBinding> {
      if (k < out.size() && out[k]) return GpuBinding{out[k], nullptr, true};
      KILN_RETURN_IF_ERROR(ReserveBuffer(gpu(), scratch, rows * sizeof(float)));
      return GpuBinding{nullptr, scratch, true};
    };
    KILN_ASSIGN_OR_RETURN(GpuBinding mean, stats(1, &mean_));
    KILN_ASSIGN_OR_RETURN(GpuBinding inv, stats(2, &inv_));
    struct {
      uint32_t rows, len;
      float eps;
    } stat_push{static_cast<uint32_t>(rows), static_cast<uint32_t>(len), eps_};
    const Tensor* scale = in[1];
    const Tensor* bias = in.size() > 2 && in[2] ? in[2] : nullptr;
    // Scale and bias of a whole row each (len elements: broadcastable to
    // the normalized shape, so laid out as it is): read at the element's
    // place in its row.
    const bool whole_rows = !instance_ && static_cast<uint64_t>(scale->elementCount()) == len &&
                            (!bias || static_cast<uint64_t>(bias->elementCount()) == len);
    // One dispatch (norm_stats's APPLY) where rows fill the device: a work
    // group a row on GPUs; on CPU drivers an invocation a row, where there
    // are rows for every lane (kOnePassRows).
    const uint32_t group = RowGroupSize(gpu()->gpuCaps(), rows, len, true);
    const bool one_pass = one_pass_on_ && whole_rows && (group != 0 || rows >= kOnePassRows);
    if (one_pass)
      return addRows("norm_stats",
                     {{in[0]}, mean, inv, {scale}, {bias ? bias : scale}, {out[0], nullptr, true}}, stat_push, rows,
                     group, {1, bias != nullptr});
    // Two dispatches: the statistics, then one element an invocation.
    KILN_RETURN_IF_ERROR(addRows("norm_stats", {{in[0]}, mean, inv, {in[0]}, {in[0]}, {in[0]}}, stat_push, rows,
                                 group, {0, 0}));

    struct {
      uint32_t total, len, channels, rank;
      uint32_t dims[6], s_scale[6], s_bias[6];
    } push{};
    push.total = static_cast<uint32_t>(x.elementCount());
    push.len = static_cast<uint32_t>(len);
    if (instance_) {
      push.channels = static_cast<uint32_t>(x.length(1));
    } else {
      KILN_ASSIGN_OR_RETURN(Broadcast bc, MakeBroadcast(norm, {scale->shape(), (bias ? bias : scale)->shape()}));
      push.rank = bc.rank;
      for (int d = 0; d < 6; ++d) {
        push.dims[d] = bc.dims[d];
        push.s_scale[d] = bc.strides[0][d];
        push.s_bias[d] = bc.strides[1][d];
      }
    }
    // Whole rows: the row length a constant of the kernel.
    mean.write = inv.write = false;
    return add1D("norm_apply", {{in[0]}, mean, inv, {scale}, {bias ? bias : scale}, {out[0], nullptr, true}}, push,
                 push.total, {instance_, bias != nullptr, whole_rows ? static_cast<uint32_t>(len) : 0u});
  }

  // Rows for an invocation each on CPU drivers' lanes: 2 threads x 8 lanes
  // x 4 (lavapipe's subgroup of 8).
  static constexpr uint64_t kOnePassRows = 64;
  bool instance_;
  int axis_;
  float eps_;
  GpuBuffer mean_, inv_;  // statistics the op does not output
  // KILN_GPU_NORM_ONE_PASS=0: always two dispatches (to compare).
  const bool one_pass_on_ = !EnvIsZero("KILN_GPU_NORM_ONE_PASS");
};

// MeanVarianceNormalization over any set of axes (mvn.comp): one
// invocation a group, walking its elements through x's dims merged where
// neighbours are both reduced or both kept. Groups are few (the channels,
// for the default axes [0, 2, 3]) and the op is rare in inference graphs.
class MvnExecution final : public GpuExecution {
 public:
  MvnExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    KILN_RETURN_IF_ERROR(RequireF32Input(x, "MeanVarianceNormalization"));
    const fb::AxesParams* p = op_.params<fb::AxesParams>();
    const std::vector<int64_t> axes = p && p->axes() ? ToI64(p->axes()) : std::vector<int64_t>{0, 2, 3};
    std::vector<bool> reduced(static_cast<size_t>(x.dimensions()), false);
    for (int64_t a : axes) {
      KILN_ASSIGN_OR_RETURN(int ax, NormalizeAxis(a, x.dimensions()), "MeanVarianceNormalization");
      reduced[static_cast<size_t>(ax)] = true;
    }
    std::vector<std::pair<int64_t, bool>> dims;  // merged runs of one kind
    int64_t count = 1;
    for (int d = 0; d < x.dimensions(); ++d) {
      const bool r = reduced[static_cast<size_t>(d)];
      if (r) count *= x.length(d);
      if (!dims.empty() && dims.back().second == r) dims.back().first *= x.length(d);
      else dims.push_back({x.length(d), r});
    }
    if (dims.size() > 6) return Unsupported("GPU MeanVarianceNormalization: %zu alternating runs of axes", dims.size());
    struct {
      uint32_t groups, count, rank, reduced, dims[6];
    } push{};
    push.count = static_cast<uint32_t>(count);
    push.groups = count ? static_cast<uint32_t>(x.elementCount() / count) : 0;
    push.rank = static_cast<uint32_t>(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      push.dims[d] = static_cast<uint32_t>(dims[d].first);
      if (dims[d].second) push.reduced |= 1u << d;
    }
    if (push.groups == 0 || push.count == 0) return Status::Ok();
    return add1D("mvn", {{in[0]}, {out[0], nullptr, true}}, push, push.groups);
  }

  const GraphOp& op_;
};

float Epsilon(const GraphOp& op) {
  const fb::NormParams* p = op.params<fb::NormParams>();
  return p ? p->epsilon() : 1e-5f;
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuLayerNorm(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  const fb::NormParams* p = op.params<fb::NormParams>();
  return Make(std::make_unique<NormExecution>(b, false, p ? p->axis() : -1, Epsilon(op)));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuInstanceNorm(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  return Make(std::make_unique<NormExecution>(b, true, 2, Epsilon(op)));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuMvn(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  return Make(std::make_unique<MvnExecution>(b, op));
}

}  // namespace kiln
