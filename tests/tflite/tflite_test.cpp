// TFLite importer tests: small .tflite files written by hand (tflite_builder.h),
// converted with ImportTflite, run on the host, and compared with naive NHWC
// references computed here (4-D results transposed to Kiln's NCHW). Then
// corrupt files: every truncation and byte flips must give an error or a
// model that loads, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>

#include "half.h"
#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "support/op_test.h"
#include "tflite_builder.h"
#include "tflite_test_util.h"

namespace kiln::test {
namespace {

namespace tfl = tflite;
// Transposed conv, NHWC, w OHWI: out[oy] += x[iy] * w[ky] where oy = iy * s - pad + ky.
std::vector<float> DeconvRef(const std::vector<float>& x, const Shape& xs, const std::vector<float>& w, const Shape& ws,
                             const std::vector<float>& bias, int s, const Shape& ys) {
  const int H = xs[1], W = xs[2], C = xs[3], O = ws[0], KH = ws[1], KW = ws[2], OH = ys[1], OW = ys[2];
  const int pt = std::max(0, (s * (H - 1) + KH - OH) / 2), pl = std::max(0, (s * (W - 1) + KW - OW) / 2);
  std::vector<float> y(Count(ys));
  for (int oy = 0; oy < OH; ++oy)
    for (int ox = 0; ox < OW; ++ox)
      for (int o = 0; o < O; ++o) y[(oy * OW + ox) * O + o] = bias.empty() ? 0.f : bias[o];
  for (int iy = 0; iy < H; ++iy)
    for (int ix = 0; ix < W; ++ix)
      for (int ky = 0; ky < KH; ++ky)
        for (int kx = 0; kx < KW; ++kx) {
          int oy = iy * s - pt + ky, ox = ix * s - pl + kx;
          if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
          for (int o = 0; o < O; ++o)
            for (int c = 0; c < C; ++c)
              y[(oy * OW + ox) * O + o] += x[(iy * W + ix) * C + c] * w[((o * KH + ky) * KW + kx) * C + c];
        }
  return y;
}

std::vector<uint8_t> ConvAddReluMeanModel() {
  TfliteBuilder t;
  const Shape xs = {1, 5, 6, 3}, ws = {4, 3, 3, 3};
  int x = t.tensor("x", xs);
  int w = t.constF32("w", ws, Random(Count(ws), 1));
  int b = t.constF32("b", {4}, Random(4, 2));
  int c = t.constF32("c", {4}, Random(4, 3));
  int y = t.tensor("conv", {1, 5, 6, 4});
  int z = t.tensor("add_relu", {1, 5, 6, 4});
  int axes = t.constI32("axes", {2}, {1, 2});
  int m = t.tensor("mean", {1, 4});
  t.op(tfl::CONV_2D, {x, w, b}, {y}, tfl::kConv2DOptions,
       {B(tfl::opt::kPadding, tfl::kSame), I(tfl::opt::kStrideW, 1), I(tfl::opt::kStrideH, 1)});
  t.op(tfl::ADD, {y, c}, {z}, tfl::kAddOptions, {B(tfl::opt::kBinaryActivation, tfl::kActRelu)});
  t.op(tfl::MEAN, {z, axes}, {m}, tfl::kReducerOptions, {B(tfl::opt::kKeepDims, 0)});
  t.io({x}, {z, m});
  return t.finish();
}

TEST(TfliteImport, ConvAddReluMean) {
  const Shape xs = {1, 5, 6, 3}, ws = {4, 3, 3, 3}, ys = {1, 5, 6, 4};
  std::vector<float> x = Random(Count(xs), 7);
  ConvertReport rep;
  auto out = RunModel(ConvAddReluMeanModel(), {{"x", {NchwShape(xs), ToNchw(x, xs)}}}, {}, &rep);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(rep.source_format, "tflite");
  EXPECT_EQ(rep.ops_in, 3);
  std::vector<float> y = ConvRef(x, xs, Random(Count(ws), 1), ws, Random(4, 2), 1, 1, true, ys);
  std::vector<float> c = Random(4, 3), mean(4, 0.f);
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = std::max(0.f, y[i] + c[i % 4]);
    mean[i % 4] += y[i] / 30.f;
  }
  ASSERT_EQ(out->count("add_relu"), 1u);
  EXPECT_EQ(out->at("add_relu").shape, NchwShape(ys));
  ExpectNear(out->at("add_relu").f32(), ToNchw(y, ys), 1e-5f, "add_relu");
  EXPECT_EQ(out->at("mean").shape, (std::vector<int64_t>{1, 4}));
  ExpectNear(out->at("mean").f32(), mean, 1e-5f, "mean");
}

// Strides, VALID, dilation, groups, and a fused RELU6.
TEST(TfliteImport, ConvVariants) {
  struct Case { Shape xs, ws, ys; int stride, dil; bool same; int group; };
  for (const Case& k : {Case{{1, 7, 8, 3}, {2, 3, 3, 3}, {1, 3, 3, 2}, 2, 1, false, 1},
                        Case{{1, 7, 8, 3}, {2, 3, 3, 3}, {1, 4, 4, 2}, 2, 1, true, 1},
                        Case{{1, 6, 6, 2}, {3, 3, 3, 2}, {1, 6, 6, 3}, 1, 2, true, 1},
                        Case{{1, 5, 5, 4}, {6, 3, 3, 2}, {1, 5, 5, 6}, 1, 1, true, 2}}) {
    TfliteBuilder t;
    int x = t.tensor("x", k.xs), w = t.constF32("w", k.ws, Random(Count(k.ws), 11)), y = t.tensor("y", k.ys);
    t.op(tfl::CONV_2D, {x, w, -1}, {y}, tfl::kConv2DOptions,
         {B(tfl::opt::kPadding, k.same ? tfl::kSame : tfl::kValid), I(tfl::opt::kStrideW, k.stride),
          I(tfl::opt::kStrideH, k.stride), B(tfl::opt::kConvActivation, tfl::kActRelu6),
          I(tfl::opt::kConvDilationW, k.dil), I(tfl::opt::kConvDilationH, k.dil)});
    t.io({x}, {y});
    std::vector<float> xv = Random(Count(k.xs), 5, 4.f);
    auto out = RunModel(t.finish(), {{"x", {NchwShape(k.xs), ToNchw(xv, k.xs)}}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want = ConvRef(xv, k.xs, Random(Count(k.ws), 11), k.ws, {}, k.stride, k.dil, k.same, k.ys, k.group);
    for (float& v : want) v = std::min(6.f, std::max(0.f, v));
    EXPECT_EQ(out->at("y").shape, NchwShape(k.ys));
    ExpectNear(out->at("y").f32(), ToNchw(want, k.ys), 1e-5f, "conv");
  }
}

TEST(TfliteImport, DepthwiseConv) {
  const Shape xs = {1, 6, 7, 4}, ws = {1, 3, 3, 8}, ys = {1, 3, 4, 8};
  TfliteBuilder t;
  int x = t.tensor("x", xs), w = t.constF32("w", ws, Random(Count(ws), 21)), b = t.constF32("b", {8}, Random(8, 22));
  int y = t.tensor("y", ys);
  t.op(tfl::DEPTHWISE_CONV_2D, {x, w, b}, {y}, tfl::kDepthwiseConv2DOptions,
       {B(tfl::opt::kPadding, tfl::kSame), I(tfl::opt::kStrideW, 2), I(tfl::opt::kStrideH, 2),
        I(tfl::opt::kDwDepthMultiplier, 2), B(tfl::opt::kDwActivation, tfl::kActRelu6)});
  t.io({x}, {y});
  std::vector<float> xv = Random(Count(xs), 23, 3.f);
  auto out = RunModel(t.finish(), {{"x", {NchwShape(xs), ToNchw(xv, xs)}}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // Depthwise = grouped conv with group C, OHWI weights [C*M, KH, KW, 1].
  std::vector<float> wd = Random(Count(ws), 21), wo(wd.size());
  for (int k = 0; k < 9; ++k)
    for (int o = 0; o < 8; ++o) wo[o * 9 + k] = wd[k * 8 + o];
  std::vector<float> want = ConvRef(xv, xs, wo, {8, 3, 3, 1}, Random(8, 22), 2, 1, true, ys, 4);
  for (float& v : want) v = std::min(6.f, std::max(0.f, v));
  EXPECT_EQ(out->at("y").shape, NchwShape(ys));
  ExpectNear(out->at("y").f32(), ToNchw(want, ys), 1e-5f, "depthwise");
}

TEST(TfliteImport, ConcatenationAxis3) {
  const Shape as = {1, 4, 5, 2}, bs = {1, 4, 5, 3}, cs = {1, 4, 5, 1}, ys = {1, 4, 5, 6};
  for (int axis : {3, -1}) {
    TfliteBuilder t;
    int a = t.tensor("a", as), b = t.tensor("b", bs), c = t.constF32("c", cs, Random(Count(cs), 31));
    int y = t.tensor("y", ys);
    t.op(tfl::CONCATENATION, {a, b, c}, {y}, tfl::kConcatenationOptions, {I(tfl::opt::kConcatAxis, axis)});
    t.io({a, b}, {y});
    std::vector<float> av = Random(Count(as), 32), bv = Random(Count(bs), 33), cv = Random(Count(cs), 31), want;
    for (size_t p = 0; p < 20; ++p) {
      want.insert(want.end(), av.begin() + 2 * p, av.begin() + 2 * p + 2);
      want.insert(want.end(), bv.begin() + 3 * p, bv.begin() + 3 * p + 3);
      want.push_back(cv[p]);
    }
    auto out = RunModel(t.finish(), {{"a", {NchwShape(as), ToNchw(av, as)}}, {"b", {NchwShape(bs), ToNchw(bv, bs)}}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at("y").shape, NchwShape(ys));
    ExpectNear(out->at("y").f32(), ToNchw(want, ys), 0.f, "concat");
  }
}

// fp16 weights behind DEQUANTIZE fold to f32 constants; so do int8 per-channel ones.
TEST(TfliteImport, DequantizedWeights) {
  const Shape xs = {1, 4, 4, 3}, ws = {2, 3, 3, 3}, ys = {1, 4, 4, 2};
  std::vector<float> wv = Random(Count(ws), 41);
  for (float& v : wv) v = std::round(v * 64.f) / 64.f;  // exact in f16
  std::vector<uint16_t> half;
  for (float v : wv) half.push_back(FloatToHalf(v));
  std::vector<int8_t> q;
  const float scale[2] = {1.f / 64.f, 1.f / 32.f};
  for (size_t k = 0; k < wv.size(); ++k) q.push_back(static_cast<int8_t>(std::round(wv[k] / scale[k / 27])));
  for (int kind = 0; kind < 2; ++kind) {
    TfliteBuilder t;
    int x = t.tensor("x", xs), y = t.tensor("y", ys), wf = t.tensor("w_f32", ws);
    int w = kind == 0 ? t.tensor("w_f16", ws, tfl::kFloat16, TfliteBuilder::Bytes(half))
                      : t.tensor("w_i8", ws, tfl::kInt8, TfliteBuilder::Bytes(q), {{scale[0], scale[1]}, {0, 0}, 0});
    t.op(tfl::DEQUANTIZE, {w}, {wf});
    t.op(tfl::CONV_2D, {x, wf, -1}, {y}, tfl::kConv2DOptions, {B(tfl::opt::kPadding, tfl::kSame)});
    t.io({x}, {y});
    std::vector<float> xv = Random(Count(xs), 42);
    ConvertReport rep;
    auto out = RunModel(t.finish(), {{"x", {NchwShape(xs), ToNchw(xv, xs)}}}, {}, &rep);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> wq(wv.size());
    for (size_t k = 0; k < wv.size(); ++k) wq[k] = kind == 0 ? wv[k] : q[k] * scale[k / 27];
    ExpectNear(out->at("y").f32(), ToNchw(ConvRef(xv, xs, wq, ws, {}, 1, 1, true, ys), ys), 1e-5f, "dequantized");
    EXPECT_EQ(rep.ops_out, 1) << "DEQUANTIZE is folded";
  }
}

// FULLY_CONNECTED over a 4-D input flattens in NHWC order; then SOFTMAX with beta.
TEST(TfliteImport, FullyConnectedSoftmax) {
  const Shape xs = {1, 2, 2, 3};
  TfliteBuilder t;
  int x = t.tensor("x", xs), w = t.constF32("w", {5, 12}, Random(60, 51)), b = t.constF32("b", {5}, Random(5, 52));
  int f = t.tensor("fc", {1, 5}), s = t.tensor("prob", {1, 5});
  t.op(tfl::FULLY_CONNECTED, {x, w, b}, {f}, tfl::kFullyConnectedOptions, {B(tfl::opt::kFcActivation, tfl::kActRelu)});
  t.op(tfl::SOFTMAX, {f}, {s}, tfl::kSoftmaxOptions, {F(tfl::opt::kSoftmaxBeta, 0.5f)});
  t.io({x}, {f, s});
  std::vector<float> xv = Random(Count(xs), 53), wv = Random(60, 51), bv = Random(5, 52), fc(5), p(5);
  float sum = 0;
  for (int o = 0; o < 5; ++o) {
    float a = bv[o];
    for (int k = 0; k < 12; ++k) a += xv[k] * wv[o * 12 + k];
    fc[o] = std::max(0.f, a);
    sum += p[o] = std::exp(0.5f * fc[o]);
  }
  for (float& v : p) v /= sum;
  auto out = RunModel(t.finish(), {{"x", {NchwShape(xs), ToNchw(xv, xs)}}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at("fc").f32(), fc, 1e-5f, "fc");
  ExpectNear(out->at("prob").f32(), p, 1e-5f, "softmax");
}

// MediaPipe's Convolution2DTransposeBias and the builtin TRANSPOSE_CONV.
TEST(TfliteImport, TransposeConv) {
  {
    const Shape xs = {1, 4, 5, 3}, ws = {2, 4, 4, 3}, ys = {1, 8, 10, 2};
    TfliteBuilder t;
    int x = t.tensor("x", xs), w = t.constF32("w", ws, Random(Count(ws), 61)), b = t.constF32("b", {2}, Random(2, 62));
    int y = t.tensor("y", ys);
    t.op(-1, {x, w, b}, {y}, 0, {}, "Convolution2DTransposeBias", TfliteBuilder::Bytes(std::vector<int32_t>{1, 2, 2}));
    t.io({x}, {y});
    std::vector<float> xv = Random(Count(xs), 63);
    auto out = RunModel(t.finish(), {{"x", {NchwShape(xs), ToNchw(xv, xs)}}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at("y").shape, NchwShape(ys));
    ExpectNear(out->at("y").f32(), ToNchw(DeconvRef(xv, xs, Random(Count(ws), 61), ws, Random(2, 62), 2, ys), ys),
               1e-5f, "Convolution2DTransposeBias");
  }
  {
    const Shape xs = {1, 3, 3, 2}, ws = {3, 3, 3, 2}, ys = {1, 6, 6, 3};
    TfliteBuilder t;
    int os = t.constI32("output_shape", {4}, ys), w = t.constF32("w", ws, Random(Count(ws), 64));
    int x = t.tensor("x", xs), y = t.tensor("y", ys);
    t.op(tfl::TRANSPOSE_CONV, {os, w, x}, {y}, tfl::kTransposeConvOptions,
         {B(tfl::opt::kPadding, tfl::kSame), I(tfl::opt::kStrideW, 2), I(tfl::opt::kStrideH, 2)});
    t.io({x}, {y});
    std::vector<float> xv = Random(Count(xs), 65);
    auto out = RunModel(t.finish(), {{"x", {NchwShape(xs), ToNchw(xv, xs)}}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at("y").f32(), ToNchw(DeconvRef(xv, xs, Random(Count(ws), 64), ws, {}, 2, ys), ys), 1e-5f,
               "TRANSPOSE_CONV");
  }
}

// Layout-sensitive ops on a 4-D tensor: PAD, RESHAPE (flatten), TRANSPOSE,
// STRIDED_SLICE with a shrunk axis, MEAN dropping dims out of NCHW order,
// RESIZE_NEAREST_NEIGHBOR, SPLIT on the channel axis.
TEST(TfliteImport, LayoutOps) {
  const Shape xs = {1, 4, 6, 2}, ps = {1, 5, 8, 2};
  TfliteBuilder t;
  int x = t.tensor("x", xs);
  int pads = t.constI32("pads", {4, 2}, {0, 0, 1, 0, 0, 2, 0, 0});
  int p = t.tensor("pad", ps), r = t.tensor("flat", {1, 80}), tr = t.tensor("tr", {1, 2, 5, 8});
  int b = t.constI32("begin", {4}, {0, 1, 0, 0}), e = t.constI32("end", {4}, {1, 5, 8, 1});
  int st = t.constI32("strides", {4}, {1, 2, 3, 1}), sl = t.tensor("slice", {1, 2, 3});
  int ax = t.constI32("axes", {1}, {1}), m = t.tensor("mean", {1, 8, 2});
  int sz = t.constI32("size", {2}, {10, 16}), rs = t.tensor("resize", {1, 10, 16, 2});
  int sa = t.constI32("split_axis", {}, {3}), s0 = t.tensor("split0", {1, 5, 8, 1}), s1 = t.tensor("split1", {1, 5, 8, 1});
  t.op(tfl::PAD, {x, pads}, {p});
  t.op(tfl::RESHAPE, {p, t.constI32("shape", {2}, {1, 80})}, {r}, tfl::kReshapeOptions, {V(0, {1, 80})});
  t.op(tfl::TRANSPOSE, {p, t.constI32("perm", {4}, {0, 3, 1, 2})}, {tr});
  t.op(tfl::STRIDED_SLICE, {p, b, e, st}, {sl}, tfl::kStridedSliceOptions, {I(tfl::opt::kShrinkAxisMask, 8)});
  t.op(tfl::MEAN, {p, ax}, {m}, tfl::kReducerOptions, {B(tfl::opt::kKeepDims, 0)});
  t.op(tfl::RESIZE_NEAREST_NEIGHBOR, {p, sz}, {rs}, tfl::kResizeNearestNeighborOptions, {});
  t.op(tfl::SPLIT, {sa, p}, {s0, s1}, tfl::kSplitOptions, {I(tfl::opt::kNumSplits, 2)});
  t.io({x}, {p, r, tr, sl, m, rs, s0, s1});
  std::vector<float> xv = Random(Count(xs), 71);
  auto out = RunModel(t.finish(), {{"x", {NchwShape(xs), ToNchw(xv, xs)}}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto P = [&](int h, int w, int c) { return h >= 1 && w < 6 ? xv[((h - 1) * 6 + w) * 2 + c] : 0.f; };
  std::vector<float> pv, trv, slv, mv, rsv, s0v, s1v;
  for (int h = 0; h < 5; ++h)
    for (int w = 0; w < 8; ++w)
      for (int c = 0; c < 2; ++c) pv.push_back(P(h, w, c));
  for (int w = 0; w < 8; ++w)  // tr [1,2,5,8] (c,h,w) is 4-D: Kiln holds it as [1,8,2,5] (w,c,h)
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 5; ++h) trv.push_back(P(h, w, c));
  for (int h : {1, 3})
    for (int w : {0, 3, 6}) slv.push_back(P(h, w, 0));
  for (int w = 0; w < 8; ++w)
    for (int c = 0; c < 2; ++c) {
      float a = 0;
      for (int h = 0; h < 5; ++h) a += P(h, w, c) / 5.f;
      mv.push_back(a);
    }
  for (int c = 0; c < 2; ++c)  // NCHW
    for (int h = 0; h < 10; ++h)
      for (int w = 0; w < 16; ++w) rsv.push_back(P(h / 2, w / 2, c));
  for (int h = 0; h < 5; ++h)
    for (int w = 0; w < 8; ++w) {
      s0v.push_back(P(h, w, 0));
      s1v.push_back(P(h, w, 1));
    }
  ExpectNear(out->at("pad").f32(), ToNchw(pv, ps), 0.f, "pad");
  ExpectNear(out->at("flat").f32(), pv, 0.f, "reshape");
  EXPECT_EQ(out->at("tr").shape, (std::vector<int64_t>{1, 8, 2, 5}));
  ExpectNear(out->at("tr").f32(), trv, 0.f, "transpose");
  EXPECT_EQ(out->at("slice").shape, (std::vector<int64_t>{1, 2, 3}));
  ExpectNear(out->at("slice").f32(), slv, 0.f, "strided_slice");
  EXPECT_EQ(out->at("mean").shape, (std::vector<int64_t>{1, 8, 2}));
  ExpectNear(out->at("mean").f32(), mv, 1e-6f, "mean");
  EXPECT_EQ(out->at("resize").shape, (std::vector<int64_t>{1, 2, 10, 16}));
  ExpectNear(out->at("resize").f32(), rsv, 0.f, "resize");
  ExpectNear(out->at("split0").f32(), s0v, 0.f, "split0");
  ExpectNear(out->at("split1").f32(), s1v, 0.f, "split1");
}

// RESIZE_BILINEAR with half_pixel_centers (every MediaPipe model here uses
// it), against TF's formula: in = (out + 0.5) * scale - 0.5, bounds clamped.
TEST(TfliteImport, ResizeBilinearHalfPixel) {
  const Shape xs = {1, 3, 4, 2}, ys = {1, 6, 8, 2};
  TfliteBuilder t;
  int x = t.tensor("x", xs), sz = t.constI32("size", {2}, {6, 8}), y = t.tensor("y", ys);
  t.op(tfl::RESIZE_BILINEAR, {x, sz}, {y}, tfl::kResizeBilinearOptions,
       {B(tfl::opt::kResizeBilinearAlignCorners, 0), B(tfl::opt::kResizeBilinearHalfPixel, 1)});
  t.io({x}, {y});
  std::vector<float> xv = Random(Count(xs), 91), want;
  auto at = [&](int h, int w, int c) { return xv[(h * 4 + w) * 2 + c]; };
  for (int oy = 0; oy < 6; ++oy)
    for (int ox = 0; ox < 8; ++ox)
      for (int c = 0; c < 2; ++c) {
        const float iy = (oy + 0.5f) * 0.5f - 0.5f, ix = (ox + 0.5f) * 0.5f - 0.5f;
        const int y0 = std::max(0, static_cast<int>(std::floor(iy))), y1 = std::min(2, static_cast<int>(std::ceil(iy)));
        const int x0 = std::max(0, static_cast<int>(std::floor(ix))), x1 = std::min(3, static_cast<int>(std::ceil(ix)));
        const float dy = iy - y0, dx = ix - x0;
        want.push_back(at(y0, x0, c) * (1 - dy) * (1 - dx) + at(y1, x0, c) * dy * (1 - dx) +
                       at(y0, x1, c) * (1 - dy) * dx + at(y1, x1, c) * dy * dx);
      }
  auto out = RunModel(t.finish(), {{"x", {NchwShape(xs), ToNchw(xv, xs)}}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at("y").shape, NchwShape(ys));
  ExpectNear(out->at("y").f32(), ToNchw(want, ys), 1e-5f, "resize bilinear");
}

// MaxPoolingWithArgmax2D maps to MaxPool (values and indices), MaxUnpooling2D
// to MaxUnpool; unknown ops are reported unsupported, or kept as Custom ops
// with --allow-unsupported.
TEST(TfliteImport, MediaPipePoolingAndUnsupported) {
  const Shape xs = {1, 4, 4, 2}, ys = {1, 2, 2, 2};
  TfliteBuilder t;
  int x = t.tensor("x", xs), v = t.tensor("values", ys), idx = t.tensor("indices", ys), u = t.tensor("unpooled", xs);
  int f = t.tensor("floor", xs);
  t.op(-1, {x}, {v, idx}, 0, {}, "MaxPoolingWithArgmax2D",
       TfliteBuilder::Bytes(std::vector<int32_t>{2, 2, 2, 2, 2, 0, 0, 0, 0, 0}));
  t.op(-1, {v, idx}, {u}, 0, {}, "MaxUnpooling2D", TfliteBuilder::Bytes(std::vector<int32_t>{2, 2, 2, 2, 2, 0}));
  t.op(tfl::FLOOR, {u}, {f});
  t.io({x}, {v, f});
  const std::vector<uint8_t> model = t.finish();
  const TempFile path = WriteTemp(model, "pooling");
  ConvertReport rep;
  auto refused = ImportTflite(path, {}, &rep);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(refused.status().message().find("FLOOR x1"), std::string::npos) << refused.status().message();
  EXPECT_EQ(refused.status().message().find("MaxUnpooling2D"), std::string::npos) << refused.status().message();
  ConvertOptions allow;
  allow.allow_unsupported = true;
  ConvertReport kept;
  auto b = ImportTflite(path, allow, &kept);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(kept.unsupported.count("MaxUnpooling2D"), 0u);
  EXPECT_EQ(kept.unsupported["FLOOR"], 1);
  int custom = 0, maxpool = 0, unpool = 0;
  for (const auto& op : b->net().ops) {
    custom += op->type == fb::OpType::Custom;
    unpool += op->type == fb::OpType::MaxUnpool;
    if (op->type == fb::OpType::MaxPool) maxpool += static_cast<int>(op->outputs.size());
  }
  EXPECT_EQ(custom, 1);
  EXPECT_EQ(unpool, 1);
  EXPECT_EQ(maxpool, 2) << "values and indices";
  // The pooled values alone run and match a naive 2x2 max pool.
  TfliteBuilder t2;
  int x2 = t2.tensor("x", xs), v2 = t2.tensor("values", ys), i2 = t2.tensor("indices", ys);
  t2.op(-1, {x2}, {v2, i2}, 0, {}, "MaxPoolingWithArgmax2D",
        TfliteBuilder::Bytes(std::vector<int32_t>{2, 2, 2, 2, 2, 0, 0, 0, 0, 0}));
  t2.io({x2}, {v2});
  std::vector<float> xv = Random(Count(xs), 81), want;
  for (int oy = 0; oy < 2; ++oy)
    for (int ox = 0; ox < 2; ++ox)
      for (int c = 0; c < 2; ++c) {
        float mx = -INFINITY;
        for (int k = 0; k < 4; ++k) mx = std::max(mx, xv[((2 * oy + k / 2) * 4 + 2 * ox + k % 2) * 2 + c]);
        want.push_back(mx);
      }
  auto out = RunModel(t2.finish(), {{"x", {NchwShape(xs), ToNchw(xv, xs)}}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at("values").f32(), ToNchw(want, ys), 0.f, "max pool");
}

// MaxPoolingWithArgmax2D -> MaxUnpooling2D (MediaPipe's segmentation
// decoders) converts and runs: each window's maximum (the first on ties) back
// at its place, zero elsewhere, against a naive NHWC reference with TF's
// SAME / VALID padding. MaxUnpooling2D options too short to decode fall back
// to the pool's window.
TEST(TfliteImport, MediaPipeMaxUnpooling) {
  struct Case {
    std::string name;
    Shape xs;
    int padding, k, s;  // MediaPipe's TfLitePadding: 1 SAME, 2 VALID
    bool short_options = false;
  };
  const std::vector<Case> cases = {{"VALID k2 s2", {1, 4, 6, 3}, 2, 2, 2},
                                   {"SAME k3 s2", {2, 4, 6, 3}, 1, 3, 2},
                                   {"SAME k2 s2, 7 channels", {1, 6, 4, 7}, 1, 2, 2},
                                   {"VALID k2 s2, short unpool options", {1, 4, 6, 3}, 2, 2, 2, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int N = c.xs[0], H = c.xs[1], W = c.xs[2], C = c.xs[3];
    const bool same = c.padding == 1;
    const int OH = same ? (H + c.s - 1) / c.s : (H - c.k) / c.s + 1, OW = same ? (W + c.s - 1) / c.s : (W - c.k) / c.s + 1;
    const int pt = same ? std::max(0, ((OH - 1) * c.s + c.k - H) / 2) : 0;
    const int pl = same ? std::max(0, ((OW - 1) * c.s + c.k - W) / 2) : 0;
    const Shape ps = {N, OH, OW, C};
    TfliteBuilder t;
    int x = t.tensor("x", c.xs), v = t.tensor("values", ps), idx = t.tensor("indices", ps), u = t.tensor("y", c.xs);
    t.op(-1, {x}, {v, idx}, 0, {}, "MaxPoolingWithArgmax2D",
         TfliteBuilder::Bytes(std::vector<int32_t>{c.padding, c.s, c.s, c.k, c.k, 0, 0, 0, 0, 0}));
    t.op(-1, {v, idx}, {u}, 0, {}, "MaxUnpooling2D",
         TfliteBuilder::Bytes(c.short_options ? std::vector<int32_t>{c.padding}
                                              : std::vector<int32_t>{c.padding, c.s, c.s, c.k, c.k, 0}));
    t.io({x}, {u});
    std::vector<float> xv = Random(Count(c.xs), 83), want(Count(c.xs), 0.f);
    for (int n = 0; n < N; ++n)
      for (int oy = 0; oy < OH; ++oy)
        for (int ox = 0; ox < OW; ++ox)
          for (int ch = 0; ch < C; ++ch) {
            int best = -1;
            for (int ky = 0; ky < c.k; ++ky)
              for (int kx = 0; kx < c.k; ++kx) {
                int iy = oy * c.s - pt + ky, ix = ox * c.s - pl + kx;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                int at = ((n * H + iy) * W + ix) * C + ch;
                if (best < 0 || xv[at] > xv[best]) best = at;
              }
            want[best] = xv[best];
          }
    auto out = RunModel(t.finish(), {{"x", {NchwShape(c.xs), ToNchw(xv, c.xs)}}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at("y").shape, NchwShape(c.xs));
    ExpectNear(out->at("y").f32(), ToNchw(want, c.xs), 0.f, "unpooled");
  }
}

// Pairings whose indices would not name the same elements stay unsupported:
// an unpooled shape other than the pool's input (odd sizes with SAME), and
// indices that no MaxPoolingWithArgmax2D produced.
TEST(TfliteImport, MediaPipeMaxUnpoolingMismatchIsUnsupported) {
  {
    const Shape xs = {1, 5, 5, 2}, ps = {1, 3, 3, 2}, us = {1, 6, 6, 2};
    TfliteBuilder t;
    int x = t.tensor("x", xs), v = t.tensor("values", ps), idx = t.tensor("indices", ps), u = t.tensor("y", us);
    t.op(-1, {x}, {v, idx}, 0, {}, "MaxPoolingWithArgmax2D",
         TfliteBuilder::Bytes(std::vector<int32_t>{1, 2, 2, 2, 2, 0, 0, 0, 0, 0}));
    t.op(-1, {v, idx}, {u}, 0, {}, "MaxUnpooling2D", TfliteBuilder::Bytes(std::vector<int32_t>{1, 2, 2, 2, 2, 0}));
    t.io({x}, {u});
    auto r = ImportTflite(WriteTemp(t.finish(), "unpool_shape"), {}, nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(r.status().message().find("MaxUnpooling2D (output shape differs from its MaxPoolingWithArgmax2D's input) "
                                        "x1: 'y'"),
              std::string::npos)
        << r.status().message();
  }
  {
    const Shape ps = {1, 2, 2, 2}, us = {1, 4, 4, 2};
    TfliteBuilder t;
    int v = t.tensor("values", ps), idx = t.tensor("indices", ps), u = t.tensor("y", us);
    t.op(-1, {v, idx}, {u}, 0, {}, "MaxUnpooling2D", TfliteBuilder::Bytes(std::vector<int32_t>{2, 2, 2, 2, 2, 0}));
    t.io({v, idx}, {u});
    auto r = ImportTflite(WriteTemp(t.finish(), "unpool_indices"), {}, nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("MaxUnpooling2D (indices not from a MaxPoolingWithArgmax2D) x1: 'y'"),
              std::string::npos)
        << r.status().message();
  }
}

// Every truncation fails to read; flipped bytes give an error or a model that
// imports and loads; nothing crashes.
TEST(TfliteImport, CorruptFiles) {
  const std::vector<uint8_t> good = ConvAddReluMeanModel();
  ASSERT_TRUE(tfl::ReadModel(good).ok());
  for (size_t n = 0; n < good.size(); ++n) {
    auto m = tfl::ReadModel(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)));
    EXPECT_FALSE(m.ok()) << "truncated to " << n << " of " << good.size() << " bytes";
    if (!m.ok()) {
      EXPECT_FALSE(m.status().message().empty());
    }
  }
  int errors = 0, imported = 0;
  for (size_t k = 0; k < good.size(); ++k) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bad = good;
      bad[k] ^= mask;
      const TempFile path = WriteTemp(bad, "corrupt");
      auto b = ImportTflite(path, {}, nullptr);
      if (!b.ok()) {
        ++errors;
        EXPECT_FALSE(b.status().message().empty());
        continue;
      }
      ++imported;
      auto bytes = b->finish();
      if (bytes.ok()) (void)Interpreter::createFromBuffer(bytes->data(), bytes->size());
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(imported, 0) << "flips in weight values still import";
}

}  // namespace
}  // namespace kiln::test
