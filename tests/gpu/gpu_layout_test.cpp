// Layout ops on a GPU backend against the host: Transpose, Concat, Split, Slice,
// Gather, Tile, Expand, Pad, Resize, DepthToSpace, SpaceToDepth, MaxUnpool,
// Cast, Where, Equal, Less, Greater, GreaterOrEqual, LessOrEqual, Not, And,
// Or, Xor. Odd shapes, every parameter
// variant the host supports, and the dtypes each kernel moves (4-byte,
// 8-byte as two words, 1- and 2-byte through the byte kernels). Data
// movement is compared exactly (non-f32 outputs bytewise).
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

#include "support/backend_compare.h"

namespace kiln::test {
namespace {

// The GPU backend under test: Vulkan, or KILN_TEST_GPU=opencl.
const ForwardType kGpu = TestGpu();
using Shape = std::vector<int64_t>;

// Raw values of a dtype: distinct, from a seed.
std::vector<uint8_t> Values(fb::DataType t, int64_t n, uint32_t seed = 11) {
  const size_t size = t == fb::DataType::I64 ? 8 : t == fb::DataType::F16 ? 2 : (t == fb::DataType::BOOL ? 1 : 4);
  std::vector<uint8_t> v(static_cast<size_t>(n) * size);
  std::vector<float> f = Random(static_cast<size_t>(n), -100, 100, seed);
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* p = v.data() + static_cast<size_t>(i) * size;
    if (t == fb::DataType::F32) {
      std::memcpy(p, &f[static_cast<size_t>(i)], 4);
    } else if (t == fb::DataType::I64) {
      int64_t x = static_cast<int64_t>(f[static_cast<size_t>(i)] * 1000) * (int64_t{1} << 20) + i;
      std::memcpy(p, &x, 8);
    } else {  // every byte different-ish
      for (size_t b = 0; b < size; ++b) p[b] = static_cast<uint8_t>(i * 7 + b * 3 + seed);
      if (t == fb::DataType::BOOL) p[0] &= 1;
    }
  }
  return v;
}

OpTest& In(OpTest& t, const std::string& name, const Shape& s, fb::DataType dtype, uint32_t seed = 11) {
  std::vector<uint8_t> v = Values(dtype, Numel(s), seed);
  return t.input(name, s, dtype, v.data(), v.size());
}

const fb::DataType kMoveTypes[] = {fb::DataType::F32, fb::DataType::I64, fb::DataType::BOOL, fb::DataType::F16};

std::string Dims(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string Name(const std::string& op, fb::DataType t, const Shape& s) {
  return op + " " + fb::EnumNameDataType(t) + " " + Dims(s);
}

TEST(GpuLayout, Transpose) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    Shape s;
    std::vector<int32_t> perm;  // empty: reversed
  };
  const Case cases[] = {{{3, 7}, {}}, {{2, 3, 7, 5}, {0, 2, 3, 1}}, {{2, 3, 7, 5}, {0, 3, 1, 2}},
                        {{1, 17, 3}, {2, 0, 1}}, {{2, 3, 1, 5, 2, 3}, {5, 1, 3, 0, 4, 2}}};
  for (fb::DataType t : kMoveTypes)
    for (const Case& c : cases) {
      fb::TransposeParamsT p;
      p.perm = c.perm;
      OpTest op(fb::OpType::Transpose);
      In(op, "x", c.s, t).params(p);
      ExpectSameAsHost(op, kGpu, 0, Name("Transpose", t, c.s));
    }
}

TEST(GpuLayout, ConcatAndSplit) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (fb::DataType t : kMoveTypes)
    for (int axis : {0, 1, -1}) {
      fb::AxisParamsT p;
      p.axis = axis;
      Shape a = {3, 1, 5}, b = {3, 1, 5}, c = {3, 1, 5};
      size_t d = static_cast<size_t>(axis < 0 ? 2 : axis);
      a[d] = 1, b[d] = 3, c[d] = 7;
      OpTest op(fb::OpType::Concat);
      In(op, "a", a, t, 1);
      In(In(op, "b", b, t, 2), "c", c, t, 3).params(p);
      ExpectSameAsHost(op, kGpu, 0, Name("Concat", t, a) + " axis " + std::to_string(axis));
    }
  // A constant among the inputs (uploaded once).
  OpTest k(fb::OpType::Concat);
  k.input("x", {2, 3}, Random(6)).constant("k", {2, 1}, {5.f, 6.f}).params([] {
    fb::AxisParamsT p;
    p.axis = 1;
    return p;
  }());
  ExpectSameAsHost(k, kGpu, 0, "Concat with a constant");

  for (fb::DataType t : kMoveTypes) {
    fb::SplitParamsT p;
    p.axis = 1;
    OpTest sizes(fb::OpType::Split);
    In(sizes, "x", {2, 11, 3}, t).constantI64("split", {3}, {1, 3, 7}).params(p).outputs(3);
    ExpectSameAsHost(sizes, kGpu, 0, Name("Split sizes", t, {2, 11, 3}));
    p.axis = -1;
    OpTest equal(fb::OpType::Split);
    In(equal, "x", {3, 17}, t).params(p).outputs(3);  // 6, 6, 5
    ExpectSameAsHost(equal, kGpu, 0, Name("Split equal", t, {3, 17}));
  }
}

TEST(GpuLayout, Slice) {
  KILN_REQUIRE_BACKEND(kGpu);
  const int64_t kMax = INT64_MAX, kMin = INT64_MIN;
  struct Case {
    Shape s, starts, ends, axes, steps;
  };
  const Case cases[] = {
      {{7, 5}, {1, 0}, {5, 5}, {0, 1}, {1, 1}},
      {{3, 7, 17}, {0, 2}, {-1, 15}, {1, 2}, {2, 3}},
      {{17}, {kMax}, {kMin}, {0}, {-1}},  // full reverse
      {{17}, {15}, {2}, {0}, {-3}},
      {{3, 7, 5}, {-1, 6}, {kMin, -8}, {0, 1}, {-1, -2}},
      {{2, 3, 4, 5}, {1, -2}, {3, kMax}, {-3, 3}, {1, 1}},
      {{1, 3, 1, 7}, {0, 6}, {1, 0}, {2, 3}, {1, -1}},
      {{4, 6}, {0, 0}, {4, 6}, {0, 1}, {1, 1}},  // everything: a buffer copy
  };
  for (fb::DataType t : kMoveTypes)
    for (const Case& c : cases) {
      const int64_t n = static_cast<int64_t>(c.starts.size());
      OpTest op(fb::OpType::Slice);
      In(op, "x", c.s, t)
          .constantI64("starts", {n}, c.starts)
          .constantI64("ends", {n}, c.ends)
          .constantI64("axes", {n}, c.axes)
          .constantI64("steps", {n}, c.steps);
      ExpectSameAsHost(op, kGpu, 0, Name("Slice", t, c.s) + " starts " + Dims(c.starts));
    }
}

TEST(GpuLayout, Gather) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (fb::DataType t : {fb::DataType::F32, fb::DataType::I64, fb::DataType::I32})
    for (int axis : {0, 1, -1}) {
      fb::AxisParamsT p;
      p.axis = axis;
      const Shape s = {5, 7, 3};
      const int64_t dim = s[static_cast<size_t>(axis < 0 ? 2 : axis)];
      const std::vector<int64_t> i64 = {0, dim - 1, -1, -dim, 1, 1};
      OpTest a(fb::OpType::Gather);
      In(a, "x", s, t).constantI64("i", {2, 3}, i64).params(p);
      ExpectSameAsHost(a, kGpu, 0, Name("Gather i64", t, s) + " axis " + std::to_string(axis));
      const std::vector<int32_t> i32 = {static_cast<int32_t>(dim - 1), -2, 0};
      OpTest b(fb::OpType::Gather);
      In(b, "x", s, t).constant("i", {3}, fb::DataType::I32, i32.data(), 12).params(p);
      ExpectSameAsHost(b, kGpu, 0, Name("Gather i32", t, s) + " axis " + std::to_string(axis));
    }
  // A scalar index computed at run time drops the axis.
  const int64_t one = -2;
  OpTest s(fb::OpType::Gather);
  fb::AxisParamsT p;
  p.axis = 1;
  s.input("x", {4, 17}, Random(68)).inputI64("i", {}, {one}).params(p);
  ExpectSameAsHost(s, kGpu, 0, "Gather scalar runtime index");
}

TEST(GpuLayout, TileAndExpand) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    Shape s, reps;
  };
  const Case tiles[] = {{{3, 7}, {2, 1}}, {{3, 7}, {1, 3}}, {{1, 3, 5}, {2, 3, 2}}, {{2, 1, 3, 1}, {1, 4, 1, 3}},
                        {{17}, {1}}};
  for (fb::DataType t : kMoveTypes)
    for (const Case& c : tiles) {
      OpTest op(fb::OpType::Tile);
      In(op, "x", c.s, t).constantI64("repeats", {static_cast<int64_t>(c.reps.size())}, c.reps);
      ExpectSameAsHost(op, kGpu, 0, Name("Tile", t, c.s) + " x " + Dims(c.reps));
    }
  const Case expands[] = {{{3, 1}, {3, 7}}, {{1, 7}, {2, 3, 1}}, {{7}, {3, 1, 1}}, {{1, 3, 1, 5}, {2, 1, 17, 1}}};
  for (fb::DataType t : kMoveTypes)
    for (const Case& c : expands) {
      OpTest op(fb::OpType::Expand);
      In(op, "x", c.s, t).constantI64("shape", {static_cast<int64_t>(c.reps.size())}, c.reps);
      ExpectSameAsHost(op, kGpu, 0, Name("Expand", t, c.s) + " to " + Dims(c.reps));
    }
}

TEST(GpuLayout, SpaceDepth) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (fb::DataType t : kMoveTypes) {
    for (auto mode : {fb::DepthToSpaceMode::DCR, fb::DepthToSpaceMode::CRD}) {
      for (auto [s, b] : {std::pair<Shape, int>{{1, 8, 3, 5}, 2}, {{2, 27, 1, 7}, 3}}) {
        fb::SpaceDepthParamsT p;
        p.blocksize = b;
        p.mode = mode;
        OpTest op(fb::OpType::DepthToSpace);
        In(op, "x", s, t).params(p);
        ExpectSameAsHost(op, kGpu, 0, Name("DepthToSpace", t, s) + fb::EnumNameDepthToSpaceMode(mode));
      }
    }
    for (auto [s, b] : {std::pair<Shape, int>{{1, 3, 4, 6}, 2}, {{2, 1, 9, 3}, 3}}) {
      fb::SpaceDepthParamsT p;
      p.blocksize = b;
      OpTest op(fb::OpType::SpaceToDepth);
      In(op, "x", s, t).params(p);
      ExpectSameAsHost(op, kGpu, 0, Name("SpaceToDepth", t, s));
    }
  }
}

TEST(GpuLayout, Pad) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    Shape s, pads, axes;
  };
  const Case cases[] = {
      {{3, 7}, {1, 2, 2, 1}, {}},
      {{1, 3, 5, 7}, {0, 0, 2, 3, 0, 0, 1, 4}, {}},
      {{2, 3, 5}, {0, 1, -2, 1, 0, 1}, {}},  // negative pad crops
      {{1, 3, 4}, {0, 0, 9, 0, 0, 7}, {}},   // reflect past the edge, repeatedly
      {{2, 3, 7}, {2, 1, 6, 0}, {-1, 1}},    // axes input (opset 18)
      {{5, 1}, {1, 2, 3, 4}, {}},            // a dim of 1
  };
  for (fb::PadMode mode : {fb::PadMode::Constant, fb::PadMode::Reflect, fb::PadMode::Edge})
    for (fb::DataType t : {fb::DataType::F32, fb::DataType::I64, fb::DataType::I32})
      for (const Case& c : cases) {
        fb::PadParamsT p;
        p.mode = mode;
        p.value = 2.5f;
        OpTest op(fb::OpType::Pad);
        In(op, "x", c.s, t).constantI64("pads", {static_cast<int64_t>(c.pads.size())}, c.pads);
        if (!c.axes.empty()) op.missing().constantI64("axes", {static_cast<int64_t>(c.axes.size())}, c.axes);
        ExpectSameAsHost(op.params(p), kGpu, 0,
                         Name("Pad", t, c.s) + " " + fb::EnumNamePadMode(mode) + " " + Dims(c.pads));
      }
  const std::vector<int64_t> fill = {-123456789012345};
  OpTest v(fb::OpType::Pad);
  In(v, "x", {3, 5}, fb::DataType::I64).constantI64("pads", {4}, {1, 0, 2, 3}).constantI64("value", {}, fill);
  ExpectSameAsHost(v, kGpu, 0, "Pad i64 value input");
}

TEST(GpuLayout, Resize) {
  KILN_REQUIRE_BACKEND(kGpu);
  using CT = fb::CoordinateTransform;
  struct Case {
    Shape s;
    std::vector<float> scales;
    Shape sizes;  // used when scales is empty
  };
  const Case cases[] = {{{1, 3, 4, 5}, {1, 1, 2, 2}, {}},  {{2, 1, 7, 3}, {1, 1, 0.6f, 1.7f}, {}},
                        {{1, 3, 5, 7}, {}, {1, 3, 3, 17}}, {{1, 1, 3, 1, 5}, {1, 1, 2, 1, 0.5f}, {}},
                        {{2, 17}, {}, {2, 7}}};
  auto run = [&](const Case& c, fb::DataType t, const fb::ResizeParamsT& p, const std::string& what) {
    OpTest op(fb::OpType::Resize);
    In(op, "x", c.s, t).missing();
    const int64_t r = static_cast<int64_t>(c.s.size());
    if (c.scales.empty())
      op.missing().constantI64("sizes", {r}, c.sizes);
    else
      op.constant("scales", {r}, c.scales);
    ExpectSameAsHost(op.params(p), kGpu, 1e-5f, what + " " + Name("Resize", t, c.s));
  };
  for (CT tr : {CT::HalfPixel, CT::Asymmetric, CT::PytorchHalfPixel, CT::AlignCorners, CT::TfHalfPixelForNn})
    for (const Case& c : cases) {
      fb::ResizeParamsT p;
      p.coordinate_transform = tr;
      p.mode = fb::ResizeMode::Linear;
      run(c, fb::DataType::F32, p, std::string("linear ") + fb::EnumNameCoordinateTransform(tr));
      p.mode = fb::ResizeMode::Cubic;  // both coefficients, both edge rules
      p.cubic_coeff_a = tr == CT::HalfPixel ? -0.5f : -0.75f;
      p.exclude_outside = tr == CT::HalfPixel || tr == CT::AlignCorners;
      run(c, fb::DataType::F32, p, std::string("cubic ") + fb::EnumNameCoordinateTransform(tr));
      p.cubic_coeff_a = -0.75f;
      p.exclude_outside = false;
      p.mode = fb::ResizeMode::Nearest;
      for (auto nm : {fb::NearestMode::RoundPreferFloor, fb::NearestMode::RoundPreferCeil, fb::NearestMode::Floor,
                      fb::NearestMode::Ceil}) {
        p.nearest_mode = nm;
        run(c, nm == fb::NearestMode::Floor ? fb::DataType::I64 : fb::DataType::F32, p,
            std::string("nearest ") + fb::EnumNameCoordinateTransform(tr) + " " + fb::EnumNameNearestMode(nm));
      }
    }
}

TEST(GpuLayout, MaxUnpool) {
  KILN_REQUIRE_BACKEND(kGpu);
  // [1, 3, 2, 3] values into a [1, 3, 4, 5] output (4x6 by default for
  // k2 s2), with a repeated index (the last value wins).
  const std::vector<float> x = Random(18, -5, 5);
  for (bool in_output : {true, false}) {
    // Per channel, flat indices into 4x5 (the output) or 4x6 (the default
    // size, moved to the same row and column of the output).
    std::vector<int64_t> idx;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t k : in_output ? std::vector<int64_t>{0, 7, 7, 13, 19, 5} : std::vector<int64_t>{0, 7, 7, 13, 20, 3})
        idx.push_back(c * (in_output ? 20 : 24) + k);
    fb::MaxUnpoolParamsT p;
    p.kernel_shape = {2, 2};
    p.strides = {2, 2};
    p.indices_in_output_shape = in_output;
    OpTest op(fb::OpType::MaxUnpool);
    op.input("x", {1, 3, 2, 3}, x).inputI64("i", {1, 3, 2, 3}, idx).constantI64("shape", {4}, {1, 3, 4, 5}).params(p);
    ExpectSameAsHost(op, kGpu, 0, in_output ? "MaxUnpool, indices in the output" : "MaxUnpool, default-size indices");
  }
  fb::MaxUnpoolParamsT p;
  p.kernel_shape = {3};
  p.strides = {2};
  OpTest d(fb::OpType::MaxUnpool);
  d.input("x", {2, 1, 3}, Random(6)).inputI64("i", {2, 1, 3}, {0, 2, 6, 1, 1, 4}).params(p);  // default size 7
  ExpectSameAsHost(d, kGpu, 0, "MaxUnpool 1-D default size");
}

TEST(GpuLayout, Cast) {
  KILN_REQUIRE_BACKEND(kGpu);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> f32 = {0.f, -0.f, 1.5f, -1.5f, 2.5f, -2.7f, 65504.f, 65520.f, 1e-6f, -6e-8f, 3e-5f,
                                  2147483520.f, 2147483648.f, -2147483648.f, 9.2233715e18f, -9.3e18f, 1e30f, inf,
                                  -inf, nan, 0.1f, 123456.7f, -1e-40f};
  const std::vector<int64_t> i64 = {0, 1, -1, 16777217, -16777219, INT32_MAX, INT32_MIN, int64_t{1} << 40,
                                    (int64_t{1} << 53) + 1, (int64_t{1} << 62) + (int64_t{1} << 38) + 1,
                                    (int64_t{1} << 54) + 3, INT64_MAX, INT64_MIN, -(int64_t{1} << 33) - 7, 65519, 2047};
  std::vector<int32_t> i32;
  for (int64_t v : i64) i32.push_back(static_cast<int32_t>(v));
  std::vector<uint16_t> f16 = {0x0000, 0x8000, 0x3c00, 0xbe00, 0x0001, 0x83ff, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x4248};
  const std::vector<uint8_t> bools = {0, 1, 1, 0, 1, 0, 0};
  const std::vector<uint8_t> u8 = {0, 1, 127, 128, 200, 255, 17};
  const std::vector<int8_t> i8 = {0, 1, -1, 127, -128, -77, 55};
  struct Src {
    fb::DataType t;
    const void* data;
    size_t n, size;
  };
  const Src srcs[] = {{fb::DataType::F32, f32.data(), f32.size(), 4},
                      {fb::DataType::I64, i64.data(), i64.size(), 8},
                      {fb::DataType::I32, i32.data(), i32.size(), 4},
                      {fb::DataType::F16, f16.data(), f16.size(), 2},
                      {fb::DataType::BOOL, bools.data(), bools.size(), 1},
                      {fb::DataType::U8, u8.data(), u8.size(), 1},
                      {fb::DataType::I8, i8.data(), i8.size(), 1}};
  for (const Src& s : srcs)
    for (fb::DataType to : {fb::DataType::F32, fb::DataType::F16, fb::DataType::I32, fb::DataType::I64,
                            fb::DataType::BOOL, fb::DataType::U8, fb::DataType::I8}) {
      fb::CastParamsT p;
      p.to = to;
      OpTest op(fb::OpType::Cast);
      op.input("x", {static_cast<int64_t>(s.n)}, s.t, s.data, s.n * s.size).params(p);
      ExpectSameAsHost(op, kGpu, 0,
                       std::string("Cast ") + fb::EnumNameDataType(s.t) + " to " + fb::EnumNameDataType(to));
    }
}

TEST(GpuLayout, Compare) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {{{3, 7}, {3, 7}}, {{2, 3, 5}, {5}}, {{7, 1, 3}, {1, 17, 1}}};
  // Few distinct values, so that Equal is sometimes true.
  auto small = [](fb::DataType t, int64_t n, uint32_t seed) {
    std::vector<float> f = Random(static_cast<size_t>(n), -2, 2, seed);
    std::vector<uint8_t> v(static_cast<size_t>(n) * (t == fb::DataType::I64 ? 8 : 4));
    for (int64_t i = 0; i < n; ++i) {
      float r = std::round(f[static_cast<size_t>(i)]);
      if (t == fb::DataType::F32) std::memcpy(&v[static_cast<size_t>(i) * 4], &r, 4);
      if (t == fb::DataType::I32) { int32_t k = static_cast<int32_t>(r) * 65537; std::memcpy(&v[static_cast<size_t>(i) * 4], &k, 4); }
      if (t == fb::DataType::I64) { int64_t k = static_cast<int64_t>(r) * (int64_t{1} << 33) | (i & 1); std::memcpy(&v[static_cast<size_t>(i) * 8], &k, 8); }
    }
    return v;
  };
  for (fb::OpType op : {fb::OpType::Equal, fb::OpType::Less, fb::OpType::Greater, fb::OpType::And,
                        fb::OpType::GreaterOrEqual, fb::OpType::LessOrEqual})
    for (fb::DataType t : {fb::DataType::F32, fb::DataType::I32, fb::DataType::I64})
      for (const Case& c : cases) {
        std::vector<uint8_t> a = small(t, Numel(c.a), 1), b = small(t, Numel(c.b), 2);
        OpTest test(op);
        test.input("a", c.a, t, a.data(), a.size()).input("b", c.b, t, b.data(), b.size());
        ExpectSameAsHost(test, kGpu, 0, Name(fb::EnumNameOpType(op), t, c.a) + " with " + Dims(c.b));
      }
  for (fb::OpType op : {fb::OpType::And, fb::OpType::Equal, fb::OpType::Or, fb::OpType::Xor})
    for (const Case& c : cases) {
      OpTest test(op);
      In(In(test, "a", c.a, fb::DataType::BOOL, 1), "b", c.b, fb::DataType::BOOL, 4);
      ExpectSameAsHost(test, kGpu, 0, Name(fb::EnumNameOpType(op), fb::DataType::BOOL, c.a));
    }
  OpTest eq(fb::OpType::Equal);
  const std::vector<uint8_t> u1 = {0, 5, 255, 7, 3}, u2 = {0, 5, 254, 8, 3};
  eq.input("a", {5}, fb::DataType::U8, u1.data(), 5).input("b", {5}, fb::DataType::U8, u2.data(), 5);
  ExpectSameAsHost(eq, kGpu, 0, "Equal u8");
  OpTest no(fb::OpType::Not);
  In(no, "a", {3, 17}, fb::DataType::BOOL);
  ExpectSameAsHost(no, kGpu, 0, "Not");
}

TEST(GpuLayout, Where) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    Shape c, a, b;
  };
  const Case cases[] = {{{3, 7}, {3, 7}, {3, 7}}, {{2, 1, 5}, {3, 1}, {1}}, {{17}, {3, 1, 17}, {3, 2, 1}}};
  for (fb::DataType t : {fb::DataType::F32, fb::DataType::I64, fb::DataType::I32})
    for (const Case& c : cases) {
      OpTest op(fb::OpType::Where);
      In(op, "c", c.c, fb::DataType::BOOL, 5);
      In(In(op, "a", c.a, t, 6), "b", c.b, t, 7);
      ExpectSameAsHost(op, kGpu, 0, Name("Where", t, c.c) + " " + Dims(c.a) + " " + Dims(c.b));
    }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

TEST(GpuLayout, GatherElementsAndTrilu) {
  KILN_REQUIRE_BACKEND(TestGpu());
  const ForwardType gpu = TestGpu();
  const std::vector<int64_t> shape = {3, 4, 5};
  const std::vector<float> x = Random(60, -1, 1, 8);
  std::vector<int64_t> xi(60);
  for (size_t i = 0; i < xi.size(); ++i) xi[i] = (static_cast<int64_t>(i) - 30) * (int64_t{1} << 33);
  for (int axis = 0; axis < 3; ++axis) {
    // Indices [3, 2, 5] (fewer along axis 1), negative ones among them.
    std::vector<int64_t> idx;
    for (int i = 0; i < 30; ++i) idx.push_back(i % 7 % shape[static_cast<size_t>(axis)] - (i % 3 == 0 ? shape[static_cast<size_t>(axis)] : 0));
    fb::AxisParamsT p;
    p.axis = axis;
    ExpectSameAsHost(OpTest(fb::OpType::GatherElements).input("x", shape, x).inputI64("i", {3, 2, 5}, idx).params(p), gpu, 0,
                     "GatherElements f32 axis " + std::to_string(axis));
    std::vector<int32_t> idx32(idx.begin(), idx.end());
    OpTest t(fb::OpType::GatherElements);
    t.input("x", shape, fb::DataType::I64, xi.data(), xi.size() * 8)
        .input("i", {3, 2, 5}, fb::DataType::I32, idx32.data(), idx32.size() * 4)
        .params(p);
    ExpectSameAsHost(t, gpu, 0, "GatherElements i64 axis " + std::to_string(axis));
  }
  for (bool upper : {true, false})
    for (int64_t k : {-1, 0, 2}) {
      fb::TriluParamsT p;
      p.upper = upper;
      const std::string what = std::string("Trilu ") + (upper ? "upper" : "lower") + " k " + std::to_string(k);
      ExpectSameAsHost(OpTest(fb::OpType::Trilu).input("x", shape, x).constantI64("k", {}, {k}).params(p), gpu, 0, what);
      OpTest t(fb::OpType::Trilu);
      t.input("x", shape, fb::DataType::I64, xi.data(), xi.size() * 8).constantI64("k", {}, {k}).params(p);
      ExpectSameAsHost(t, gpu, 0, what + " i64");
    }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

TEST(GpuLayout, ScatterAndGatherND) {
  KILN_REQUIRE_BACKEND(TestGpu());
  const ForwardType gpu = TestGpu();
  const std::vector<int64_t> shape = {4, 3, 5};
  const auto x = Random(60, -1, 1, 12);
  std::vector<int64_t> xi(60);
  for (size_t i = 0; i < xi.size(); ++i) xi[i] = (static_cast<int64_t>(i) - 7) * (int64_t{1} << 34);
  {  // ScatterElements along each axis: a permutation of positions (no repeats)
    for (int axis = 0; axis < 3; ++axis) {
      fb::ScatterParamsT p;
      p.axis = axis;
      std::vector<int64_t> ushape = shape;
      ushape[static_cast<size_t>(axis)] = 2;
      const int64_t n = ushape[0] * ushape[1] * ushape[2];
      std::vector<int64_t> idx(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = i % 2 == 0 ? -1 : 0;  // last and first along the axis
      ExpectSameAsHost(OpTest(fb::OpType::ScatterElements).input("x", shape, x).inputI64("i", ushape, idx)
                           .input("u", ushape, Random(static_cast<size_t>(n), 2, 3, 13)).params(p),
                       gpu, 0, "ScatterElements axis " + std::to_string(axis));
    }
  }
  {  // ScatterND: rows (depth 1) and elements (depth 3), i64 data
    fb::ScatterParamsT p;
    ExpectSameAsHost(OpTest(fb::OpType::ScatterND).input("x", shape, x).inputI64("i", {2, 1}, {3, -4})
                         .input("u", {2, 3, 5}, Random(30, 2, 3, 14)).params(p),
                     gpu, 0, "ScatterND rows");
    std::vector<int64_t> u = {11, 22};
    OpTest t(fb::OpType::ScatterND);
    t.input("x", shape, fb::DataType::I64, xi.data(), xi.size() * 8).inputI64("i", {2, 3}, {0, 1, 2, 3, 2, -1})
        .input("u", {2}, fb::DataType::I64, u.data(), 16).params(p);
    ExpectSameAsHost(t, gpu, 0, "ScatterND elements i64");
  }
  {  // GatherND: plain, batch_dims 1, i64 data
    ExpectSameAsHost(OpTest(fb::OpType::GatherND).input("x", shape, x).inputI64("i", {2, 2, 2}, {0, 1, 3, 2, -1, 0, 2, -3}), gpu, 0,
                     "GatherND depth 2");
    fb::GatherNDParamsT p;
    p.batch_dims = 1;
    ExpectSameAsHost(OpTest(fb::OpType::GatherND).input("x", shape, x).inputI64("i", {4, 2, 1}, {0, 2, 1, 1, 2, 0, -1, 1}).params(p),
                     gpu, 0, "GatherND batch_dims 1");
    OpTest t(fb::OpType::GatherND);
    t.input("x", shape, fb::DataType::I64, xi.data(), xi.size() * 8).inputI64("i", {3, 3}, {0, 0, 0, 3, 2, 4, -1, -1, -1});
    ExpectSameAsHost(t, gpu, 0, "GatherND i64");
  }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

TEST(GpuLayout, IsNaNIsInf) {
  KILN_REQUIRE_BACKEND(TestGpu());
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {1, inf, -inf, std::nanf(""), 0, -2, inf};
  ExpectSameAsHost(OpTest(fb::OpType::IsNaN).input("x", {7}, x), TestGpu(), 0, "IsNaN");
  for (int detect = 0; detect < 4; ++detect) {
    fb::IsInfParamsT p;
    p.detect_positive = detect & 1;
    p.detect_negative = detect & 2;
    ExpectSameAsHost(OpTest(fb::OpType::IsInf).input("x", {7}, x).params(p), TestGpu(), 0, "IsInf " + std::to_string(detect));
  }
}

}  // namespace
}  // namespace kiln::test

namespace kiln::test {
namespace {

TEST(GpuLayout, OneHot) {
  KILN_REQUIRE_BACKEND(TestGpu());
  for (int axis : {-1, 0, 1}) {
    fb::AxisParamsT p;
    p.axis = axis;
    ExpectSameAsHost(OpTest(fb::OpType::OneHot)
                         .inputI64("i", {2, 3}, {0, -1, 4, 2, -5, 1})
                         .constantI64("depth", {}, {4})
                         .constant("values", {2}, {-0.5f, 2.f})
                         .params(p),
                     TestGpu(), 0, "OneHot axis " + std::to_string(axis));
  }
}

}  // namespace
}  // namespace kiln::test
