// Conv, MatMul and Gemm on the host against naive references (plain nested
// loops, double accumulation, no code shared with the kernels);
// ConvTranspose in nn_conv_transpose_test.cpp, Winograd in
// nn_winograd_test.cpp.
#include "ops/conv_test_util.h"

namespace kiln {
namespace {

using namespace nn_test;

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

// Few input channels on planes wider than a micro-kernel panel (32 columns
// on AVX-512), as in every CNN's first layer: whole panel rows inside one
// input row take the fixed-width copy of the implicit im2col (nn_conv.cpp
// CopyPanelRow), the others the general one, at strides 1, 2 and 3.
TEST(NnConv, FirstLayerWidePlanes) {
  for (int64_t s : {1, 2, 3}) {
    ConvCase k{1, 3, 41, 9 + 37 * s, 16, 7, 7};
    k.sh = k.sw = s;
    k.pt = k.pl = k.pb = k.pr = 3;
    k.bias = true;
    k.act = fb::Activation::Relu;
    RunConvCase(k, "3->16 7x7 stride " + std::to_string(s) + " on 41x" + std::to_string(k.w));
    ConvCase t{2, 3, 20, 71, 24, 3, 3};
    t.sh = t.sw = s;
    t.pt = t.pl = t.pb = t.pr = 1;
    RunConvCase(t, "3->24 3x3 stride " + std::to_string(s) + " on 20x71, batch 2");
  }
}

// The direct kernel for 1 to 4 input channels (nn_conv_narrow.cpp; 5x5 and
// up, or up to 64 outputs; rows of 77 take the stride-2 column split 16 at
// a time, then one by one): output channels in blocks (a partial last
// block), rows in bands of 6 taken 3, 2 or 1 at a time (bands ending in
// each), columns in 16s (rows under 16, and a last 16 overlapping the one
// before), strides 1 and 2 per axis,
// asymmetric pads, a clamp on the stores or an activation on each row,
// batches, weights as fp16 holds them at precision low.
TEST(NnConv, NarrowInputChannels) {
  struct Shape2 {
    int64_t c, h, w, m, k, sh, sw, pt, pl, pb, pr;
  };
  const Shape2 shapes[] = {
      {3, 29, 37, 16, 3, 2, 2, 1, 1, 1, 1},  // MobileNet's first layer, small
      {3, 23, 21, 64, 7, 2, 2, 3, 3, 3, 3},  // ResNet's
      {1, 9, 40, 5, 5, 1, 1, 2, 0, 1, 2},    // grey, asymmetric pads
      {4, 10, 11, 12, 2, 2, 1, 0, 0, 1, 0},  // 2x2, stride 2 by 1
      {2, 6, 17, 40, 5, 1, 2, 2, 2, 2, 2},
      {3, 13, 77, 32, 3, 2, 2, 1, 1, 1, 1},  // MobileNetV2's and EfficientNet's first layer
      {3, 19, 35, 64, 3, 2, 2, 0, 0, 0, 0},  // SqueezeNet's, unpadded
  };
  int i = 0;
  for (const Shape2& s : shapes) {
    ConvCase k{1 + i % 2, s.c, s.h, s.w, s.m, s.k, s.k};
    k.sh = s.sh, k.sw = s.sw, k.pt = s.pt, k.pl = s.pl, k.pb = s.pb, k.pr = s.pr;
    k.bias = i != 2;
    k.act = i == 0 ? fb::Activation::HardSwish : i == 1 ? fb::Activation::Relu6 : fb::Activation::None;
    if (k.act == fb::Activation::Relu6) k.act_min = 0, k.act_max = 6;
    k.half_weights = i == 4;
    if (k.half_weights) k.tol = 1e-3f;
    RunConvCase(k, std::to_string(s.c) + "->" + std::to_string(s.m) + " " + std::to_string(s.k) + "x" +
                       std::to_string(s.k) + " on " + std::to_string(s.h) + "x" + std::to_string(s.w));
    ++i;
  }
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
                           fb::Activation::Sigmoid, fb::Activation::HardSwish, fb::Activation::Gelu,
                           fb::Activation::Silu}) {
    ConvCase k{1, 3, 5, 5, 7, 3, 3};
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    k.act = a;
    if (a == fb::Activation::Clip) k.act_min = -0.3f, k.act_max = 0.4f;
    if (a == fb::Activation::LeakyRelu) k.act_alpha = 0.2f;
    RunConvCase(k, std::string("activation ") + fb::EnumNameActivation(a));
    // Depthwise, strides 1 and 2 (the flat-plane kernel applies it a plane at a time).
    for (int64_t s : {1, 2}) {
      ConvCase d{2, 6, 9, 11, 6, 3, 3};
      d.group = 6;
      d.sh = d.sw = s;
      d.pt = d.pl = d.pb = d.pr = 1;
      d.bias = true;
      d.act = a;
      d.act_min = k.act_min, d.act_max = k.act_max, d.act_alpha = k.act_alpha;
      RunConvCase(d, std::string("depthwise stride ") + std::to_string(s) + " activation " + fb::EnumNameActivation(a));
    }
  }
}

// The depthwise row kernel (3-wide rows fused over the columns every tap
// reaches, borders tap by tap) and the pointwise GEMM with its bias/clamp
// epilogue, on rows longer than a vector and channel counts off the tile.
TEST(NnConv, DepthwiseAndPointwiseFastPaths) {
  std::vector<std::pair<std::string, ConvCase>> cases;
  auto add = [&](const std::string& name, ConvCase k) { cases.emplace_back(name, k); };
  for (int64_t s : {1, 2, 3}) {
    ConvCase k{2, 17, 11, 37, 17, 3, 3};
    k.group = 17;
    k.sh = k.sw = s;
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    k.act = fb::Activation::Relu6;
    add("depthwise 3x3 relu6 stride " + std::to_string(s), k);
  }
  {
    ConvCase k{1, 7, 9, 33, 14, 3, 3};
    k.group = 7;
    k.dh = k.dw = 2;
    k.pt = k.pl = 2, k.pb = 1, k.pr = 0;
    add("depthwise multiplier 2, dilation 2, asymmetric pads", k);
  }
  {
    ConvCase k{1, 3, 17, 35, 3, 5, 5};
    k.group = 3;
    k.sh = k.sw = 2;
    k.pt = k.pl = k.pb = k.pr = 2;
    k.bias = true;
    k.act = fb::Activation::Sigmoid;
    add("depthwise 5x5 stride 2, unfused activation", k);
  }
  {
    ConvCase k{1, 1, 3, 3, 1, 3, 3};
    k.group = 1;
    add("one channel 3x3 on 3x3, no padding", k);
  }
  {
    ConvCase k{2, 17, 19, 23, 13, 1, 1};
    k.bias = true;
    k.act = fb::Activation::Relu;
    add("pointwise 17->13 relu", k);
  }
  {
    ConvCase k{1, 3, 1, 1, 1, 1, 1};
    k.bias = true;
    k.act = fb::Activation::Clip;
    k.act_min = -0.1f, k.act_max = 0.2f;
    add("pointwise 3->1 on 1x1, clip", k);
  }
  {
    ConvCase k{1, 7, 13, 13, 33, 3, 3};
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    k.act = fb::Activation::Relu6;
    add("im2col 7->33 relu6", k);
  }
  for (auto& [name, k] : cases) RunConvCase(k, name);
}

// Strided convs of constant weights whose output rows are wide enough
// (the grid's extra columns at most an eighth) run through phase planes
// (nn_conv.cpp, PhaseGeometry): strides 2 and 3 and mixed, dilations,
// asymmetric, oversized and automatic pads, groups, batches, fused and
// unfused activations, fp16 weights, planes narrower and wider than a panel.
TEST(NnConv, StridedThroughPhasePlanes) {
  std::vector<std::pair<std::string, ConvCase>> cases;
  auto add = [&](const std::string& name, ConvCase k) { cases.emplace_back(name, k); };
  for (int64_t hw : {18, 30, 57, 71}) {
    ConvCase k{1, 16, hw, hw, 24, 3, 3};
    k.sh = k.sw = 2;
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    k.act = fb::Activation::Relu;
    add("3x3 s2 16->24 on " + std::to_string(hw), k);
  }
  {
    ConvCase k{2, 8, 40, 70, 12, 5, 5};
    k.group = 2;
    k.sh = k.sw = 3;
    k.pt = 2, k.pl = 1, k.pb = 0, k.pr = 3;
    k.bias = true;
    k.act = fb::Activation::LeakyRelu;
    k.act_alpha = 0.2f;
    add("5x5 s3 groups 2 batch 2 asymmetric pads, leaky relu", k);
  }
  {
    ConvCase k{1, 6, 33, 41, 10, 3, 2};
    k.sh = 2, k.sw = 1;
    k.dh = 2, k.dw = 3;
    k.pt = 3, k.pl = 0, k.pb = 1, k.pr = 2;
    add("3x2 strides 2,1 dilations 2,3", k);
  }
  {
    ConvCase k{1, 6, 29, 64, 9, 1, 3};
    k.sh = 1, k.sw = 2;
    k.pt = 0, k.pl = 4, k.pb = 0, k.pr = 5;
    k.bias = true;
    add("1x3 strides 1,2, pads larger than the kernel", k);
  }
  for (fb::AutoPad ap : {fb::AutoPad::SameUpper, fb::AutoPad::SameLower, fb::AutoPad::Valid}) {
    ConvCase k{1, 7, 36, 35, 11, 4, 4};
    k.sh = k.sw = 2;
    k.auto_pad = ap;
    add(std::string("4x4 s2 ") + fb::EnumNameAutoPad(ap), k);
  }
  {
    ConvCase k{1, 12, 50, 50, 20, 3, 3};
    k.sh = k.sw = 2;
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    k.half_weights = true;
    add("3x3 s2 fp16 weights", k);
  }
  for (auto& [name, k] : cases) RunConvCase(k, name);
}

// A fused residual (fuse_residual's fourth input) on every path: added
// before the activation, by the GEMM's stores (implicit, phased, pointwise,
// strided 1x1), as the transposed product moves its channels back (both
// ways it splits over threads), or after the others (Winograd, the
// first-layer kernel, depthwise), with clamp and other activations, with
// and without a bias, batch 2.
TEST(NnConv, FusedResidualOnEveryPath) {
  std::vector<std::pair<std::string, ConvCase>> cases;
  auto add = [&](const std::string& name, ConvCase k) {
    k.residual = true;
    k.bias = name.find("no bias") == std::string::npos;
    k.pt = k.pl = k.pb = k.pr = k.kh / 2;
    cases.emplace_back(name, k);
    k.act = fb::Activation::Relu;
    cases.emplace_back(name + ", relu", k);
    k.act = fb::Activation::LeakyRelu;
    k.act_alpha = 0.2f;
    cases.emplace_back(name + ", leaky relu", k);
  };
  add("implicit 3x3 5->24 on 9x11", {2, 5, 9, 11, 24, 3, 3});
  ConvCase s2{1, 8, 30, 30, 16, 3, 3};
  s2.sh = s2.sw = 2;
  add("phased 3x3 s2", s2);
  add("pointwise 16->40 no bias", {1, 16, 12, 12, 40, 1, 1});
  add("winograd 3x3 16->32 on 14x14", {2, 16, 14, 14, 32, 3, 3});
  add("transposed 3x3 64->128 on 7x7", {1, 64, 7, 7, 128, 3, 3});
  // 6 panels of channels: each thread adds r to those it moves back.
  add("transposed 1x1 960->192 on 7x7, split by channels", {1, 960, 7, 7, 192, 1, 1});
  add("first layer 7x7 3->16", {1, 3, 20, 20, 16, 7, 7});
  ConvCase dw{1, 12, 10, 10, 12, 3, 3};
  dw.group = 12;
  add("depthwise", dw);
  ConvCase sub{1, 16, 14, 14, 24, 1, 1};
  sub.sh = sub.sw = 2;
  add("strided 1x1 no bias", sub);
  for (auto& [name, k] : cases) RunConvCase(k, name);
}

// Small output planes run as y^T = x^T w^T (the plane on the micro-kernel's
// short side) and are transposed back: 7x7 planes with many input channels
// take that path on the AVX-512 and AVX2 micro-kernels; 16 channels do not
// (a control).
TEST(NnConv, SmallPlanesTransposedProduct) {
  std::vector<std::pair<std::string, ConvCase>> cases;
  auto add = [&](const std::string& name, ConvCase k) { cases.emplace_back(name, k); };
  {
    ConvCase k{2, 960, 7, 7, 132, 1, 1};
    k.bias = true;
    k.act = fb::Activation::Relu;
    add("pointwise 960->132 on 7x7, batch 2, relu", k);
  }
  {
    ConvCase k{1, 64, 13, 13, 96, 3, 3};
    k.sh = k.sw = 2;
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    k.act = fb::Activation::Clip;
    k.act_min = -0.5f, k.act_max = 0.5f;
    add("3x3 stride 2 64->96 to 7x7, clip", k);
  }
  {
    ConvCase k{1, 24, 7, 7, 64, 3, 3};
    k.act = fb::Activation::LeakyRelu;
    add("3x3 24->64 to 5x5 unpadded, leaky relu after", k);
  }
  {
    ConvCase k{1, 16, 7, 7, 40, 1, 1};
    add("pointwise 16->40 on 7x7 (not transposed)", k);
  }
  for (auto& [name, k] : cases) RunConvCase(k, name);
}

// Precision low: the host keeps Conv's packed GEMM panels as fp16, the
// weights themselves, so against a reference with fp16-rounded weights the
// result is as close as at full precision.
TEST(NnConv, HalfWeightsAtPrecisionLow) {
  ConvCase col{1, 7, 13, 13, 33, 5, 5};
  col.sh = col.sw = 2;
  col.pt = col.pl = col.pb = col.pr = 2;
  col.half_weights = true;
  RunConvCase(col, "im2col 5x5 stride 2, 7->33");
  ConvCase point{1, 40, 9, 9, 70, 1, 1};
  point.act = fb::Activation::Relu;
  point.half_weights = true;
  RunConvCase(point, "pointwise 40->70");
}

// The padded flat depthwise kernel (nn_depthwise.cpp): planes from 1x1 to
// wider than two vectors, strides 1 and 2 on either axis (phase planes),
// asymmetric and oversized pads, dilation, kernels 3 and 5, a channel
// multiplier, batches and fused clamps.
TEST(NnConv, DepthwiseFlatPlanes) {
  std::vector<std::pair<std::string, ConvCase>> cases;
  auto add = [&](const std::string& name, ConvCase k) { cases.emplace_back(name, k); };
  const int64_t sizes[][2] = {{1, 1}, {7, 7}, {14, 14}, {15, 17}, {5, 37}, {3, 70}};
  for (const auto& hw : sizes)
    for (int64_t kern : {3, 5})
      for (int64_t s : {1, 2}) {
        ConvCase k{2, 5, hw[0], hw[1], 5, kern, kern};
        k.group = 5;
        k.sh = k.sw = s;
        k.pt = k.pl = k.pb = k.pr = kern / 2;
        k.bias = true;
        k.act = s == 1 ? fb::Activation::Relu6 : fb::Activation::None;
        add(std::to_string(hw[0]) + "x" + std::to_string(hw[1]) + " k" + std::to_string(kern) + " s" +
                std::to_string(s),
            k);
      }
  for (int64_t sh : {1, 2})
    for (int64_t sw : {1, 2}) {
      ConvCase k{1, 3, 15, 17, 3, 3, 5};
      k.group = 3;
      k.sh = sh, k.sw = sw;
      k.pt = 0, k.pl = 1, k.pb = 2, k.pr = 3;
      k.bias = true;
      k.act = fb::Activation::Clip;
      k.act_min = -0.2f, k.act_max = 0.3f;
      add("15x17 k3x5 asymmetric pads, strides " + std::to_string(sh) + "," + std::to_string(sw), k);
    }
  for (int64_t s : {1, 2}) {
    ConvCase k{1, 4, 14, 15, 8, 3, 3};
    k.group = 4;
    k.sh = k.sw = s;
    k.dh = 2, k.dw = 3;
    k.pt = 2, k.pl = 3, k.pb = 1, k.pr = 0;
    add("multiplier 2, dilations 2,3 stride " + std::to_string(s), k);
  }
  for (int64_t s : {1, 2}) {
    ConvCase k{1, 2, 7, 7, 2, 3, 3};
    k.group = 2;
    k.sh = k.sw = s;
    k.pt = 4, k.pl = 5, k.pb = 3, k.pr = 4;
    k.bias = true;
    add("pads larger than the kernel, stride " + std::to_string(s), k);
  }
  {
    ConvCase k{1, 3, 9, 9, 3, 5, 5};
    k.group = 3;
    k.sh = k.sw = 2;
    k.auto_pad = fb::AutoPad::Valid;
    add("valid 5x5 stride 2 (input rows and columns left unread)", k);
  }
  {
    ConvCase k{1, 2, 8, 10, 2, 1, 1};
    k.group = 2;
    k.sh = k.sw = 2;
    k.bias = true;
    add("1x1 kernel stride 2", k);
  }
  for (auto& [name, k] : cases) RunConvCase(k, name);
}

// Planes whose scratch is past the L1 budget run in bands of output rows
// (nn_depthwise.cpp, BandRows), each its own padded plane: the first and
// last bands reach into the padding, which the bands between them filled
// with input rows. Strides 1 and 2 on each axis, 3x3 and 5x5 (the unrolled
// kernels) and a dilated one, pads wider than the kernel, a valid conv that
// leaves rows unread, a channel multiplier, batch 2 and a per-plane
// activation; the bands' boundaries fall mid-plane in every case.
TEST(NnConv, DepthwiseBandsOnLargePlanes) {
  std::vector<std::pair<std::string, ConvCase>> cases;
  for (int64_t sh : {1, 2})
    for (int64_t sw : {1, 2}) {
      ConvCase k{2, 3, 90, 70, 3, 3, 3};
      k.group = 3;
      k.sh = sh, k.sw = sw;
      k.pt = k.pl = k.pb = k.pr = 1;
      k.bias = true;
      k.act = fb::Activation::Silu;
      cases.emplace_back("90x70 3x3 strides " + std::to_string(sh) + "," + std::to_string(sw), k);
    }
  for (int64_t s : {1, 2}) {
    ConvCase k{1, 4, 101, 75, 4, 5, 5};
    k.group = 4;
    k.sh = k.sw = s;
    k.pt = k.pl = k.pb = k.pr = 2;
    k.act = fb::Activation::Relu6;
    cases.emplace_back("101x75 5x5 stride " + std::to_string(s), k);
  }
  {
    ConvCase k{1, 3, 80, 80, 6, 3, 3};
    k.group = 3;
    k.sh = k.sw = 2;
    k.dh = 2;
    k.pt = 2, k.pl = 1, k.pb = 2, k.pr = 1;
    k.bias = true;
    cases.emplace_back("multiplier 2, row dilation 2, stride 2", k);
  }
  {
    ConvCase k{1, 2, 96, 64, 2, 3, 3};
    k.group = 2;
    k.pt = 5, k.pl = 1, k.pb = 4, k.pr = 1;
    k.bias = true;
    cases.emplace_back("pads wider than the kernel", k);
  }
  {
    ConvCase k{1, 2, 99, 99, 2, 5, 5};
    k.group = 2;
    k.sh = k.sw = 2;
    k.auto_pad = fb::AutoPad::Valid;
    cases.emplace_back("valid 5x5 stride 2", k);
  }
  for (auto& [name, k] : cases) RunConvCase(k, name);
}

// Small output planes with many channels: 16 channels a vector on AVX-512
// (DepthwiseChannels16), a partial block of channels, 3x3 and 5x5, strides
// 1 and 2, asymmetric pads, bias, clamp and a per-plane activation.
TEST(NnConv, DepthwiseSixteenChannelsAVector) {
  for (int64_t c : {16, 19, 40})
    for (int64_t k : {3, 5})
      for (int64_t s : {1, 2}) {
        ConvCase d{2, c, 7 * s, 6 * s + 1, c, k, k};
        d.group = c;
        d.sh = d.sw = s;
        d.pt = k / 2, d.pl = k / 2 - 1, d.pb = k / 2, d.pr = k / 2;
        d.bias = c != 19;
        d.act = c == 40 ? fb::Activation::Silu : fb::Activation::Relu6;
        RunConvCase(d, std::to_string(c) + " channels " + std::to_string(k) + "x" + std::to_string(k) + " stride " +
                           std::to_string(s));
      }
  // 5x5 on 14x13: rows of two groups of eight pixels, the second partial.
  ConvCase d{1, 24, 14, 13, 24, 5, 5};
  d.group = 24;
  d.pt = d.pl = d.pb = d.pr = 2;
  d.bias = true;
  RunConvCase(d, "24 channels 5x5 on 14x13");
}

TEST(NnConv, AbsentBiasAndNoParams) {
  std::vector<float> x = Rand({1, 3, 5, 5}, 1), w = Rand({2, 3, 3, 3}, 2);
  auto out = OpTest(fb::OpType::Conv).input("x", {1, 3, 5, 5}, x).constant("w", {2, 3, 3, 3}, w).missing().run(Threads3());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ConvCase k{1, 3, 5, 5, 2, 3, 3};
  EXPECT_EQ(out->at(0).shape, (Shape{1, 2, 3, 3}));
  ExpectNear(out->at(0).f32(), NaiveConv2D(k, x, w, {}, 3, 3, 0, 0), kTol, "no params, bias -1");
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

// One row (batch-1 FC layers) takes Sgemm's matrix-vector path; an [N] C
// with beta 1 rides on the stores as a column bias.
TEST(NnGemm, OneRow) {
  for (int64_t K : {1, 17, 300})
    for (int64_t N : {1, 7, 1000})
      for (bool tb : {false, true}) {
        SCOPED_TRACE("K " + std::to_string(K) + " N " + std::to_string(N) + " trans_b " + (tb ? "1" : "0"));
        Shape as = {1, K}, bs = tb ? Shape{N, K} : Shape{K, N};
        std::vector<float> a = Rand(as, 81), b = Rand(bs, 82), c = Rand({N}, 83);
        fb::GemmParamsT p;
        p.trans_b = tb;
        p.activation = fb::Activation::Relu;
        auto out = OpTest(fb::OpType::Gemm).input("a", as, a).constant("b", bs, b).constant("c", {N}, c).params(p).run(
            Threads3());
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        std::vector<float> want;
        for (int64_t j = 0; j < N; ++j) {
          double s = c[j];
          for (int64_t k = 0; k < K; ++k) s += static_cast<double>(a[k]) * (tb ? b[j * K + k] : b[k * N + j]);
          want.push_back(RefAct(fb::Activation::Relu, s, 0, 0, 0));
        }
        ExpectNear(out->at(0).f32(), want, kTol);
      }
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

}  // namespace
}  // namespace kiln
