// MatMul and Gemm on GPU, and the tiled GEMM dispatch they share with
// 1x1 Conv (gpu_nn_gemm.h, shaders/vulkan/gemm.comp).
//
// MatMul: numpy semantics. 1-D operands are promoted ([K] -> [1, K] for A,
// [K] -> [K, 1] for B; the memory is the same), batch dims broadcast and are
// collapsed (vk_common's MakeBroadcast) into at most 4 strided batch dims
// handled in the shader; when B is shared by every batch and A's batches are
// contiguous the batches fold into M (one [batches * M, K] x [K, N]
// product, better tiles). Gemm: transposes are strides, C is broadcast to
// [M, N] through strides (0 along a size-1 axis), alpha, beta and the fused
// activation are applied in the store.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "gpu_nn_gemm.h"

namespace kiln {

void PickGemmTile(uint64_t rows, uint64_t cols, uint64_t batches, uint32_t max_invocations, uint32_t local[3]) {
  // A few hundred resident work groups fill today's largest GPUs; below
  // that, smaller tiles trade arithmetic intensity for parallelism.
  constexpr uint64_t kEnoughGroups = 128;
  uint64_t tm = 64, tn = 64;
  while (tm > 16 && rows <= tm / 2) tm /= 2;
  while (tn > 16 && cols <= tn / 2) tn /= 2;
  auto groups = [&] { return (rows + tm - 1) / tm * ((cols + tn - 1) / tn) * batches; };
  while (groups() < kEnoughGroups && (tm > 32 || tn > 32)) {
    if (tm >= tn)
      tm /= 2;
    else
      tn /= 2;
  }
  while ((tm / 4) * (tn / 4) > max_invocations && (tm > 16 || tn > 16)) {
    if (tm >= tn)
      tm /= 2;
    else
      tn /= 2;
  }
  local[0] = static_cast<uint32_t>(tn / 4);
  local[1] = static_cast<uint32_t>(tm / 4);
  local[2] = 1;
}

// The matrix units' product (GpuCaps::coop_matrix_f16, gemm_coop.comp):
// fp16 storage, M, N and K multiples of 16, A along k, B along n or along
// k, and every row stride and batch offset a multiple of 8 halves (the 16
// bytes its loads need). KILN_GPU_COOP=0 leaves it out (A/B).
bool GemmExecution::CoopSuits(const GemmArgs& g, const Tensor* y) const {
  static const bool on = !EnvIsZero("KILN_GPU_COOP");
  if (!on || !gpu()->gpuCaps().coop_matrix_f16 || !gpu()->halfStorage() || y->dtype() != fb::DataType::F32)
    return false;
  if (g.m % 16 || g.n % 16 || g.k % 16 || g.a_cs != 1 || g.a_rs % 8) return false;
  const bool b_n = g.b_cs == 1 && g.b_rs % 8 == 0, b_k = g.b_rs == 1 && g.b_cs % 8 == 0;
  if (!b_n && !b_k) return false;
  for (int d = 0; d < 4; ++d)
    if (g.sa[d] % 8 || g.sb[d] % 8) return false;
  return true;
}

Status GemmExecution::addGemm(const Tensor* a, const Tensor* b, const Tensor* c, const Tensor* y,
                              const GemmArgs& g, const GpuBuffer* b_buffer) {
  struct {
    uint32_t m, n, k, a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
    float alpha, beta, lo, hi, slope;
    uint32_t batches, bdims[4], sa[4], sb[4];
  } push{g.m, g.n, g.k, g.a_rs, g.a_cs, g.b_rs, g.b_cs, g.c_rs, g.c_cs, g.alpha, g.beta, g.act.lo, g.act.hi,
         g.act.slope, g.batches, {}, {}, {}};
  std::copy(g.bdims, g.bdims + 4, push.bdims);
  std::copy(g.sa, g.sa + 4, push.sa);
  std::copy(g.sb, g.sb + 4, push.sb);
  uint32_t local[3], groups[3];
  if (CoopSuits(g, y)) {
    // On the matrix units (gemm_coop.comp): 128 x 128 tiles of eight
    // subgroups (4 x 2 blocks each) where they still make 256 work groups,
    // else 64 x 64 tiles of four (2 x 2 blocks each), for the product to
    // spread over the GPU: on an H100 the 1024^3 product (64 large tiles)
    // ran 0.050 ms in large tiles and 0.038 in small ones (57 TFLOP/s).
    // KILN_GPU_COOP_TILE=64|128 forces one (A/B).
    static const uint32_t forced = [] {
      const char* v = std::getenv("KILN_GPU_COOP_TILE");
      return v ? static_cast<uint32_t>(std::atoi(v)) : 0u;
    }();
    const uint64_t big_tiles = (uint64_t{g.m} + 127) / 128 * ((uint64_t{g.n} + 127) / 128) * g.batches;
    const bool big = gpu()->gpuCaps().max_workgroup_invocations >= 256 && (forced ? forced == 128 : big_tiles >= 256);
    const uint32_t sgm = 2, sgn = big ? 4 : 2, fm = big ? 4 : 2, fn = 2, tm = sgm * fm * 16, tn = sgn * fn * 16;
    const uint32_t coop_local[3] = {sgm * sgn * 32, 1, 1};
    Groups1D((uint64_t{g.m} + tm - 1) / tm * ((uint64_t{g.n} + tn - 1) / tn) * g.batches, 1, groups);
    const GpuBinding bb = b_buffer ? GpuBinding{nullptr, b_buffer} : GpuBinding{b};
    return add("gemm_coop", {{a}, bb, {c ? c : a}, {y, nullptr, true}}, push, groups, coop_local,
               {g.b_rs == 1 && g.b_cs != 1, g.act.code, c != nullptr, sgm, sgn, fm, fn});
  }
  PickGemmTile(g.m, g.n, g.batches, gpu()->gpuCaps().max_workgroup_invocations, local);
  // The same tile with fewer invocations where each computes a register
  // block of rt x rt (CPU drivers) instead of 4 x 4 from shared memory.
  const uint32_t rt = gpu()->gpuCaps().gemm_register_tile;
  // A batch-1 product (an FC layer) computes one row a block, not rt
  // copies of it.
  const uint32_t rm = rt > 0 && g.m == 1 ? 1 : 0, rows = rm ? rm : rt;
  const uint64_t tm = 4 * local[1], tn = 4 * local[0];
  if (rt > 0) {
    local[0] = static_cast<uint32_t>(std::max<uint64_t>(1, tn / rt));
    // No more rows of invocations than the rows of C need.
    local[1] = static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(tm, (g.m + rows - 1) / rows * rows) / rows));
  }
  const uint64_t gtm = rt > 0 ? uint64_t{rows} * local[1] : tm, gtn = rt > 0 ? uint64_t{rt} * local[0] : tn;
  Groups1D((g.m + gtm - 1) / gtm * ((g.n + gtn - 1) / gtn) * g.batches, 1, groups);
  // K4 (register blocks read as texels only): both operands contiguous
  // along k, k and every row, column and batch offset a multiple of four,
  // so that each step reads four k of a row of A and a column of B as one
  // texel of four (a quarter of lavapipe's fetches; on PoCL, which
  // vectorizes the scalar loop across work items itself, vec4 steps made
  // the transformer's MatMuls slower, 46 -> 59 ms).
  bool offsets4 = true;  // every batch offset of A and B a multiple of four
  for (int d = 0; d < 4; ++d) offsets4 = offsets4 && g.sa[d] % 4 == 0 && g.sb[d] % 4 == 0;
  const bool k4 = rt > 0 && gpu()->gpuCaps().texel_elements && g.a_cs == 1 && g.b_rs == 1 && g.k % 4 == 0 &&
                  g.a_rs % 4 == 0 && g.b_cs % 4 == 0 && offsets4;
  // VN (register blocks of 8, B contiguous along n): a block's 8 columns
  // of a row of B as vectors, A (when contiguous along k) four k a vector.
  // Vulkan reads vec4s (views or RGBA texels), so k, strides and offsets
  // must be multiples of four there; OpenCL's vloadn take any offset.
  const uint32_t vector_columns = gpu()->gpuCaps().gemm_vector_columns;
  const bool vn = rt == 8 && !k4 && g.b_cs == 1 && vector_columns != 0 &&
                  (vector_columns == 1 || (g.a_cs == 1 && g.k % 4 == 0 && g.a_rs % 4 == 0 && g.b_rs % 4 == 0 &&
                                           g.n % 4 == 0 && offsets4));
  const std::vector<uint32_t> spec = {g.a_cs == 1, g.b_cs != 1, g.act.code, c != nullptr, rt, rm, k4, vn};
  // A and B as texel buffers (of one float, or four with K4 and Vulkan's
  // VN) where the device reads them faster so (GpuCaps::texel_elements;
  // gemm_tx). Without C, A stands in for the unused binding.
  const uint8_t tx =
      texelsOf(gpu()->storageBytes(*a), 1) && texelsOf(b_buffer ? b_buffer->bytes : gpu()->storageBytes(*b), 1)
          ? (k4 || (vn && vector_columns == 4) ? 4 : 1)
          : 0;
  const GpuBinding bb = b_buffer ? GpuBinding{nullptr, b_buffer, false, tx} : GpuBinding{b, nullptr, false, tx};
  return add("gemm", {{a, nullptr, false, tx}, bb, {c ? c : a}, {y, nullptr, true}}, push, groups, local, spec);
}

namespace {

using IntVec = std::vector<int64_t>;

class MatMulExecution final : public GemmExecution {
 public:
  MatMulExecution(GpuBackend* b, const GraphTensor* w) : GemmExecution(b), w_(w) {}
  ~MatMulExecution() override {
    gpu()->addOwnWeightBytes(-static_cast<int64_t>(bt_.bytes));
    gpu()->freeBuffer(&bt_);
  }
  // With B transposed into a buffer of its own, the model's B is not bound.
  uint32_t unboundInputs(const std::vector<Tensor*>& in, const std::vector<Tensor*>&) const override {
    return TransposesB(in) ? 2u : 0u;
  }

 private:
  // Constant 2-D weights [K, N] on a device of register blocks read as
  // texels (gemm_register_tile, texel_elements), K a multiple of four: B
  // is transposed once into [N, K], so that both operands run along k and
  // the product takes gemm's K4 steps (the transformer encoder's 20
  // MatMuls on lavapipe 100 -> 55 ms).
  bool TransposesB(const std::vector<Tensor*>& in) const {
    const GpuCaps& caps = gpu()->gpuCaps();
    if (!w_ || !caps.gemm_register_tile || !caps.texel_elements || in[1]->dimensions() != 2 || in[0]->dimensions() < 1)
      return false;
    const int64_t k = in[1]->length(0), n = in[1]->length(1);
    return k % 4 == 0 && in[0]->shape().back() == k && w_->constant.size == static_cast<size_t>(k * n) * 4;
  }
  Status transposeB(const Tensor& b) {
    const int64_t k = b.length(0), n = b.length(1);
    std::vector<float> w(static_cast<size_t>(k * n)), t(w.size());
    std::memcpy(w.data(), w_->constant.data, w.size() * 4);  // model bytes need not be 4-aligned
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n; ++c) t[static_cast<size_t>(c * k + r)] = w[static_cast<size_t>(r * n + c)];
    KILN_ASSIGN_OR_RETURN(bt_, CreateWeightBuffer(gpu(), t));
    return Status::Ok();
  }

  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    for (const Tensor* t : {in[0], in[1], out[0]}) KILN_RETURN_IF_ERROR(Require32Bit(*t));
    IntVec a = in[0]->shape(), b = in[1]->shape();
    if (a.size() == 1) a.insert(a.begin(), 1);
    if (b.size() == 1) b.push_back(1);
    GemmArgs g;
    g.m = static_cast<uint32_t>(a[a.size() - 2]);
    g.k = static_cast<uint32_t>(a.back());
    g.n = static_cast<uint32_t>(b.back());
    g.a_rs = g.k;
    g.b_rs = g.n;
    const IntVec ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
    const size_t rank = std::max(ba.size(), bb.size());
    IntVec batch(rank);
    for (size_t i = 0; i < rank; ++i) {
      const int64_t da = i < rank - ba.size() ? 1 : ba[i - (rank - ba.size())];
      const int64_t db = i < rank - bb.size() ? 1 : bb[i - (rank - bb.size())];
      batch[i] = da == 1 ? db : da;
    }
    KILN_ASSIGN_OR_RETURN(Broadcast bc, MakeBroadcast(batch, {ba, bb}));
    if (bc.rank > 4)
      return Unsupported("MatMul with %u batch dims after collapsing (the GPU kernel takes 4)", bc.rank);
    g.batches = 1;
    for (uint32_t d = 0; d < bc.rank; ++d) g.batches *= bc.dims[d];
    if (bc.rank == 1 && bc.strides[0][0] == 1 && bc.strides[1][0] == 0) {
      g.m *= g.batches;  // B shared, A's batches contiguous: one taller product
      g.batches = 1;
    } else {
      for (uint32_t d = 0; d < bc.rank; ++d) {
        const uint32_t slot = 4 - bc.rank + d;
        g.bdims[slot] = bc.dims[d];
        g.sa[slot] = bc.strides[0][d] * g.m * g.k;
        g.sb[slot] = bc.strides[1][d] * g.k * g.n;
      }
    }
    if (TransposesB(in)) {
      if (!bt_.handle) KILN_RETURN_IF_ERROR(transposeB(*in[1]));
      g.b_rs = 1;
      g.b_cs = g.k;
      return addGemm(in[0], in[1], nullptr, out[0], g, &bt_);
    }
    return addGemm(in[0], in[1], nullptr, out[0], g);
  }
  const GraphTensor* w_;  // constant B, or null
  GpuBuffer bt_;          // B transposed (TransposesB), made at the first plan
};

class GemmOpExecution final : public GemmExecution {
 public:
  GemmOpExecution(GpuBackend* b, const fb::GemmParams* p) : GemmExecution(b), p_(p) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    for (const Tensor* t : {in[0], in[1], out[0]}) KILN_RETURN_IF_ERROR(Require32Bit(*t));
    const bool ta = p_ && p_->trans_a(), tb = p_ && p_->trans_b();
    GemmArgs g;
    g.alpha = p_ ? p_->alpha() : 1.f;
    g.beta = p_ ? p_->beta() : 1.f;
    g.act = ReadFusedActivation(p_);
    g.m = static_cast<uint32_t>(out[0]->length(0));
    g.n = static_cast<uint32_t>(out[0]->length(1));
    g.k = static_cast<uint32_t>(in[0]->length(ta ? 0 : 1));
    const uint32_t a1 = static_cast<uint32_t>(in[0]->length(1)), b1 = static_cast<uint32_t>(in[1]->length(1));
    g.a_rs = ta ? 1 : a1;
    g.a_cs = ta ? a1 : 1;
    g.b_rs = tb ? 1 : b1;
    g.b_cs = tb ? b1 : 1;
    // As on the host: C contributes only when given and beta != 0.
    const Tensor* c = in.size() > 2 && in[2] && g.beta != 0.f ? in[2] : nullptr;
    if (c) {
      const IntVec& cs = c->shape();
      g.c_cs = !cs.empty() && cs.back() != 1 ? 1 : 0;
      g.c_rs = cs.size() == 2 && cs[0] != 1 ? static_cast<uint32_t>(cs[1]) : 0;
    }
    return addGemm(in[0], in[1], c, out[0], g);
  }
  const fb::GemmParams* p_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuMatMul(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  // Up to 4 batch dims always fit the shader; decided here when the rank is known.
  const GraphTensor& y = graph.tensors[static_cast<size_t>(op.outputs[0])];
  if (y.has_shape && y.dims.size() > 6)
    return Unsupported("MatMul output of rank %zu (the GPU kernel takes up to 4 batch dims)", y.dims.size());
  return Make(std::make_unique<MatMulExecution>(b, ConstantInput(op, graph, 1)));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuGemm(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  return Make(std::make_unique<GemmOpExecution>(b, op.params<fb::GemmParams>()));
}

}  // namespace kiln
