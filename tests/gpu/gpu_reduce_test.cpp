// Reduce-family ops on a GPU backend against the host: reductions over single,
// several (contiguous or not) and all axes, keepdims, axes as a constant or
// a graph input, noop_with_empty_axes, rows long enough to split; global
// pools; ArgMax/ArgMin with ties; MaxPool/AveragePool (1-D to 3-D, pads,
// strides, dilations, ceil_mode, count_include_pad, auto_pad, Indices);
// Softmax/LogSoftmax along the last and inner axes; LayerNormalization (with
// and without bias, broadcast scale, Mean/InvStdDev) and
// InstanceNormalization; Attention. Shapes are odd so that rows and groups are partial,
// and long enough in places to take the work-group-per-row paths.
#include <cmath>

#include "support/backend_compare.h"

namespace kiln::test {
namespace {

// The GPU backend under test: Vulkan, or KILN_TEST_GPU=opencl.
const ForwardType kGpu = TestGpu();
constexpr float kTol = 1e-4f;

const fb::OpType kReduceOps[] = {fb::OpType::ReduceSum, fb::OpType::ReduceMean, fb::OpType::ReduceMax,
                                 fb::OpType::ReduceMin, fb::OpType::ReduceProd, fb::OpType::ReduceL2,
                                 fb::OpType::ReduceL1,  fb::OpType::ReduceSumSquare, fb::OpType::ReduceLogSum,
                                 fb::OpType::ReduceLogSumExp};

fb::ReduceParamsT ReduceParams(std::vector<int32_t> axes, bool keepdims) {
  fb::ReduceParamsT p;
  p.axes = std::move(axes);
  p.keepdims = keepdims;
  return p;
}

std::string Name(fb::OpType t, const std::string& what) { return std::string(fb::EnumNameOpType(t)) + " " + what; }

TEST(GpuReduce, Axes) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    const char* what;
    std::vector<int32_t> axes;
    bool keepdims;
  };
  const Case cases[] = {{"axis 1", {1}, true},          {"last axis", {3}, false},   {"axes 1,3", {1, 3}, true},
                        {"axes 0,2", {0, 2}, false},    {"axes -1,-2", {-1, -2}, true}, {"all", {}, false},
                        {"all keepdims", {}, true},     {"axis 0", {0}, false}};
  const std::vector<int64_t> shape = {2, 3, 7, 5};
  for (fb::OpType t : kReduceOps)
    for (const Case& c : cases) {
      OpTest op(t);
      op.input("x", shape, Random(Numel(shape), 0.5f, 1.5f)).params(ReduceParams(c.axes, c.keepdims));
      ExpectSameAsHost(op, kGpu, kTol, Name(t, c.what));
    }
}

TEST(GpuReduce, AxesInputAndNoop) {
  KILN_REQUIRE_BACKEND(kGpu);
  const std::vector<int64_t> shape = {3, 1, 7, 17};
  const auto x = Random(Numel(shape), -2, 2);
  for (fb::OpType t : {fb::OpType::ReduceMean, fb::OpType::ReduceMax}) {
    ExpectSameAsHost(OpTest(t).input("x", shape, x).constantI64("axes", {2}, {0, -1}).params(ReduceParams({}, false)),
                     kGpu, kTol, Name(t, "constant axes"));
    ExpectSameAsHost(OpTest(t).input("x", shape, x).inputI64("axes", {1}, {2}).params(ReduceParams({}, true)), kGpu,
                     kTol, Name(t, "axes as a graph input"));
    ExpectSameAsHost(OpTest(t).input("x", shape, x).constantI64("axes", {1}, {1}).params(ReduceParams({}, false)),
                     kGpu, kTol, Name(t, "a size-1 axis"));
    fb::ReduceParamsT noop = ReduceParams({}, true);
    noop.noop_with_empty_axes = true;
    ExpectSameAsHost(OpTest(t).input("x", shape, x).params(noop), kGpu, 0, Name(t, "noop_with_empty_axes"));
  }
}

// Rows long enough for a work group each, strided rows with few and with
// many results, and rows split in two dispatches (few long rows).
TEST(GpuReduce, LongAndStridedRows) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    const char* what;
    std::vector<int64_t> shape;
    std::vector<int32_t> axes;
  };
  const Case cases[] = {{"17 rows of 4099", {17, 4099}, {1}},
                        {"split: all of 3x5001", {3, 5001}, {}},
                        {"split, strided: axis 0 of 9001x3", {9001, 3}, {0}},
                        {"strided, few results", {5, 300, 7}, {1}},
                        {"strided, many results", {3, 40, 100}, {1}},
                        {"split over two axes", {2, 5000, 3, 2}, {1, 3}}};
  // L1 and LogSumExp map the elements in the first of two split dispatches.
  for (fb::OpType t : {fb::OpType::ReduceSum, fb::OpType::ReduceMean, fb::OpType::ReduceMax, fb::OpType::ReduceMin,
                       fb::OpType::ReduceL2, fb::OpType::ReduceL1, fb::OpType::ReduceLogSumExp})
    for (const Case& c : cases) {
      OpTest op(t);
      op.input("x", c.shape, Random(Numel(c.shape), -1, 1, 3)).params(ReduceParams(c.axes, false));
      ExpectSameAsHost(op, kGpu, kTol, Name(t, c.what));
    }
  OpTest prod(fb::OpType::ReduceProd);
  prod.input("x", {2, 9000}, Random(18000, 0.999f, 1.001f, 4)).params(ReduceParams({1}, true));
  ExpectSameAsHost(prod, kGpu, kTol, "ReduceProd split");
}

TEST(GpuReduce, GlobalPools) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (fb::OpType t : {fb::OpType::GlobalAveragePool, fb::OpType::GlobalMaxPool})
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3, 7, 5}, {1, 17, 9}, {1, 7, 64, 65}, {2, 1, 3, 4, 5}}) {
      OpTest op(t);
      op.input("x", shape, Random(Numel(shape), -3, 3, 5));
      ExpectSameAsHost(op, kGpu, kTol, Name(t, std::to_string(shape.size()) + "-D"));
    }
}

TEST(GpuReduceArg, AxesKeepdimsTies) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    std::vector<int64_t> shape;
    int axis;
  };
  const Case cases[] = {{{2, 3, 7, 5}, 1}, {{2, 3, 7, 5}, -1}, {{2, 3, 7, 5}, 0}, {{2, 3001}, 1}, {{500, 3}, 0}, {{17}, 0}};
  for (fb::OpType t : {fb::OpType::ArgMax, fb::OpType::ArgMin})
    for (const Case& c : cases)
      for (bool keepdims : {true, false})
        for (bool last : {false, true}) {
          // Three levels only, so that every row has ties.
          std::vector<float> x = Random(Numel(c.shape), 0, 3, 6);
          for (float& v : x) v = std::floor(v);
          fb::ArgParamsT p;
          p.axis = c.axis;
          p.keepdims = keepdims;
          p.select_last_index = last;
          OpTest op(t);
          op.input("x", c.shape, x).params(p);
          ExpectSameAsHost(op, kGpu, 0,
                           Name(t, "rank " + std::to_string(c.shape.size()) + " axis " + std::to_string(c.axis) +
                                       (keepdims ? " keepdims" : "") + (last ? " last" : "")));
        }
}

struct PoolCase {
  const char* what;
  std::vector<int64_t> x;
  std::vector<int32_t> kernel, strides, pads, dilations;
  bool ceil_mode = false;
  fb::AutoPad auto_pad = fb::AutoPad::NotSet;
};

TEST(GpuReducePool, Variants) {
  KILN_REQUIRE_BACKEND(kGpu);
  const PoolCase cases[] = {
      {"3x3 pad 1", {1, 3, 7, 9}, {3, 3}, {}, {1, 1, 1, 1}, {}},
      {"3x3 stride 2", {2, 7, 9, 11}, {3, 3}, {2, 2}, {}, {}},
      {"2x2 stride 2 ceil_mode", {1, 3, 7, 9}, {2, 2}, {2, 2}, {}, {}, true},
      {"3x3 stride 2 pad 1 ceil_mode", {1, 17, 8, 10}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, true},
      {"asymmetric pads", {1, 3, 7, 9}, {3, 2}, {2, 1}, {0, 1, 2, 0}, {}},
      {"dilation 2", {1, 3, 9, 11}, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}},
      {"kernel 5 stride 2", {1, 1, 13, 12}, {5, 5}, {2, 2}, {2, 2, 2, 2}, {}},
      {"1-D", {2, 17, 23}, {3}, {2}, {1, 1}, {}},
      {"3-D", {1, 3, 5, 6, 7}, {2, 3, 2}, {1, 2, 2}, {0, 1, 0, 1, 1, 1}, {}},
      {"SAME_UPPER", {1, 3, 7, 9}, {3, 2}, {2, 2}, {}, {}, false, fb::AutoPad::SameUpper},
      {"SAME_LOWER", {1, 3, 7, 9}, {3, 2}, {2, 2}, {}, {}, false, fb::AutoPad::SameLower},
      {"VALID", {1, 3, 7, 9}, {3, 3}, {2, 2}, {}, {}, false, fb::AutoPad::Valid},
  };
  for (const PoolCase& c : cases)
    for (fb::OpType t : {fb::OpType::MaxPool, fb::OpType::AveragePool})
      for (bool include_pad : {false, true}) {
        if (t == fb::OpType::MaxPool && include_pad) continue;
        fb::PoolParamsT p;
        p.kernel_shape = c.kernel;
        p.strides = c.strides;
        p.pads = c.pads;
        p.dilations = c.dilations;
        p.ceil_mode = c.ceil_mode;
        p.auto_pad = c.auto_pad;
        p.count_include_pad = include_pad;
        OpTest op(t);
        op.input("x", c.x, Random(Numel(c.x), -2, 2, 8)).params(p);
        ExpectSameAsHost(op, kGpu, kTol, Name(t, std::string(c.what) + (include_pad ? " count_include_pad" : "")));
        if (t == fb::OpType::MaxPool) {
          op.outputs(2);
          ExpectSameAsHost(op, kGpu, 0, Name(t, std::string(c.what) + " with Indices"));
        }
      }
}

TEST(GpuReduceSoftmax, Axes) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    std::vector<int64_t> shape;
    int axis;
  };
  const Case cases[] = {{{3, 17}, -1}, {{2, 3001}, -1}, {{2, 7, 5}, 1}, {{2, 7, 5}, 0}, {{1, 3000, 2}, 1}, {{4, 3, 257}, 2}};
  for (fb::OpType t : {fb::OpType::Softmax, fb::OpType::LogSoftmax})
    for (const Case& c : cases) {
      fb::AxisParamsT p;
      p.axis = c.axis;
      OpTest op(t);
      op.input("x", c.shape, Random(Numel(c.shape), -8, 8, 9)).params(p);
      ExpectSameAsHost(op, kGpu, kTol, Name(t, "axis " + std::to_string(c.axis) + " of " + std::to_string(Numel(c.shape))));
    }
}

// Attention (fuse_attention's op) in one dispatch: aligned sizes (vec4
// loads) and odd ones, query rows off the invocation's block, keys off the
// block of four, masks for all batches, one a batch (broadcast over rows),
// whole, BERT's padding form [B, 1, 1, S], one a head; no batch dims; no
// keys (zeros); keys in blocks of 16 (PoCL's attention_k16), masked. Heads of 128, the kernel's largest.
TEST(GpuAttention, Shapes) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    std::vector<int64_t> batch;
    int64_t L, D, S, Dv;
    std::vector<int64_t> mask;
  };
  const Case cases[] = {{{2, 4}, 16, 8, 12, 8, {}},       {{6}, 5, 3, 7, 5, {5, 7}},
                        {{3}, 9, 16, 33, 4, {3, 1, 33}},  {{2, 2}, 4, 4, 4, 4, {2, 2, 4, 4}},
                        {{}, 7, 5, 9, 6, {9}},            {{2}, 6, 128, 8, 128, {}},
                        {{2, 3}, 5, 4, 6, 4, {2, 1, 1, 6}}, {{2, 3}, 5, 4, 6, 4, {3, 5, 6}},
                        {{2, 1, 3}, 4, 4, 5, 4, {2, 1, 1, 4, 5}}, {{2}, 3, 4, 0, 4, {}},
                        {{2, 2}, 5, 8, 32, 12, {2, 1, 1, 32}}, {{3}, 4, 4, 16, 4, {4, 16}}};
  for (const Case& c : cases) {
    std::vector<int64_t> qs = c.batch, ks = c.batch, vs = c.batch;
    qs.insert(qs.end(), {c.L, c.D});
    ks.insert(ks.end(), {c.D, c.S});
    vs.insert(vs.end(), {c.S, c.Dv});
    fb::AttentionParamsT p;
    p.scale = 0.35f;
    OpTest op(fb::OpType::Attention);
    op.input("q", qs, Random(Numel(qs), -1, 1, 11))
        .input("kt", ks, Random(Numel(ks), -1, 1, 12))
        .input("v", vs, Random(Numel(vs), -1, 1, 13));
    if (!c.mask.empty()) op.input("mask", c.mask, Random(Numel(c.mask), -4, 4, 14));
    op.params(p);
    ExpectSameAsHost(op, kGpu, kTol,
                     "Attention L " + std::to_string(c.L) + " D " + std::to_string(c.D) + " S " +
                         std::to_string(c.S) + " Dv " + std::to_string(c.Dv) + " mask of " +
                         std::to_string(c.mask.size()) + " dims");
  }
}

TEST(GpuReduceNorm, LayerNormalization) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    const char* what;
    std::vector<int64_t> x, scale;
    int axis;
    bool bias;
  };
  const Case cases[] = {{"last axis", {2, 3, 7, 5}, {5}, -1, true},
                        {"last axis, no bias", {2, 3, 7, 5}, {5}, -1, false},
                        {"axis 1", {2, 3, 7, 5}, {3, 7, 5}, 1, true},
                        {"axis 2, broadcast scale", {2, 3, 7, 5}, {7, 1}, 2, true},
                        {"rows of 768", {3, 768}, {768}, -1, true},
                        {"rows of 3", {17, 3}, {3}, 1, false},
                        // Rows enough for one dispatch on CPU drivers (norm_stats's APPLY).
                        {"80 rows of 24", {2, 40, 24}, {24}, -1, true},
                        {"130 rows of 7, no bias", {130, 7}, {7}, -1, false},
                        {"70 rows of 40, broadcast scale", {70, 5, 8}, {1, 8}, 1, true}};
  for (const Case& c : cases)
    for (int outputs : {1, 3}) {
      fb::NormParamsT p;
      p.axis = c.axis;
      p.epsilon = 1e-3f;
      OpTest op(fb::OpType::LayerNormalization);
      op.input("x", c.x, Random(Numel(c.x), -2, 3, 11)).constant("scale", c.scale, Random(Numel(c.scale), 0.5f, 2, 12));
      if (c.bias) op.constant("bias", c.scale, Random(Numel(c.scale), -1, 1, 13));
      op.params(p).outputs(outputs);
      ExpectSameAsHost(op, kGpu, kTol, std::string(c.what) + (outputs > 1 ? " with Mean, InvStdDev" : ""));
    }
  OpTest computed(fb::OpType::LayerNormalization);
  computed.input("x", {4, 33}, Random(132, -1, 1, 14)).input("scale", {33}, Random(33, 0.5f, 2, 15));
  ExpectSameAsHost(computed, kGpu, kTol, "scale as a graph input");
}

TEST(GpuReduceNorm, InstanceNormalization) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1, 3, 7, 5}, {2, 17, 9}, {1, 7, 64, 65}}) {
    const int64_t c = shape[1];
    fb::NormParamsT p;
    p.epsilon = 1e-4f;
    OpTest op(fb::OpType::InstanceNormalization);
    op.input("x", shape, Random(Numel(shape), -2, 3, 16))
        .constant("scale", {c}, Random(static_cast<size_t>(c), 0.5f, 2, 17))
        .constant("bias", {c}, Random(static_cast<size_t>(c), -1, 1, 18))
        .params(p);
    ExpectSameAsHost(op, kGpu, kTol, "InstanceNorm " + std::to_string(Numel(shape)));
  }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// The line ops (lines.comp): Hardmax and CumSum along every axis, LRN across
// channels; and Mean, the Adds' sum scaled.
TEST(GpuLines, HardmaxCumSumLrnMean) {
  KILN_REQUIRE_BACKEND(TestGpu());
  const ForwardType gpu = TestGpu();
  const std::vector<int64_t> shape = {2, 5, 3, 4};
  const auto x = Random(120, -2, 2, 9);
  for (int axis : {0, 1, -1}) {
    fb::AxisParamsT a;
    a.axis = axis;
    ExpectSameAsHost(OpTest(fb::OpType::Hardmax).input("x", shape, x).params(a), gpu, 0, "Hardmax axis " + std::to_string(axis));
    for (int flags = 0; flags < 4; ++flags) {
      fb::CumSumParamsT c;
      c.exclusive = flags & 1;
      c.reverse = flags & 2;
      ExpectSameAsHost(OpTest(fb::OpType::CumSum).input("x", shape, x).constantI64("axis", {}, {axis}).params(c), gpu, 1e-5f,
                       "CumSum axis " + std::to_string(axis) + " flags " + std::to_string(flags));
    }
  }
  for (int size : {1, 3, 4}) {
    fb::LrnParamsT l;
    l.size = size;
    l.alpha = 0.3f;
    l.beta = 0.75f;
    l.bias = 1.5f;
    ExpectSameAsHost(OpTest(fb::OpType::LRN).input("x", shape, x).params(l), gpu, 1e-4f, "LRN size " + std::to_string(size));
  }
  ExpectSameAsHost(OpTest(fb::OpType::Mean).input("a", {3, 5}, Random(15, -1, 1, 1)).input("b", {5}, Random(5, -1, 1, 2))
                       .input("c", {3, 5}, Random(15, -1, 1, 3)),
                   gpu, 1e-5f, "Mean of 3");
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

TEST(GpuLines, TopK) {
  KILN_REQUIRE_BACKEND(TestGpu());
  const ForwardType gpu = TestGpu();
  auto x = Random(2 * 7 * 3, -1, 1, 21);
  x[4] = x[5];  // a tie
  x[10] = std::nanf("");
  for (int axis : {1, -1, 0})
    for (bool largest : {true, false}) {
      fb::TopKParamsT p;
      p.axis = axis;
      p.largest = largest;
      const int64_t k = axis == 1 ? 4 : axis == 0 ? 1 : 3;
      ExpectSameAsHost(OpTest(fb::OpType::TopK).input("x", {2, 7, 3}, x).constantI64("k", {1}, {k}).params(p).outputs(2), gpu, 0,
                       std::string("TopK axis ") + std::to_string(axis) + (largest ? " largest" : " smallest"));
    }
}

}  // namespace
}  // namespace kiln::test
