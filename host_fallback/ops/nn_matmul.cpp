// Host kernels: MatMul (numpy semantics: batch dims broadcast, 1-D operands
// promoted and the added axis removed) and Gemm (alpha, beta, transposes, C
// broadcast to [M, N], fused activation). f32; every product is an Sgemm
// (gemm.h), which splits the work over threads. A constant B (the weights of
// a linear layer) is packed once, at the first resize, into the GEMM's panel
// layout (PackB), and each run multiplies by the packed copy.
#include <algorithm>
#include <optional>
#include <vector>

#include "gemm.h"
#include "host_backend.h"
#include "ops/nn_common.h"

namespace kiln {
namespace {

using IntVec = std::vector<int64_t>;

// Element offset of every output batch index into an operand whose batch
// dims `dims` broadcast to `out` (both outermost first; `dims` may be shorter).
IntVec BatchOffsets(const IntVec& dims, const IntVec& out, int64_t matrix_size) {
  int64_t count = 1;
  for (int64_t d : out) count *= d;
  const size_t r = out.size(), lead = r - dims.size();
  IntVec stride(r, 0);
  for (size_t i = dims.size(), st = static_cast<size_t>(matrix_size); i-- > 0;) {
    stride[lead + i] = dims[i] == 1 ? 0 : static_cast<int64_t>(st);
    st *= static_cast<size_t>(dims[i]);
  }
  IntVec offs(static_cast<size_t>(count));
  for (int64_t b = 0; b < count; ++b) {
    int64_t rem = b, off = 0;
    for (size_t d = r; d-- > 0;) {
      off += rem % out[d] * stride[d];
      rem /= out[d];
    }
    offs[static_cast<size_t>(b)] = off;
  }
  return offs;
}

// MatMul; `packed`, when set, is B packed (B constant and without batch
// dims, or with batch dims of 1).
Status MatMul(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be,
              const PackedB* packed) {
  KILN_RETURN_IF_ERROR(nn::NeedF32(op, in));
  IntVec a = in[0]->shape(), b = in[1]->shape();
  if (a.size() == 1) a.insert(a.begin(), 1);  // [K] -> [1, K]
  if (b.size() == 1) b.push_back(1);          // [K] -> [K, 1]
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  const IntVec ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  // The broadcast batch shape (shape inference has checked compatibility).
  const size_t rank = std::max(ba.size(), bb.size());
  auto dim = [rank](const IntVec& v, size_t i) { return i < rank - v.size() ? 1 : v[i - (rank - v.size())]; };
  IntVec batch(rank);
  for (size_t i = 0; i < rank; ++i) batch[i] = dim(ba, i) == 1 ? dim(bb, i) : dim(ba, i);
  const IntVec a_off = BatchOffsets(ba, batch, M * K), b_off = BatchOffsets(bb, batch, K * N);
  const float* pa = in[0]->host<float>();
  const float* pb = in[1]->host<float>();
  float* py = out[0]->host<float>();
  const int64_t batches = static_cast<int64_t>(a_off.size());
  // One GEMM when B is shared and A's batches are contiguous: [batches * M, K] x [K, N].
  bool merged = batches > 1;
  for (int64_t bi = 0; bi < batches && merged; ++bi)
    merged = b_off[static_cast<size_t>(bi)] == b_off[0] && a_off[static_cast<size_t>(bi)] == bi * M * K;
  if (packed) {
    if (merged || batches == 1) {
      SgemmPackedB(be.pool(), false, batches * M, 1.f, pa + a_off[0], K, *packed, 0.f, py, N);
    } else {
      for (int64_t bi = 0; bi < batches; ++bi)
        SgemmPackedB(be.pool(), false, M, 1.f, pa + a_off[static_cast<size_t>(bi)], K, *packed, 0.f,
                     py + bi * M * N, N);
    }
    return Status::Ok();
  }
  if (merged) {
    Sgemm(be.pool(), false, false, batches * M, N, K, 1.f, pa, K, pb + b_off[0], N, 0.f, py, N);
    return Status::Ok();
  }
  auto one = [&](ThreadPool& pool, int64_t bi) {
    Sgemm(pool, false, false, M, N, K, 1.f, pa + a_off[static_cast<size_t>(bi)], K,
          pb + b_off[static_cast<size_t>(bi)], N, 0.f, py + bi * M * N, N);
  };
  // Many small products (attention's per-head scores, [heads, S, S]): a
  // batch a thread (BatchPerThread).
  if (BatchPerThread(be.pool().threads(), batches)) {
    be.pool().parallelFor(batches, [&](int64_t begin, int64_t end) {
      for (int64_t bi = begin; bi < end; ++bi) one(SerialPool(), bi);
    });
    return Status::Ok();
  }
  for (int64_t bi = 0; bi < batches; ++bi) one(be.pool(), bi);
  return Status::Ok();
}

Status Gemm(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be,
            const PackedB* packed);

// True when input `i` of `op` is a constant tensor of the graph.
bool ConstantInput(const GraphOp& op, const Graph& graph, size_t i) {
  const int t = op.inputs.size() > i ? op.inputs[i] : -1;
  return t >= 0 && static_cast<size_t>(t) < graph.tensors.size() && graph.tensors[static_cast<size_t>(t)].isConstant();
}

// MatMul / Gemm with B packed at the first resize when it is a constant;
// otherwise as the plain kernels.
class MatMulExecution final : public Execution {
 public:
  MatMulExecution(HostBackend* b, const GraphOp& op, int index, bool constant_b)
      : Execution(b), op_(op), index_(index), constant_b_(constant_b) {}

  void prepacked(std::vector<Prepacked>* out) const override {
    if (packed_) out->push_back({"panels_b", PackedMeta(trans_b_, packed_->f16() != nullptr, *packed_),
                                 packed_->panels(), packed_->panelBytes()});
  }

  Status onResize(const std::vector<Tensor*>& in, const std::vector<Tensor*>&) override {
    if (constant_b_ && !packed_ && nn::NeedF32(op_, in).ok()) pack(in);
    return Status::Ok();
  }

  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    HostBackend& be = *static_cast<HostBackend*>(backend());
    if (constant_b_ && !packed_ && nn::NeedF32(op_, in).ok()) pack(in);
    const PackedB* p = packed_ ? &*packed_ : nullptr;
    return op_.type == fb::OpType::Gemm ? Gemm(op_, in, out, be, p) : MatMul(op_, in, out, be, p);
  }

 private:
  void pack(const std::vector<Tensor*>& in) {
    HostBackend& be = *static_cast<HostBackend*>(backend());
    const Tensor& B = *in[1];
    const IntVec& s = B.shape();
    int64_t K, N, ldb;
    if (op_.type == fb::OpType::Gemm) {
      if (s.size() != 2) return;
      const fb::GemmParams* p = op_.params<fb::GemmParams>();
      trans_b_ = p && p->trans_b();
      K = trans_b_ ? s[1] : s[0], N = trans_b_ ? s[0] : s[1], ldb = s[1];
    } else {
      // MatMul: B of [K, N], or [1, ..., 1, K, N] (the same matrix for every
      // batch); a 1-D B is a column, not worth a panel.
      if (s.size() < 2) return;
      for (size_t i = 0; i + 2 < s.size(); ++i)
        if (s[i] != 1) return;
      trans_b_ = false;
      K = s[s.size() - 2], N = s.back(), ldb = s.back();
    }
    packed_ = nn::BundledOrPackB(be, index_, "panels_b", trans_b_, K, N, B.host<float>(), ldb);
  }

  const GraphOp& op_;
  const int index_;  // the op's index in its graph (its bundle key)
  const bool constant_b_;
  bool trans_b_ = false;
  std::optional<PackedB> packed_;
};

Status Gemm(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be,
            const PackedB* packed) {
  KILN_RETURN_IF_ERROR(nn::NeedF32(op, in));
  const fb::GemmParams* p = op.params<fb::GemmParams>();
  const float alpha = p ? p->alpha() : 1.f, beta = p ? p->beta() : 1.f;
  const bool ta = p && p->trans_a(), tb = p && p->trans_b();
  const fb::Activation act = p ? p->activation() : fb::Activation::None;
  const float act_min = p ? p->activation_min() : 0.f, act_max = p ? p->activation_max() : 0.f;
  const float act_alpha = p ? p->activation_alpha() : 0.f;
  const Tensor* C = in.size() > 2 && beta != 0.f ? in[2] : nullptr;
  const int64_t M = out[0]->length(0), N = out[0]->length(1);
  const int64_t K = ta ? in[0]->length(0) : in[0]->length(1);
  // C(i, j) = c[i * ci + j * cj]; a stride is 0 along a broadcast axis.
  int64_t ci = 0, cj = 0;
  if (C) {
    const IntVec& cs = C->shape();
    if (!cs.empty() && cs.back() != 1) cj = 1;
    if (cs.size() == 2 && cs[0] != 1) ci = cs[1];
  }
  const float* pa = in[0]->host<float>();
  const float* pb = in[1]->host<float>();
  const float* pc = C ? C->host<float>() : nullptr;
  float* py = out[0]->host<float>();
  if (M == 0 || N == 0) return Status::Ok();
  // A clamp activation and a C that is one row ([N]: FC bias) ride on the
  // GEMM's stores; otherwise Y = beta * C (broadcast), then Y = alpha *
  // op(A) op(B) + Y, and the activation after.
  GemmEpilogue ep;
  float lo = 0, hi = 0;
  const bool fused = nn::ActivationAsClamp(act, act_min, act_max, &lo, &hi);
  ep.clamp = fused && act != fb::Activation::None;
  ep.lo = lo;
  ep.hi = hi;
  const bool row_c = pc && ci == 0 && cj == 1 && beta == 1.f;
  if (row_c) {
    ep.col_bias = pc;
  } else if (pc) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) py[i * N + j] = pc[i * ci + j * cj];
  }
  if (packed)
    SgemmPackedB(be.pool(), ta, M, alpha, pa, ta ? M : K, *packed, pc && !row_c ? beta : 0.f, py, N, &ep);
  else
    Sgemm(be.pool(), ta, tb, M, N, K, alpha, pa, ta ? M : K, pb, tb ? K : N, pc && !row_c ? beta : 0.f, py, N, &ep);
  if (!fused)
    be.pool().parallelFor(M, [&](int64_t begin, int64_t end) {
      nn::ApplyFusedActivation(act, act_min, act_max, act_alpha, py + begin * N, (end - begin) * N);
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, N)));
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostMatMul(const GraphOp& op, const Graph& graph, HostBackend* b) {
  return std::unique_ptr<Execution>(
      new MatMulExecution(b, op, static_cast<int>(&op - graph.ops.data()), ConstantInput(op, graph, 1)));
}
StatusOr<std::unique_ptr<Execution>> CreateHostGemm(const GraphOp& op, const Graph& graph, HostBackend* b) {
  return std::unique_ptr<Execution>(
      new MatMulExecution(b, op, static_cast<int>(&op - graph.ops.data()), ConstantInput(op, graph, 1)));
}

}  // namespace kiln
