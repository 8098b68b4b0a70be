// ConvTranspose on the host (nn_conv_transpose.cpp) against a naive
// reference (plain nested loops, double accumulation, no code shared with
// the kernel): strides, output padding, groups, output_shape and auto_pad,
// 1-D, and shapes spanning several GEMM blocks of input rows.
#include <algorithm>

#include "ops/nn_test_util.h"

namespace kiln {
namespace {

using namespace nn_test;

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

// The GEMM + col2im runs a block of input rows at a time (about 512 KiB of
// col): these shapes span several blocks. Stride = kernel without pads (each
// output takes one tap: col2im copies, bias and activation on the GEMM's
// stores) and overlapping taps (col2im adds across blocks); constant and
// input weights (packed once, or transposed by the GEMM each run).
TEST(NnConvTranspose, BlocksOfRowsOneTapAndOverlapping) {
  struct Case {
    Shape xs, ws;
    int64_t group, s, pad;
    bool bias, const_w;
    fb::Activation act;
  };
  const std::vector<Case> cases = {
      {{1, 24, 40, 40}, {24, 24, 2, 2}, 1, 2, 0, true, true, fb::Activation::Relu},      // the text detectors' upsampling
      {{2, 24, 37, 33}, {24, 1, 2, 2}, 1, 2, 0, true, true, fb::Activation::HardSwish},  // to one channel, 2 batches
      {{1, 6, 30, 29}, {6, 2, 3, 3}, 2, 3, 0, false, false, fb::Activation::None},       // 3x3 stride 3, groups, input w
      {{1, 5, 9, 11}, {5, 4, 1, 1}, 1, 1, 0, true, true, fb::Activation::None},          // 1x1: a pointwise product
      {{1, 8, 48, 48}, {8, 16, 4, 4}, 1, 2, 1, true, true, fb::Activation::Relu},        // DCGAN's 4x4 stride 2
      {{1, 8, 50, 45}, {8, 16, 4, 4}, 1, 2, 1, false, false, fb::Activation::HardSwish},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(Str(c.xs) + " * " + Str(c.ws) + " stride " + std::to_string(c.s));
    std::vector<float> x = Rand(c.xs, 51), w = Rand(c.ws, 52);
    const int64_t M = c.ws[1] * c.group;
    std::vector<float> b = c.bias ? Rand({M}, 53) : std::vector<float>();
    const int64_t oh = c.s * (c.xs[2] - 1) + c.ws[2] - 2 * c.pad, ow = c.s * (c.xs[3] - 1) + c.ws[3] - 2 * c.pad;
    fb::ConvParamsT p;
    p.group = static_cast<int32_t>(c.group);
    p.strides = {static_cast<int32_t>(c.s), static_cast<int32_t>(c.s)};
    const int32_t pd = static_cast<int32_t>(c.pad);
    p.pads = {pd, pd, pd, pd};
    p.activation = c.act;
    OpTest t(fb::OpType::ConvTranspose);
    t.input("x", c.xs, x);
    if (c.const_w)
      t.constant("w", c.ws, w);
    else
      t.input("w", c.ws, w);
    if (c.bias) t.constant("b", {M}, b);
    auto out = t.params(p).run(Threads3());
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, (Shape{c.xs[0], M, oh, ow}));
    std::vector<float> want = NaiveConvTranspose2D(x, c.xs, w, c.ws, b, c.group, c.s, c.s, 1, 1, c.pad, c.pad, oh, ow);
    for (float& v : want) {
      if (c.act == fb::Activation::Relu) v = v > 0 ? v : 0;
      if (c.act == fb::Activation::HardSwish) v = v * std::min(std::max(v + 3.f, 0.f), 6.f) / 6.f;
    }
    ExpectNear(out->at(0).f32(), want, kTol);
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

}  // namespace
}  // namespace kiln
