// matmul_to_gemm: Add(MatMul(A, W), B) with A of static shape [M, K], W a
// constant f32 [K, N] and B a constant f32 bias that broadcasts to [M, N]
// without growing it ([N], [1, N], [M, N], [M, 1], [1] or a scalar) becomes
// Gemm(A, W, B): one op, and a Gemm a following activation can fuse into.
// The MatMul's output must be read only by the Add and not be a graph output.
// An A of static shape [d0, ..., K] (a transformer's Linear layer on
// [batch, tokens, features]) with a bias of N values that broadcasts over
// the leading dims ([N], [1, ..., 1, N], [1] or a scalar) becomes
// Reshape(A, [M, K]) -> Gemm -> Reshape(., [d0, ..., N]): the bias (and an
// activation, fuse_activation) ride on the GEMM's stores instead of a pass
// of their own; the Reshapes move no data.
#include <algorithm>
#include <memory>

#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

bool BiasFits(const std::vector<int64_t>& b, int64_t M, int64_t N) {
  if (b.size() > 2) return false;
  if (b.size() == 2) return (b[0] == 1 || b[0] == M) && (b[1] == 1 || b[1] == N);
  if (b.size() == 1) return b[0] == 1 || b[0] == N;
  return true;
}

// The N-D form: b holds one value or N, along its last dim, every other dim
// 1 (so it does not vary along A's leading dims), and it has no more dims
// than A (rank `rank`): [N], [1, ..., 1, N], [1] or a scalar.
bool BiasFitsRows(const std::vector<int64_t>& b, size_t rank, int64_t N) {
  if (b.size() > rank) return false;
  for (size_t d = 0; d + 1 < b.size(); ++d)
    if (b[d] != 1) return false;
  return b.empty() || b.back() == 1 || b.back() == N;
}

}  // namespace

StatusOr<int> MatMulToGemm(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "matmul_to_gemm"));
  std::vector<uint8_t> removed(net.ops.size(), 0);
  NetIndex idx(net, removed);
  StaticShapes s = InferStaticShapes(net);
  // The N-D form's Reshape into [M, K], to go just before the MatMul's slot.
  std::vector<std::unique_ptr<fb::OpT>> before(net.ops.size());
  int n = 0;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    fb::OpT& add = *net.ops[i];
    if (add.type != fb::OpType::Add || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    for (int side = 0; side < 2; ++side) {
      const int mm = add.inputs[static_cast<size_t>(side)], bias = add.inputs[static_cast<size_t>(1 - side)];
      const int p = idx.producerOf(mm);
      if (p < 0 || !idx.singleUse(mm) || net.ops[static_cast<size_t>(p)]->type != fb::OpType::MatMul) continue;
      const fb::OpT& matmul = *net.ops[static_cast<size_t>(p)];
      if (matmul.inputs.size() != 2) continue;
      const int a = matmul.inputs[0], w = matmul.inputs[1];
      std::vector<float> wv, bv;
      std::vector<int64_t> wshape, bshape;
      if (!s.has(a) || s.dtype[static_cast<size_t>(a)] != fb::DataType::F32 ||
          s.shape[static_cast<size_t>(a)].size() < 2)
        continue;
      if (!ConstFloats(net, w, &wv) || !StaticShapeOf(*net.tensors[static_cast<size_t>(w)], &wshape) ||
          wshape.size() != 2)
        continue;
      if (!ConstFloats(net, bias, &bv) || !StaticShapeOf(*net.tensors[static_cast<size_t>(bias)], &bshape)) continue;
      const std::vector<int64_t>& ashape = s.shape[static_cast<size_t>(a)];
      const int64_t K = ashape.back(), N = wshape[1];
      if (wshape[0] != K) continue;
      if (ashape.size() == 2) {
        if (!BiasFits(bshape, ashape[0], N)) continue;
        add.type = fb::OpType::Gemm;
        add.inputs = {a, w, bias};
        add.params.Set(fb::GemmParamsT());
        removed[static_cast<size_t>(p)] = 1;
      } else {
        if (!BiasFitsRows(bshape, ashape.size(), N)) continue;
        const int64_t bn = NumElements(bshape);
        const int64_t M = NumElements(ashape) / std::max<int64_t>(K, 1);
        std::vector<int64_t> out_shape = ashape;
        out_shape.back() = N;
        const std::string base = net.ops[static_cast<size_t>(p)]->name;
        const int in_shape = AddConstant(net, base + "/gemm_in_shape", fb::DataType::I64, {2},
                                         std::vector<int64_t>{M, K}.data(), 2 * sizeof(int64_t));
        const int back_shape = AddConstant(net, base + "/gemm_out_shape", fb::DataType::I64,
                                           {static_cast<int64_t>(out_shape.size())}, out_shape.data(),
                                           out_shape.size() * sizeof(int64_t));
        const int bias2 = bshape.size() <= 1 ? bias : AddConstantF32(net, base + "/gemm_bias", {bn}, bv);
        // A as [M, K] and the Gemm's [M, N], their shapes inferred at resize.
        const int a2 = AddTensor(net, base + "/gemm_in", fb::DataType::F32);
        const int g = AddTensor(net, base + "/gemm_out", fb::DataType::F32);
        auto reshape_in = std::make_unique<fb::OpT>();
        reshape_in->type = fb::OpType::Reshape;
        reshape_in->name = base + "/gemm_in";
        reshape_in->inputs = {a, in_shape};
        reshape_in->outputs = {a2};
        reshape_in->params.Set(fb::ReshapeParamsT());
        before[static_cast<size_t>(p)] = std::move(reshape_in);
        // The MatMul's slot: the Gemm; the Add's: the Reshape back.
        fb::OpT& gemm = *net.ops[static_cast<size_t>(p)];
        gemm.type = fb::OpType::Gemm;
        gemm.inputs = {a2, w, bias2};
        gemm.outputs = {g};
        gemm.params.Set(fb::GemmParamsT());
        add.type = fb::OpType::Reshape;
        add.inputs = {g, back_shape};
        add.params.Set(fb::ReshapeParamsT());
      }
      ++n;
      idx = NetIndex(net, removed);
      break;
    }
  }
  // The ops that stay, each N-D Gemm after its Reshape into [M, K].
  std::vector<std::unique_ptr<fb::OpT>> ops;
  for (size_t i = 0; i < net.ops.size(); ++i) {
    if (before[i]) ops.push_back(std::move(before[i]));
    if (!removed[i]) ops.push_back(std::move(net.ops[i]));
  }
  net.ops = std::move(ops);
  return n;
}

}  // namespace kiln
