// Host kernels: Softmax and LogSoftmax along one axis (ONNX opset 13). f32,
// numerically stable (the maximum along the axis is subtracted first), the
// exponential vectorized (vec_math.h).
// X is viewed as [outer, n, inner] with n the axis. When the axis is the
// innermost one (inner == 1: attention scores, classifier outputs) each row
// is contiguous and a task is a block of rows; otherwise a task is one outer
// index and a block of inner columns, so rows along the axis are read
// contiguously.
//
// Attention (fuse_attention's op) is here too: per batch, the scores
// scale * Q KT (+ mask) into a thread's scratch, softmax over each row in
// place, then P V.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "gemm.h"
#include "host_backend.h"
#include "ops/attention_mask.h"
#include "ops/nn_common.h"
#include "scratch.h"
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

Status RunAttention(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                    HostBackend& be) {
  // Shapes and types are checked by InferShapeAttention.
  const Tensor &Q = *in[0], &KT = *in[1], &V = *in[2];
  const Tensor* mask = in.size() > 3 ? in[3] : nullptr;
  const int r = Q.dimensions();
  const int64_t L = Q.length(r - 2), D = Q.length(r - 1), S = KT.length(r - 1), Dv = V.length(r - 1);
  int64_t batches = 1;
  for (int d = 0; d < r - 2; ++d) batches *= Q.length(d);
  if (batches * L * Dv == 0) return Status::Ok();
  if (S == 0) {  // no keys: the products are empty sums
    std::fill(out[0]->host<float>(), out[0]->host<float>() + batches * L * Dv, 0.f);
    return Status::Ok();
  }
  const fb::AttentionParams* p = op.params<fb::AttentionParams>();
  const float scale = p ? p->scale() : 1.f;
  // The mask's strides (0 where it broadcasts).
  AttentionMask ms;
  const float* m = nullptr;
  if (mask) {
    std::vector<int64_t> batch(Q.shape().begin(), Q.shape().end() - 2);
    if (!MakeAttentionMask(batch, L, S, mask->shape(), &ms))
      return InvalidArgument("Attention: mask '%s' does not broadcast to the scores", mask->name().c_str());
    m = mask->host<float>();
  }
  const float *q = Q.host<float>(), *kt = KT.host<float>(), *v = V.host<float>();
  float* y = out[0]->host<float>();
  auto one = [&](ThreadPool& pool, int64_t b, float* sc) {
    Sgemm(pool, false, false, L, S, D, scale, q + b * L * D, D, kt + b * D * S, S, 0.f, sc, S);
    if (m) {
      const float* mb = m + ms.offset(b);
      for (int64_t i = 0; i < L; ++i) {
        float* row = sc + i * S;
        const float* mrow = mb + i * ms.row;
        for (int64_t j = 0; j < S; ++j) row[j] += mrow[j * ms.col];
      }
    }
    SoftmaxRowsF32(sc, sc, L, S, false);
    Sgemm(pool, false, false, L, Dv, S, 1.f, sc, S, v + b * S * Dv, Dv, 0.f, y + b * L * Dv, Dv);
  };
  thread_local ScratchBuffer scores;
  if (BatchPerThread(be.pool().threads(), batches)) {
    // A batch (head) a thread, its scores in that thread's cache.
    std::atomic<bool> no_memory{false};
    be.pool().parallelFor(batches, [&](int64_t begin, int64_t end) {
      float* sc = scores.get(static_cast<size_t>(L * S));
      if (!sc) {
        no_memory = true;
        return;
      }
      for (int64_t b = begin; b < end; ++b) one(SerialPool(), b, sc);
    });
    if (no_memory) return OutOfMemory("Attention: scores of %lld floats", static_cast<long long>(L * S));
    return Status::Ok();
  }
  float* sc = scores.get(static_cast<size_t>(L * S));
  if (!sc) return OutOfMemory("Attention: scores of %lld floats", static_cast<long long>(L * S));
  for (int64_t b = 0; b < batches; ++b) one(be.pool(), b, sc);
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostAttention(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunAttention);
}

StatusOr<std::unique_ptr<Execution>> CreateHostSoftmax(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunSoftmax);
}

}  // namespace kiln
