// Elementwise ops on a GPU backend against the host, odd shapes.
#include <limits>

#include "support/backend_compare.h"
#include "support/unary_cases.h"

namespace kiln::test {
namespace {

// The GPU backend under test: Vulkan, or KILN_TEST_GPU=opencl.
const ForwardType kGpu = TestGpu();

// Every parameter-free unary op of the host suite's table, against the host.
TEST(GpuElementwise, UnaryOps) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (const UnaryCase& c : UnaryCases()) {
    OpTest op(c.type);
    op.input("x", {2, 3, 7, 5}, Random(210, c.lo, c.hi));
    ExpectSameAsHost(op, kGpu, 1e-4f, fb::EnumNameOpType(c.type));
  }
  // More elements an invocation on CPU drivers' large tensors (the binary
  // test's `large`): vec4 steps, and one at a time (131 073 elements).
  for (fb::OpType t : {fb::OpType::Sigmoid, fb::OpType::Relu})
    for (int64_t n : {131072, 131073}) {
      OpTest op(t);
      op.input("x", {n}, Random(static_cast<size_t>(n), -4, 4));
      ExpectSameAsHost(op, kGpu, 1e-4f, std::string(fb::EnumNameOpType(t)) + " " + std::to_string(n));
    }
}

TEST(GpuElementwise, UnaryWithParams) {
  KILN_REQUIRE_BACKEND(kGpu);
  auto x = Random(3 * 17, -4, 4);
  {
    fb::LeakyReluParamsT p;
    p.alpha = 0.3f;
    ExpectSameAsHost(OpTest(fb::OpType::LeakyRelu).input("x", {3, 17}, x).params(p), kGpu, 1e-5f, "LeakyRelu");
  }
  {
    fb::EluParamsT p;
    p.alpha = 0.7f;
    ExpectSameAsHost(OpTest(fb::OpType::Elu).input("x", {3, 17}, x).params(p), kGpu, 1e-5f, "Elu");
  }
  {
    fb::HardSigmoidParamsT p;
    p.alpha = 0.3f;
    p.beta = 0.4f;
    ExpectSameAsHost(OpTest(fb::OpType::HardSigmoid).input("x", {3, 17}, x).params(p), kGpu, 1e-5f, "HardSigmoid");
  }
  {
    fb::ClipParamsT p;
    p.min = -1.5f;
    p.max = 2.f;
    ExpectSameAsHost(OpTest(fb::OpType::Clip).input("x", {3, 17}, x).params(p), kGpu, 0, "Clip attrs");
    ExpectSameAsHost(OpTest(fb::OpType::Clip).input("x", {3, 17}, x).constant("lo", {}, {-0.5f}).constant("hi", {}, {0.25f}),
                     kGpu, 0, "Clip inputs");
    // Bounds fed at run time (binary max/min), one left out.
    ExpectSameAsHost(OpTest(fb::OpType::Clip).input("x", {3, 17}, x).input("lo", {}, {-0.5f}).input("hi", {}, {0.25f}),
                     kGpu, 0, "Clip run-time bounds");
    ExpectSameAsHost(OpTest(fb::OpType::Clip).input("x", {3, 17}, x).missing().input("hi", {}, {0.75f}), kGpu, 0,
                     "Clip run-time max only");
  }
  {
    fb::SeluParamsT p;
    p.alpha = 1.5f;
    p.gamma = 0.8f;
    ExpectSameAsHost(OpTest(fb::OpType::Selu).input("x", {3, 17}, x).params(p), kGpu, 1e-5f, "Selu");
  }
  {
    fb::EluParamsT p;
    p.alpha = 1.5f;
    ExpectSameAsHost(OpTest(fb::OpType::Celu).input("x", {3, 17}, x).params(p), kGpu, 1e-5f, "Celu");
    ExpectSameAsHost(OpTest(fb::OpType::ThresholdedRelu).input("x", {3, 17}, x).params(p), kGpu, 0, "ThresholdedRelu");
  }
  {
    fb::ShrinkParamsT p;
    p.bias = 0.25f;
    p.lambd = 1.5f;
    ExpectSameAsHost(OpTest(fb::OpType::Shrink).input("x", {3, 17}, x).params(p), kGpu, 1e-6f, "Shrink");
  }
  for (auto approx : {fb::GeluApproximation::None, fb::GeluApproximation::Tanh}) {
    fb::GeluParamsT p;
    p.approximate = approx;
    ExpectSameAsHost(OpTest(fb::OpType::Gelu).input("x", {3, 17}, x).params(p), kGpu, 1e-5f, "Gelu");
  }
}

TEST(GpuElementwise, BinaryBroadcast) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    std::vector<int64_t> a, b;
  };
  const Case cases[] = {{{2, 3, 5}, {2, 3, 5}}, {{2, 3, 5}, {5}}, {{2, 1, 5}, {3, 1}}, {{1}, {4, 7}},
                        {{2, 3, 1, 5, 1, 3, 2}, {3, 1, 4, 1, 2}}, {{7, 1, 9}, {1, 17, 1}}};
  for (fb::OpType t : {fb::OpType::Add, fb::OpType::Sub, fb::OpType::Mul, fb::OpType::Div, fb::OpType::Max,
                       fb::OpType::Min}) {
    for (const Case& c : cases) {
      OpTest op(t);
      op.input("a", c.a, Random(Numel(c.a), -2, 2, 1)).input("b", c.b, Random(Numel(c.b), 0.5f, 2, 2));
      ExpectSameAsHost(op, kGpu, 1e-6f, std::string(fb::EnumNameOpType(t)) + " " + std::to_string(c.a.size()));
    }
  }
  // A per-channel scale, [N, C, H, W] with [N, C, 1, 1] on either side,
  // H * W a multiple of four (binary.comp's scale paths, several elements of
  // a plane a step) and not (7 x 5); a scale row broadcast along H ([N, C,
  // 1, W], the rank-3 form with W lanes). Sub: the operands' order counts.
  const Case scales[] = {{{2, 5, 6, 6}, {2, 5, 1, 1}}, {{1, 3, 1, 1}, {1, 3, 4, 9}}, {{1, 6, 7, 5}, {1, 6, 1, 1}},
                         {{2, 3, 4, 8}, {2, 3, 1, 8}}, {{2, 3, 1, 8}, {2, 3, 5, 8}}};
  for (fb::OpType t : {fb::OpType::Mul, fb::OpType::Sub}) {
    for (const Case& c : scales) {
      OpTest op(t);
      op.input("a", c.a, Random(Numel(c.a), -2, 2, 1)).input("b", c.b, Random(Numel(c.b), 0.5f, 2, 2));
      ExpectSameAsHost(op, kGpu, 1e-6f, std::string(fb::EnumNameOpType(t)) + " scale " + std::to_string(Numel(c.a)));
    }
  }
  // Tensors large enough for more elements an invocation on CPU drivers
  // (GpuCaps::elementwise_items_large: from 32 768 elements on PoCL, 131 072
  // on lavapipe): equal shapes (vec4 and, 131 073 elements, one at a
  // time), a scalar, a per-channel scale (both layouts' scale paths) and a
  // general broadcast.
  const Case large[] = {{{2, 64, 32, 34}, {2, 64, 32, 34}}, {{131073}, {131073}},          {{3, 44444}, {1}},
                        {{1, 64, 48, 48}, {1, 64, 1, 1}},   {{1, 64, 1, 1}, {1, 64, 47, 47}}, {{331, 1, 401}, {1, 3, 401}}};
  for (fb::OpType t : {fb::OpType::Add, fb::OpType::Mul, fb::OpType::Sub}) {
    for (const Case& c : large) {
      OpTest op(t);
      op.input("a", c.a, Random(Numel(c.a), -2, 2, 1)).input("b", c.b, Random(Numel(c.b), 0.5f, 2, 2));
      ExpectSameAsHost(op, kGpu, 1e-6f, std::string(fb::EnumNameOpType(t)) + " large " + std::to_string(Numel(c.a)));
    }
  }
  OpTest pow(fb::OpType::Pow);
  pow.input("a", {3, 5}, Random(15, 0.1f, 3)).constant("b", {5}, {2.f, 0.5f, -1.f, 3.f, 1.5f});
  ExpectSameAsHost(pow, kGpu, 1e-5f, "Pow");
  OpTest prelu(fb::OpType::PRelu);
  prelu.input("x", {2, 3, 4, 5}, Random(120, -2, 2)).constant("slope", {3, 1, 1}, {0.1f, 0.2f, 0.3f});
  ExpectSameAsHost(prelu, kGpu, 1e-6f, "PRelu");
  OpTest max3(fb::OpType::Max);
  max3.input("a", {4, 5}, Random(20, -1, 1, 3)).input("b", {5}, Random(5, -1, 1, 4)).input("c", {4, 1}, Random(4, -1, 1, 5));
  ExpectSameAsHost(max3, kGpu, 0, "Max of three");
}

// Integers that cross word and sign boundaries: small (with zeros, for Div
// by 0), -1 (MIN / -1), the extremes, around 2^31 and 2^32, random bits.
template <typename T>
std::vector<T> IntValues(int64_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) {
    const uint64_t r = rng(), small = r >> 59;  // [0, 32)
    switch (r % 7) {
      case 0: x = static_cast<T>(static_cast<int64_t>(small) - 16); break;
      case 1: x = T(-1); break;
      case 2: x = static_cast<T>(std::numeric_limits<T>::min() + static_cast<T>(small)); break;
      case 3: x = static_cast<T>(std::numeric_limits<T>::max() - static_cast<T>(small)); break;
      case 4: x = static_cast<T>(0x7fffffffull + small - 16); break;
      case 5: x = static_cast<T>(0xffffffffull + small - 16); break;
      default: x = static_cast<T>(r); break;
    }
  }
  return v;
}

template <typename T>
OpTest& IntInput(OpTest& op, const std::string& name, const std::vector<int64_t>& shape, uint32_t seed) {
  const std::vector<T> v = IntValues<T>(Numel(shape), seed);
  return op.input(name, shape, sizeof(T) == 8 ? fb::DataType::I64 : fb::DataType::I32, v.data(), v.size() * sizeof(T));
}

template <typename T>
void ExpectIntBinaryOps(const char* dtype) {
  struct Case {
    std::vector<int64_t> a, b;
  };
  const Case cases[] = {{{3, 67}, {3, 67}}, {{2, 3, 5}, {5}}, {{2, 1, 5}, {3, 1}}, {{1}, {4, 7}}, {{7, 1, 9}, {1, 17, 1}}};
  for (fb::OpType t : {fb::OpType::Add, fb::OpType::Sub, fb::OpType::Mul, fb::OpType::Div, fb::OpType::Max,
                       fb::OpType::Min}) {
    uint32_t seed = 40;
    for (const Case& c : cases) {
      OpTest op(t);
      IntInput<T>(op, "a", c.a, seed++);
      IntInput<T>(op, "b", c.b, seed++);
      ExpectSameAsHost(op, kGpu, 0, std::string(fb::EnumNameOpType(t)) + " " + dtype + " " + std::to_string(c.a.size()));
    }
  }
  OpTest min3(fb::OpType::Min);
  IntInput<T>(min3, "a", {4, 5}, 1);
  IntInput<T>(min3, "b", {5}, 2);
  IntInput<T>(min3, "c", {4, 1}, 3);
  ExpectSameAsHost(min3, kGpu, 0, std::string("Min of three ") + dtype);
}

TEST(GpuElementwise, IntegerBinary) {
  KILN_REQUIRE_BACKEND(kGpu);
  ExpectIntBinaryOps<int32_t>("i32");
  ExpectIntBinaryOps<int64_t>("i64");
}

TEST(GpuElementwise, ReshapeLikes) {
  KILN_REQUIRE_BACKEND(kGpu);
  fb::AxisParamsT ax;
  ax.axis = 2;
  ExpectSameAsHost(OpTest(fb::OpType::Flatten).input("x", {2, 3, 4, 5}, Random(120)).params(ax), kGpu, 0, "Flatten");
  ExpectSameAsHost(OpTest(fb::OpType::Reshape).input("x", {2, 3, 5}, Random(30)).constantI64("s", {2}, {5, -1}), kGpu, 0,
                   "Reshape");
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

// Mod (both sign rules, integer x % 0 = 0, i64 beyond 32 bits) and the
// variadic Sum, against the host.
TEST(GpuElementwise, ModAndSum) {
  KILN_REQUIRE_BACKEND(TestGpu());
  const ForwardType gpu = TestGpu();
  fb::ModParamsT fmod;
  fmod.fmod = true;
  ExpectSameAsHost(OpTest(fb::OpType::Mod).input("a", {2, 17}, Random(34, -9, 9, 1)).input("b", {17}, Random(17, 0.5f, 3, 2)).params(fmod),
                   gpu, 1e-4f, "Mod f32 fmod");
  const std::vector<int64_t> a = {7, -7, 7, -7, 5, int64_t{1} << 40, -(int64_t{3} << 35), 9};
  const std::vector<int64_t> b = {3, 3, -3, -3, 0, 7, 5, -1};
  for (bool f : {false, true}) {
    fb::ModParamsT p;
    p.fmod = f;
    ExpectSameAsHost(OpTest(fb::OpType::Mod).inputI64("a", {8}, a).inputI64("b", {8}, b).params(p), gpu, 0,
                     f ? "Mod i64 fmod" : "Mod i64");
    std::vector<int32_t> a32(a.begin(), a.begin() + 5), b32(b.begin(), b.begin() + 5);
    a32.push_back(-2147483647 - 1);
    b32.push_back(-1);
    OpTest t(fb::OpType::Mod);
    t.input("a", {6}, fb::DataType::I32, a32.data(), 24).input("b", {6}, fb::DataType::I32, b32.data(), 24).params(p);
    ExpectSameAsHost(t, gpu, 0, f ? "Mod i32 fmod" : "Mod i32");
  }
  ExpectSameAsHost(OpTest(fb::OpType::Sum).input("a", {3, 5}, Random(15, -1, 1, 3)).input("b", {3, 5}, Random(15, -1, 1, 4))
                       .input("c", {5}, Random(5, -1, 1, 5)),
                   gpu, 1e-5f, "Sum of 3");
}

}  // namespace
}  // namespace kiln::test
