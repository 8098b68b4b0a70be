// Layout ops on the host against naive references written here with
// explicit index arithmetic: Reshape, Flatten, Squeeze, Unsqueeze,
// Transpose, Concat, Split, Slice, Gather, Tile, Pad, Resize, DepthToSpace,
// SpaceToDepth, Expand, Shape, Constant; shape subgraphs computed at resize.
#include <climits>
#include <cmath>

#include "ops/layout_test_util.h"

namespace kiln {
namespace {

using namespace layout_test;

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
  // Rows longer than a copy piece (64 KiB): split, and shared by the threads.
  CheckConcat<float>({{2, 20001}, {2, 17003}, {2, 5}}, 1);
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
  CheckSplit<float>({2, 37009}, 1, {20001, 17003, 5}, 0);  // parts longer than a copy piece (64 KiB)
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

}  // namespace
}  // namespace kiln
