// Host kernel: QLinearMatMul with constant 2-D weights (B [K, N]) through
// QGemm. Y = X B is computed as Y^T = B^T X^T: the weights, transposed and
// centered on their zero points, are QGemm's packed A (packed once, at
// resize), X's rows are gathered as B's columns, and Y^T is transposed back
// out of a scratch. The requantization is the reference's (f32, as
// onnxruntime); Kiln's optional int32 bias (input 8) joins the zero
// points' correction. Other forms (B not constant, per-row A scales,
// batched B) run the reference kernel (quant.cpp).
#include <algorithm>
#include <cstring>
#include <vector>

#include "host_backend.h"
#include "ops/quant.h"
#include "qgemm.h"

namespace kiln {
namespace {

using IntVec = std::vector<int64_t>;

// X^T's rows k0 .. k0 + kn, columns j0 .. j0 + n (QBSource): X is [rows, K].
struct XRows {
  const uint8_t* x = nullptr;
  int64_t K = 0;
  uint8_t flip = 0;  // 0x80: X is int8, read as x + 128
};

void GatherXT(const void* ctx, int64_t k0, int64_t kn, int64_t j0, int64_t n, uint8_t* __restrict dst,
              int64_t stride) {
  const XRows& r = *static_cast<const XRows*>(ctx);
  for (int64_t j = 0; j < n; ++j) {
    const uint8_t* __restrict src = r.x + (j0 + j) * r.K + k0;
    for (int64_t k = 0; k < kn; ++k) dst[k * stride + j] = src[k] ^ r.flip;
  }
}

class QMatMulExecution final : public Execution {
 public:
  QMatMulExecution(HostBackend* b, const GraphOp& op, bool constant_b) : Execution(b), op_(op), constant_b_(constant_b) {}

  Status onResize(const std::vector<Tensor*>& in, const std::vector<Tensor*>&) override {
    packed_ok_ = false;
    if (constant_b_) pack(in);
    return Status::Ok();
  }

  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    HostBackend& be = *static_cast<HostBackend*>(backend());
    const Tensor& x = *in[0];
    const Tensor& y = *out[0];
    if (!constant_b_) pack(in);
    if (!packed_ok_ || x.dimensions() < 1 || x.shape().back() != K_ || y.elementCount() == 0 ||
        (x.dtype() != fb::DataType::U8 && x.dtype() != fb::DataType::I8))
      return quant::RunQLinearMatMulReference(op_, in, out, be);
    KILN_ASSIGN_OR_RETURN(std::vector<float> sa, quant::Scales(op_, *in[1], "a_scale"));
    KILN_ASSIGN_OR_RETURN(std::vector<float> sb, quant::Scales(op_, *in[4], "b_scale"));
    KILN_ASSIGN_OR_RETURN(std::vector<float> sy, quant::Scales(op_, *in[6], "y_scale"));
    KILN_ASSIGN_OR_RETURN(IntVec za, quant::ZeroPoints(op_, in[2], "a_zero_point", x.dtype(), 1));
    KILN_ASSIGN_OR_RETURN(IntVec zy, quant::ZeroPoints(op_, in[7], "y_zero_point", y.dtype(), 1));
    if (sa.size() != 1 || za.size() != 1 || sy.size() != 1 || zy.size() != 1 ||
        (sb.size() != 1 && static_cast<int64_t>(sb.size()) != N_))
      return quant::RunQLinearMatMulReference(op_, in, out, be);  // which names the problem
    const Tensor* bias = in.size() > 8 ? in[8] : nullptr;  // Kiln's int32 bias (fuse_qdq's quantized Gemm)
    if (bias && (bias->dtype() != fb::DataType::I32 || bias->elementCount() != N_))
      return quant::RunQLinearMatMulReference(op_, in, out, be);  // which names the problem
    const bool x_i8 = x.dtype() == fb::DataType::I8;
    const int64_t zx = za[0] + (x_i8 ? 128 : 0);
    const int64_t rows = x.elementCount() / K_;
    std::vector<int32_t> add(static_cast<size_t>(N_));
    std::vector<float> scale(static_cast<size_t>(N_));
    for (int64_t n = 0; n < N_; ++n) {
      const uint32_t b = bias ? static_cast<uint32_t>(static_cast<const int32_t*>(bias->hostData())[n]) : 0u;
      add[static_cast<size_t>(n)] =
          static_cast<int32_t>(b - static_cast<uint32_t>(zx) * static_cast<uint32_t>(packed_.rowSums()[n]));
      scale[static_cast<size_t>(n)] = sa[0] * sb[sb.size() == 1 ? 0 : static_cast<size_t>(n)] / sy[0];
    }
    int64_t lo = 0, hi = 0;
    quant::QuantRange(y.dtype(), &lo, &hi);
    QEpilogue ep;
    ep.row_add = add.data();
    ep.row_scale = scale.data();
    ep.y_zero = static_cast<int32_t>(zy[0]);
    ep.lo = static_cast<int32_t>(lo);
    ep.hi = static_cast<int32_t>(hi);
    ep.out_i8 = y.dtype() == fb::DataType::I8;
    XRows src{static_cast<const uint8_t*>(x.hostData()), K_, static_cast<uint8_t>(x_i8 ? 0x80 : 0)};
    yt_.resize(static_cast<size_t>(N_ * rows));
    if (!QGemm(be.pool(), packed_, rows, QBSource{&GatherXT, &src}, ep, yt_.data(), rows))
      return OutOfMemory("QLinearMatMul: cannot allocate the GEMM's scratch");
    uint8_t* yb = static_cast<uint8_t*>(y.hostData());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t n = 0; n < N_; ++n) yb[r * N_ + n] = yt_[static_cast<size_t>(n * rows + r)];
    return Status::Ok();
  }

 private:
  // B^T centered on its zero points, packed; packed_ok_ stays false where
  // the fast path does not apply.
  void pack(const std::vector<Tensor*>& in) {
    packed_ok_ = false;
    const Tensor& b = *in[3];
    if (b.dimensions() != 2 || (b.dtype() != fb::DataType::I8 && b.dtype() != fb::DataType::U8)) return;
    K_ = b.length(0), N_ = b.length(1);
    if (K_ <= 0 || N_ <= 0) return;
    std::vector<int8_t> centered;  // per column
    if (!quant::CenteredInt8(op_, b, in[5], "b_zero_point", N_, 1, &centered)) return;  // the reference reports or handles it
    std::vector<int8_t> bt(static_cast<size_t>(N_ * K_));  // B^T, in 64 x 64 blocks (each read and written in cache)
    for (int64_t k0 = 0; k0 < K_; k0 += 64)
      for (int64_t n0 = 0; n0 < N_; n0 += 64)
        for (int64_t n = n0; n < std::min(N_, n0 + 64); ++n)
          for (int64_t k = k0; k < std::min(K_, k0 + 64); ++k)
            bt[static_cast<size_t>(n * K_ + k)] = centered[static_cast<size_t>(k * N_ + n)];
    // A batch of at most 4 rows (a classifier's) takes VNNI's matrix-vector
    // kernel where AMX's 32-column tiles would be picked: ResNet-50's FC
    // (1000 x 2048, one row) 0.21 ms with it, 0.34 ms in AMX tiles.
    const int64_t rows = in[0]->elementCount() / K_;
    QIsa isa = QIsaFor(K_);
    if (isa == QIsa::kAmx && rows <= 4) isa = QIsa::kAvx512Vnni;
    packed_ = QPackA(isa, N_, K_, bt.data(), K_);
    packed_ok_ = true;
  }

  const GraphOp& op_;
  const bool constant_b_;
  bool packed_ok_ = false;
  int64_t K_ = 0, N_ = 0;
  QPackedA packed_;
  std::vector<uint8_t> yt_;
};


}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostQLinearMatMul(const GraphOp& op, const Graph& graph, HostBackend* b) {
  const bool constant = quant::ConstantInput(op, graph, 3) && quant::ConstantInput(op, graph, 5);
  return std::unique_ptr<Execution>(new QMatMulExecution(b, op, constant));
}

}  // namespace kiln
