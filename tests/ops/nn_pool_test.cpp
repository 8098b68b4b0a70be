// Pools and MaxUnpool on the host against naive references.
#include "ops/nn_test_util.h"

namespace kiln {
namespace {

using namespace nn_test;

// ---------------------------------------------------------------- pools

struct PoolCase {
  Shape xs;  // [N, C, H, W], or [N, C, W] for 1-D (then kh = sh = 1 and no H pads)
  int64_t kh, kw, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool ceil = false, include_pad = false;
  fb::AutoPad ap = fb::AutoPad::NotSet;
};

int64_t PoolOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil) {
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  if (!ceil) return span / s + 1;
  int64_t o = (span + s - 1) / s + 1;
  if ((o - 1) * s >= in + pb) --o;  // the last window would start in the end padding
  return o;
}

// dt: f32, or u8 / i8 (MaxPool: the values are the integers, compared exactly).
void RunPoolCase(fb::OpType type, PoolCase c, bool indices, const std::string& what,
                 fb::DataType dt = fb::DataType::F32) {
  SCOPED_TRACE(what);
  const bool one_d = c.xs.size() == 3;
  const int64_t N = c.xs[0], C = c.xs[1], H = one_d ? 1 : c.xs[2], W = c.xs.back();
  std::vector<float> x = Rand(c.xs, 81);
  std::vector<uint8_t> bytes;
  if (dt != fb::DataType::F32) {  // x in [-1, 1) as integers over the type's whole range
    for (float& v : x) {
      v = std::min(std::round(v * 128.f), 127.f) + (dt == fb::DataType::U8 ? 128.f : 0.f);
      bytes.push_back(static_cast<uint8_t>(static_cast<int>(v) & 0xff));
    }
  }
  int64_t oh, ow;
  if (c.ap == fb::AutoPad::SameUpper || c.ap == fb::AutoPad::SameLower) {
    oh = (H + c.sh - 1) / c.sh;
    ow = (W + c.sw - 1) / c.sw;
    int64_t th = std::max<int64_t>(0, (oh - 1) * c.sh + (c.kh - 1) * c.dh + 1 - H);
    int64_t tw = std::max<int64_t>(0, (ow - 1) * c.sw + (c.kw - 1) * c.dw + 1 - W);
    bool upper = c.ap == fb::AutoPad::SameUpper;
    c.pt = upper ? th / 2 : th - th / 2;
    c.pb = th - c.pt;
    c.pl = upper ? tw / 2 : tw - tw / 2;
    c.pr = tw - c.pl;
  } else {
    oh = PoolOut(H, c.kh, c.sh, c.dh, c.pt, c.pb, c.ceil);
    ow = PoolOut(W, c.kw, c.sw, c.dw, c.pl, c.pr, c.ceil);
  }
  std::vector<float> want;
  std::vector<int64_t> want_idx;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double sum = 0, best = 0;
          int64_t valid = 0, padded = 0, best_at = -1;
          for (int64_t a = 0; a < c.kh; ++a)
            for (int64_t b = 0; b < c.kw; ++b) {
              int64_t ih = i * c.sh - c.pt + a * c.dh, iw = j * c.sw - c.pl + b * c.dw;
              if (ih >= -c.pt && ih < H + c.pb && iw >= -c.pl && iw < W + c.pr) ++padded;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              int64_t at = ((n * C + ch) * H + ih) * W + iw;
              ++valid;
              sum += x[at];
              if (best_at < 0 || x[at] > best) best = x[at], best_at = at;
            }
          if (type == fb::OpType::MaxPool) {
            want.push_back(static_cast<float>(best));
            want_idx.push_back(best_at);
          } else {
            want.push_back(static_cast<float>(sum / static_cast<double>(c.include_pad ? padded : valid)));
          }
        }
  fb::PoolParamsT p;
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  if (one_d) {
    p.kernel_shape = {i32(c.kw)};
    p.strides = {i32(c.sw)};
    p.dilations = {i32(c.dw)};
    if (c.ap == fb::AutoPad::NotSet) p.pads = {i32(c.pl), i32(c.pr)};
  } else {
    p.kernel_shape = {i32(c.kh), i32(c.kw)};
    p.strides = {i32(c.sh), i32(c.sw)};
    if (c.dh != 1 || c.dw != 1) p.dilations = {i32(c.dh), i32(c.dw)};
    if (c.ap == fb::AutoPad::NotSet) p.pads = {i32(c.pt), i32(c.pl), i32(c.pb), i32(c.pr)};
  }
  p.auto_pad = c.ap;
  p.ceil_mode = c.ceil;
  p.count_include_pad = c.include_pad;
  OpTest t(type);
  if (bytes.empty()) t.input("x", c.xs, x);
  else t.input("x", c.xs, dt, bytes.data(), bytes.size());
  auto out = t.params(p).outputs(indices ? 2 : 1).run(Threads3());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  Shape ws = one_d ? Shape{N, C, ow} : Shape{N, C, oh, ow};
  EXPECT_EQ(out->at(0).shape, ws);
  if (bytes.empty()) {
    ExpectNear(out->at(0).f32(), want, kTol);
  } else {
    ASSERT_EQ(out->at(0).dtype, dt);
    std::vector<float> got;
    for (uint8_t b : out->at(0).bytes) got.push_back(dt == fb::DataType::I8 ? static_cast<int8_t>(b) : b);
    EXPECT_EQ(got, want);
  }
  if (indices) {
    EXPECT_EQ(out->at(1).dtype, fb::DataType::I64);
    EXPECT_EQ(out->at(1).shape, ws);
    EXPECT_EQ(out->at(1).i64(), want_idx);
  }
}

std::vector<std::pair<std::string, PoolCase>> PoolCases() {
  std::vector<std::pair<std::string, PoolCase>> v;
  auto add = [&](const std::string& name, PoolCase c) { v.emplace_back(name, c); };
  add("2x2 s2 on 1ch 5x5", {{1, 1, 5, 5}, 2, 2, 2, 2});
  {
    PoolCase c{{2, 3, 9, 7}, 3, 3, 2, 2};
    c.pt = c.pl = c.pb = c.pr = 1;
    add("3x3 s2 pad 1", c);
    c.ceil = true;
    add("3x3 s2 pad 1 ceil", c);
  }
  {
    PoolCase c{{1, 7, 5, 5}, 2, 2, 2, 2};
    c.pt = c.pl = c.pb = c.pr = 1;
    c.ceil = true;
    add("ceil mode drops a window starting in the end padding", c);
  }
  {
    PoolCase c{{1, 3, 8, 8}, 3, 3, 2, 2};
    c.pt = c.pl = c.pb = c.pr = 1;
    c.ceil = true;
    add("ceil mode window past the end padding", c);
  }
  {
    PoolCase c{{1, 17, 9, 5}, 3, 2, 1, 2};
    c.pt = 1, c.pl = 0, c.pb = 2, c.pr = 1;
    add("3x2 asymmetric pads", c);
  }
  {
    PoolCase c{{1, 3, 9, 9}, 2, 3, 2, 1, 2, 2};
    c.pt = 1, c.pl = 2, c.pb = 0, c.pr = 1;
    add("dilation 2", c);
  }
  {
    PoolCase c{{2, 3, 9, 8}, 2, 3, 2, 2};  // odd total padding on both axes
    c.ap = fb::AutoPad::SameUpper;
    add("SAME_UPPER", c);
    c.ap = fb::AutoPad::SameLower;
    add("SAME_LOWER", c);
    c.ap = fb::AutoPad::Valid;
    add("VALID", c);
  }
  {
    PoolCase c{{2, 3, 9}, 1, 3, 1, 2};
    c.pl = 1, c.pr = 2;
    c.ceil = true;
    add("1-D", c);
  }
  add("1x1 spatial", {{1, 3, 1, 1}, 1, 1});
  return v;
}

TEST(NnPool, MaxPoolWithIndices) {
  for (auto& [name, c] : PoolCases()) RunPoolCase(fb::OpType::MaxPool, c, true, name);
}

// Without Indices a 2-D MaxPool takes the row-by-row path (nn_pool.cpp).
TEST(NnPool, MaxPoolValuesOnly) {
  for (auto& [name, c] : PoolCases()) RunPoolCase(fb::OpType::MaxPool, c, false, name + ", values only");
  PoolCase wide{{1, 5, 13, 41}, 3, 3, 2, 2};  // rows longer than a vector
  wide.pt = wide.pl = wide.pb = wide.pr = 1;
  RunPoolCase(fb::OpType::MaxPool, wide, false, "3x3 s2 on 13x41");
  wide.sh = wide.sw = 1;
  RunPoolCase(fb::OpType::MaxPool, wide, false, "3x3 s1 on 13x41");
  PoolCase ceil{{2, 3, 15, 17}, 3, 3, 2, 2};  // squeezenet's pools: no pads, ceil mode
  ceil.ceil = true;
  RunPoolCase(fb::OpType::MaxPool, ceil, false, "3x3 s2 ceil on 15x17");
  // Rows of 8 to 15 (8-wide vectors, the last one overlapping) and of
  // exactly 16 outputs.
  PoolCase mid{{1, 3, 9, 12}, 3, 3, 2, 2};
  RunPoolCase(fb::OpType::MaxPool, mid, false, "3x3 s2 on 9x12");
  PoolCase exact{{1, 2, 7, 33}, 3, 3, 2, 2};
  exact.ceil = true;
  RunPoolCase(fb::OpType::MaxPool, exact, false, "3x3 s2 ceil on 7x33");
  PoolCase tall{{1, 2, 37, 5}, 5, 3, 3, 1};
  tall.pt = 2, tall.pb = 1, tall.pl = 0, tall.pr = 2;
  RunPoolCase(fb::OpType::MaxPool, tall, false, "5x3 s3,1 asymmetric pads on 37x5");
}

// The 3x3 stride-2 float plane (nn_pool.cpp MaxPool3x3S2Plane, rows of at
// least 8 outputs past the left pad, 16 a vector, or 8 on rows under 16):
// squeezenet's unpadded ceil-mode
// windows (a last 16 overlapping the one before, the last window past the
// input), ResNet's pads of 1, pads of 2 (two outputs before the vectors
// start), asymmetric pads, and a plane 3 rows tall whose windows lose rows
// to the pads; widths at the path's limits.
TEST(NnPool, MaxPool3x3Stride2Rows) {
  struct Case {
    int64_t h, w, pt, pl, pb, pr;
    bool ceil;
  };
  const Case cases[] = {{9, 45, 0, 0, 0, 0, true},  {8, 33, 0, 0, 0, 0, false}, {11, 56, 1, 1, 1, 1, false},
                        {7, 40, 2, 2, 2, 2, false}, {6, 37, 0, 1, 1, 0, false}, {3, 70, 1, 1, 1, 1, false},
                        {5, 34, 1, 0, 0, 1, true},  {8, 27, 0, 0, 0, 0, true},  {5, 20, 1, 1, 1, 1, false},
                        {4, 17, 0, 0, 0, 0, false}};
  for (const Case& k : cases) {
    PoolCase c{{2, 3, k.h, k.w}, 3, 3, 2, 2};
    c.pt = k.pt, c.pl = k.pl, c.pb = k.pb, c.pr = k.pr, c.ceil = k.ceil;
    RunPoolCase(fb::OpType::MaxPool, c, false,
                "3x3 s2 on " + std::to_string(k.h) + "x" + std::to_string(k.w) + " pads " + std::to_string(k.pt) +
                    std::to_string(k.pl) + std::to_string(k.pb) + std::to_string(k.pr) + (k.ceil ? " ceil" : ""));
  }
}

// A NaN is skipped by the max (as vmaxps with the NaN first): a window of
// a NaN and numbers gives their max, on the 3x3 stride-2 rows and on the
// general path (3x2 windows), at the vectors' lanes and at the tail column,
// 16 and 8 a vector.
TEST(NnPool, MaxPoolSkipsNaN) {
  for (int64_t kw : {3, 2})
    for (int64_t w : {40, 20}) {
      std::vector<float> x(static_cast<size_t>(3 * w));
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.f;
      const int64_t tail = w == 40 ? 32 : 16;  // the first step's column s + 2N
      for (int64_t at : {int64_t{0}, w + 1, w + w - 3, tail, 3 * w - 2}) x[static_cast<size_t>(at)] = NAN;
      fb::PoolParamsT p;
      p.kernel_shape = {3, static_cast<int32_t>(kw)};
      p.strides = {2, 2};
      auto out = OpTest(fb::OpType::MaxPool).input("x", {1, 1, 3, w}, x).params(p).run(Threads3());
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      const int64_t ow = (w - kw) / 2 + 1;
      ASSERT_EQ(out->at(0).f32().size(), static_cast<size_t>(ow));
      for (int64_t a = 0; a < ow; ++a) {
        float want = -INFINITY;
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t c = 2 * a; c < 2 * a + kw; ++c) {
            const float v = x[static_cast<size_t>(r * w + c)];
            if (v > want) want = v;
          }
        EXPECT_EQ(out->at(0).f32()[static_cast<size_t>(a)], want) << "kw " << kw << " w " << w << " output " << a;
      }
    }
}

// u8 and i8 (quantized activations): the same windows, exactly, on both
// paths (values only: row by row; with Indices: tap by tap).
TEST(NnPool, MaxPoolEightBit) {
  for (fb::DataType dt : {fb::DataType::U8, fb::DataType::I8}) {
    const std::string type = dt == fb::DataType::U8 ? " u8" : " i8";
    for (bool indices : {false, true})
      for (auto& [name, c] : PoolCases()) RunPoolCase(fb::OpType::MaxPool, c, indices, name + type, dt);
    // Rows of several 16-output steps and a tail (the bytes' 3-wide stride-2 pass).
    PoolCase wide{{1, 3, 9, 117}, 3, 3, 2, 2};
    wide.pt = wide.pl = wide.pb = wide.pr = 1;
    RunPoolCase(fb::OpType::MaxPool, wide, false, "3x3 s2 on 9x117" + type, dt);
    wide.pl = wide.pr = 0;
    RunPoolCase(fb::OpType::MaxPool, wide, false, "3x3 s2 on 9x117, no side pads" + type, dt);
    // Rows of 32 to 63 and of 16 to 31 bytes (the narrower vertical vectors).
    for (int64_t w : {40, 21}) {
      PoolCase narrow{{1, 2, 7, w}, 3, 3, 2, 2};
      RunPoolCase(fb::OpType::MaxPool, narrow, false, "3x3 s2 on 7x" + std::to_string(w) + type, dt);
    }
  }
}

TEST(NnPool, AveragePool) {
  for (bool include : {false, true})
    for (auto [name, c] : PoolCases()) {
      c.include_pad = include;
      RunPoolCase(fb::OpType::AveragePool, c, false, name + (include ? " count_include_pad" : ""));
    }
}

TEST(NnPool, GlobalPools) {
  // Planes below, at and above the 32 lanes of the mean's sum and its 1024-element
  // blocks (56 x 57), with tails.
  for (Shape s : std::vector<Shape>{{2, 7, 5, 9}, {1, 17, 1, 1}, {2, 3, 5}, {1, 3, 2, 3, 4}, {1, 6, 7, 7},
                                    {2, 3, 11, 13}, {1, 2, 64}, {1, 3, 56, 57}}) {
    SCOPED_TRACE(Str(s));
    std::vector<float> x = Rand(s, 91);
    const int64_t planes = s[0] * s[1], plane = Numel(s) / planes;
    std::vector<float> avg, mx;
    for (int64_t p = 0; p < planes; ++p) {
      double sum = 0, m = x[p * plane];
      for (int64_t i = 0; i < plane; ++i) sum += x[p * plane + i], m = std::max<double>(m, x[p * plane + i]);
      avg.push_back(static_cast<float>(sum / plane));
      mx.push_back(static_cast<float>(m));
    }
    Shape ws(s.size(), 1);
    ws[0] = s[0];
    ws[1] = s[1];
    auto a = OpTest(fb::OpType::GlobalAveragePool).input("x", s, x).run(Threads3());
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->at(0).shape, ws);
    ExpectNear(a->at(0).f32(), avg, kTol, "GlobalAveragePool");
    auto m = OpTest(fb::OpType::GlobalMaxPool).input("x", s, x).run(Threads3());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->at(0).shape, ws);
    ExpectNear(m->at(0).f32(), mx, 0, "GlobalMaxPool");
  }
}

// A 7x7 plane's mean sums its last 16 floats once more with the lanes
// already counted left out: an inf among those stays one inf (0 x inf
// would be a NaN).
TEST(NnPool, GlobalAverageOfShortPlaneWithInf) {
  for (int64_t at : {40, 48, 3}) {
    std::vector<float> x(49, 1.f);
    x[at] = INFINITY;
    auto a = OpTest(fb::OpType::GlobalAveragePool).input("x", {1, 1, 7, 7}, x).run(Threads3());
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->at(0).f32()[0], INFINITY) << "inf at " << at;
    x[at] = 50.f;  // the mean of 48 ones and a 50: 2
    auto b = OpTest(fb::OpType::GlobalAveragePool).input("x", {1, 1, 7, 7}, x).run(Threads3());
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_FLOAT_EQ(b->at(0).f32()[0], 2.f) << "50 at " << at;
  }
}

// ---------------------------------------------------------------- MaxUnpool

struct UnpoolCase {
  Shape xs;  // [N, C, H, W] of the MaxPool input
  int64_t kh, kw, sh, sw;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool give_shape = true;  // output_shape (input 2) = xs; else the default size must give xs back
};

// The naive round trip: each window's maximum (the first on ties) at its
// position in X, zero everywhere else.
std::vector<float> UnpoolRoundTripRef(const std::vector<float>& x, const UnpoolCase& c) {
  const int64_t N = c.xs[0], C = c.xs[1], H = c.xs[2], W = c.xs[3];
  const int64_t oh = PoolOut(H, c.kh, c.sh, 1, c.pt, c.pb, false), ow = PoolOut(W, c.kw, c.sw, 1, c.pl, c.pr, false);
  std::vector<float> y(x.size(), 0.f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t best_at = -1;
          for (int64_t a = 0; a < c.kh; ++a)
            for (int64_t b = 0; b < c.kw; ++b) {
              int64_t ih = i * c.sh - c.pt + a, iw = j * c.sw - c.pl + b;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              int64_t at = ((n * C + ch) * H + ih) * W + iw;
              if (best_at < 0 || x[at] > x[best_at]) best_at = at;
            }
          if (best_at >= 0) y[best_at] = x[best_at];
        }
  return y;
}

fb::MaxUnpoolParamsT UnpoolParams(int64_t kh, int64_t kw, int64_t sh, int64_t sw, std::vector<int32_t> pads = {}) {
  fb::MaxUnpoolParamsT p;
  p.kernel_shape = {static_cast<int32_t>(kh), static_cast<int32_t>(kw)};
  p.strides = {static_cast<int32_t>(sh), static_cast<int32_t>(sw)};
  p.pads = std::move(pads);
  p.indices_in_output_shape = true;  // MaxPool's indices, in the pool input's shape
  return p;
}

// Runs x -> MaxPool (values, Indices) -> MaxUnpool -> y as one model.
StatusOr<test::OpResult> RunPoolUnpool(const UnpoolCase& c, const std::vector<float>& x) {
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  fb::PoolParamsT pool;
  pool.kernel_shape = {i32(c.kh), i32(c.kw)};
  pool.strides = {i32(c.sh), i32(c.sw)};
  pool.pads = {i32(c.pt), i32(c.pl), i32(c.pb), i32(c.pr)};
  NetBuilder b("pool_unpool");
  int xt = b.addInput("x", fb::DataType::F32, std::vector<Dim>(c.xs.begin(), c.xs.end()));
  std::vector<int> pooled = b.addOp(fb::OpType::MaxPool, "pool", {xt}, {"values", "indices"}, pool);
  std::vector<int> in = pooled;
  if (c.give_shape) in.push_back(b.addConstant("output_shape", {4}, std::vector<int64_t>(c.xs)));
  int y = b.addOp(fb::OpType::MaxUnpool, "unpool", in, {"y"},
                  UnpoolParams(c.kh, c.kw, c.sh, c.sw, {i32(c.pt), i32(c.pl), i32(c.pb), i32(c.pr)}))[0];
  b.addOutput(y);
  KILN_ASSIGN_OR_RETURN(auto bytes, b.finish());
  KILN_ASSIGN_OR_RETURN(auto interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  KILN_ASSIGN_OR_RETURN(Session * session, interp->createSession(Threads3()));
  auto host = Tensor::wrap(c.xs, fb::DataType::F32, const_cast<float*>(x.data()));
  KILN_RETURN_IF_ERROR(session->getInput("x")->copyFromHostTensor(*host));
  KILN_RETURN_IF_ERROR(session->run());
  Tensor* t = session->getOutput("y");
  test::OpResult r;
  r.shape = t->shape();
  r.dtype = t->dtype();
  r.bytes.resize(t->byteSize());
  auto out = Tensor::wrap(t->shape(), t->dtype(), r.bytes.data());
  KILN_RETURN_IF_ERROR(t->copyToHostTensor(out.get()));
  return r;
}

TEST(NnMaxUnpool, MaxPoolRoundTripOddShapes) {
  std::vector<std::pair<std::string, UnpoolCase>> cases;
  for (int64_t C : {1, 3, 7}) {
    const Shape xs = {C == 3 ? 2 : 1, C, 5, 7};
    const std::string at = " on " + Str(xs);
    cases.push_back({"k2 s2, output_shape" + at, {xs, 2, 2, 2, 2}});  // the default size would be 4x6
    UnpoolCase pad{xs, 3, 3, 2, 2, 1, 1, 1, 1, false};  // (3-1)*2-2+3 = 5, (4-1)*2-2+3 = 7
    cases.push_back({"k3 s2 pads 1, default size" + at, pad});
    pad.give_shape = true;
    cases.push_back({"k3 s2 pads 1, output_shape" + at, pad});
    cases.push_back({"k3x2 s2x3 asymmetric pads, output_shape" + at, {xs, 3, 2, 2, 3, 1, 0, 0, 1}});
  }
  for (auto& [name, c] : cases) {
    SCOPED_TRACE(name);
    std::vector<float> x = Rand(c.xs, 111);
    auto y = RunPoolUnpool(c, x);
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    EXPECT_EQ(y->shape, c.xs);
    EXPECT_EQ(y->dtype, fb::DataType::F32);
    ExpectNear(y->f32(), UnpoolRoundTripRef(x, c), 0.f);
  }
}

// The op alone: indices are flat over the whole output (any batch and
// channel), the default size is (in - 1) * stride - pads + kernel, a later
// value wins where an index repeats.
TEST(NnMaxUnpool, FlatIndicesAndDefaultSize) {
  struct Case {
    std::string name;
    Shape xs, ys;
    fb::MaxUnpoolParamsT p;
  };
  std::vector<Case> cases = {
      {"2-D k2 s2", {2, 3, 2, 3}, {2, 3, 4, 6}, UnpoolParams(2, 2, 2, 2)},
      {"2-D k3x2 s2x3 pads", {1, 7, 3, 2}, {1, 7, 5, 4}, UnpoolParams(3, 2, 2, 3, {1, 0, 1, 1})},
  };
  {
    fb::MaxUnpoolParamsT one_d;
    one_d.kernel_shape = {3};
    one_d.strides = {2};
    cases.push_back({"1-D k3 s2", {1, 3, 4}, {1, 3, 9}, one_d});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t n = Numel(c.xs), total = Numel(c.ys);
    std::vector<float> x = Rand(c.xs, 121);
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) idx[i] = (i * 7919 + 3) % total;  // scattered over batches and channels
    idx[n - 1] = idx[0];                                               // a repeat: the later value wins
    std::vector<float> want(static_cast<size_t>(total), 0.f);
    for (int64_t i = 0; i < n; ++i) want[idx[i]] = x[i];
    auto out = OpTest(fb::OpType::MaxUnpool).input("x", c.xs, x).inputI64("i", c.xs, idx).params(c.p).run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, c.ys);
    ExpectNear(out->at(0).f32(), want, 0.f);
  }
}

TEST(NnMaxUnpool, OutputShapeInput) {
  const Shape xs = {1, 3, 2, 3};
  std::vector<float> x = Rand(xs, 131);
  std::vector<int64_t> idx = {0, 5, 9, 20, 33, 41, 42, 50, 57, 60, 64, 71, 72, 80, 85, 88, 90, 95};
  for (auto& [name, shape, ys] : std::vector<std::tuple<std::string, std::vector<int64_t>, Shape>>{
           {"full shape, larger than the default", {1, 3, 5, 7}, {1, 3, 5, 7}},
           {"spatial dims only", {4, 8}, {1, 3, 4, 8}}}) {
    SCOPED_TRACE(name);
    std::vector<float> want(static_cast<size_t>(Numel(ys)), 0.f);
    for (size_t i = 0; i < idx.size(); ++i) want[idx[i]] = x[i];
    const int64_t rank = static_cast<int64_t>(shape.size());
    auto constant = OpTest(fb::OpType::MaxUnpool)
                        .input("x", xs, x)
                        .inputI64("i", xs, idx)
                        .constantI64("output_shape", {rank}, shape)
                        .params(UnpoolParams(2, 2, 2, 2))
                        .run(Threads3());
    ASSERT_TRUE(constant.ok()) << constant.status().ToString();
    EXPECT_EQ(constant->at(0).shape, ys);
    ExpectNear(constant->at(0).f32(), want, 0.f, "constant output_shape");
    auto fed = OpTest(fb::OpType::MaxUnpool)
                   .input("x", xs, x)
                   .inputI64("i", xs, idx)
                   .inputI64("output_shape", {rank}, shape)
                   .params(UnpoolParams(2, 2, 2, 2))
                   .run(Threads3());
    ASSERT_TRUE(fed.ok()) << fed.status().ToString();
    EXPECT_EQ(fed->at(0).shape, ys);
    ExpectNear(fed->at(0).f32(), want, 0.f, "output_shape fed at run time");
  }
}

TEST(NnMaxUnpool, ErrorsNameTheOp) {
  auto expect_error = [](const StatusOr<std::vector<test::OpResult>>& r, const std::string& needle) {
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  const Shape xs = {1, 2, 2, 2};
  std::vector<float> x = Rand(xs, 141);
  for (int64_t bad : {int64_t{32}, int64_t{-1}, int64_t{1} << 40}) {  // the output has 1*2*4*4 = 32 elements
    SCOPED_TRACE(bad);
    std::vector<int64_t> idx = {0, 3, 8, 11, 16, bad, 24, 31};
    auto out = OpTest(fb::OpType::MaxUnpool, "unpool_bad")
                   .input("x", xs, x)
                   .inputI64("i", xs, idx)
                   .params(UnpoolParams(2, 2, 2, 2))
                   .run(Threads3());
    expect_error(out, "op 0 'unpool_bad' (MaxUnpool)");
    expect_error(out, "MaxUnpool 'unpool_bad': index " + std::to_string(bad) +
                          " (input position 5) is out of range for the output of 32 elements");
  }
  std::vector<int64_t> idx = {0, 3, 8, 11, 16, 19, 24, 31};
  expect_error(OpTest(fb::OpType::MaxUnpool)
                   .input("x", xs, x)
                   .inputI64("i", xs, idx)
                   .constantI64("output_shape", {4}, {1, 3, 4, 4})
                   .params(UnpoolParams(2, 2, 2, 2))
                   .run(Threads3()),
               "MaxUnpool: output_shape [1,3,4,4] must keep the input's batch and channels [1,2]");
  expect_error(OpTest(fb::OpType::MaxUnpool)
                   .input("x", xs, x)
                   .inputI64("i", xs, idx)
                   .constantI64("output_shape", {3}, {1, 4, 4})
                   .params(UnpoolParams(2, 2, 2, 2))
                   .run(Threads3()),
               "MaxUnpool: output_shape (input 2) [1,4,4] must be 1-D with 4 entries (or 2 spatial ones)");
  expect_error(OpTest(fb::OpType::MaxUnpool)
                   .input("x", xs, x)
                   .inputI64("i", {1, 2, 2, 1}, {0, 1, 2, 3})
                   .params(UnpoolParams(2, 2, 2, 2))
                   .run(Threads3()),
               "MaxUnpool: indices (input 1) [1,2,2,1] must have the input's shape [1,2,2,2]");
  expect_error(OpTest(fb::OpType::MaxUnpool)
                   .input("x", xs, x)
                   .input("i", xs, x)
                   .params(UnpoolParams(2, 2, 2, 2))
                   .run(Threads3()),
               "MaxUnpool: indices (input 1) must be i64, are f32");
  expect_error(OpTest(fb::OpType::MaxUnpool)
                   .input("x", xs, x)
                   .inputI64("i", xs, idx)
                   .params(UnpoolParams(2, 2, 2, 2, {2, 2, 2, 2}))
                   .run(Threads3()),
               "MaxUnpool: pads 2+2 leave no output on spatial axis 0");
  expect_error(OpTest(fb::OpType::MaxUnpool)
                   .input("x", xs, x)
                   .inputI64("i", xs, idx)
                   .params(fb::MaxUnpoolParamsT{})
                   .run(Threads3()),
               "kernel_shape is required");  // the model verifier
  fb::MaxUnpoolParamsT zero = UnpoolParams(2, 2, 2, 2);
  zero.strides = {2, 0};
  expect_error(OpTest(fb::OpType::MaxUnpool).input("x", xs, x).inputI64("i", xs, idx).params(zero).run(Threads3()),
               "strides[1] is 0 (must be >= 1)");
}

// ONNX's reading (the default): indices address the default-size output
// (4x4 here); a larger output_shape (5x5) keeps each value's coordinates.
TEST(NnMaxUnpool, OnnxIndicesAddressTheDefaultSize) {
  fb::MaxUnpoolParamsT p = UnpoolParams(2, 2, 2, 2);
  p.indices_in_output_shape = false;
  auto out = OpTest(fb::OpType::MaxUnpool)
                 .input("x", {1, 1, 2, 2}, {5, 6, 7, 8})
                 .inputI64("i", {1, 1, 2, 2}, {5, 7, 13, 15})
                 .constantI64("output_shape", {4}, {1, 1, 5, 5})
                 .params(p)
                 .run(Threads3());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> want(25, 0.f);
  want[1 * 5 + 1] = 5;
  want[1 * 5 + 3] = 6;
  want[3 * 5 + 1] = 7;
  want[3 * 5 + 3] = 8;
  ExpectNear(out->at(0).f32(), want, 0.f, "ONNX MaxUnpool with output_shape");
  // A smaller output_shape cannot hold a coordinate of the default size.
  auto bad = OpTest(fb::OpType::MaxUnpool)
                 .input("x", {1, 1, 2, 2}, {5, 6, 7, 8})
                 .inputI64("i", {1, 1, 2, 2}, {5, 7, 13, 15})
                 .constantI64("output_shape", {4}, {1, 1, 3, 3})
                 .params(p)
                 .run(Threads3());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("out of range"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace kiln
