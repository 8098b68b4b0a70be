// Resize, DepthToSpace/SpaceToDepth, Shape and Constant on the host against
// naive references; threads, empty tensors, shape subgraphs computed at resize.

#include <climits>
#include <cmath>

#include "ops/layout_test_util.h"

namespace kiln {
namespace {

using namespace layout_test;

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

// Cubic against a separable reference: Keys' weights on 4 taps per axis,
// clamped at the edges, or dropped and renormalized with exclude_outside.
// Three channels, not resized: an axis that does not move reads its own
// index (its first cubic tap, weight 0, is the index before).
TEST(LayoutResize, CubicBothCoefficientsAndExcludeOutside) {
  auto weight = [](float s, float a) {
    s = std::fabs(s);
    if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
    if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    return 0.f;
  };
  const int64_t ch = 3, h = 3, w = 4, oh = 5, ow = 7;
  std::vector<float> x = RandomFloats(static_cast<size_t>(ch * h * w), 4);
  for (bool exclude : {false, true})
    for (float a : {-0.75f, -0.5f}) {
      fb::ResizeParamsT p;
      p.mode = fb::ResizeMode::Cubic;
      p.cubic_coeff_a = a;
      p.exclude_outside = exclude;
      auto out = OpTest(fb::OpType::Resize)
                     .input("x", {1, ch, h, w}, x)
                     .missing()
                     .missing()
                     .constantI64("sizes", {4}, {1, ch, oh, ow})
                     .params(p)
                     .run();
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      // Per axis: the 4 (index, weight) taps of output index o.
      auto taps = [&](int64_t o, int64_t n, int64_t len) {
        const float xf = (static_cast<float>(o) + 0.5f) * static_cast<float>(n) / static_cast<float>(len) - 0.5f;
        const float fl = std::floor(xf);
        std::vector<std::pair<int64_t, float>> t;
        float sum = 0;
        for (int k = -1; k <= 2; ++k) {
          const int64_t i = static_cast<int64_t>(fl) + k;
          float wt = weight(xf - static_cast<float>(i), a);
          if (exclude && (i < 0 || i >= n)) wt = 0;
          t.push_back({std::max<int64_t>(0, std::min(i, n - 1)), wt});
          sum += wt;
        }
        if (exclude)
          for (auto& e : t) e.second /= sum;
        return t;
      };
      std::vector<float> want;
      for (int64_t k = 0; k < ch; ++k)
        for (int64_t r = 0; r < oh; ++r)
          for (int64_t c = 0; c < ow; ++c) {
            double acc = 0;
            for (auto [ri, rw] : taps(r, h, oh))
              for (auto [ci, cw] : taps(c, w, ow)) acc += rw * cw * x[static_cast<size_t>((k * h + ri) * w + ci)];
            want.push_back(static_cast<float>(acc));
          }
      ExpectNear(out->at(0).f32(), want, 1e-5f, exclude ? "cubic exclude_outside" : "cubic");
    }
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
  KILN_ASSIGN_OR_RETURN(auto bytes, b.finish());
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
