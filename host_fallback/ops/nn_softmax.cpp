// Host kernels: Softmax and LogSoftmax along one axis (ONNX opset 13). f32,
// numerically stable (the maximum along the axis is subtracted first), the
// exponential vectorized (vec_math.h).
// X is viewed as [outer, n, inner] with n the axis. When the axis is the
// innermost one (inner == 1: attention scores, classifier outputs) each row
// is contiguous and a task is a block of rows; otherwise a task is one outer
// index and a block of inner columns, so rows along the axis are read
// contiguously.
#include <algorithm>
#include <cmath>
#include <vector>

#include "host_backend.h"
#include "ops/nn_common.h"
#include "vec_math.h"

namespace kiln {
namespace {

constexpr int64_t kBlock = 256;  // inner columns a task handles at once

Status RunSoftmax(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                  HostBackend& be) {
  KILN_RETURN_IF_ERROR(nn::NeedF32(op, in));
  const bool log = op.type == fb::OpType::LogSoftmax;
  const Tensor& X = *in[0];
  const fb::AxisParams* p = op.params<fb::AxisParams>();
  const int rank = X.dimensions();
  int axis = p ? p->axis() : -1;
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= X.length(d);
  for (int d = axis + 1; d < rank; ++d) inner *= X.length(d);
  const int64_t n = X.length(axis);
  if (outer * n * inner == 0) return Status::Ok();
  const float* x = X.host<float>();
  float* y = out[0]->host<float>();

  if (inner == 1) {
    be.pool().parallelFor(outer, [&](int64_t begin, int64_t end) {
      SoftmaxRowsF32(x + begin * n, y + begin * n, end - begin, n, log);
    }, std::max<int64_t>(1, 8192 / n));
    return Status::Ok();
  }
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  be.pool().parallelFor(outer * blocks, [&](int64_t begin, int64_t end) {
    float mx[kBlock], sum[kBlock];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / blocks, j0 = task % blocks * kBlock, w = std::min(kBlock, inner - j0);
      SoftmaxColumnsF32(x + o * n * inner + j0, y + o * n * inner + j0, n, inner, w, log, mx, sum);
    }
  }, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, n * std::min(inner, kBlock))));
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostSoftmax(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunSoftmax);
}

}  // namespace kiln
