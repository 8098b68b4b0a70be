// nn ops on a GPU backend against the host: Conv (general implicit GEMM, 1x1 GEMM
// path, depthwise; strides, asymmetric pads, dilation, groups, auto_pad,
// 1-D, 3-D, bias, fused activations, computed weights), ConvTranspose, MatMul
// (2-D, batched, broadcast, 1-D operands), Gemm (transposes, alpha, beta,
// every C shape), BatchNormalization. Odd sizes throughout so that tiles
// are partial.
#include "support/backend_compare.h"

namespace kiln::test {
namespace {

// The GPU backend under test: Vulkan, or KILN_TEST_GPU=opencl.
const ForwardType kGpu = TestGpu();
constexpr float kTol = 1e-4f;

struct ConvCase {
  const char* what;
  std::vector<int64_t> x, w;
  std::vector<int32_t> strides, pads, dilations;
  int group = 1;
  bool bias = true;
  fb::AutoPad auto_pad = fb::AutoPad::NotSet;
};

fb::ConvParamsT Params(const ConvCase& c) {
  fb::ConvParamsT p;
  p.strides = c.strides;
  p.pads = c.pads;
  p.dilations = c.dilations;
  p.group = c.group;
  p.auto_pad = c.auto_pad;
  return p;
}

// Weights and bias are model constants unless `weights_as_input`.
OpTest MakeConv(fb::OpType type, const ConvCase& c, const fb::ConvParamsT& p, bool weights_as_input = false) {
  OpTest op(type);
  op.input("x", c.x, Random(Numel(c.x), -1, 1, 11));
  if (weights_as_input)
    op.input("w", c.w, Random(Numel(c.w), -1, 1, 12));
  else
    op.constant("w", c.w, Random(Numel(c.w), -1, 1, 12));
  const int64_t m = type == fb::OpType::Conv ? c.w[0] : c.w[1] * c.group;
  if (c.bias) op.constant("b", {m}, Random(static_cast<size_t>(m), -1, 1, 13));
  op.params(p);
  return op;
}

TEST(GpuNnConv, Variants) {
  KILN_REQUIRE_BACKEND(kGpu);
  const ConvCase cases[] = {
      {"3x3 pad 1", {1, 3, 9, 11}, {7, 3, 3, 3}, {}, {1, 1, 1, 1}, {}},
      {"3x3 stride 2 no bias", {2, 3, 9, 11}, {17, 3, 3, 3}, {2, 2}, {}, {}, 1, false},
      {"asymmetric pads, strides 2x1", {1, 7, 9, 11}, {5, 7, 3, 2}, {2, 1}, {0, 1, 2, 0}, {}},
      {"dilation 2", {1, 3, 9, 11}, {4, 3, 3, 3}, {}, {2, 2, 2, 2}, {2, 2}},
      {"groups 2", {1, 6, 9, 11}, {4, 3, 3, 3}, {}, {1, 1, 1, 1}, {}, 2},
      {"groups 2, 1x1", {2, 6, 5, 7}, {10, 3, 1, 1}, {}, {}, {}, 2},
      {"depthwise stride 2", {1, 17, 9, 11}, {17, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 17},
      {"depthwise no bias, dilation 2", {2, 7, 9, 11}, {7, 1, 3, 3}, {}, {2, 1, 2, 1}, {2, 2}, 7, false},
      {"depthwise multiplier 2", {1, 3, 9, 11}, {6, 1, 5, 5}, {}, {2, 2, 2, 2}, {}, 3},
      {"1x1 (GEMM path)", {2, 17, 9, 11}, {33, 17, 1, 1}, {}, {}, {}},
      {"1x1 no bias", {1, 3, 7, 5}, {1, 3, 1, 1}, {}, {}, {}, 1, false},
      {"1x1 stride 2", {1, 17, 9, 11}, {7, 17, 1, 1}, {2, 2}, {}, {}},
      {"SAME_UPPER stride 2", {1, 3, 9, 11}, {5, 3, 3, 3}, {2, 2}, {}, {}, 1, true, fb::AutoPad::SameUpper},
      {"SAME_LOWER 4x4", {1, 3, 9, 11}, {5, 3, 4, 4}, {}, {}, {}, 1, true, fb::AutoPad::SameLower},
      {"VALID", {1, 3, 9, 11}, {5, 3, 3, 3}, {}, {}, {}, 1, true, fb::AutoPad::Valid},
      {"1-D", {2, 3, 17}, {5, 3, 3}, {2}, {1, 0}, {}},
      {"1-D depthwise", {1, 4, 17}, {4, 1, 5}, {}, {2, 2}, {}, 4},
      {"many tiles, K loop", {1, 40, 20, 21}, {70, 40, 3, 3}, {}, {1, 1, 1, 1}, {}},
      {"3-D", {2, 3, 5, 6, 7}, {5, 3, 3, 3, 3}, {}, {1, 1, 1, 1, 1, 1}, {}},
      {"3-D asymmetric strides, pads, dilations", {1, 3, 9, 7, 8}, {6, 3, 3, 2, 3}, {2, 1, 3}, {1, 0, 2, 0, 1, 1},
       {2, 1, 1}},
      {"3-D groups 3, no bias", {1, 6, 4, 5, 6}, {9, 2, 2, 3, 1}, {1, 2, 1}, {0, 1, 0, 1, 1, 0}, {}, 3, false},
      {"3-D depthwise", {2, 4, 5, 6, 7}, {8, 1, 3, 2, 3}, {2, 1, 1}, {1, 0, 1, 1, 1, 1}, {1, 2, 1}, 4},
      {"3-D 1x1x1 (GEMM path)", {2, 5, 3, 4, 5}, {7, 5, 1, 1, 1}, {}, {}, {}},
      {"3-D SAME_UPPER", {1, 3, 5, 6, 7}, {4, 3, 3, 3, 2}, {2, 2, 2}, {}, {}, 1, true, fb::AutoPad::SameUpper},
  };
  for (const ConvCase& c : cases) ExpectSameAsHost(MakeConv(fb::OpType::Conv, c, Params(c)), kGpu, kTol, c.what);
}

TEST(GpuNnConv, FusedActivations) {
  KILN_REQUIRE_BACKEND(kGpu);
  // Every activation on the depthwise path (nn_activation.glsl is shared);
  // the other paths with Clip, whose bounds come through push constants.
  struct Case {
    ConvCase conv;
    std::vector<fb::Activation> acts;
  };
  const Case cases[] = {
      {{"depthwise", {1, 5, 7, 9}, {5, 1, 3, 3}, {}, {1, 1, 1, 1}, {}, 5},
       {fb::Activation::Relu, fb::Activation::Relu6, fb::Activation::Clip, fb::Activation::LeakyRelu,
        fb::Activation::Sigmoid, fb::Activation::HardSwish, fb::Activation::Gelu, fb::Activation::Silu}},
      {{"general", {1, 3, 9, 11}, {7, 3, 3, 3}, {}, {1, 1, 1, 1}, {}}, {fb::Activation::Clip}},
      {{"1x1", {1, 5, 7, 9}, {7, 5, 1, 1}, {}, {}, {}}, {fb::Activation::Clip}},
  };
  for (const Case& c : cases) {
    for (fb::Activation a : c.acts) {
      fb::ConvParamsT p = Params(c.conv);
      p.activation = a;
      p.activation_min = -0.5f;
      p.activation_max = 0.75f;
      p.activation_alpha = 0.2f;
      ExpectSameAsHost(MakeConv(fb::OpType::Conv, c.conv, p), kGpu, kTol,
                       std::string(c.conv.what) + " " + fb::EnumNameActivation(a));
    }
  }
  ConvCase ct = {"ConvTranspose LeakyRelu", {1, 3, 5, 7}, {3, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}};
  fb::ConvParamsT p = Params(ct);
  p.activation = fb::Activation::LeakyRelu;
  p.activation_alpha = 0.2f;
  ExpectSameAsHost(MakeConv(fb::OpType::ConvTranspose, ct, p), kGpu, kTol, ct.what);
}

TEST(GpuNnConv, ComputedWeights) {
  KILN_REQUIRE_BACKEND(kGpu);
  const ConvCase c = {"weights as input", {1, 3, 9, 11}, {7, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}};
  ExpectSameAsHost(MakeConv(fb::OpType::Conv, c, Params(c), true), kGpu, kTol, c.what);
}

TEST(GpuNnConvTranspose, Variants) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    ConvCase conv;
    std::vector<int32_t> output_padding, output_shape;
  };
  const Case cases[] = {
      {{"stride 2 pad 1", {1, 3, 5, 7}, {3, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}}, {1, 1}, {}},
      {{"groups 2, dilation 2", {1, 4, 5, 7}, {4, 3, 3, 3}, {}, {0, 1, 2, 0}, {2, 2}, 2, false}, {}, {}},
      {{"stride 2x3", {2, 3, 5, 4}, {3, 5, 2, 3}, {2, 3}, {}, {}}, {}, {}},
      {{"SAME_UPPER", {1, 3, 5, 7}, {3, 2, 3, 3}, {2, 2}, {}, {}, 1, true, fb::AutoPad::SameUpper}, {}, {}},
      {{"output_shape", {1, 3, 5, 7}, {3, 2, 3, 3}, {2, 2}, {}, {}}, {}, {12, 15}},
      {{"depthwise", {1, 5, 6, 6}, {5, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 5}, {}, {}},
      {{"1-D", {2, 3, 9}, {3, 5, 4}, {3}, {1, 2}, {}}, {}, {}},
      {{"3-D", {1, 3, 3, 4, 5}, {3, 2, 3, 3, 3}, {}, {}, {}}, {}, {}},
      {{"3-D strides, pads, groups 2, dilation", {2, 4, 3, 4, 3}, {4, 3, 2, 3, 2}, {2, 1, 3}, {1, 0, 1, 0, 1, 1},
        {1, 2, 1}, 2},
       {1, 0, 2},
       {}},
  };
  for (const Case& c : cases) {
    fb::ConvParamsT p = Params(c.conv);
    p.output_padding = c.output_padding;
    p.output_shape = c.output_shape;
    ExpectSameAsHost(MakeConv(fb::OpType::ConvTranspose, c.conv, p), kGpu, kTol, c.conv.what);
  }
}

TEST(GpuNnMatMul, Shapes) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    const char* what;
    std::vector<int64_t> a, b;
  };
  const Case cases[] = {
      {"2-D", {7, 17}, {17, 5}},
      {"2-D many tiles", {70, 130}, {130, 67}},
      {"batched 3-D", {3, 7, 17}, {3, 17, 9}},
      {"batch broadcast 4-D", {2, 1, 7, 17}, {3, 17, 9}},
      {"B shared (folded into M)", {2, 3, 7, 17}, {17, 9}},
      {"A shared", {7, 17}, {4, 17, 9}},
      {"1-D A", {17}, {17, 9}},
      {"1-D B", {3, 7, 17}, {17}},
      {"1-D both", {17}, {17}},
      {"1-D A, batched B", {17}, {2, 17, 3}},
      {"M = 1 rows", {5, 1, 33}, {5, 33, 65}},
  };
  for (const Case& c : cases) {
    OpTest op(fb::OpType::MatMul);
    op.input("a", c.a, Random(Numel(c.a), -1, 1, 21)).input("b", c.b, Random(Numel(c.b), -1, 1, 22));
    ExpectSameAsHost(op, kGpu, kTol, c.what);
  }
  OpTest weights(fb::OpType::MatMul);
  weights.input("a", {3, 7, 17}, Random(3 * 7 * 17, -1, 1, 23)).constant("b", {17, 9}, Random(17 * 9, -1, 1, 24));
  ExpectSameAsHost(weights, kGpu, kTol, "constant B");
  // Constant B with K a multiple of four: on CPU drivers B is transposed
  // once and the product runs gemm's K4 steps (folded batches, a batch-1
  // row, a tall product).
  for (const std::vector<int64_t>& a : std::vector<std::vector<int64_t>>{{2, 3, 16}, {1, 16}, {70, 16}}) {
    OpTest t(fb::OpType::MatMul);
    t.input("a", a, Random(Numel(a), -1, 1, 25)).constant("b", {16, 37}, Random(16 * 37, -1, 1, 26));
    ExpectSameAsHost(t, kGpu, kTol, "constant B, K 16, A rank " + std::to_string(a.size()));
  }
}

// B running along n with K and N multiples of four: on CPU drivers a
// block's 8 columns are read as vectors and A four k at a time (gemm's VN,
// GpuCaps::gemm_vector_columns): whole and partial column blocks (N 20:
// the last block's second half past N), batches, M = 1, N = 4, and a Gemm
// with C, alpha, beta and Relu.
TEST(GpuNnMatMul, VectorColumns) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    const char* what;
    std::vector<int64_t> a, b;
  };
  const Case cases[] = {
      {"2-D, N 24", {7, 16}, {16, 24}},
      {"partial column block, N 20", {9, 12}, {12, 20}},
      {"many tiles", {70, 132}, {132, 68}},
      {"batched 3-D", {3, 5, 8}, {3, 8, 12}},
      {"batch broadcast 4-D", {2, 1, 5, 8}, {3, 8, 12}},
      {"M = 1", {1, 32}, {32, 36}},
      {"N = 4", {6, 8}, {8, 4}},
  };
  for (const Case& c : cases) {
    OpTest op(fb::OpType::MatMul);
    op.input("a", c.a, Random(Numel(c.a), -1, 1, 27)).input("b", c.b, Random(Numel(c.b), -1, 1, 28));
    ExpectSameAsHost(op, kGpu, kTol, c.what);
  }
  fb::GemmParamsT p;
  p.alpha = 0.5f;
  p.beta = 2.f;
  p.activation = fb::Activation::Relu;
  OpTest gemm(fb::OpType::Gemm);
  gemm.input("a", {11, 16}, Random(11 * 16, -1, 1, 29)).input("b", {16, 20}, Random(16 * 20, -1, 1, 30));
  gemm.constant("c", {20}, Random(20, -1, 1, 34)).params(p);
  ExpectSameAsHost(gemm, kGpu, kTol, "Gemm, C [N], relu");
}

TEST(GpuNnGemm, TransposesAndC) {
  KILN_REQUIRE_BACKEND(kGpu);
  const int64_t m = 7, k = 17, n = 9;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (const std::vector<int64_t>& cs : std::vector<std::vector<int64_t>>{{n}, {m, n}, {m, 1}, {1, n}, {}, {1}}) {
        fb::GemmParamsT p;
        p.trans_a = ta;
        p.trans_b = tb;
        p.alpha = 0.5f;
        p.beta = 2.f;
        OpTest op(fb::OpType::Gemm);
        const std::vector<int64_t> as = ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
        const std::vector<int64_t> bs = tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
        op.input("a", as, Random(m * k, -1, 1, 31)).constant("b", bs, Random(k * n, -1, 1, 32));
        op.constant("c", cs, Random(Numel(cs), -1, 1, 33)).params(p);
        ExpectSameAsHost(op, kGpu, kTol,
                         "transA " + std::to_string(ta) + " transB " + std::to_string(tb) + " C rank " +
                             std::to_string(cs.size()) + (cs.empty() ? "" : " [" + std::to_string(cs[0]) + ",...]"));
      }
    }
  }
}

TEST(GpuNnGemm, NoCBetaZeroAndActivation) {
  KILN_REQUIRE_BACKEND(kGpu);
  {
    OpTest op(fb::OpType::Gemm);
    op.input("a", {5, 130}, Random(5 * 130, -1, 1, 41)).input("b", {130, 67}, Random(130 * 67, -1, 1, 42));
    ExpectSameAsHost(op, kGpu, kTol, "no C");
  }
  {
    fb::GemmParamsT p;
    p.beta = 0.f;
    OpTest op(fb::OpType::Gemm);
    op.input("a", {3, 4}, Random(12, -1, 1, 43)).input("b", {4, 5}, Random(20, -1, 1, 44));
    op.constant("c", {3, 5}, std::vector<float>(15, NAN)).params(p);
    ExpectSameAsHost(op, kGpu, kTol, "beta 0 ignores C");
  }
  {
    fb::GemmParamsT p;
    p.trans_b = true;
    p.activation = fb::Activation::Relu;
    OpTest op(fb::OpType::Gemm);
    op.input("a", {2, 33}, Random(66, -1, 1, 45)).constant("b", {17, 33}, Random(17 * 33, -1, 1, 46));
    op.constant("c", {17}, Random(17, -1, 1, 47)).params(p);
    ExpectSameAsHost(op, kGpu, kTol, "fused Relu");
  }
}

// The register-block forms of CPU drivers: a batch-1 product (one row a
// block, RM) and operands contiguous along k with k a multiple of four (K4:
// vec4 steps, texels of four floats on lavapipe), alone and together, and
// the ones that may not take K4 (k of 33, B not transposed).
TEST(GpuNnGemm, BatchOneAndFourK) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    int64_t m, k, n;
    bool trans_b;
  };
  for (const Case& c : {Case{1, 64, 37, true}, Case{5, 128, 19, true}, Case{1, 33, 20, false}, Case{1, 33, 20, true},
                        Case{9, 64, 70, true}}) {
    fb::GemmParamsT p;
    p.trans_b = c.trans_b;
    OpTest op(fb::OpType::Gemm);
    const std::vector<int64_t> bs = c.trans_b ? std::vector<int64_t>{c.n, c.k} : std::vector<int64_t>{c.k, c.n};
    op.input("a", {c.m, c.k}, Random(static_cast<size_t>(c.m * c.k), -1, 1, 51))
        .constant("b", bs, Random(static_cast<size_t>(c.k * c.n), -1, 1, 52));
    op.constant("c", {c.n}, Random(static_cast<size_t>(c.n), -1, 1, 53)).params(p);
    ExpectSameAsHost(op, kGpu, kTol,
                     std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) +
                         (c.trans_b ? " transB" : ""));
  }
}

TEST(GpuNnBatchNorm, Shapes) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{2, 17, 5, 3}, {3, 7}, {1, 3, 9, 11}}) {
    const size_t c = static_cast<size_t>(shape[1]);
    fb::NormParamsT p;
    p.epsilon = 1e-3f;
    OpTest op(fb::OpType::BatchNormalization);
    op.input("x", shape, Random(Numel(shape), -2, 2, 51))
        .constant("scale", {shape[1]}, Random(c, 0.5f, 2, 52))
        .constant("b", {shape[1]}, Random(c, -1, 1, 53))
        .constant("mean", {shape[1]}, Random(c, -1, 1, 54))
        .input("var", {shape[1]}, Random(c, 0.1f, 2, 55))
        .params(p);
    ExpectSameAsHost(op, kGpu, kTol, "BatchNorm rank " + std::to_string(shape.size()));
  }
}

}  // namespace
}  // namespace kiln::test
