// matmul_to_gemm: Add(MatMul(A, W), B) with A of static shape [M, K], W a
// constant f32 [K, N] and B a constant f32 bias that broadcasts to [M, N]
// without growing it ([N], [1, N], [M, N], [M, 1], [1] or a scalar) becomes
// Gemm(A, W, B): one op, and a Gemm a following activation can fuse into.
// The MatMul's output must be read only by the Add and not be a graph output.
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

}  // namespace

StatusOr<int> MatMulToGemm(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "matmul_to_gemm"));
  std::vector<uint8_t> removed(net.ops.size(), 0);
  NetIndex idx(net, removed);
  StaticShapes s = InferStaticShapes(net);
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
          s.shape[static_cast<size_t>(a)].size() != 2)
        continue;
      if (!ConstFloats(net, w, &wv) || !StaticShapeOf(*net.tensors[static_cast<size_t>(w)], &wshape) ||
          wshape.size() != 2)
        continue;
      if (!ConstFloats(net, bias, &bv) || !StaticShapeOf(*net.tensors[static_cast<size_t>(bias)], &bshape)) continue;
      const int64_t M = s.shape[static_cast<size_t>(a)][0], K = s.shape[static_cast<size_t>(a)][1];
      if (wshape[0] != K || !BiasFits(bshape, M, wshape[1])) continue;
      add.type = fb::OpType::Gemm;
      add.inputs = {a, w, bias};
      add.params.Set(fb::GemmParamsT());
      removed[static_cast<size_t>(p)] = 1;
      ++n;
      idx = NetIndex(net, removed);
      break;
    }
  }
  EraseOps(net, removed);
  return n;
}

}  // namespace kiln
