// The 2-D convolution case of the Conv tests (nn_conv_test.cpp,
// nn_winograd_test.cpp): the case, its naive reference (nested loops,
// double accumulation, no code shared with the kernels) and the run that
// compares them.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "half.h"
#include "ops/nn_test_util.h"

namespace kiln::nn_test {

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
  float tol = kTol;
  bool half_weights = false;  // run at precision low: the reference takes the weights rounded to fp16
  bool residual = false;      // a fourth input r of the output's shape: y = act(conv + bias + r)
};

// out[n, m, oh, ow] = bias[m] + sum over the group's channels and the kernel of x * w.
inline std::vector<float> NaiveConv2D(const ConvCase& k, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& bias, int64_t oh_n, int64_t ow_n, int64_t pt, int64_t pl,
                               const std::vector<float>& residual = {}) {
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
          const size_t at = static_cast<size_t>(((n * k.m + m) * oh_n + oh) * ow_n + ow);
          if (!residual.empty()) s += residual[at];
          y[at] = RefAct(k.act, s, k.act_min, k.act_max, k.act_alpha);
        }
  return y;
}

inline void RunConvCase(const ConvCase& k, const std::string& what) {
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
  const Shape ys = k.one_d ? Shape{k.n, k.m, ow} : Shape{k.n, k.m, oh, ow};
  std::vector<float> r;
  if (k.residual) {
    r = Rand(ys, 14);
    if (!k.bias) t.missing();
    t.input("r", ys, r);
  }
  ScheduleConfig config = Threads3();
  if (k.half_weights) {
    config.precision = Precision::kLow;
    for (float& v : w) v = HalfToFloat(FloatToHalf(v));  // the model keeps fp32 weights; the reference rounds
  }
  auto out = t.params(p).run(config);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  Shape want_shape = k.one_d ? Shape{k.n, k.m, ow} : Shape{k.n, k.m, oh, ow};
  EXPECT_EQ(out->at(0).shape, want_shape);
  ExpectNear(out->at(0).f32(), NaiveConv2D(k, x, w, b, oh, ow, pt, pl, r), k.tol, what);
}

}  // namespace kiln::nn_test
