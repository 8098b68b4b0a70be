// Layout ops on the host against naive references written here with
// explicit index arithmetic: Reshape, Flatten, Squeeze, Unsqueeze,
// Transpose, Concat, Split, Slice, Gather, Tile, Pad, Resize, DepthToSpace,
// SpaceToDepth, Expand, Shape, Constant; shape subgraphs computed at resize.
#include <climits>
#include <cmath>
#include <random>
#include <string>
#include <type_traits>

#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln {
namespace {

using test::ExpectNear;
using test::Numel;
using test::OpResult;
using test::OpTest;
using test::RandomFloats;
using Shape = std::vector<int64_t>;

// ---- helpers: index arithmetic, typed random data ----

Shape Unravel(int64_t i, const Shape& shape) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

std::string ShapeToString(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

int64_t Ravel(const Shape& idx, const Shape& shape) {
  int64_t r = 0;
  for (size_t d = 0; d < shape.size(); ++d) r = r * shape[d] + idx[d];
  return r;
}

template <typename T>
fb::DataType DType();
template <>
fb::DataType DType<float>() { return fb::DataType::F32; }
template <>
fb::DataType DType<int64_t>() { return fb::DataType::I64; }
template <>
fb::DataType DType<uint8_t>() { return fb::DataType::BOOL; }
template <>
fb::DataType DType<uint16_t>() { return fb::DataType::F16; }  // raw bits: layout ops only move them

template <typename T>
std::vector<T> Random(size_t n, uint32_t seed) {
  std::vector<T> v(n);
  std::mt19937 rng(seed);
  for (T& x : v) {
    if (std::is_same<T, float>::value)
      x = static_cast<T>(std::uniform_real_distribution<float>(-1, 1)(rng));
    else if (std::is_same<T, uint8_t>::value)
      x = static_cast<T>(rng() & 1);
    else
      x = static_cast<T>(static_cast<int64_t>(rng() % 2000001) - 1000000);
  }
  return v;
}

template <typename T>
OpTest& In(OpTest& t, const std::string& name, const Shape& shape, const std::vector<T>& v) {
  return t.input(name, shape, DType<T>(), v.data(), v.size() * sizeof(T));
}

#define ASSERT_OK(r) ASSERT_TRUE((r).ok()) << (r).status().ToString()

// ---- Reshape, Flatten, Squeeze, Unsqueeze ----

TEST(LayoutReshape, ShapesAndValues) {
  struct Case {
    Shape in, target, want;
    bool allowzero;
  };
  std::vector<Case> cases = {
      {{2, 3, 4}, {4, -1}, {4, 6}, false},     {{2, 3, 4}, {0, -1}, {2, 12}, false},
      {{2, 3, 4}, {-1}, {24}, false},          {{17}, {1, 17, 1}, {1, 17, 1}, false},
      {{2, 7, 3}, {-1, 0}, {6, 7}, false},     {{1, 3, 1, 7}, {0, 0, -1}, {1, 3, 7}, false},
      {{3, 7}, {0, 7, 1}, {3, 7, 1}, false},   {{2, 3, 4, 1}, {4, 0, 2, 0}, {4, 3, 2, 1}, false},
  };
  for (const Case& c : cases) {
    std::vector<float> x = RandomFloats(static_cast<size_t>(Numel(c.in)), 3);
    fb::ReshapeParamsT p;
    p.allowzero = c.allowzero;
    OpTest t(fb::OpType::Reshape);
    t.input("x", c.in, x).constantI64("shape", {static_cast<int64_t>(c.target.size())}, c.target).params(p);
    auto out = t.run();
    ASSERT_OK(out);
    EXPECT_EQ(out->at(0).shape, c.want);
    EXPECT_EQ(out->at(0).f32(), x);
  }
}

TEST(LayoutReshape, BadShapesAreClearErrors) {
  auto out = OpTest(fb::OpType::Reshape, "r1")
                 .input("x", {2, 3, 4}, RandomFloats(24, 1))
                 .constantI64("shape", {2}, {5, -1})
                 .run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("Reshape: cannot reshape 24 elements"), std::string::npos)
      << out.status().message();
  EXPECT_NE(out.status().message().find("[5,-1]"), std::string::npos) << out.status().message();
  auto two = OpTest(fb::OpType::Reshape).input("x", {2, 3}, RandomFloats(6, 1)).constantI64("s", {2}, {-1, -1}).run();
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("more than one -1"), std::string::npos) << two.status().message();
}

TEST(LayoutReshape, ShapeFromAGraphInput) {
  // The shape is a graph input: written before resize, read at resize.
  std::vector<float> x = RandomFloats(24, 1);
  auto out = OpTest(fb::OpType::Reshape, "r").input("x", {2, 3, 4}, x).inputI64("shape", {2}, {4, 6}).run();
  ASSERT_OK(out);
  EXPECT_EQ(out->at(0).shape, (Shape{4, 6}));
  EXPECT_EQ(out->at(0).f32(), x);
  auto bad = OpTest(fb::OpType::Reshape, "r").input("x", {2, 3, 4}, x).inputI64("shape", {2}, {5, -1}).run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'r' (Reshape)"), std::string::npos) << bad.status().message();
}

TEST(LayoutReshape, FlattenSqueezeUnsqueeze) {
  Shape s = {2, 3, 4, 5};
  std::vector<float> x = RandomFloats(120, 5);
  for (int axis : {0, 1, 2, 4, -1, -4}) {
    fb::AxisParamsT p;
    p.axis = axis;
    auto out = OpTest(fb::OpType::Flatten).input("x", s, x).params(p).run();
    ASSERT_OK(out);
    int a = axis < 0 ? axis + 4 : axis;
    int64_t outer = 1;
    for (int d = 0; d < a; ++d) outer *= s[static_cast<size_t>(d)];
    EXPECT_EQ(out->at(0).shape, (Shape{outer, 120 / outer})) << axis;
    EXPECT_EQ(out->at(0).f32(), x);
  }
  Shape s1 = {1, 3, 1, 7, 1};
  std::vector<float> y = RandomFloats(21, 6);
  {  // axes as input 1 (opset 13), negative
    auto out = OpTest(fb::OpType::Squeeze).input("x", s1, y).constantI64("axes", {2}, {0, -1}).run();
    ASSERT_OK(out);
    EXPECT_EQ(out->at(0).shape, (Shape{3, 1, 7}));
    EXPECT_EQ(out->at(0).f32(), y);
  }
  {  // axes as params (opset < 13)
    fb::AxesParamsT p;
    p.axes = {2};
    auto out = OpTest(fb::OpType::Squeeze).input("x", s1, y).params(p).run();
    ASSERT_OK(out);
    EXPECT_EQ(out->at(0).shape, (Shape{1, 3, 7, 1}));
  }
  {  // no axes: every 1
    auto out = OpTest(fb::OpType::Squeeze).input("x", s1, y).run();
    ASSERT_OK(out);
    EXPECT_EQ(out->at(0).shape, (Shape{3, 7}));
    EXPECT_EQ(out->at(0).f32(), y);
  }
  {  // squeezing a dim that is not 1
    auto out = OpTest(fb::OpType::Squeeze).input("x", s1, y).constantI64("axes", {1}, {1}).run();
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.status().message().find("not 1"), std::string::npos) << out.status().message();
  }
  {
    auto out = OpTest(fb::OpType::Unsqueeze).input("x", {3, 7}, y).constantI64("axes", {3}, {0, -1, 2}).run();
    ASSERT_OK(out);
    EXPECT_EQ(out->at(0).shape, (Shape{1, 3, 1, 7, 1}));
    EXPECT_EQ(out->at(0).f32(), y);
  }
  {
    fb::AxesParamsT p;
    p.axes = {1};
    auto out = OpTest(fb::OpType::Unsqueeze).input("x", {3, 7}, y).params(p).run();
    ASSERT_OK(out);
    EXPECT_EQ(out->at(0).shape, (Shape{3, 1, 7}));
  }
}

// Reshape/Flatten/Squeeze/Unsqueeze between two ops run in place (the
// session gives them their input's buffer).
TEST(LayoutReshape, InPlaceChain) {
  NetBuilder b("inplace");
  int x = b.addInput("x", fb::DataType::F32, {1, 3, 4, 1});
  int n1 = b.addOp(fb::OpType::Neg, "neg1", {x}, {"n1"})[0];
  fb::AxesParamsT sq;
  sq.axes = {0};
  int s = b.addOp(fb::OpType::Squeeze, "sq", {n1}, {"s"}, sq)[0];
  int ax = b.addConstant("ax", {1}, std::vector<int64_t>{0});
  int u = b.addOp(fb::OpType::Unsqueeze, "unsq", {s, ax}, {"u"})[0];
  fb::AxisParamsT fl;
  fl.axis = 2;
  int f = b.addOp(fb::OpType::Flatten, "flat", {u}, {"f"}, fl)[0];
  int shape = b.addConstant("shape", {2}, std::vector<int64_t>{4, 3});
  int r = b.addOp(fb::OpType::Reshape, "reshape", {f, shape}, {"r"})[0];
  int y = b.addOp(fb::OpType::Neg, "neg2", {r}, {"y"})[0];
  b.addOutput(y);
  auto bytes = b.finish();
  ASSERT_OK(bytes);
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_OK(interp);
  auto session = (*interp)->createSession({});
  ASSERT_OK(session);
  std::vector<float> xv = RandomFloats(12, 9);
  auto host = Tensor::wrap({1, 3, 4, 1}, fb::DataType::F32, xv.data());
  ASSERT_TRUE((*session)->getInput("x")->copyFromHostTensor(*host).ok());
  Status st = (*session)->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  Tensor* out = (*session)->getOutput("y");
  EXPECT_EQ(out->shape(), (Shape{4, 3}));
  std::vector<float> got(12);
  auto gh = Tensor::wrap({4, 3}, fb::DataType::F32, got.data());
  ASSERT_TRUE(out->copyToHostTensor(gh.get()).ok());
  EXPECT_EQ(got, xv);
}

// ---- Transpose ----

template <typename T>
std::vector<T> RefTranspose(const std::vector<T>& x, const Shape& s, const Shape& perm, Shape* os) {
  os->clear();
  for (int64_t p : perm) os->push_back(s[static_cast<size_t>(p)]);
  std::vector<T> y(x.size());
  for (int64_t o = 0; o < Numel(*os); ++o) {
    Shape oi = Unravel(o, *os), ii(s.size());
    for (size_t d = 0; d < perm.size(); ++d) ii[static_cast<size_t>(perm[d])] = oi[d];
    y[static_cast<size_t>(o)] = x[static_cast<size_t>(Ravel(ii, s))];
  }
  return y;
}

template <typename T>
void CheckTranspose(const Shape& s, Shape perm, bool give_perm) {
  std::vector<T> x = Random<T>(static_cast<size_t>(Numel(s)), 11);
  OpTest t(fb::OpType::Transpose);
  In(t, "x", s, x);
  if (give_perm) {
    fb::TransposeParamsT p;
    for (int64_t v : perm) p.perm.push_back(static_cast<int32_t>(v));
    t.params(p);
  }
  auto out = t.run();
  ASSERT_OK(out);
  Shape os;
  std::vector<T> want = RefTranspose(x, s, perm, &os);
  EXPECT_EQ(out->at(0).shape, os);
  EXPECT_EQ(out->at(0).as<T>(), want) << ShapeToString(s) << " perm " << ShapeToString(perm);
}

TEST(LayoutTranspose, PermsAndDtypes) {
  CheckTranspose<float>({2, 3, 4, 5}, {0, 2, 3, 1}, true);
  CheckTranspose<float>({2, 3, 4, 5}, {3, 1, 0, 2}, true);
  CheckTranspose<float>({2, 3, 4, 5}, {3, 2, 1, 0}, false);  // default: reverse
  CheckTranspose<float>({1, 7, 3}, {2, 0, 1}, true);
  CheckTranspose<float>({17, 3}, {1, 0}, true);
  CheckTranspose<float>({3, 1, 7, 1, 2}, {4, 2, 0, 3, 1}, true);
  CheckTranspose<int64_t>({3, 7, 2}, {1, 2, 0}, true);
  CheckTranspose<int64_t>({17, 5}, {1, 0}, false);
  CheckTranspose<uint8_t>({3, 7, 17}, {2, 0, 1}, true);
  CheckTranspose<uint8_t>({2, 3, 5}, {0, 2, 1}, true);
  CheckTranspose<uint16_t>({3, 7, 17}, {1, 2, 0}, true);
}

TEST(LayoutTranspose, BadPermIsAClearError) {
  fb::TransposeParamsT p;
  p.perm = {0, 0, 1};
  auto out = OpTest(fb::OpType::Transpose).input("x", {2, 3, 4}, RandomFloats(24, 1)).params(p).run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("not a permutation"), std::string::npos) << out.status().message();
}

// ---- Concat, Split ----

template <typename T>
void CheckConcat(const std::vector<Shape>& shapes, int axis) {
  std::vector<std::vector<T>> xs;
  OpTest t(fb::OpType::Concat);
  for (size_t i = 0; i < shapes.size(); ++i) {
    xs.push_back(Random<T>(static_cast<size_t>(Numel(shapes[i])), 20 + static_cast<uint32_t>(i)));
    In(t, "x" + std::to_string(i), shapes[i], xs.back());
  }
  fb::AxisParamsT p;
  p.axis = axis;
  auto out = t.params(p).run();
  ASSERT_OK(out);
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int>(shapes[0].size()) : axis);
  Shape os = shapes[0];
  os[a] = 0;
  for (const Shape& s : shapes) os[a] += s[a];
  std::vector<T> want(static_cast<size_t>(Numel(os)));
  for (int64_t o = 0; o < Numel(os); ++o) {
    Shape idx = Unravel(o, os);
    size_t k = 0;
    while (idx[a] >= shapes[k][a]) idx[a] -= shapes[k++][a];
    want[static_cast<size_t>(o)] = xs[k][static_cast<size_t>(Ravel(idx, shapes[k]))];
  }
  EXPECT_EQ(out->at(0).shape, os);
  EXPECT_EQ(out->at(0).as<T>(), want) << "axis " << axis;
}

TEST(LayoutConcat, AxesAndDtypes) {
  CheckConcat<float>({{2, 3, 4}, {2, 1, 4}, {2, 7, 4}}, 1);
  CheckConcat<float>({{2, 3, 4}, {5, 3, 4}}, 0);
  CheckConcat<float>({{3, 7}, {3, 1}, {3, 17}, {3, 2}}, -1);
  CheckConcat<float>({{1, 3, 5, 7}, {1, 3, 1, 7}}, -2);
  CheckConcat<int64_t>({{1}, {3}, {7}}, 0);
  CheckConcat<int64_t>({{2, 3}, {2, 5}}, 1);
  CheckConcat<uint8_t>({{3, 2, 2}, {3, 1, 2}}, 1);
  CheckConcat<uint8_t>({{17}, {3}}, -1);
  CheckConcat<uint16_t>({{2, 3}, {2, 7}}, 1);
}

TEST(LayoutConcat, MismatchIsAClearError) {
  auto out = OpTest(fb::OpType::Concat)
                 .input("a", {2, 4}, RandomFloats(8, 1))
                 .input("b", {2, 4}, RandomFloats(8, 2))
                 .input("c", {2, 3}, RandomFloats(6, 3))
                 .params([] { fb::AxisParamsT p; p.axis = 0; return p; }())
                 .run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("Concat: input 2 has shape [2,3] but input 0 has [2,4] off axis 0"),
            std::string::npos)
      << out.status().message();
}

template <typename T>
void CheckSplit(const Shape& s, int axis, const Shape& sizes, int how /*0 input, 1 params, 2 equal*/) {
  std::vector<T> x = Random<T>(static_cast<size_t>(Numel(s)), 30);
  OpTest t(fb::OpType::Split);
  In(t, "x", s, x);
  fb::SplitParamsT p;
  p.axis = axis;
  if (how == 0) t.constantI64("split", {static_cast<int64_t>(sizes.size())}, sizes);
  if (how == 1) p.split = sizes;
  t.params(p).outputs(static_cast<int>(sizes.size()));
  auto out = t.run();
  ASSERT_OK(out);
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int>(s.size()) : axis);
  int64_t at = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Shape os = s;
    os[a] = sizes[k];
    std::vector<T> want;
    for (int64_t o = 0; o < Numel(os); ++o) {
      Shape idx = Unravel(o, os);
      idx[a] += at;
      want.push_back(x[static_cast<size_t>(Ravel(idx, s))]);
    }
    at += sizes[k];
    EXPECT_EQ(out->at(k).shape, os) << k;
    EXPECT_EQ(out->at(k).as<T>(), want) << "output " << k;
  }
}

TEST(LayoutSplit, SizesParamsAndEqualParts) {
  CheckSplit<float>({3, 7, 5}, 1, {2, 4, 1}, 0);
  CheckSplit<float>({3, 7, 5}, -1, {1, 4}, 1);
  CheckSplit<float>({6, 17}, 0, {2, 2, 2}, 2);
  CheckSplit<float>({3, 7}, 1, {3, 3, 1}, 2);  // uneven: the last part is smaller
  CheckSplit<int64_t>({17}, 0, {10, 6, 1}, 0);
  CheckSplit<uint8_t>({2, 3, 4}, -2, {1, 2}, 1);
  auto bad = OpTest(fb::OpType::Split).input("x", {3, 7}, RandomFloats(21, 1)).constantI64("s", {2}, {3, 3})
                 .params([] { fb::SplitParamsT p; p.axis = 1; return p; }()).outputs(2).run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("add up to 6, but axis 1 has 7"), std::string::npos) << bad.status().message();
}

// ---- Slice ----

// The input indices a slice of one axis selects, straight from the spec.
Shape SliceIndices(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  Shape r;
  if (step > 0) {
    start = std::min(std::max<int64_t>(start, 0), dim);
    end = std::min(std::max<int64_t>(end, 0), dim);
    for (int64_t k = 0; k < dim; ++k)
      if (k >= start && k < end && (k - start) % step == 0) r.push_back(k);
  } else {
    start = std::min(std::max<int64_t>(start, -1), dim - 1);
    end = std::min(std::max<int64_t>(end, -1), dim - 1);
    for (int64_t k = dim - 1; k >= 0; --k)
      if (k <= start && k > end && (start - k) % (-step) == 0) r.push_back(k);
  }
  return r;
}

struct SliceCase {
  Shape shape, starts, ends, axes, steps;  // empty axes / steps: not given
};

template <typename T>
void CheckSlice(const SliceCase& c, bool as_params) {
  std::vector<T> x = Random<T>(static_cast<size_t>(Numel(c.shape)), 40);
  OpTest t(fb::OpType::Slice);
  In(t, "x", c.shape, x);
  const int64_t n = static_cast<int64_t>(c.starts.size());
  if (as_params) {
    fb::SliceParamsT p;
    p.starts = c.starts;
    p.ends = c.ends;
    p.axes = c.axes;
    p.steps = c.steps;
    t.params(p);
  } else {
    t.constantI64("starts", {n}, c.starts).constantI64("ends", {n}, c.ends);
    if (!c.axes.empty()) t.constantI64("axes", {n}, c.axes);
    else if (!c.steps.empty()) t.missing();
    if (!c.steps.empty()) t.constantI64("steps", {n}, c.steps);
  }
  auto out = t.run();
  ASSERT_OK(out);
  const size_t rank = c.shape.size();
  std::vector<Shape> sel(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t k = 0; k < c.shape[d]; ++k) sel[d].push_back(k);
  for (size_t i = 0; i < c.starts.size(); ++i) {
    int64_t a = c.axes.empty() ? static_cast<int64_t>(i) : c.axes[i];
    if (a < 0) a += static_cast<int64_t>(rank);
    sel[static_cast<size_t>(a)] = SliceIndices(c.shape[static_cast<size_t>(a)], c.starts[i], c.ends[i],
                                               c.steps.empty() ? 1 : c.steps[i]);
  }
  Shape os;
  for (auto& s : sel) os.push_back(static_cast<int64_t>(s.size()));
  std::vector<T> want;
  for (int64_t o = 0; o < Numel(os); ++o) {
    Shape idx = Unravel(o, os);
    for (size_t d = 0; d < rank; ++d) idx[d] = sel[d][static_cast<size_t>(idx[d])];
    want.push_back(x[static_cast<size_t>(Ravel(idx, c.shape))]);
  }
  EXPECT_EQ(out->at(0).shape, os) << "starts " << ShapeToString(c.starts) << " ends " << ShapeToString(c.ends);
  EXPECT_EQ(out->at(0).as<T>(), want) << "starts " << ShapeToString(c.starts) << " ends " << ShapeToString(c.ends)
                                      << " steps " << ShapeToString(c.steps);
}

TEST(LayoutSlice, StartsEndsAxesSteps) {
  const int64_t kMax = INT64_MAX, kMin = INT64_MIN;
  std::vector<SliceCase> cases = {
      {{7, 5}, {1, 0}, {5, 5}, {}, {}},
      {{7, 5}, {1}, {kMax}, {-1}, {}},
      {{3, 7, 17}, {0, 2}, {-1, 15}, {1, 2}, {2, 3}},
      {{17}, {-3}, {kMax}, {}, {}},
      {{17}, {-100}, {100}, {0}, {4}},                 // clamped
      {{17}, {kMax}, {kMin}, {0}, {-1}},               // full reverse
      {{17}, {15}, {2}, {0}, {-3}},                    // negative step
      {{3, 7, 5}, {-1, 6}, {kMin, -8}, {0, 1}, {-1, -2}},
      {{2, 3, 4, 5}, {1, -2}, {3, kMax}, {-3, 3}, {1, 1}},
      {{1, 3, 1, 7}, {0, 6}, {1, 0}, {2, 3}, {1, -1}},
  };
  for (const SliceCase& c : cases) {
    CheckSlice<float>(c, false);
    CheckSlice<int64_t>(c, false);
    CheckSlice<uint8_t>(c, false);
    CheckSlice<uint16_t>(c, false);
    if (c.steps.empty()) CheckSlice<float>(c, true);  // attribute form (opset < 10)
  }
}

TEST(LayoutSlice, StepZeroIsAClearError) {
  auto out = OpTest(fb::OpType::Slice)
                 .input("x", {7}, RandomFloats(7, 1))
                 .constantI64("s", {1}, {0}).constantI64("e", {1}, {5}).constantI64("a", {1}, {0})
                 .constantI64("st", {1}, {0})
                 .run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("step 0"), std::string::npos) << out.status().message();
}

// ---- Gather ----

template <typename T, typename I>
void CheckGather(const Shape& s, int axis, const Shape& ishape, const std::vector<I>& ind) {
  std::vector<T> x = Random<T>(static_cast<size_t>(Numel(s)), 50);
  OpTest t(fb::OpType::Gather);
  In(t, "x", s, x);
  t.constant("idx", ishape, std::is_same<I, int64_t>::value ? fb::DataType::I64 : fb::DataType::I32, ind.data(),
             ind.size() * sizeof(I));
  fb::AxisParamsT p;
  p.axis = axis;
  auto out = t.params(p).run();
  ASSERT_OK(out);
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int>(s.size()) : axis);
  Shape os(s.begin(), s.begin() + static_cast<long>(a));
  os.insert(os.end(), ishape.begin(), ishape.end());
  os.insert(os.end(), s.begin() + static_cast<long>(a) + 1, s.end());
  std::vector<T> want;
  for (int64_t o = 0; o < Numel(os); ++o) {
    Shape oi = Unravel(o, os), ii;
    Shape jj(oi.begin() + static_cast<long>(a), oi.begin() + static_cast<long>(a + ishape.size()));
    int64_t k = static_cast<int64_t>(ind[static_cast<size_t>(Ravel(jj, ishape))]);
    if (k < 0) k += s[a];
    ii.assign(oi.begin(), oi.begin() + static_cast<long>(a));
    ii.push_back(k);
    ii.insert(ii.end(), oi.begin() + static_cast<long>(a + ishape.size()), oi.end());
    want.push_back(x[static_cast<size_t>(Ravel(ii, s))]);
  }
  EXPECT_EQ(out->at(0).shape, os);
  EXPECT_EQ(out->at(0).as<T>(), want) << "axis " << axis;
}

TEST(LayoutGather, AxesIndicesAndDtypes) {
  CheckGather<float, int64_t>({7, 5}, 0, {3}, {0, 6, -1});
  CheckGather<float, int64_t>({3, 7, 5}, 1, {2, 2}, {1, -7, 6, 3});
  CheckGather<float, int32_t>({3, 7, 5}, -1, {4}, {4, 0, -2, 2});
  CheckGather<float, int64_t>({17, 3}, 0, {}, {-5});  // scalar index: the axis goes
  CheckGather<int64_t, int64_t>({3}, 0, {1}, {2});
  CheckGather<int64_t, int32_t>({2, 17}, 1, {3}, {16, 0, 8});
  CheckGather<uint8_t, int64_t>({3, 7}, -2, {2, 1}, {2, -3});
  CheckGather<uint8_t, int32_t>({1, 3, 7}, 2, {5}, {0, 1, 2, 6, -1});
  CheckGather<uint16_t, int64_t>({3, 7}, 1, {2}, {6, -7});
}

TEST(LayoutGather, ErrorsNameTheProblem) {
  fb::AxisParamsT p;
  p.axis = 3;
  auto out = OpTest(fb::OpType::Gather).input("x", {2, 3}, RandomFloats(6, 1)).constantI64("i", {1}, {0}).params(p).run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("Gather: axis 3 out of range for rank 2"), std::string::npos)
      << out.status().message();
  p.axis = 0;
  auto oob = OpTest(fb::OpType::Gather).input("x", {2, 3}, RandomFloats(6, 1)).constantI64("i", {2}, {0, 2}).params(p).run();
  ASSERT_FALSE(oob.ok());
  EXPECT_NE(oob.status().message().find("index 2"), std::string::npos) << oob.status().message();
}

// ---- Tile, Expand ----

template <typename T>
void CheckTile(const Shape& s, const Shape& reps) {
  std::vector<T> x = Random<T>(static_cast<size_t>(Numel(s)), 60);
  OpTest t(fb::OpType::Tile);
  In(t, "x", s, x);
  auto out = t.constantI64("repeats", {static_cast<int64_t>(reps.size())}, reps).run();
  ASSERT_OK(out);
  Shape os;
  for (size_t d = 0; d < s.size(); ++d) os.push_back(s[d] * reps[d]);
  std::vector<T> want;
  for (int64_t o = 0; o < Numel(os); ++o) {
    Shape idx = Unravel(o, os);
    for (size_t d = 0; d < s.size(); ++d) idx[d] %= s[d];
    want.push_back(x[static_cast<size_t>(Ravel(idx, s))]);
  }
  EXPECT_EQ(out->at(0).shape, os);
  EXPECT_EQ(out->at(0).as<T>(), want);
}

TEST(LayoutTile, Repeats) {
  CheckTile<float>({2, 3}, {3, 1});
  CheckTile<float>({1, 7, 3}, {2, 2, 1});
  CheckTile<float>({17}, {3});
  CheckTile<float>({3, 1, 5}, {1, 7, 2});
  CheckTile<int64_t>({3, 2}, {1, 3});
  CheckTile<uint8_t>({2, 3}, {2, 3});
  CheckTile<uint16_t>({3, 1, 2}, {1, 3, 2});
}

template <typename T>
void CheckExpand(const Shape& s, const Shape& shape, const Shape& want_shape) {
  std::vector<T> x = Random<T>(static_cast<size_t>(Numel(s)), 70);
  OpTest t(fb::OpType::Expand);
  In(t, "x", s, x);
  auto out = t.constantI64("shape", {static_cast<int64_t>(shape.size())}, shape).run();
  ASSERT_OK(out);
  EXPECT_EQ(out->at(0).shape, want_shape);
  std::vector<T> want;
  const size_t lead = want_shape.size() - s.size();
  for (int64_t o = 0; o < Numel(want_shape); ++o) {
    Shape oi = Unravel(o, want_shape), ii;
    for (size_t d = 0; d < s.size(); ++d) ii.push_back(s[d] == 1 ? 0 : oi[d + lead]);
    want.push_back(x[static_cast<size_t>(Ravel(ii, s))]);
  }
  EXPECT_EQ(out->at(0).as<T>(), want) << ShapeToString(s) << " -> " << ShapeToString(shape);
}

TEST(LayoutExpand, BidirectionalBroadcast) {
  CheckExpand<float>({3, 1}, {2, 1, 6}, {2, 3, 6});
  CheckExpand<float>({1}, {4, 5}, {4, 5});
  CheckExpand<float>({2, 3, 4}, {3, 1}, {2, 3, 4});  // the shape may be smaller
  CheckExpand<float>({1, 7, 1}, {3, 1, 1, 17}, {3, 1, 7, 17});
  CheckExpand<float>({3, 7}, {3, 7}, {3, 7});
  CheckExpand<int64_t>({1, 3}, {7, 1}, {7, 3});
  CheckExpand<uint8_t>({17, 1}, {17, 3}, {17, 3});
  CheckExpand<uint16_t>({1, 7}, {3, 1}, {3, 7});
  auto bad = OpTest(fb::OpType::Expand).input("x", {3, 4}, RandomFloats(12, 1)).constantI64("s", {1}, {5}).run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("do not broadcast"), std::string::npos) << bad.status().message();
}

// ---- Pad ----

template <typename T>
void CheckPad(const Shape& s, const Shape& pads, fb::PadMode mode, T value, bool value_input, const Shape& axes,
              bool pads_as_params) {
  std::vector<T> x = Random<T>(static_cast<size_t>(Numel(s)), 80);
  OpTest t(fb::OpType::Pad);
  In(t, "x", s, x);
  fb::PadParamsT p;
  p.mode = mode;
  if (pads_as_params) {
    p.pads = pads;
    p.value = static_cast<float>(value);
  } else {
    t.constantI64("pads", {static_cast<int64_t>(pads.size())}, pads);
    if (value_input)
      t.constant("value", {}, DType<T>(), &value, sizeof(T));
    else if (!axes.empty())
      t.missing();
    if (!axes.empty()) t.constantI64("axes", {static_cast<int64_t>(axes.size())}, axes);
    if (!value_input) p.value = static_cast<float>(value);
  }
  auto out = t.params(p).run();
  ASSERT_OK(out);
  const size_t rank = s.size();
  Shape begin(rank, 0), end(rank, 0);
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    int64_t a = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    if (a < 0) a += static_cast<int64_t>(rank);
    begin[static_cast<size_t>(a)] = pads[i];
    end[static_cast<size_t>(a)] = pads[i + pads.size() / 2];
  }
  Shape os;
  for (size_t d = 0; d < rank; ++d) os.push_back(s[d] + begin[d] + end[d]);
  std::vector<T> want;
  for (int64_t o = 0; o < Numel(os); ++o) {
    Shape idx = Unravel(o, os);
    bool fill = false;
    for (size_t d = 0; d < rank; ++d) {
      int64_t i = idx[d] - begin[d];
      if (i < 0 || i >= s[d]) {
        if (mode == fb::PadMode::Constant) fill = true;
        if (mode == fb::PadMode::Edge) i = i < 0 ? 0 : s[d] - 1;
        if (mode == fb::PadMode::Reflect) i = i < 0 ? -i : 2 * (s[d] - 1) - i;
      }
      idx[d] = i;
    }
    want.push_back(fill ? value : x[static_cast<size_t>(Ravel(idx, s))]);
  }
  EXPECT_EQ(out->at(0).shape, os);
  EXPECT_EQ(out->at(0).as<T>(), want) << fb::EnumNamePadMode(mode) << " pads " << ShapeToString(pads);
}

TEST(LayoutPad, ConstantReflectEdge) {
  for (fb::PadMode m : {fb::PadMode::Constant, fb::PadMode::Reflect, fb::PadMode::Edge}) {
    CheckPad<float>({3, 7}, {1, 2, 2, 1}, m, 0.5f, false, {}, false);
    CheckPad<float>({1, 3, 5, 7}, {0, 0, 2, 3, 0, 0, 4, 1}, m, -2.f, m == fb::PadMode::Constant, {}, false);
    CheckPad<float>({2, 17}, {0, 5, 1, -3}, m, 0.f, false, {}, true);  // attribute form, a negative pad
    CheckPad<float>({2, 3, 7}, {2, 1, 6, 0}, m, 1.5f, false, {-1, 1}, false);  // axes input (opset 18)
    CheckPad<int64_t>({3, 5}, {1, 0, 2, 4}, m, int64_t{-7}, m == fb::PadMode::Constant, {}, false);
    CheckPad<uint8_t>({4, 3}, {1, 1, 2, 2}, m, uint8_t{1}, false, {}, false);
  }
  CheckPad<float>({3, 7}, {-1, -2, 0, -3}, fb::PadMode::Constant, 0.f, false, {}, false);  // crop only
}

TEST(LayoutPad, BadPadsAreClearErrors) {
  auto out = OpTest(fb::OpType::Pad).input("x", {3, 7}, RandomFloats(21, 1)).constantI64("p", {2}, {1, 1}).run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("2 axes need 4"), std::string::npos) << out.status().message();
}

// ---- Resize ----

float RefCoord(fb::CoordinateTransform t, int64_t o, float scale, int64_t in_len, int64_t out_len) {
  const float x = static_cast<float>(o);
  if (t == fb::CoordinateTransform::HalfPixel) return (x + 0.5f) / scale - 0.5f;
  if (t == fb::CoordinateTransform::PytorchHalfPixel) return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
  if (t == fb::CoordinateTransform::AlignCorners)
    // ONNX's reference divides by in_len * scale - 1, unrounded.
    return out_len == 1 ? 0.f : x * static_cast<float>(in_len - 1) / (static_cast<float>(in_len) * scale - 1.f);
  if (t == fb::CoordinateTransform::Asymmetric) return x / scale;
  return (x + 0.5f) / scale;  // tf_half_pixel_for_nn
}

int64_t RefNearest(fb::NearestMode m, float x, int64_t len) {
  int64_t i;
  float frac = x - std::floor(x);
  if (m == fb::NearestMode::Floor) i = static_cast<int64_t>(std::floor(x));
  else if (m == fb::NearestMode::Ceil) i = static_cast<int64_t>(std::ceil(x));
  else if (frac == 0.5f) i = static_cast<int64_t>(m == fb::NearestMode::RoundPreferFloor ? std::floor(x) : std::ceil(x));
  else i = static_cast<int64_t>(frac < 0.5f ? std::floor(x) : std::ceil(x));
  return std::min(std::max<int64_t>(i, 0), len - 1);
}

// Linear neighbours of a coordinate: (i0, i1, weight of i1).
void RefLinear(float x, int64_t len, int64_t* i0, int64_t* i1, float* w) {
  x = std::min(std::max(x, 0.f), static_cast<float>(len - 1));
  *i0 = static_cast<int64_t>(std::floor(x));
  *i1 = std::min(*i0 + 1, len - 1);
  *w = x - static_cast<float>(*i0);
}

struct ResizeCase {
  Shape in;
  std::vector<float> scales;  // or
  Shape sizes;
  fb::ResizeMode mode;
  fb::CoordinateTransform tr;
  fb::NearestMode nm = fb::NearestMode::RoundPreferFloor;
  int how = 0;  // 0: scales input 2, 1: sizes input 3, 2: ResizeParams.scales
};

// Resizes the last two dims of a 4-D NCHW tensor (the others have scale 1).
void CheckResize2d(const ResizeCase& c) {
  const Shape& s = c.in;
  std::vector<float> x = RandomFloats(static_cast<size_t>(Numel(s)), 90);
  OpTest t(fb::OpType::Resize);
  t.input("x", s, x);
  fb::ResizeParamsT p;
  p.mode = c.mode;
  p.coordinate_transform = c.tr;
  p.nearest_mode = c.nm;
  Shape os = s;
  std::vector<float> sc(4, 1.f);
  if (c.how == 1) {
    t.missing().missing().constantI64("sizes", {4}, c.sizes);
    os = c.sizes;
    for (int d = 0; d < 4; ++d) sc[static_cast<size_t>(d)] = static_cast<float>(os[static_cast<size_t>(d)]) / static_cast<float>(s[static_cast<size_t>(d)]);
  } else {
    sc = c.scales;
    for (int d = 0; d < 4; ++d)
      os[static_cast<size_t>(d)] = static_cast<int64_t>(std::floor(static_cast<double>(s[static_cast<size_t>(d)]) * sc[static_cast<size_t>(d)]));
    if (c.how == 0)
      t.missing().constant("scales", {4}, c.scales);
    else
      p.scales = c.scales;
  }
  auto out = t.params(p).run();
  ASSERT_OK(out);
  ASSERT_EQ(out->at(0).shape, os);
  const int64_t H = s[2], W = s[3], OH = os[2], OW = os[3];
  std::vector<float> want;
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t ch = 0; ch < os[1]; ++ch) {
      const float* plane = x.data() + (n * s[1] + ch) * H * W;
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          float fy = RefCoord(c.tr, oy, sc[2], H, OH), fx = RefCoord(c.tr, ox, sc[3], W, OW);
          if (c.mode == fb::ResizeMode::Nearest) {
            want.push_back(plane[RefNearest(c.nm, fy, H) * W + RefNearest(c.nm, fx, W)]);
          } else {
            int64_t y0, y1, x0, x1;
            float wy, wx;
            RefLinear(fy, H, &y0, &y1, &wy);
            RefLinear(fx, W, &x0, &x1, &wx);
            float top = (1 - wx) * plane[y0 * W + x0] + wx * plane[y0 * W + x1];
            float bottom = (1 - wx) * plane[y1 * W + x0] + wx * plane[y1 * W + x1];
            want.push_back((1 - wy) * top + wy * bottom);
          }
        }
    }
  ExpectNear(out->at(0).f32(), want, 1e-5f,
             std::string(fb::EnumNameResizeMode(c.mode)) + " " + fb::EnumNameCoordinateTransform(c.tr) + " " +
                 fb::EnumNameNearestMode(c.nm) + " " + ShapeToString(os));
}

TEST(LayoutResize, Nearest) {
  using CT = fb::CoordinateTransform;
  using NM = fb::NearestMode;
  const auto kN = fb::ResizeMode::Nearest;
  for (CT tr : {CT::HalfPixel, CT::Asymmetric, CT::AlignCorners, CT::TfHalfPixelForNn, CT::PytorchHalfPixel})
    for (NM nm : {NM::RoundPreferFloor, NM::RoundPreferCeil, NM::Floor, NM::Ceil}) {
      CheckResize2d({{1, 3, 4, 5}, {1, 1, 2, 2}, {}, kN, tr, nm, 0});
      CheckResize2d({{2, 1, 7, 3}, {1, 1, 0.5f, 3}, {}, kN, tr, nm, 0});
      CheckResize2d({{1, 2, 3, 7}, {}, {1, 2, 8, 17}, kN, tr, nm, 1});
    }
  CheckResize2d({{1, 1, 5, 5}, {1, 1, 3, 3}, {}, kN, CT::Asymmetric, NM::Floor, 2});  // Upsample-style params
}

TEST(LayoutResize, Linear) {
  using CT = fb::CoordinateTransform;
  const auto kL = fb::ResizeMode::Linear;
  for (CT tr : {CT::HalfPixel, CT::Asymmetric, CT::AlignCorners, CT::PytorchHalfPixel}) {
    CheckResize2d({{1, 3, 4, 5}, {1, 1, 2, 2}, {}, kL, tr, {}, 0});
    CheckResize2d({{2, 2, 7, 17}, {1, 1, 0.5f, 0.3f}, {}, kL, tr, {}, 0});
    CheckResize2d({{1, 1, 3, 7}, {}, {1, 1, 1, 17}, kL, tr, {}, 1});
    CheckResize2d({{1, 3, 1, 1}, {}, {1, 3, 3, 7}, kL, tr, {}, 1});
  }
  CheckResize2d({{1, 2, 3, 3}, {1, 1, 2.5f, 1.5f}, {}, kL, CT::HalfPixel, {}, 2});
}

TEST(LayoutResize, TrilinearOn5d) {
  Shape s = {1, 2, 3, 4, 5};
  std::vector<float> x = RandomFloats(static_cast<size_t>(Numel(s)), 91);
  std::vector<float> sc = {1, 1, 2, 1.5f, 0.6f};
  fb::ResizeParamsT p;
  p.mode = fb::ResizeMode::Linear;
  p.coordinate_transform = fb::CoordinateTransform::AlignCorners;
  auto out = OpTest(fb::OpType::Resize).input("x", s, x).missing().constant("scales", {5}, sc).params(p).run();
  ASSERT_OK(out);
  Shape os = {1, 2, 6, 6, 3};
  ASSERT_EQ(out->at(0).shape, os);
  std::vector<float> want;
  for (int64_t o = 0; o < Numel(os); ++o) {
    Shape oi = Unravel(o, os);
    int64_t lo[3], hi[3];
    float w[3];
    for (int k = 0; k < 3; ++k)
      RefLinear(RefCoord(p.coordinate_transform, oi[2 + k], sc[2 + k], s[2 + k], os[2 + k]), s[2 + k], &lo[k], &hi[k], &w[k]);
    float v = 0;
    for (int c = 0; c < 8; ++c) {
      Shape ii = {oi[0], oi[1], c & 4 ? hi[0] : lo[0], c & 2 ? hi[1] : lo[1], c & 1 ? hi[2] : lo[2]};
      float wt = (c & 4 ? w[0] : 1 - w[0]) * (c & 2 ? w[1] : 1 - w[1]) * (c & 1 ? w[2] : 1 - w[2]);
      v += wt * x[static_cast<size_t>(Ravel(ii, s))];
    }
    want.push_back(v);
  }
  ExpectNear(out->at(0).f32(), want, 1e-5f, "trilinear");
}

TEST(LayoutResize, CubicIsUnsupported) {
  fb::ResizeParamsT p;
  p.mode = fb::ResizeMode::Cubic;
  auto out = OpTest(fb::OpType::Resize)
                 .input("x", {1, 1, 2, 2}, RandomFloats(4, 1))
                 .missing()
                 .constant("scales", {4}, {1, 1, 2, 2})
                 .params(p)
                 .run();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(out.status().message().find("cubic"), std::string::npos) << out.status().message();
}

// ---- DepthToSpace, SpaceToDepth ----

template <typename T>
void CheckSpaceDepth(fb::OpType type, const Shape& s, int b, fb::DepthToSpaceMode mode) {
  std::vector<T> x = Random<T>(static_cast<size_t>(Numel(s)), 100);
  OpTest t(type);
  In(t, "x", s, x);
  fb::SpaceDepthParamsT p;
  p.blocksize = b;
  p.mode = mode;
  auto out = t.params(p).run();
  ASSERT_OK(out);
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  Shape os;
  std::vector<T> want;
  if (type == fb::OpType::DepthToSpace) {
    const int64_t OC = C / (b * b);
    os = {N, OC, H * b, W * b};
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < OC; ++c)
        for (int64_t y = 0; y < H * b; ++y)
          for (int64_t xx = 0; xx < W * b; ++xx) {
            int64_t i = y % b, j = xx % b;
            int64_t ic = mode == fb::DepthToSpaceMode::DCR ? (i * b + j) * OC + c : c * b * b + i * b + j;
            want.push_back(x[static_cast<size_t>(((n * C + ic) * H + y / b) * W + xx / b)]);
          }
  } else {
    os = {N, C * b * b, H / b, W / b};
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oc = 0; oc < C * b * b; ++oc)
        for (int64_t y = 0; y < H / b; ++y)
          for (int64_t xx = 0; xx < W / b; ++xx) {
            int64_t c = oc % C, blk = oc / C, i = blk / b, j = blk % b;
            want.push_back(x[static_cast<size_t>(((n * C + c) * H + y * b + i) * W + xx * b + j)]);
          }
  }
  EXPECT_EQ(out->at(0).shape, os);
  EXPECT_EQ(out->at(0).as<T>(), want) << fb::EnumNameOpType(type) << " " << fb::EnumNameDepthToSpaceMode(mode);
}

TEST(LayoutDepthToSpace, DcrCrdAndSpaceToDepth) {
  for (auto mode : {fb::DepthToSpaceMode::DCR, fb::DepthToSpaceMode::CRD}) {
    CheckSpaceDepth<float>(fb::OpType::DepthToSpace, {1, 8, 3, 5}, 2, mode);
    CheckSpaceDepth<float>(fb::OpType::DepthToSpace, {2, 27, 1, 7}, 3, mode);
    CheckSpaceDepth<int64_t>(fb::OpType::DepthToSpace, {1, 12, 2, 3}, 2, mode);
    CheckSpaceDepth<uint16_t>(fb::OpType::DepthToSpace, {1, 4, 3, 3}, 2, mode);
  }
  CheckSpaceDepth<float>(fb::OpType::SpaceToDepth, {1, 3, 4, 6}, 2, fb::DepthToSpaceMode::DCR);
  CheckSpaceDepth<float>(fb::OpType::SpaceToDepth, {2, 1, 9, 3}, 3, fb::DepthToSpaceMode::DCR);
  CheckSpaceDepth<uint8_t>(fb::OpType::SpaceToDepth, {1, 7, 2, 2}, 2, fb::DepthToSpaceMode::DCR);
  fb::SpaceDepthParamsT p;
  p.blocksize = 2;
  auto bad = OpTest(fb::OpType::DepthToSpace).input("x", {1, 6, 2, 2}, RandomFloats(24, 1)).params(p).run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a multiple"), std::string::npos) << bad.status().message();
}

// ---- Shape, Constant ----

TEST(LayoutShape, StartEnd) {
  struct Case {
    int64_t start, end;
    Shape want;
  };
  Shape s = {2, 3, 5, 7};
  for (const Case& c : std::vector<Case>{{0, INT64_MAX, {2, 3, 5, 7}}, {1, INT64_MAX, {3, 5, 7}}, {-1, INT64_MAX, {7}},
                                         {1, -1, {3, 5}}, {-10, 2, {2, 3}}, {2, -1, {5}}}) {
    fb::ShapeParamsT p;
    p.start = c.start;
    p.end = c.end;
    auto out = OpTest(fb::OpType::Shape).input("x", s, RandomFloats(210, 1)).params(p).run();
    ASSERT_OK(out);
    EXPECT_EQ(out->at(0).dtype, fb::DataType::I64);
    EXPECT_EQ(out->at(0).shape, (Shape{static_cast<int64_t>(c.want.size())}));
    EXPECT_EQ(out->at(0).i64(), c.want) << c.start << ".." << c.end;
  }
}

StatusOr<std::unique_ptr<Interpreter>> Load(const NetBuilder& b) {
  ASSIGN_OR_RETURN(auto bytes, b.finish());
  return Interpreter::createFromBuffer(bytes.data(), bytes.size());
}

std::vector<float> Fetch(Tensor* t) {
  std::vector<float> v(static_cast<size_t>(t->elementCount()));
  auto h = Tensor::wrap(t->shape(), t->dtype(), v.data());
  EXPECT_TRUE(t->copyToHostTensor(h.get()).ok());
  return v;
}

TEST(LayoutShape, ConstantOpFeedsConcat) {
  NetBuilder b("constant_op");
  int x = b.addInput("x", fb::DataType::F32, {2, 3});
  std::vector<float> cv = RandomFloats(4, 3);
  int c = b.addConstant("c", {2, 2}, cv);
  b.addOpWithOutputs(fb::OpType::Constant, "const", {}, {c});
  fb::AxisParamsT ax;
  ax.axis = 1;
  int y = b.addOp(fb::OpType::Concat, "concat", {x, c}, {"y"}, ax)[0];
  b.addOutput(y);
  auto interp = Load(b);
  ASSERT_OK(interp);
  auto session = (*interp)->createSession({});
  ASSERT_OK(session);
  std::vector<float> xv = RandomFloats(6, 4);
  auto h = Tensor::wrap({2, 3}, fb::DataType::F32, xv.data());
  ASSERT_TRUE((*session)->getInput("x")->copyFromHostTensor(*h).ok());
  Status st = (*session)->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ((*session)->getOutput("y")->shape(), (Shape{2, 5}));
  EXPECT_EQ(Fetch((*session)->getOutput("y")),
            (std::vector<float>{xv[0], xv[1], xv[2], cv[0], cv[1], xv[3], xv[4], xv[5], cv[2], cv[3]}));
}

// The kernels split their work across the host thread pool: big inputs give
// the same bytes on 1 and 3 threads (1 thread is checked against references
// above).
TEST(LayoutThreads, SameResultOnThreeThreads) {
  const Shape s = {2, 37, 61, 53};
  std::vector<float> x = RandomFloats(static_cast<size_t>(Numel(s)), 13);
  std::vector<std::pair<std::string, OpTest>> ops;
  {
    fb::TransposeParamsT p;
    p.perm = {0, 3, 1, 2};
    ops.emplace_back("Transpose", std::move(OpTest(fb::OpType::Transpose).input("x", s, x).params(p)));
  }
  ops.emplace_back("Slice", std::move(OpTest(fb::OpType::Slice).input("x", s, x).constantI64("st", {2}, {60, 1})
                                          .constantI64("en", {2}, {INT64_MIN, 50}).constantI64("ax", {2}, {2, 3})
                                          .constantI64("sp", {2}, {-2, 3})));
  for (fb::PadMode m : {fb::PadMode::Constant, fb::PadMode::Reflect}) {
    fb::PadParamsT p;
    p.mode = m;
    ops.emplace_back("Pad", std::move(OpTest(fb::OpType::Pad).input("x", s, x)
                                          .constantI64("pads", {8}, {0, 1, 2, 3, 1, 0, 5, 4}).params(p)));
  }
  for (fb::ResizeMode m : {fb::ResizeMode::Nearest, fb::ResizeMode::Linear}) {
    fb::ResizeParamsT p;
    p.mode = m;
    ops.emplace_back("Resize", std::move(OpTest(fb::OpType::Resize).input("x", s, x).missing()
                                             .constant("scales", {4}, {1, 1, 1.5f, 0.7f}).params(p)));
  }
  ops.emplace_back("Gather", std::move(OpTest(fb::OpType::Gather).input("x", s, x)
                                           .constantI64("i", {3}, {5, -1, 0})
                                           .params([] { fb::AxisParamsT p; p.axis = 1; return p; }())));
  ops.emplace_back("Tile", std::move(OpTest(fb::OpType::Tile).input("x", s, x).constantI64("r", {4}, {2, 1, 1, 2})));
  ops.emplace_back("Expand", std::move(OpTest(fb::OpType::Expand).input("x", {37, 1, 53}, RandomFloats(37 * 53, 2))
                                           .constantI64("s", {3}, {1, 61, 1})));
  for (fb::OpType r : {fb::OpType::ReduceSum, fb::OpType::ReduceMax, fb::OpType::ReduceL2}) {
    fb::ReduceParamsT p;
    p.axes = {1, 3};
    ops.emplace_back(fb::EnumNameOpType(r), std::move(OpTest(r).input("x", s, x).params(p)));
  }
  {
    fb::ArgParamsT p;
    p.axis = 2;
    ops.emplace_back("ArgMax", std::move(OpTest(fb::OpType::ArgMax).input("x", s, x).params(p)));
  }
  ScheduleConfig three;
  three.numThread = 3;
  for (auto& [name, op] : ops) {
    auto one = op.run();
    auto many = op.run(three);
    ASSERT_OK(one);
    ASSERT_OK(many);
    EXPECT_EQ(one->at(0).shape, many->at(0).shape) << name;
    EXPECT_TRUE(one->at(0).bytes == many->at(0).bytes) << name;
  }
}

// Empty tensors inside a graph (an app cannot feed or fetch them: a wrapped
// empty vector has no data pointer): Slice, Split, Tile, Reshape give [3,0],
// Pad fills it, Concat skips the empty ones.
TEST(LayoutEmpty, EmptyIntermediates) {
  NetBuilder b("empty");
  int x = b.addInput("x", fb::DataType::F32, {3, 7});
  int st = b.addConstant("st", {1}, std::vector<int64_t>{5});
  int en = b.addConstant("en", {1}, std::vector<int64_t>{2});
  int ax = b.addConstant("ax", {1}, std::vector<int64_t>{1});
  int sl = b.addOp(fb::OpType::Slice, "slice", {x, st, en, ax}, {"sl"})[0];
  int sizes = b.addConstant("sizes", {2}, std::vector<int64_t>{0, 7});
  fb::SplitParamsT sp;
  sp.axis = 1;
  auto parts = b.addOp(fb::OpType::Split, "split", {x, sizes}, {"s0", "s1"}, sp);
  int reps = b.addConstant("reps", {2}, std::vector<int64_t>{1, 0});
  int tl = b.addOp(fb::OpType::Tile, "tile", {x, reps}, {"tl"})[0];
  int rs = b.addConstant("rs", {2}, std::vector<int64_t>{3, 0});
  int re = b.addOp(fb::OpType::Reshape, "reshape", {sl, rs}, {"re"})[0];
  int pads = b.addConstant("pads", {4}, std::vector<int64_t>{0, 2, 0, 1});
  fb::PadParamsT pp;
  pp.value = 4.5f;
  int pd = b.addOp(fb::OpType::Pad, "pad", {tl, pads}, {"pd"}, pp)[0];
  fb::AxisParamsT cat;
  cat.axis = 1;
  int y = b.addOp(fb::OpType::Concat, "concat", {sl, parts[0], x, tl, parts[1], re, pd}, {"y"}, cat)[0];
  b.addOutput(y);
  auto interp = Load(b);
  ASSERT_OK(interp);
  auto session = (*interp)->createSession({});
  ASSERT_OK(session);
  std::vector<float> xv = RandomFloats(21, 12);
  auto h = Tensor::wrap({3, 7}, fb::DataType::F32, xv.data());
  ASSERT_TRUE((*session)->getInput("x")->copyFromHostTensor(*h).ok());
  Status run = (*session)->run();
  ASSERT_TRUE(run.ok()) << run.ToString();
  EXPECT_EQ((*session)->getOutput("y")->shape(), (Shape{3, 17}));
  std::vector<float> want;
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 2; ++k)
      for (int c = 0; c < 7; ++c) want.push_back(xv[static_cast<size_t>(r * 7 + c)]);
    for (int c = 0; c < 3; ++c) want.push_back(4.5f);
  }
  EXPECT_EQ(Fetch((*session)->getOutput("y")), want);
}

// ---- shape subgraphs computed at resize ----

// X[n,3,4] -> Shape -> Gather(0) -> Unsqueeze(0) -> Concat([-1]) is the shape
// of Reshape(X): [n, 12]; the subgraph runs on the host at every resize.
TEST(LayoutShapeSubgraph, ReshapeFromShapeGatherConcat) {
  NetBuilder b("shape_subgraph");
  int x = b.addInput("x", fb::DataType::F32, {"n", 3, 4});
  int shape = b.addOp(fb::OpType::Shape, "shape", {x}, {"shape.out"})[0];
  int zero = b.addConstant("zero", fb::DataType::I64, {}, std::vector<int64_t>{0}.data(), 8);
  fb::AxisParamsT gax;
  gax.axis = 0;
  int g = b.addOp(fb::OpType::Gather, "gather", {shape, zero}, {"gather.out"}, gax)[0];
  int axes = b.addConstant("axes", {1}, std::vector<int64_t>{0});
  int u = b.addOp(fb::OpType::Unsqueeze, "unsqueeze", {g, axes}, {"unsqueeze.out"})[0];
  int m1 = b.addConstant("minus1", {1}, std::vector<int64_t>{-1});
  fb::AxisParamsT cax;
  cax.axis = 0;
  int cat = b.addOp(fb::OpType::Concat, "concat", {u, m1}, {"concat.out"}, cax)[0];
  int y = b.addOp(fb::OpType::Reshape, "reshape", {x, cat}, {"y"})[0];
  b.addOutput(y);
  auto interp = Load(b);
  ASSERT_OK(interp);
  auto session = (*interp)->createSession({});
  ASSERT_OK(session);
  Session* s = *session;
  for (int64_t n : {2, 5, 1}) {
    ASSERT_TRUE(s->resizeTensor(s->getInput("x"), {n, 3, 4}).ok());
    Status st = s->resize();
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::vector<float> xv = RandomFloats(static_cast<size_t>(n * 12), static_cast<uint32_t>(n));
    auto h = Tensor::wrap({n, 3, 4}, fb::DataType::F32, xv.data());
    ASSERT_TRUE(s->getInput("x")->copyFromHostTensor(*h).ok());
    st = s->run();
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(s->getOutput("y")->shape(), (Shape{n, 12}));
    EXPECT_EQ(Fetch(s->getOutput("y")), xv);
  }
  // The shape ops are not run again at run(): they ran at resize on the host.
  for (const OpPlacement& p : s->placement().ops) EXPECT_EQ(p.backend, "host") << p.name;
}

// Slice whose ends come from Shape -> Slice, computed at resize; the Slice
// kernel keeps its parameters, so run() works after releaseCache().
TEST(LayoutShapeSubgraph, SliceEndsFromShapeSurviveReleaseCache) {
  NetBuilder b("slice_subgraph");
  int x = b.addInput("x", fb::DataType::F32, {"n", 7});
  int shape = b.addOp(fb::OpType::Shape, "shape", {x}, {"shape.out"})[0];
  fb::SliceParamsT last;  // shape[1:2] = [7]
  last.starts = {1};
  last.ends = {2};
  int w = b.addOp(fb::OpType::Slice, "take_w", {shape}, {"w"}, last)[0];
  int starts = b.addConstant("starts", {1}, std::vector<int64_t>{2});
  int axes = b.addConstant("axes", {1}, std::vector<int64_t>{1});
  int y = b.addOp(fb::OpType::Slice, "slice", {x, starts, w, axes}, {"y"})[0];
  b.addOutput(y);
  auto interp = Load(b);
  ASSERT_OK(interp);
  auto session = (*interp)->createSession({});
  ASSERT_OK(session);
  Session* s = *session;
  ASSERT_TRUE(s->resizeTensor(s->getInput("x"), {3, 7}).ok());
  Status st = s->resize();
  ASSERT_TRUE(st.ok()) << st.ToString();
  s->releaseCache();
  std::vector<float> xv = RandomFloats(21, 8);
  auto h = Tensor::wrap({3, 7}, fb::DataType::F32, xv.data());
  ASSERT_TRUE(s->getInput("x")->copyFromHostTensor(*h).ok());
  st = s->run();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(s->getOutput("y")->shape(), (Shape{3, 5}));
  std::vector<float> want;
  for (int r = 0; r < 3; ++r)
    for (int c = 2; c < 7; ++c) want.push_back(xv[static_cast<size_t>(r * 7 + c)]);
  EXPECT_EQ(Fetch(s->getOutput("y")), want);
}

}  // namespace
}  // namespace kiln
