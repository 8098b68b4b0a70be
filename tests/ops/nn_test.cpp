// The nn op family on the host against naive references written here with
// plain nested loops (double accumulation, no code shared with the kernels):
// Conv, ConvTranspose, MatMul, Gemm, pools, MaxUnpool, normalizations, Softmax.
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln {
namespace {

using test::ExpectNear;
using test::Numel;
using test::OpTest;
using test::RandomFloats;
using Shape = std::vector<int64_t>;

constexpr float kTol = 1e-4f;

// Every run uses 3 host threads, so that the kernels' parallel splits are
// exercised wherever a shape is large enough to be split.
ScheduleConfig Threads3() {
  ScheduleConfig c;
  c.numThread = 3;
  return c;
}

std::vector<float> Rand(const Shape& s, uint32_t seed) { return RandomFloats(static_cast<size_t>(Numel(s)), seed); }
std::vector<int32_t> I32(std::initializer_list<int> v) { return std::vector<int32_t>(v.begin(), v.end()); }
std::string Str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// ---------------------------------------------------------------- activations

float RefAct(fb::Activation a, double v, float lo, float hi, float alpha) {
  switch (a) {
    case fb::Activation::None: return static_cast<float>(v);
    case fb::Activation::Relu: return static_cast<float>(v < 0 ? 0 : v);
    case fb::Activation::Relu6: return static_cast<float>(v < 0 ? 0 : (v > 6 ? 6 : v));
    case fb::Activation::Clip: return static_cast<float>(v < lo ? lo : (v > hi ? hi : v));
    case fb::Activation::LeakyRelu: return static_cast<float>(v < 0 ? alpha * v : v);
    case fb::Activation::Sigmoid: return static_cast<float>(1 / (1 + std::exp(-v)));
    case fb::Activation::HardSwish: return static_cast<float>(v * std::min(1.0, std::max(0.0, (v + 3) / 6)));
    case fb::Activation::Gelu: return static_cast<float>(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
  }
  return 0;
}

// ---------------------------------------------------------------- Conv

// One 2-D convolution case (a 1-D one has h = kh = sh = dh = 1 and no H pads).
struct ConvCase {
  int64_t n, c, h, w, m, kh, kw;
  int64_t group = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;  // pads: top, left, bottom, right
  bool bias = false;
  fb::AutoPad auto_pad = fb::AutoPad::NotSet;
  bool give_kernel_shape = true;
  bool one_d = false;
  fb::Activation act = fb::Activation::None;
  float act_min = -INFINITY, act_max = INFINITY, act_alpha = 0.01f;
};

// out[n, m, oh, ow] = bias[m] + sum over the group's channels and the kernel of x * w.
std::vector<float> NaiveConv2D(const ConvCase& k, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& bias, int64_t oh_n, int64_t ow_n, int64_t pt, int64_t pl) {
  const int64_t cg = k.c / k.group, mg = k.m / k.group;
  std::vector<float> y(static_cast<size_t>(k.n * k.m * oh_n * ow_n));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t m = 0; m < k.m; ++m)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow) {
          double s = bias.empty() ? 0 : bias[m];
          int64_t g = m / mg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                int64_t ih = oh * k.sh - pt + i * k.dh, iw = ow * k.sw - pl + j * k.dw;
                if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
                s += static_cast<double>(x[((n * k.c + g * cg + c) * k.h + ih) * k.w + iw]) *
                     w[((m * cg + c) * k.kh + i) * k.kw + j];
              }
          y[((n * k.m + m) * oh_n + oh) * ow_n + ow] = RefAct(k.act, s, k.act_min, k.act_max, k.act_alpha);
        }
  return y;
}

void RunConvCase(const ConvCase& k, const std::string& what) {
  SCOPED_TRACE(what);
  Shape xs = k.one_d ? Shape{k.n, k.c, k.w} : Shape{k.n, k.c, k.h, k.w};
  Shape ws = k.one_d ? Shape{k.m, k.c / k.group, k.kw} : Shape{k.m, k.c / k.group, k.kh, k.kw};
  std::vector<float> x = Rand(xs, 11), w = Rand(ws, 12), b = k.bias ? Rand({k.m}, 13) : std::vector<float>();
  // Output size and begin pads, worked out independently of the kernel.
  int64_t pt = k.pt, pl = k.pl, oh, ow;
  int64_t ekh = (k.kh - 1) * k.dh + 1, ekw = (k.kw - 1) * k.dw + 1;
  if (k.auto_pad == fb::AutoPad::SameUpper || k.auto_pad == fb::AutoPad::SameLower) {
    oh = (k.h + k.sh - 1) / k.sh;
    ow = (k.w + k.sw - 1) / k.sw;
    int64_t th = std::max<int64_t>(0, (oh - 1) * k.sh + ekh - k.h), tw = std::max<int64_t>(0, (ow - 1) * k.sw + ekw - k.w);
    bool upper = k.auto_pad == fb::AutoPad::SameUpper;
    pt = upper ? th / 2 : (th + 1) / 2;
    pl = upper ? tw / 2 : (tw + 1) / 2;
  } else if (k.auto_pad == fb::AutoPad::Valid) {
    pt = pl = 0;
    oh = (k.h - ekh) / k.sh + 1;
    ow = (k.w - ekw) / k.sw + 1;
  } else {
    oh = (k.h + k.pt + k.pb - ekh) / k.sh + 1;
    ow = (k.w + k.pl + k.pr - ekw) / k.sw + 1;
  }
  fb::ConvParamsT p;
  p.group = static_cast<int32_t>(k.group);
  p.auto_pad = k.auto_pad;
  p.activation = k.act;
  p.activation_min = k.act_min;
  p.activation_max = k.act_max;
  p.activation_alpha = k.act_alpha;
  if (k.one_d) {
    if (k.give_kernel_shape) p.kernel_shape = I32({static_cast<int>(k.kw)});
    p.strides = I32({static_cast<int>(k.sw)});
    p.dilations = I32({static_cast<int>(k.dw)});
    if (k.auto_pad == fb::AutoPad::NotSet) p.pads = I32({static_cast<int>(k.pl), static_cast<int>(k.pr)});
  } else {
    if (k.give_kernel_shape) p.kernel_shape = I32({static_cast<int>(k.kh), static_cast<int>(k.kw)});
    p.strides = I32({static_cast<int>(k.sh), static_cast<int>(k.sw)});
    p.dilations = I32({static_cast<int>(k.dh), static_cast<int>(k.dw)});
    if (k.auto_pad == fb::AutoPad::NotSet)
      p.pads = I32({static_cast<int>(k.pt), static_cast<int>(k.pl), static_cast<int>(k.pb), static_cast<int>(k.pr)});
  }
  OpTest t(fb::OpType::Conv);
  t.input("x", xs, x).constant("w", ws, w);
  if (k.bias) t.input("b", {k.m}, b);
  auto out = t.params(p).run(Threads3());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  Shape want_shape = k.one_d ? Shape{k.n, k.m, ow} : Shape{k.n, k.m, oh, ow};
  EXPECT_EQ(out->at(0).shape, want_shape);
  ExpectNear(out->at(0).f32(), NaiveConv2D(k, x, w, b, oh, ow, pt, pl), kTol, what);
}

TEST(NnConv, OddShapes2D) {
  std::vector<std::pair<std::string, ConvCase>> cases;
  auto add = [&](const std::string& name, ConvCase k) { cases.emplace_back(name, k); };
  add("1ch 5x5 k3", {1, 1, 5, 5, 1, 3, 3});
  {
    ConvCase k{2, 3, 9, 7, 7, 3, 3};
    k.sh = k.sw = 2;
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    add("3->7 stride 2 pad 1 bias", k);
  }
  {
    ConvCase k{1, 7, 5, 9, 17, 2, 3};
    k.sw = 2;
    k.dh = k.dw = 2;
    k.pt = 0, k.pl = 2, k.pb = 1, k.pr = 0;
    k.give_kernel_shape = false;
    add("7->17 dilation 2 asymmetric pads, kernel from weights", k);
  }
  {
    ConvCase k{2, 17, 9, 5, 17, 3, 3};
    k.group = 17;
    k.sh = k.sw = 2;
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    add("depthwise 17 stride 2", k);
  }
  {
    ConvCase k{1, 6, 5, 9, 9, 3, 3};
    k.group = 3;
    k.pt = 1, k.pl = 0, k.pb = 0, k.pr = 1;
    k.bias = true;
    add("groups 3, 6->9", k);
  }
  {
    ConvCase k{1, 3, 1, 1, 7, 1, 1};
    k.bias = true;
    add("1x1 spatial, 1x1 kernel", k);
  }
  {
    ConvCase k{1, 3, 1, 9, 3, 1, 3};
    k.sw = 2;
    k.pl = 2;
    k.pr = 1;
    add("1x9 input", k);
  }
  {
    ConvCase k{1, 3, 5, 5, 7, 5, 5};
    k.dh = k.dw = 2;
    k.pt = k.pl = k.pb = k.pr = 2;
    add("5x5 kernel dilation 2 on 5x5", k);
  }
  {
    ConvCase k{1, 7, 9, 9, 3, 3, 3};
    k.sh = 2;
    k.sw = 1;
    k.pt = 3, k.pl = 0, k.pb = 0, k.pr = 3;
    add("pads larger than half the kernel", k);
  }
  for (auto& [name, k] : cases) RunConvCase(k, name);
}

TEST(NnConv, Conv1D) {
  ConvCase k{2, 3, 1, 9, 4, 1, 3};
  k.one_d = true;
  k.sw = 2;
  k.dw = 2;
  k.pl = 1;
  k.pr = 2;
  k.bias = true;
  RunConvCase(k, "1-D stride 2 dilation 2 pads 1+2");
  ConvCase d{1, 7, 1, 5, 7, 1, 3};
  d.one_d = true;
  d.group = 7;
  d.auto_pad = fb::AutoPad::SameUpper;
  RunConvCase(d, "1-D depthwise SAME_UPPER");
}

TEST(NnConv, AutoPad) {
  for (fb::AutoPad ap : {fb::AutoPad::SameUpper, fb::AutoPad::SameLower, fb::AutoPad::Valid}) {
    ConvCase k{1, 3, 9, 8, 7, 3, 2};
    k.auto_pad = ap;
    k.sh = k.sw = 2;
    k.bias = true;
    RunConvCase(k, std::string("stride 2 ") + fb::EnumNameAutoPad(ap));
    ConvCase e{2, 3, 5, 8, 3, 2, 4};
    e.auto_pad = ap;
    e.dw = 2;
    RunConvCase(e, std::string("even kernel, dilation 2 ") + fb::EnumNameAutoPad(ap));
  }
}

TEST(NnConv, FusedActivations) {
  for (fb::Activation a : {fb::Activation::Relu, fb::Activation::Relu6, fb::Activation::Clip, fb::Activation::LeakyRelu,
                           fb::Activation::Sigmoid, fb::Activation::HardSwish, fb::Activation::Gelu}) {
    ConvCase k{1, 3, 5, 5, 7, 3, 3};
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    k.act = a;
    if (a == fb::Activation::Clip) k.act_min = -0.3f, k.act_max = 0.4f;
    if (a == fb::Activation::LeakyRelu) k.act_alpha = 0.2f;
    RunConvCase(k, std::string("activation ") + fb::EnumNameActivation(a));
  }
}

TEST(NnConv, AbsentBiasAndNoParams) {
  std::vector<float> x = Rand({1, 3, 5, 5}, 1), w = Rand({2, 3, 3, 3}, 2);
  auto out = OpTest(fb::OpType::Conv).input("x", {1, 3, 5, 5}, x).constant("w", {2, 3, 3, 3}, w).missing().run(Threads3());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ConvCase k{1, 3, 5, 5, 2, 3, 3};
  EXPECT_EQ(out->at(0).shape, (Shape{1, 2, 3, 3}));
  ExpectNear(out->at(0).f32(), NaiveConv2D(k, x, w, {}, 3, 3, 0, 0), kTol, "no params, bias -1");
}

// ---------------------------------------------------------------- ConvTranspose

// y[n, g*mg + mo, ih*s - p + kh*d, ...] += x[n, ci, ih, iw] * w[ci, mo, kh, kw]
std::vector<float> NaiveConvTranspose2D(const std::vector<float>& x, const Shape& xs, const std::vector<float>& w,
                                        const Shape& ws, const std::vector<float>& bias, int64_t group, int64_t sh,
                                        int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl, int64_t oh_n,
                                        int64_t ow_n) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], mg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t M = mg * group, cg = C / group;
  std::vector<double> acc(static_cast<size_t>(N * M * oh_n * ow_n), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < oh_n * ow_n; ++i) acc[(n * M + m) * oh_n * ow_n + i] = bias.empty() ? 0 : bias[m];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw)
          for (int64_t mo = 0; mo < mg; ++mo)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t oh = ih * sh - pt + kh * dh, ow = iw * sw - pl + kw * dw;
                if (oh < 0 || oh >= oh_n || ow < 0 || ow >= ow_n) continue;
                int64_t m = ci / cg * mg + mo;
                acc[((n * M + m) * oh_n + oh) * ow_n + ow] +=
                    static_cast<double>(x[((n * C + ci) * H + ih) * W + iw]) * w[((ci * mg + mo) * KH + kh) * KW + kw];
              }
  return std::vector<float>(acc.begin(), acc.end());
}

TEST(NnConvTranspose, Stride2OutputPaddingGroups) {
  struct Case {
    Shape xs, ws;
    int64_t group, s, d;
    std::vector<int> pads, out_pad;
    bool bias;
  };
  std::vector<Case> cases = {
      {{1, 6, 5, 4}, {6, 2, 3, 3}, 3, 2, 1, {1, 0, 0, 1}, {1, 1}, true},
      {{2, 3, 4, 5}, {3, 7, 3, 2}, 1, 2, 2, {0, 1, 2, 0}, {1, 0}, false},
      {{1, 1, 1, 1}, {1, 3, 3, 3}, 1, 1, 1, {0, 0, 0, 0}, {0, 0}, true},
      {{1, 17, 5, 5}, {17, 1, 3, 3}, 17, 2, 1, {1, 1, 1, 1}, {1, 1}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(Str(c.xs) + " * " + Str(c.ws));
    std::vector<float> x = Rand(c.xs, 21), w = Rand(c.ws, 22);
    int64_t M = c.ws[1] * c.group;
    std::vector<float> b = c.bias ? Rand({M}, 23) : std::vector<float>();
    int64_t oh = c.s * (c.xs[2] - 1) + c.out_pad[0] + (c.ws[2] - 1) * c.d + 1 - c.pads[0] - c.pads[2];
    int64_t ow = c.s * (c.xs[3] - 1) + c.out_pad[1] + (c.ws[3] - 1) * c.d + 1 - c.pads[1] - c.pads[3];
    fb::ConvParamsT p;
    p.group = static_cast<int32_t>(c.group);
    p.strides = {static_cast<int32_t>(c.s), static_cast<int32_t>(c.s)};
    p.dilations = {static_cast<int32_t>(c.d), static_cast<int32_t>(c.d)};
    p.pads = std::vector<int32_t>(c.pads.begin(), c.pads.end());
    p.output_padding = std::vector<int32_t>(c.out_pad.begin(), c.out_pad.end());
    OpTest t(fb::OpType::ConvTranspose);
    t.input("x", c.xs, x).constant("w", c.ws, w);
    if (c.bias) t.constant("b", {M}, b);
    auto out = t.params(p).run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, (Shape{c.xs[0], M, oh, ow}));
    ExpectNear(out->at(0).f32(),
               NaiveConvTranspose2D(x, c.xs, w, c.ws, b, c.group, c.s, c.s, c.d, c.d, c.pads[0], c.pads[1], oh, ow),
               kTol);
  }
}

TEST(NnConvTranspose, OutputShapeAndAutoPad) {
  Shape xs = {1, 3, 5, 4}, ws = {3, 2, 3, 3};
  std::vector<float> x = Rand(xs, 31), w = Rand(ws, 32);
  // SAME_UPPER: output = input * stride; total padding 2*(in-1) + 3 - 2*in = 1, the odd one at the end.
  // SAME_LOWER and output_shape alone: the odd one at the beginning.
  struct Case {
    fb::AutoPad ap;
    std::vector<int32_t> output_shape;
    int64_t oh, ow, pt, pl;
  };
  for (const Case& c : std::vector<Case>{{fb::AutoPad::SameUpper, {}, 10, 8, 0, 0},
                                         {fb::AutoPad::SameLower, {}, 10, 8, 1, 1},
                                         {fb::AutoPad::NotSet, {10, 9}, 10, 9, 1, 0}}) {
    SCOPED_TRACE(fb::EnumNameAutoPad(c.ap));
    fb::ConvParamsT p;
    p.strides = {2, 2};
    p.auto_pad = c.ap;
    p.output_shape = c.output_shape;
    auto out = OpTest(fb::OpType::ConvTranspose).input("x", xs, x).constant("w", ws, w).params(p).run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, (Shape{1, 2, c.oh, c.ow}));
    ExpectNear(out->at(0).f32(), NaiveConvTranspose2D(x, xs, w, ws, {}, 1, 2, 2, 1, 1, c.pt, c.pl, c.oh, c.ow), kTol);
  }
}

TEST(NnConvTranspose, OneD) {
  Shape xs = {2, 4, 7}, ws = {4, 3, 3};
  std::vector<float> x = Rand(xs, 41), w = Rand(ws, 42), b = Rand({6}, 43);
  fb::ConvParamsT p;
  p.group = 2;  // 4 -> 2 * 3 = 6 channels
  p.strides = {3};
  p.pads = {1, 0};
  p.output_padding = {2};
  p.activation = fb::Activation::Relu;
  auto out = OpTest(fb::OpType::ConvTranspose).input("x", xs, x).constant("w", ws, w).constant("b", {6}, b).params(p).run(Threads3());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  int64_t ow = 3 * 6 + 2 + 3 - 1;  // 22
  EXPECT_EQ(out->at(0).shape, (Shape{2, 6, ow}));
  // As 2-D with a height of 1; then the fused Relu.
  std::vector<float> want = NaiveConvTranspose2D(x, {2, 4, 1, 7}, w, {4, 3, 1, 3}, b, 2, 1, 3, 1, 1, 0, 1, 1, ow);
  for (float& v : want) v = v > 0 ? v : 0;
  ExpectNear(out->at(0).f32(), want, kTol);
}

// ---------------------------------------------------------------- MatMul / Gemm

// numpy matmul: 1-D operands promoted ([K] -> [1, K] / [K, 1]) and the added axis dropped.
std::vector<float> NaiveMatMul(const std::vector<float>& a, Shape as, const std::vector<float>& b, Shape bs,
                               Shape* out_shape) {
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  while (ba.size() < bb.size()) ba.insert(ba.begin(), 1);
  while (bb.size() < ba.size()) bb.insert(bb.begin(), 1);
  Shape batch(ba.size());
  for (size_t d = 0; d < ba.size(); ++d) batch[d] = std::max(ba[d], bb[d]);
  const int64_t nb = Numel(batch);
  std::vector<float> y(static_cast<size_t>(nb * M * N));
  for (int64_t bi = 0; bi < nb; ++bi) {
    Shape idx(batch.size());
    for (size_t d = batch.size(), rem = static_cast<size_t>(bi); d-- > 0;) {
      idx[d] = static_cast<int64_t>(rem) % batch[d];
      rem /= static_cast<size_t>(batch[d]);
    }
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      ia = ia * ba[d] + (ba[d] == 1 ? 0 : idx[d]);
      ib = ib * bb[d] + (bb[d] == 1 ? 0 : idx[d]);
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += static_cast<double>(a[(ia * M + i) * K + k]) * b[(ib * K + k) * N + j];
        y[(bi * M + i) * N + j] = static_cast<float>(s);
      }
  }
  *out_shape = batch;
  if (!a_vec) out_shape->push_back(M);
  if (!b_vec) out_shape->push_back(N);
  return y;
}

TEST(NnMatMul, BroadcastAndVectors) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : std::vector<Case>{{{2, 1, 3, 4}, {5, 4, 6}},
                                         {{7, 17}, {17, 1}},
                                         {{3, 1, 5}, {1, 5, 9}},
                                         {{4}, {4, 6}},
                                         {{2, 3, 4}, {4}},
                                         {{5}, {3, 5, 2}},
                                         {{7}, {7}},
                                         {{1, 1}, {1, 3}},
                                         {{2, 3, 1, 4}, {3, 4, 5}},
                                         {{2, 1, 33, 64}, {5, 64, 70}}}) {
    SCOPED_TRACE(Str(c.a) + " x " + Str(c.b));
    std::vector<float> a = Rand(c.a, 51), b = Rand(c.b, 52);
    auto out = OpTest(fb::OpType::MatMul).input("a", c.a, a).constant("b", c.b, b).run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    Shape want_shape;
    std::vector<float> want = NaiveMatMul(a, c.a, b, c.b, &want_shape);
    EXPECT_EQ(out->at(0).shape, want_shape);
    ExpectNear(out->at(0).f32(), want, kTol);
  }
}

TEST(NnGemm, TransposesAndCBroadcast) {
  int cases = 0;
  for (Shape mkn : std::vector<Shape>{{3, 7, 5}, {40, 64, 70}}) {
    const int64_t M = mkn[0], K = mkn[1], N = mkn[2];
    std::vector<Shape> c_shapes = {{}, {N}, {1}, {1, N}, {M, 1}, {M, N}, {1, 1}};
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int ci = -1; ci < static_cast<int>(c_shapes.size()); ++ci) {
          const bool has_c = ci >= 0;
          const Shape cs = has_c ? c_shapes[static_cast<size_t>(ci)] : Shape{};
          SCOPED_TRACE(Str(mkn) + " trans_a " + (ta ? "1" : "0") + " trans_b " + (tb ? "1" : "0") + " C " +
                       (has_c ? Str(cs) : "none"));
          Shape as = ta ? Shape{K, M} : Shape{M, K}, bs = tb ? Shape{N, K} : Shape{K, N};
          std::vector<float> a = Rand(as, 61), b = Rand(bs, 62), c = Rand(cs, 63);
          fb::GemmParamsT p;
          p.alpha = 0.7f;
          p.beta = 1.3f;
          p.trans_a = ta;
          p.trans_b = tb;
          OpTest t(fb::OpType::Gemm);
          t.input("a", as, a).constant("b", bs, b);
          if (has_c) t.constant("c", cs, c);
          auto out = t.params(p).run(Threads3());
          ASSERT_TRUE(out.ok()) << out.status().ToString();
          std::vector<float> want(static_cast<size_t>(M * N));
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double s = 0;
              for (int64_t k = 0; k < K; ++k)
                s += static_cast<double>(ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
              double cv = 0;
              if (has_c) {
                if (cs.empty())
                  cv = c[0];
                else if (cs.size() == 1)
                  cv = c[cs[0] == 1 ? 0 : j];
                else
                  cv = c[(cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j)];
              }
              want[i * N + j] = static_cast<float>(0.7 * s + 1.3 * cv);
            }
          EXPECT_EQ(out->at(0).shape, (Shape{M, N}));
          ExpectNear(out->at(0).f32(), want, kTol);
          ++cases;
        }
  }
  EXPECT_EQ(cases, 64);
}

TEST(NnGemm, FusedActivationAndDefaults) {
  Shape as = {17, 3}, bs = {3, 1};
  std::vector<float> a = Rand(as, 71), b = Rand(bs, 72);
  for (fb::Activation act : {fb::Activation::Relu, fb::Activation::Clip, fb::Activation::HardSwish}) {
    fb::GemmParamsT p;
    p.activation = act;
    p.activation_min = -0.2f;
    p.activation_max = 0.25f;
    auto out = OpTest(fb::OpType::Gemm).input("a", as, a).input("b", bs, b).params(p).run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want;
    for (int64_t i = 0; i < 17; ++i) {
      double s = 0;
      for (int64_t k = 0; k < 3; ++k) s += static_cast<double>(a[i * 3 + k]) * b[k];
      want.push_back(RefAct(act, s, -0.2f, 0.25f, 0.01f));
    }
    ExpectNear(out->at(0).f32(), want, kTol, fb::EnumNameActivation(act));
  }
  auto plain = OpTest(fb::OpType::Gemm).input("a", as, a).input("b", bs, b).run(Threads3());  // no params: alpha = beta = 1
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  Shape unused;
  ExpectNear(plain->at(0).f32(), NaiveMatMul(a, as, b, bs, &unused), kTol, "no params");
}

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

void RunPoolCase(fb::OpType type, PoolCase c, bool indices, const std::string& what) {
  SCOPED_TRACE(what);
  const bool one_d = c.xs.size() == 3;
  const int64_t N = c.xs[0], C = c.xs[1], H = one_d ? 1 : c.xs[2], W = c.xs.back();
  std::vector<float> x = Rand(c.xs, 81);
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
  auto out = OpTest(type).input("x", c.xs, x).params(p).outputs(indices ? 2 : 1).run(Threads3());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  Shape ws = one_d ? Shape{N, C, ow} : Shape{N, C, oh, ow};
  EXPECT_EQ(out->at(0).shape, ws);
  ExpectNear(out->at(0).f32(), want, kTol);
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
  RunPoolCase(fb::OpType::MaxPool, PoolCases()[1].second, false, "values only");
}

TEST(NnPool, AveragePool) {
  for (bool include : {false, true})
    for (auto [name, c] : PoolCases()) {
      c.include_pad = include;
      RunPoolCase(fb::OpType::AveragePool, c, false, name + (include ? " count_include_pad" : ""));
    }
}

TEST(NnPool, GlobalPools) {
  for (Shape s : std::vector<Shape>{{2, 7, 5, 9}, {1, 17, 1, 1}, {2, 3, 5}, {1, 3, 2, 3, 4}}) {
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
  ASSIGN_OR_RETURN(auto bytes, b.finish());
  ASSIGN_OR_RETURN(auto interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  ASSIGN_OR_RETURN(Session * session, interp->createSession(Threads3()));
  auto host = Tensor::wrap(c.xs, fb::DataType::F32, const_cast<float*>(x.data()));
  RETURN_IF_ERROR(session->getInput("x")->copyFromHostTensor(*host));
  RETURN_IF_ERROR(session->run());
  Tensor* t = session->getOutput("y");
  test::OpResult r;
  r.shape = t->shape();
  r.dtype = t->dtype();
  r.bytes.resize(t->byteSize());
  auto out = Tensor::wrap(t->shape(), t->dtype(), r.bytes.data());
  RETURN_IF_ERROR(t->copyToHostTensor(out.get()));
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

// ---------------------------------------------------------------- normalizations

TEST(NnNorm, BatchNormalization) {
  for (Shape s : std::vector<Shape>{{2, 7, 5, 9}, {3, 17}, {1, 1, 5}, {2, 3, 1, 1}}) {
    SCOPED_TRACE(Str(s));
    const int64_t C = s[1], inner = Numel(s) / (s[0] * C);
    std::vector<float> x = Rand(s, 101), scale = Rand({C}, 102), bias = Rand({C}, 103), mean = Rand({C}, 104),
                       var = Rand({C}, 105);
    for (float& v : var) v = std::fabs(v) + 0.05f;
    fb::NormParamsT p;
    p.epsilon = 1e-3f;
    auto out = OpTest(fb::OpType::BatchNormalization)
                   .input("x", s, x)
                   .constant("scale", {C}, scale)
                   .constant("b", {C}, bias)
                   .constant("mean", {C}, mean)
                   .input("var", {C}, var)
                   .params(p)
                   .run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want(x.size());
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t at = (n * C + c) * inner + i;
          want[at] = static_cast<float>((x[at] - mean[c]) / std::sqrt(static_cast<double>(var[c]) + 1e-3) * scale[c] +
                                        bias[c]);
        }
    EXPECT_EQ(out->at(0).shape, s);
    ExpectNear(out->at(0).f32(), want, kTol);
  }
}

TEST(NnNorm, InstanceNormalization) {
  for (Shape s : std::vector<Shape>{{2, 3, 5, 9}, {1, 17, 9}, {3, 7, 1, 5}, {1, 1, 1, 1}}) {
    SCOPED_TRACE(Str(s));
    const int64_t C = s[1], inner = Numel(s) / (s[0] * C);
    std::vector<float> x = Rand(s, 111), scale = Rand({C}, 112), bias = Rand({C}, 113);
    for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * 3 + 2;  // a mean well away from 0
    auto out = OpTest(fb::OpType::InstanceNormalization)
                   .input("x", s, x)
                   .constant("scale", {C}, scale)
                   .constant("b", {C}, bias)
                   .run(Threads3());  // default epsilon 1e-5
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want(x.size());
    for (int64_t p = 0; p < s[0] * C; ++p) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; ++i) mean += x[p * inner + i];
      mean /= inner;
      for (int64_t i = 0; i < inner; ++i) var += (x[p * inner + i] - mean) * (x[p * inner + i] - mean);
      var /= inner;
      for (int64_t i = 0; i < inner; ++i)
        want[p * inner + i] =
            static_cast<float>((x[p * inner + i] - mean) / std::sqrt(var + 1e-5) * scale[p % C] + bias[p % C]);
    }
    ExpectNear(out->at(0).f32(), want, kTol);
  }
}

TEST(NnNorm, LayerNormalization) {
  struct Case {
    Shape x;
    int axis;
    Shape scale, bias;  // bias empty: not given
    int outputs;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 17}, -1, {17}, {17}, 1},
                                         {{2, 3, 5}, 1, {3, 5}, {5}, 3},
                                         {{7, 9}, -1, {9}, {}, 3},
                                         {{2, 3, 5}, 1, {1, 5}, {3, 1}, 2},
                                         {{3, 1}, 0, {3, 1}, {1}, 1},
                                         {{5}, -1, {5}, {5}, 3},
                                         {{64, 80}, -1, {80}, {80}, 3}}) {
    SCOPED_TRACE(Str(c.x) + " axis " + std::to_string(c.axis));
    const int rank = static_cast<int>(c.x.size()), axis = c.axis < 0 ? c.axis + rank : c.axis;
    const Shape norm(c.x.begin() + axis, c.x.end());
    const int64_t inner = Numel(norm), outer = Numel(c.x) / inner;
    std::vector<float> x = Rand(c.x, 121), scale = Rand(c.scale, 122), bias = Rand(c.bias, 123);
    // Index of normalized element j into a tensor of shape s broadcast to `norm`.
    auto at = [&](const Shape& s, int64_t j) {
      Shape full(norm.size() - s.size(), 1);
      full.insert(full.end(), s.begin(), s.end());
      int64_t idx = 0;
      for (size_t d = 0, rem_div = static_cast<size_t>(inner); d < norm.size(); ++d) {
        rem_div /= static_cast<size_t>(norm[d]);
        int64_t k = j / static_cast<int64_t>(rem_div) % norm[d];
        idx = idx * full[d] + (full[d] == 1 ? 0 : k);
      }
      return idx;
    };
    std::vector<float> want(x.size()), want_mean, want_inv;
    for (int64_t r = 0; r < outer; ++r) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < inner; ++j) mean += x[r * inner + j];
      mean /= inner;
      for (int64_t j = 0; j < inner; ++j) var += (x[r * inner + j] - mean) * (x[r * inner + j] - mean);
      double inv = 1 / std::sqrt(var / inner + 1e-5);
      for (int64_t j = 0; j < inner; ++j)
        want[r * inner + j] = static_cast<float>((x[r * inner + j] - mean) * inv * scale[at(c.scale, j)] +
                                                 (c.bias.empty() ? 0 : bias[at(c.bias, j)]));
      want_mean.push_back(static_cast<float>(mean));
      want_inv.push_back(static_cast<float>(inv));
    }
    fb::NormParamsT p;
    p.axis = c.axis;
    OpTest t(fb::OpType::LayerNormalization);
    t.input("x", c.x, x).constant("scale", c.scale, scale);
    if (!c.bias.empty()) t.constant("b", c.bias, bias);
    auto out = t.params(p).outputs(c.outputs).run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, c.x);
    ExpectNear(out->at(0).f32(), want, kTol, "Y");
    Shape stat = c.x;
    for (int d = axis; d < rank; ++d) stat[d] = 1;
    if (c.outputs > 1) {
      EXPECT_EQ(out->at(1).shape, stat);
      ExpectNear(out->at(1).f32(), want_mean, kTol, "Mean");
    }
    if (c.outputs > 2) {
      EXPECT_EQ(out->at(2).shape, stat);
      ExpectNear(out->at(2).f32(), want_inv, kTol, "InvStdDev");
    }
  }
}

// ---------------------------------------------------------------- Softmax

TEST(NnSoftmax, SoftmaxAndLogSoftmaxAlongEachAxis) {
  for (Shape s : std::vector<Shape>{{3, 7, 5}, {17, 1, 9}, {1, 300}, {2, 3, 1, 300}})
    for (int axis = -static_cast<int>(s.size()); axis < static_cast<int>(s.size()); ++axis)
      for (fb::OpType type : {fb::OpType::Softmax, fb::OpType::LogSoftmax}) {
        SCOPED_TRACE(std::string(fb::EnumNameOpType(type)) + " " + Str(s) + " axis " + std::to_string(axis));
        std::vector<float> x = Rand(s, 131);
        for (float& v : x) v *= 40;  // large logits: needs the max subtraction
        const int a = axis < 0 ? axis + static_cast<int>(s.size()) : axis;
        int64_t outer = 1, inner = 1;
        for (int d = 0; d < a; ++d) outer *= s[d];
        for (size_t d = static_cast<size_t>(a) + 1; d < s.size(); ++d) inner *= s[d];
        const int64_t n = s[a];
        std::vector<float> want(x.size());
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < n; ++k) mx = std::max<double>(mx, x[(o * n + k) * inner + i]);
            for (int64_t k = 0; k < n; ++k) sum += std::exp(x[(o * n + k) * inner + i] - mx);
            for (int64_t k = 0; k < n; ++k) {
              double v = x[(o * n + k) * inner + i] - mx;
              want[(o * n + k) * inner + i] =
                  static_cast<float>(type == fb::OpType::Softmax ? std::exp(v) / sum : v - std::log(sum));
            }
          }
        fb::AxisParamsT p;
        p.axis = axis;
        auto out = OpTest(type).input("x", s, x).params(p).run(Threads3());
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        EXPECT_EQ(out->at(0).shape, s);
        ExpectNear(out->at(0).f32(), want, kTol);
      }
}

// ---------------------------------------------------------------- errors

TEST(NnErrors, BadShapesNameTheOp) {
  auto conv = OpTest(fb::OpType::Conv, "conv_bad")
                  .input("x", {1, 5, 7, 7}, Rand({1, 5, 7, 7}, 1))
                  .constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2))
                  .run(Threads3());
  ASSERT_FALSE(conv.ok());
  EXPECT_NE(conv.status().message().find("op 0 'conv_bad' (Conv)"), std::string::npos) << conv.status().message();
  EXPECT_NE(conv.status().message().find("Conv: input has 5 channels but weights expect 3 (group 1)"),
            std::string::npos)
      << conv.status().message();

  auto big = OpTest(fb::OpType::Conv, "conv_big")
                 .input("x", {1, 3, 2, 7}, Rand({1, 3, 2, 7}, 1))
                 .constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2))
                 .run(Threads3());
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("larger than the padded input"), std::string::npos) << big.status().message();

  auto rank = OpTest(fb::OpType::Conv).input("x", {1, 3, 7}, Rand({1, 3, 7}, 1)).constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2)).run(Threads3());
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("rank"), std::string::npos) << rank.status().message();

  auto mm = OpTest(fb::OpType::MatMul, "mm").input("a", {2, 3}, Rand({2, 3}, 1)).input("b", {4, 5}, Rand({4, 5}, 2)).run(Threads3());
  ASSERT_FALSE(mm.ok());
  EXPECT_NE(mm.status().message().find("MatMul: A [2,3] and B [4,5]: inner dims 3 and 4 differ"), std::string::npos)
      << mm.status().message();

  auto bn = OpTest(fb::OpType::BatchNormalization)
                .input("x", {2, 3, 4}, Rand({2, 3, 4}, 1))
                .constant("s", {3}, Rand({3}, 2))
                .constant("b", {3}, Rand({3}, 3))
                .constant("m", {4}, Rand({4}, 4))
                .constant("v", {3}, Rand({3}, 5))
                .run(Threads3());
  ASSERT_FALSE(bn.ok());
  EXPECT_NE(bn.status().message().find("BatchNormalization: mean (input 3) must have shape [3], has [4]"),
            std::string::npos)
      << bn.status().message();
}

TEST(NnErrors, BadParamsNameTheProblem) {
  auto expect_error = [](const StatusOr<std::vector<test::OpResult>>& r, const std::string& needle) {
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  {
    fb::ConvParamsT p;
    p.kernel_shape = {3, 2};
    expect_error(OpTest(fb::OpType::Conv)
                     .input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1))
                     .constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2))
                     .params(p)
                     .run(Threads3()),
                 "Conv: kernel_shape [3,2] does not match the weights' spatial dims [3,3]");
  }
  {
    fb::ConvParamsT p;
    p.group = 2;
    expect_error(OpTest(fb::OpType::Conv)
                     .input("x", {1, 6, 7, 7}, Rand({1, 6, 7, 7}, 1))
                     .constant("w", {5, 3, 3, 3}, Rand({5, 3, 3, 3}, 2))
                     .params(p)
                     .run(Threads3()),
                 "Conv: 5 output channels (weights [5,3,3,3]) do not divide into 2 groups");
  }
  {
    fb::ConvParamsT p;
    p.strides = {2, 2, 2};
    expect_error(OpTest(fb::OpType::Conv)
                     .input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1))
                     .constant("w", {4, 3, 3, 3}, Rand({4, 3, 3, 3}, 2))
                     .params(p)
                     .run(Threads3()),
                 "Conv: strides has 3 entries, expected 2");
  }
  {
    fb::ConvParamsT p;
    p.strides = {2, 2};
    p.output_padding = {2, 0};
    expect_error(OpTest(fb::OpType::ConvTranspose)
                     .input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1))
                     .constant("w", {3, 4, 3, 3}, Rand({3, 4, 3, 3}, 2))
                     .params(p)
                     .run(Threads3()),
                 "ConvTranspose: output_padding[0] = 2 must be smaller than the stride (2)");
  }
  {
    fb::PoolParamsT p;
    p.kernel_shape = {2, 2};
    p.pads = {2, 0, 0, 0};
    expect_error(OpTest(fb::OpType::MaxPool).input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1)).params(p).run(Threads3()),
                 "MaxPool: pads 2+0 on spatial axis 0 must be smaller than the kernel extent 2");
    fb::PoolParamsT none;
    expect_error(
        OpTest(fb::OpType::AveragePool).input("x", {1, 3, 7, 7}, Rand({1, 3, 7, 7}, 1)).params(none).run(Threads3()),
        "kernel_shape is required");  // the model verifier catches it before shape inference
  }
  {
    fb::GemmParamsT p;
    p.trans_b = true;
    expect_error(OpTest(fb::OpType::Gemm)
                     .input("a", {2, 3}, Rand({2, 3}, 1))
                     .input("b", {3, 4}, Rand({3, 4}, 2))
                     .params(p)
                     .run(Threads3()),
                 "Gemm: A [2,3] and B [3,4] (transposed): inner dims 3 and 4 differ");
    expect_error(OpTest(fb::OpType::Gemm)
                     .input("a", {2, 3}, Rand({2, 3}, 1))
                     .input("b", {3, 4}, Rand({3, 4}, 2))
                     .input("c", {3, 4}, Rand({3, 4}, 3))
                     .run(Threads3()),
                 "Gemm: C [3,4] does not broadcast to [2,4]");
  }
  {
    fb::NormParamsT p;
    p.axis = 3;
    expect_error(OpTest(fb::OpType::LayerNormalization)
                     .input("x", {2, 3, 5}, Rand({2, 3, 5}, 1))
                     .constant("s", {5}, Rand({5}, 2))
                     .params(p)
                     .run(Threads3()),
                 "LayerNormalization: axis 3 out of range for rank 3");
    p.axis = 1;
    expect_error(OpTest(fb::OpType::LayerNormalization)
                     .input("x", {2, 3, 5}, Rand({2, 3, 5}, 1))
                     .constant("s", {2, 5}, Rand({2, 5}, 2))
                     .params(p)
                     .run(Threads3()),
                 "LayerNormalization: scale [2,5] does not broadcast to the normalized shape [3,5]");
  }
  {
    fb::AxisParamsT p;
    p.axis = -3;
    expect_error(OpTest(fb::OpType::Softmax).input("x", {2, 3}, Rand({2, 3}, 1)).params(p).run(Threads3()),
                 "Softmax: axis -3 out of range for rank 2");
  }
}

TEST(NnErrors, NonF32IsUnsupported) {
  std::vector<int64_t> v = {1, 2, 3, 4, 5, 6};
  fb::AxisParamsT p;
  p.axis = 1;
  auto out = OpTest(fb::OpType::Softmax).inputI64("x", {2, 3}, v).params(p).run(Threads3());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnsupported) << out.status().ToString();
  EXPECT_NE(out.status().message().find("Softmax"), std::string::npos) << out.status().message();
  EXPECT_NE(out.status().message().find("i64"), std::string::npos) << out.status().message();
}

}  // namespace
}  // namespace kiln
