// Reductions on GPU (f32): ReduceSum / Mean / Max / Min / Prod / L1 / L2 /
// SumSquare / LogSum / LogSumExp over
// any axes (attribute or value input, keepdims, noop_with_empty_axes: the
// host's ResolveReduce), GlobalAveragePool / GlobalMaxPool (a reduction over
// the spatial axes), ArgMax / ArgMin (int64 result); and the row launch
// shared by the family (gpu_reduce.h).
//
// A reduction views X as rows like the host kernel: the kept dims (in output
// order) and the reduced dims, each merged where contiguous and without
// size-1 dims; result o reads x[kept(o) + reduced(r)] (reduce.comp). Long
// rows with few results (a global mean, a reduction over the batch) are
// split: partial results per chunk of a row into a scratch buffer, then a
// second dispatch reduces the partials, so a single result still occupies
// many work groups.
#include <algorithm>

#include "ops/op_params.h"
#include "gpu_reduce.h"

namespace kiln {

uint32_t RowGroupSize(const GpuCaps& caps, uint64_t rows, uint64_t len, bool contiguous) {
  if (caps.cpu_kernels || len < 32 || (!contiguous && rows >= 256)) return 0;
  uint32_t most = kMaxRowGroup;
  while (most > caps.max_workgroup_invocations || most > caps.max_workgroup_size[0]) most /= 2;
  uint32_t g = 32;
  while (g < most && g * 4ull < len) g *= 2;
  return std::min(g, most);
}

Status RequireF32Input(const Tensor& x, const char* op) {
  if (x.dtype() != fb::DataType::F32)
    return Unsupported("%s on %s '%s'; the GPU kernel takes f32", op, DataTypeName(x.dtype()), x.name().c_str());
  return Require32Bit(x);
}

namespace {

// Operation codes of shaders/vulkan/reduce.comp.
enum GpuReduceOp : uint32_t { kSum = 0, kMean, kMax, kMin, kProd, kL2, kL1, kSumSquare, kLogSum, kLogSumExp };

constexpr uint32_t kChunk = 4096;      // elements a work group reduces when a row is split
constexpr uint32_t kMaxChunks = 1024;  // partials per result
constexpr uint64_t kFewRows = 64;      // rows below this are split when long
// CPU drivers: no work groups sharing a row (their barriers cost more than
// the tree saves); rows are split into chunks of kCpuChunk, one invocation
// a chunk, while there are fewer than kCpuFewRows of them. EfficientNet's
// global pools on packed tensors (96 to 240 rows of 3136 to 12544
// elements, four lanes apart) ran one row a work group.
constexpr uint32_t kCpuChunk = 512;
constexpr uint64_t kCpuFewRows = 4096;

// Kept and reduced dims of X (innermost last), as the host kernel merges
// them; `count` elements per row (0 when a reduced dim is 0).
struct ReduceView {
  std::vector<int64_t> kdims, kstrides, rdims, rstrides;
  int64_t count = 1;
};

ReduceView MakeView(const std::vector<int64_t>& shape, const std::vector<bool>& reduce) {
  ReduceView v;
  int64_t stride = 1;
  std::vector<int64_t> st(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    st[d] = stride;
    stride *= shape[d];
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduce[d]) v.count *= shape[d];
    if (shape[d] == 1) continue;
    auto& dims = reduce[d] ? v.rdims : v.kdims;
    auto& strides = reduce[d] ? v.rstrides : v.kstrides;
    if (!dims.empty() && strides.back() == st[d] * shape[d]) {
      dims.back() *= shape[d];
      strides.back() = st[d];
    } else {
      dims.push_back(shape[d]);
      strides.push_back(st[d]);
    }
  }
  if (v.rdims.empty()) {  // nothing (or only size-1 dims) reduced
    v.rdims.push_back(1);
    v.rstrides.push_back(1);
  }
  return v;
}

// reduce.comp's push constants.
struct ReducePush {
  uint32_t outputs = 0, count = 0, chunks = 1, chunk = 0, krank = 0, rrank = 0;
  float divisor = 0;
  uint32_t kdims[6] = {}, kstrides[6] = {}, rdims[6] = {}, rstrides[6] = {};
};

class ReduceExecution final : public RowExecution {
 public:
  ReduceExecution(GpuBackend* b, const GraphOp& op, uint32_t code) : RowExecution(b), op_(op), code_(code) {}
  ~ReduceExecution() override { gpu()->freeBuffer(&partial_); }
  // GlobalAveragePool / GlobalMaxPool reduce a packed tensor's spatial dims
  // into a packed [N, C, 1...] (zero lanes give zero). With C a multiple of
  // four, [N, C, 1...] packed is [N, C, 1...] planar byte for byte, so X
  // and Y need not share a layout: ResNet's last conv stays packed before
  // a Flatten that takes only planar tensors (as one rule for both, the
  // planar Y made the whole last stage, its residual convs with it, planar).
  PackRule packRule(const std::vector<Tensor*>& in, const std::vector<Tensor*>&) const override {
    if (op_.type != fb::OpType::GlobalAveragePool && op_.type != fb::OpType::GlobalMaxPool) return {};
    const bool whole_blocks = in[0]->dimensions() >= 2 && in[0]->length(1) % 4 == 0;
    return {1, 1, !whole_blocks};
  }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    KILN_RETURN_IF_ERROR(RequireF32Input(x, op_.typeName()));
    std::vector<int64_t> shape = x.shape();
    std::vector<bool> reduce(x.shape().size(), false);
    if (op_.type == fb::OpType::GlobalAveragePool || op_.type == fb::OpType::GlobalMaxPool) {
      for (size_t d = 2; d < reduce.size(); ++d) reduce[d] = true;
      if (packed(&x)) {  // [N, C/4, S..., 4]: the lanes are kept
        shape = gpu()->storageShape(x);
        reduce.push_back(false);
      }
    } else {
      KILN_ASSIGN_OR_RETURN(ReduceSpec s, ResolveReduce(op_, x.shape(), TensorValues(in)));
      if (s.noop) {
        addCopy(in[0], out[0]);
        return Status::Ok();
      }
      reduce = s.reduce;
    }
    const ReduceView v = MakeView(shape, reduce);
    if (v.kdims.size() > 6 || v.rdims.size() > 6)
      return Unsupported("%s: %zu kept and %zu reduced dim groups (the GPU kernel takes 6 each)", op_.typeName(),
                         v.kdims.size(), v.rdims.size());
    ReducePush push;
    push.outputs = static_cast<uint32_t>(gpu()->storageElements(*out[0]));
    push.count = static_cast<uint32_t>(v.count);
    push.chunk = push.count;
    push.divisor = static_cast<float>(v.count);
    push.krank = static_cast<uint32_t>(v.kdims.size());
    push.rrank = static_cast<uint32_t>(v.rdims.size());
    for (size_t d = 0; d < v.kdims.size(); ++d) {
      push.kdims[d] = static_cast<uint32_t>(v.kdims[d]);
      push.kstrides[d] = static_cast<uint32_t>(v.kstrides[d]);
    }
    for (size_t d = 0; d < v.rdims.size(); ++d) {
      push.rdims[d] = static_cast<uint32_t>(v.rdims[d]);
      push.rstrides[d] = static_cast<uint32_t>(v.rstrides[d]);
    }
    const bool cpu = gpu()->gpuCaps().cpu_kernels;
    const uint32_t group = RowGroupSize(gpu()->gpuCaps(), push.outputs, push.count, v.rstrides.back() == 1);
    // X read as texels of one float where the device reads them faster so (reduce_tx).
    const GpuBinding xb{&x, nullptr, false, texelsOf(gpu()->storageBytes(x), 1)};
    const uint32_t chunk = cpu ? kCpuChunk : kChunk;
    const bool split = cpu ? push.outputs < kCpuFewRows && push.count >= 2 * kCpuChunk
                           : group && push.outputs < kFewRows && push.count >= 2 * kChunk;
    if (!split) return addRows("reduce", {xb, {out[0], nullptr, true}}, push, push.outputs, group, {code_, 0});

    // Split rows: partial[o * chunks + c] for chunk c of row o, then rows of
    // `chunks` partials.
    push.chunks = std::min(kMaxChunks, (push.count + chunk - 1) / chunk);
    push.chunk = (push.count + push.chunks - 1) / push.chunks;
    const uint64_t bytes = uint64_t{push.outputs} * push.chunks * sizeof(float);
    KILN_RETURN_IF_ERROR(ReserveBuffer(gpu(), &partial_, bytes));
    KILN_RETURN_IF_ERROR(addRows("reduce", {xb, {nullptr, &partial_, true}}, push, uint64_t{push.outputs} * push.chunks,
                            group, {code_, 1}));
    ReducePush second;
    second.outputs = push.outputs;
    second.count = second.chunk = push.chunks;
    second.divisor = push.divisor;
    second.krank = second.rrank = 1;
    second.kdims[0] = push.outputs;
    second.kstrides[0] = push.chunks;
    second.rdims[0] = push.chunks;
    second.rstrides[0] = 1;
    return addRows("reduce", {{nullptr, &partial_, false}, {out[0], nullptr, true}}, second, second.outputs,
                   RowGroupSize(gpu()->gpuCaps(), second.outputs, second.count, true), {code_, 2});
  }

  const GraphOp& op_;
  uint32_t code_;
  GpuBuffer partial_;
};

class ArgExecution final : public RowExecution {
 public:
  ArgExecution(GpuBackend* b, int axis, bool is_max, bool last)
      : RowExecution(b), axis_(axis), is_max_(is_max), last_(last) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    KILN_RETURN_IF_ERROR(RequireF32Input(x, "ArgMax/ArgMin"));
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x.dimensions()), "ArgMax/ArgMin");
    struct {
      uint32_t outputs, n, inner;
    } push{static_cast<uint32_t>(out[0]->elementCount()), static_cast<uint32_t>(x.length(axis)), 1};
    for (int d = axis + 1; d < x.dimensions(); ++d) push.inner *= static_cast<uint32_t>(x.length(d));
    if (push.n == 0 && push.outputs > 0) return InvalidArgument("ArgMax/ArgMin over an empty axis %d", axis);
    return addRows("reduce_arg", {{in[0]}, {out[0], nullptr, true}}, push, push.outputs,
                   RowGroupSize(gpu()->gpuCaps(), push.outputs, push.n, push.inner == 1), {is_max_, last_});
  }

  int axis_;
  bool is_max_, last_;
};

}  // namespace

Status RequireF32Declared(const GraphOp& op, const Graph& graph) {
  const fb::DataType x = graph.tensors[static_cast<size_t>(op.inputs[0])].dtype;
  if (x != fb::DataType::F32)
    return Unsupported("%s on %s; the GPU kernel takes f32", op.typeName(), fb::EnumNameDataType(x));
  return Status::Ok();
}

StatusOr<std::unique_ptr<Execution>> CreateGpuReduce(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32Declared(op, graph));
  uint32_t code = kSum;
  switch (op.type) {
    case fb::OpType::ReduceSum: code = kSum; break;
    case fb::OpType::ReduceMean: code = kMean; break;
    case fb::OpType::GlobalAveragePool: code = kMean; break;
    case fb::OpType::ReduceMax: code = kMax; break;
    case fb::OpType::GlobalMaxPool: code = kMax; break;
    case fb::OpType::ReduceMin: code = kMin; break;
    case fb::OpType::ReduceProd: code = kProd; break;
    case fb::OpType::ReduceL2: code = kL2; break;
    case fb::OpType::ReduceL1: code = kL1; break;
    case fb::OpType::ReduceSumSquare: code = kSumSquare; break;
    case fb::OpType::ReduceLogSum: code = kLogSum; break;
    case fb::OpType::ReduceLogSumExp: code = kLogSumExp; break;
    default: return Unsupported("no GPU reduction for %s", op.typeName());
  }
  return Make(std::make_unique<ReduceExecution>(b, op, code));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuArg(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32Declared(op, graph));
  const fb::ArgParams* p = op.params<fb::ArgParams>();
  return Make(std::make_unique<ArgExecution>(b, p ? p->axis() : 0, op.type == fb::OpType::ArgMax,
                                             p && p->select_last_index()));
}

}  // namespace kiln
