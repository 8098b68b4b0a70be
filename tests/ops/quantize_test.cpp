// The quantized ops on the host against references written here, bit for
// bit: QuantizeLinear's round half to even (2.5 -> 2, -2.5 -> -2) and
// saturation, per-axis scales and zero points, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and
// QLinearConv; and the bad inputs each must refuse naming the tensor (a
// zero, negative or NaN scale; a per-axis scale of the wrong length;
// mismatched dtypes).
#include <cmath>
#include <random>
#include <limits>

#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln {
namespace {

using test::OpTest;
using test::RandomFloats;

template <typename T>
OpTest& In(OpTest& t, const std::string& name, std::vector<int64_t> shape, fb::DataType dt, const std::vector<T>& v) {
  return t.input(name, std::move(shape), dt, v.data(), v.size() * sizeof(T));
}

// The reference: round half to even (written out, not nearbyint), then
// saturate.
int64_t RefRound(double v) {
  double f = std::floor(v), r = v - f;
  if (r > 0.5) return static_cast<int64_t>(f) + 1;
  if (r < 0.5) return static_cast<int64_t>(f);
  int64_t i = static_cast<int64_t>(f);
  return i % 2 == 0 ? i : i + 1;
}
int64_t Sat(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

void ExpectError(const StatusOr<std::vector<test::OpResult>>& r, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "expected an error mentioning '" << needle << "'";
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().ToString();
}

TEST(Quantize, RoundHalfEvenAndSaturate) {
  // x / 1: ties go to the even integer; beyond the range saturates.
  const std::vector<float> x = {2.5f, -2.5f, 3.5f, -3.5f, 0.5f, -0.5f, 1.5f, 300.f, -300.f, 126.5f, 127.5f, -128.5f};
  const std::vector<float> one = {1.f};
  {
    const std::vector<int8_t> zp = {0};
    OpTest t(fb::OpType::QuantizeLinear);
    t.input("x", {12}, x);
    t.constant("s", {}, one);
    t.constant("z", {}, fb::DataType::I8, zp.data(), 1);
    auto out = t.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->at(0).dtype, fb::DataType::I8);
    auto got = out->at(0).as<int8_t>();
    const std::vector<int8_t> want = {2, -2, 4, -4, 0, 0, 2, 127, -128, 126, 127, -128};
    EXPECT_EQ(got, want);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(got[i], Sat(RefRound(x[i]), -128, 127)) << i;
  }
  {
    // No zero point: uint8, zero point 0.
    OpTest t(fb::OpType::QuantizeLinear);
    t.input("x", {12}, x);
    t.constant("s", {}, one);
    auto out = t.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->at(0).dtype, fb::DataType::U8);
    const std::vector<uint8_t> want = {2, 0, 4, 0, 0, 0, 2, 255, 0, 126, 128, 0};
    EXPECT_EQ(out->at(0).u8(), want);
  }
}

TEST(Quantize, PerAxisAgainstReference) {
  const std::vector<int64_t> shape = {2, 3, 4};
  std::vector<float> x = RandomFloats(24, 7);
  for (float& v : x) v *= 20;
  x[0] = 1.25f;  // ties after the scale 0.5: 2.5 -> 2
  x[1] = -1.25f;
  const std::vector<float> scale = {0.5f, 0.25f, 2.f};
  const std::vector<uint8_t> zp = {128, 10, 250};
  fb::AxisParamsT p;
  p.axis = 1;
  OpTest t(fb::OpType::QuantizeLinear);
  t.input("x", shape, x).constant("s", {3}, scale).constant("z", {3}, fb::DataType::U8, zp.data(), 3).params(p);
  auto out = t.run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto got = out->at(0).u8();
  ASSERT_EQ(got.size(), 24u);
  for (size_t i = 0; i < 24; ++i) {
    const size_t c = (i / 4) % 3;
    EXPECT_EQ(got[i], Sat(RefRound(static_cast<double>(x[i] / scale[c])) + zp[c], 0, 255)) << i;
  }
  EXPECT_EQ(got[0], 130);  // 2.5 -> 2, + 128
  EXPECT_EQ(got[1], 126);  // -2.5 -> -2, + 128

  // And back: DequantizeLinear along the same axis.
  OpTest d(fb::OpType::DequantizeLinear);
  In(d, "q", shape, fb::DataType::U8, got).constant("s", {3}, scale).constant("z", {3}, fb::DataType::U8, zp.data(), 3);
  d.params(p);
  auto back = d.run();
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->at(0).dtype, fb::DataType::F32);
  auto y = back->at(0).f32();
  for (size_t i = 0; i < 24; ++i) {
    const size_t c = (i / 4) % 3;
    EXPECT_EQ(y[i], static_cast<float>(static_cast<int>(got[i]) - zp[c]) * scale[c]) << i;
  }
}

TEST(Quantize, Dequantize8Bit) {
  const std::vector<int8_t> q = {-128, -1, 0, 1, 127};
  const std::vector<int8_t> zp = {-3};
  OpTest t(fb::OpType::DequantizeLinear);
  In(t, "q", {5}, fb::DataType::I8, q).constant("s", {}, std::vector<float>{0.5f}).constant("z", {}, fb::DataType::I8, zp.data(), 1);
  auto out = t.run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->at(0).f32(), (std::vector<float>{-62.5f, 1.f, 1.5f, 2.f, 65.f}));
}

TEST(Quantize, DynamicQuantizeLinear) {
  const std::vector<float> x = {0.f, 2.f, -3.f, -2.5f, 1.34f, 0.5f};
  auto out = OpTest(fb::OpType::DynamicQuantizeLinear).input("x", {2, 3}, x).outputs(3).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  const float scale = (2.f - -3.f) / 255.f;
  const int64_t zp = Sat(RefRound(static_cast<double>(0.f - -3.f / scale)), 0, 255);
  EXPECT_EQ(out->at(1).f32()[0], scale);
  EXPECT_EQ(out->at(2).u8()[0], zp);
  auto y = out->at(0).u8();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], Sat(RefRound(static_cast<double>(x[i] / scale)) + zp, 0, 255)) << i;
}

TEST(Quantize, MatMulIntegerExact) {
  // A u8 [2, 3, 4] with per-row zero points, B i8 [4, 5] with per-column ones.
  std::vector<uint8_t> a(24);
  std::vector<int8_t> b(20);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int8_t>(static_cast<int>((i * 53 + 7) % 256) - 128);
  const std::vector<uint8_t> azp = {3, 200, 255};
  const std::vector<int8_t> bzp = {-128, 0, 5, 127, -1};
  OpTest t(fb::OpType::MatMulInteger);
  In(t, "a", {2, 3, 4}, fb::DataType::U8, a);
  In(t, "b", {4, 5}, fb::DataType::I8, b);
  t.constant("az", {3}, fb::DataType::U8, azp.data(), 3).constant("bz", {5}, fb::DataType::I8, bzp.data(), 5);
  auto out = t.run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->at(0).dtype, fb::DataType::I32);
  ASSERT_EQ(out->at(0).shape, (std::vector<int64_t>{2, 3, 5}));
  auto y = out->at(0).i32();
  for (int bt = 0; bt < 2; ++bt)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        int32_t want = 0;
        for (int k = 0; k < 4; ++k) want += (a[static_cast<size_t>((bt * 3 + i) * 4 + k)] - azp[static_cast<size_t>(i)]) *
                                            (b[static_cast<size_t>(k * 5 + j)] - bzp[static_cast<size_t>(j)]);
        EXPECT_EQ(y[static_cast<size_t>((bt * 3 + i) * 5 + j)], want);
      }
}

TEST(Quantize, QLinearMatMulRequantizes) {
  const std::vector<uint8_t> a = {208, 236, 0, 238, 3, 214, 255, 29};  // [2, 4]
  const std::vector<uint8_t> b = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};  // [4, 3]
  const uint8_t azp = 113, bzp = 114, yzp = 118;
  const float sa = 0.0066f, sb = 0.00705f, sy = 0.0107f;
  OpTest t(fb::OpType::QLinearMatMul);
  In(t, "a", {2, 4}, fb::DataType::U8, a).constant("sa", {}, std::vector<float>{sa});
  t.constant("za", {}, fb::DataType::U8, &azp, 1);
  In(t, "b", {4, 3}, fb::DataType::U8, b).constant("sb", {}, std::vector<float>{sb});
  t.constant("zb", {}, fb::DataType::U8, &bzp, 1).constant("sy", {}, std::vector<float>{sy});
  t.constant("zy", {}, fb::DataType::U8, &yzp, 1);
  auto out = t.run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->at(0).dtype, fb::DataType::U8);
  auto y = out->at(0).u8();
  const float mult = sa * sb / sy;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      int64_t acc = 0;
      for (int k = 0; k < 4; ++k) acc += (a[static_cast<size_t>(i * 4 + k)] - azp) * (b[static_cast<size_t>(k * 3 + j)] - bzp);
      EXPECT_EQ(y[static_cast<size_t>(i * 3 + j)], Sat(RefRound(static_cast<float>(acc) * mult) + yzp, 0, 255));
    }
  // ONNX's example (test_qlinearmatmul_2D): [[168, 115, 255], [1, 66, 151]].
  EXPECT_EQ(y, (std::vector<uint8_t>{168, 115, 255, 1, 66, 151}));
}

// Naive conv of centered values, 2-D, pads symmetric.
std::vector<int64_t> RefConv(const std::vector<int>& x, int c, int h, int w, const std::vector<int>& wt, int m, int k,
                             int pad, int* oh, int* ow) {
  *oh = h + 2 * pad - k + 1;
  *ow = w + 2 * pad - k + 1;
  std::vector<int64_t> y(static_cast<size_t>(m * *oh * *ow), 0);
  for (int o = 0; o < m; ++o)
    for (int i = 0; i < *oh; ++i)
      for (int j = 0; j < *ow; ++j)
        for (int ci = 0; ci < c; ++ci)
          for (int u = 0; u < k; ++u)
            for (int v = 0; v < k; ++v) {
              int yy = i - pad + u, xx = j - pad + v;
              if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
              y[static_cast<size_t>((o * *oh + i) * *ow + j)] +=
                  x[static_cast<size_t>((ci * h + yy) * w + xx)] * wt[static_cast<size_t>(((o * c + ci) * k + u) * k + v)];
            }
  return y;
}

TEST(Quantize, ConvIntegerAndQLinearConv) {
  const int c = 2, h = 4, w = 5, m = 3, k = 3, pad = 1;
  std::vector<uint8_t> x(static_cast<size_t>(c * h * w));
  std::vector<int8_t> wt(static_cast<size_t>(m * c * k * k));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 41 + 3) % 256);
  for (size_t i = 0; i < wt.size(); ++i) wt[i] = static_cast<int8_t>(static_cast<int>((i * 29 + 100) % 256) - 128);
  const uint8_t xzp = 17;
  const std::vector<int8_t> wzp = {0, -5, 9};
  std::vector<int> xc(x.size()), wc(wt.size());
  for (size_t i = 0; i < x.size(); ++i) xc[i] = x[i] - xzp;
  for (size_t i = 0; i < wt.size(); ++i) wc[i] = wt[i] - wzp[i / static_cast<size_t>(c * k * k)];
  int oh, ow;
  std::vector<int64_t> ref = RefConv(xc, c, h, w, wc, m, k, pad, &oh, &ow);
  fb::ConvParamsT p;
  p.pads = {pad, pad, pad, pad};
  {
    OpTest t(fb::OpType::ConvInteger);
    In(t, "x", {1, c, h, w}, fb::DataType::U8, x);
    In(t, "w", {m, c, k, k}, fb::DataType::I8, wt);
    t.constant("xz", {}, fb::DataType::U8, &xzp, 1).constant("wz", {m}, fb::DataType::I8, wzp.data(), 3).params(p);
    auto out = t.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->at(0).dtype, fb::DataType::I32);
    ASSERT_EQ(out->at(0).shape, (std::vector<int64_t>{1, m, oh, ow}));
    auto y = out->at(0).i32();
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_EQ(y[i], ref[i]) << i;
  }
  {
    const float sx = 0.02f, sy = 0.05f;
    const std::vector<float> sw = {0.01f, 0.03f, 0.005f};
    const std::vector<int32_t> bias = {100, -2000, 7};
    const int8_t yzp = -10;
    OpTest t(fb::OpType::QLinearConv);
    In(t, "x", {1, c, h, w}, fb::DataType::U8, x).constant("sx", {}, std::vector<float>{sx});
    t.constant("zx", {}, fb::DataType::U8, &xzp, 1);
    In(t, "w", {m, c, k, k}, fb::DataType::I8, wt).constant("sw", {m}, sw);
    t.constant("zw", {m}, fb::DataType::I8, wzp.data(), 3).constant("sy", {}, std::vector<float>{sy});
    t.constant("zy", {}, fb::DataType::I8, &yzp, 1);
    In(t, "b", {m}, fb::DataType::I32, bias).params(p);
    auto out = t.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->at(0).dtype, fb::DataType::I8);
    auto y = out->at(0).as<int8_t>();
    bool saturated = false;
    for (size_t i = 0; i < ref.size(); ++i) {
      const size_t o = i / static_cast<size_t>(oh * ow);
      const float mult = sx * sw[o] / sy;
      const int64_t want = Sat(RefRound(static_cast<float>(ref[i] + bias[o]) * mult) + yzp, -128, 127);
      saturated = saturated || want == 127 || want == -128;
      EXPECT_EQ(y[i], want) << i;
    }
    EXPECT_TRUE(saturated);  // the case reaches the saturation
  }
}

// (a - za) sa + (b - zb) sb in f32, each product rounded (no contraction
// into a multiply-add: arm64's baseline has FMA).
__attribute__((optimize("fp-contract=off"))) float DequantizedSum(int a, int za, float sa, int b, int zb, float sb) {
  const float fa = static_cast<float>(a - za) * sa;
  const float fb = static_cast<float>(b - zb) * sb;
  return fa + fb;
}

// QLinearAdd's value before rounding, onnxruntime's arithmetic written out:
// ra = sa / sc, rb = sb / sc, f = zc - ra za - rb zb in f32 steps, then
// a ra + (b rb + f) with each multiply-add rounded once (fma).
__attribute__((optimize("fp-contract=off"))) float QAddValue(int a, int za, float sa, int b, int zb, float sb,
                                                             float sc, int zc) {
  const float ra = sa / sc, rb = sb / sc;
  const float pa = ra * static_cast<float>(za);
  const float pb = rb * static_cast<float>(zb);
  const float f0 = static_cast<float>(zc) - pa;
  const float f = f0 - pb;
  return std::fma(static_cast<float>(a), ra, std::fma(static_cast<float>(b), rb, f));
}

// QLinearAdd against onnxruntime's arithmetic written out here, and within
// one step of the DequantizeLinear -> Add -> [Relu] -> QuantizeLinear chain
// it stands for (its f32 steps round the sum another way near ties).
TEST(Quantize, QLinearAddIsOnnxRuntimesArithmetic) {
  const float sa = 0.031f, sb = 0.017f, sc = 0.043f;
  for (const bool i8 : {false, true})
    for (const bool relu : {false, true})
      for (const bool broadcast : {false, true}) {
        SCOPED_TRACE(std::string(i8 ? "i8" : "u8") + (relu ? " relu" : "") + (broadcast ? " broadcast" : ""));
        const fb::DataType dt = i8 ? fb::DataType::I8 : fb::DataType::U8;
        const int lo_t = i8 ? -128 : 0, hi_t = i8 ? 127 : 255;
        const int za = i8 ? -13 : 121, zb = i8 ? 5 : 130, zc = i8 ? -2 : 99;
        std::vector<uint8_t> a(2 * 3 * 4), b(broadcast ? 4 : 2 * 3 * 4);
        for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 53 + 7);
        for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 97 + 200);
        auto val = [&](uint8_t v) { return i8 ? static_cast<int>(static_cast<int8_t>(v)) : static_cast<int>(v); };
        const uint8_t zab = static_cast<uint8_t>(za), zbb = static_cast<uint8_t>(zb), zcb = static_cast<uint8_t>(zc);
        OpTest t(fb::OpType::QLinearAdd);
        In(t, "a", {2, 3, 4}, dt, a).constant("sa", {}, std::vector<float>{sa});
        t.constant("za", {}, dt, &zab, 1);
        In(t, "b", broadcast ? std::vector<int64_t>{4} : std::vector<int64_t>{2, 3, 4}, dt, b)
            .constant("sb", {}, std::vector<float>{sb});
        t.constant("zb", {}, dt, &zbb, 1).constant("sc", {}, std::vector<float>{sc}).constant("zc", {}, dt, &zcb, 1);
        fb::QuantActivationParamsT p;
        if (relu) p.activation = fb::Activation::Relu;
        auto out = t.params(p).run();
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        ASSERT_EQ(out->at(0).dtype, dt);
        const auto& got = out->at(0).bytes;
        ASSERT_EQ(got.size(), a.size());
        for (size_t i = 0; i < a.size(); ++i) {
          const int bi = val(b[broadcast ? i % 4 : i]);
          const int64_t lo = relu ? std::max(lo_t, zc) : lo_t;
          const int64_t want = Sat(RefRound(QAddValue(val(a[i]), za, sa, bi, zb, sb, sc, zc)), lo, hi_t);
          EXPECT_EQ(val(got[i]), want) << i;
          float sum = DequantizedSum(val(a[i]), za, sa, bi, zb, sb);
          if (relu) sum = std::max(sum, 0.f);
          const int64_t chain = Sat(RefRound(static_cast<double>(sum / sc)) + zc, lo_t, hi_t);
          EXPECT_LE(std::abs(val(got[i]) - chain), 1) << i;
        }
      }
}

// Over scales of many magnitudes and significands (all ones, a power of
// two, random), every pair of bytes, uint8 and int8, with and without a
// fused Relu (the AVX-512 row kernel clamps before it rounds): the bytes of
// the arithmetic written out here, and within one step of the QDQ chain's.
TEST(Quantize, QLinearAddOverManyScales) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> expo(-20, 12);
  std::vector<uint8_t> a(256 * 256), b(256 * 256);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i / 256), b[i] = static_cast<uint8_t>(i % 256);
  for (int it = 0; it < 24; ++it) {
    float sc = std::ldexp(mant(rng), expo(rng));
    if (it % 3 == 0) sc = std::ldexp(2.f - std::ldexp(1.f, -23), expo(rng));  // all-ones significand
    if (it % 3 == 1) sc = std::ldexp(1.f, expo(rng));
    float sa = sc * std::ldexp(mant(rng), -(it % 5)), sb = sc * mant(rng) * 0.3f;
    if (it % 4 == 3) sa = sc * 0.5f, sb = sc * 0.75f;  // sums on halves and quarters of sc: rounding ties
    // Every third triple int8 (the bytes read as signed), every fifth with a
    // fused Relu.
    const bool i8 = it % 3 == 2, relu = it % 5 == 1;
    SCOPED_TRACE("sa " + std::to_string(sa) + " sb " + std::to_string(sb) + " sc " + std::to_string(sc) +
                 (i8 ? " i8" : " u8") + (relu ? " relu" : ""));
    const fb::DataType dt = i8 ? fb::DataType::I8 : fb::DataType::U8;
    const uint8_t za = static_cast<uint8_t>(rng() & 255), zb = static_cast<uint8_t>(rng() & 255);
    const uint8_t zc = i8 ? 0xF0 : 128;  // -16 as int8
    auto val = [i8](uint8_t v) { return i8 ? static_cast<int>(static_cast<int8_t>(v)) : static_cast<int>(v); };
    OpTest t(fb::OpType::QLinearAdd);
    In(t, "a", {256, 256}, dt, a).constant("sa", {}, std::vector<float>{sa});
    t.constant("za", {}, dt, &za, 1);
    In(t, "b", {256, 256}, dt, b).constant("sb", {}, std::vector<float>{sb});
    t.constant("zb", {}, dt, &zb, 1).constant("sc", {}, std::vector<float>{sc});
    t.constant("zc", {}, dt, &zc, 1);
    fb::QuantActivationParamsT p;
    if (relu) p.activation = fb::Activation::Relu;
    auto out = t.params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const auto& got = out->at(0).bytes;
    int64_t bad = 0;
    int64_t far = 0;
    const int64_t lo_t = i8 ? -128 : 0, hi_t = i8 ? 127 : 255;
    for (size_t i = 0; i < a.size(); ++i) {
      const int64_t lo = relu ? std::max<int64_t>(lo_t, val(zc)) : lo_t;
      bad += val(got[i]) !=
             Sat(RefRound(QAddValue(val(a[i]), val(za), sa, val(b[i]), val(zb), sb, sc, val(zc))), lo, hi_t);
      float sum = DequantizedSum(val(a[i]), val(za), sa, val(b[i]), val(zb), sb);
      if (relu) sum = std::max(sum, 0.f);
      far += std::abs(val(got[i]) - Sat(RefRound(static_cast<double>(sum / sc)) + val(zc), lo_t, hi_t)) > 1;
    }
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(far, 0);
  }
}

TEST(Quantize, BadScalesAreRefusedByName) {
  const std::vector<float> x = {1.f, 2.f};
  for (float s : {0.f, -1.f, std::numeric_limits<float>::quiet_NaN()}) {
    auto r = OpTest(fb::OpType::QuantizeLinear).input("x", {2}, x).constant("my_scale", {}, std::vector<float>{s}).run();
    ExpectError(r, "my_scale");
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("positive"), std::string::npos) << r.status().ToString();
    }
  }
  const std::vector<uint8_t> q = {1, 2};
  OpTest d(fb::OpType::DequantizeLinear);
  In(d, "q", {2}, fb::DataType::U8, q).constant("deq_scale", {}, std::vector<float>{0.f});
  ExpectError(d.run(), "deq_scale");
  // QLinearMatMul's y_scale.
  const uint8_t z = 0;
  OpTest t(fb::OpType::QLinearMatMul);
  In(t, "a", {1, 2}, fb::DataType::U8, q).constant("sa", {}, std::vector<float>{1.f});
  t.constant("za", {}, fb::DataType::U8, &z, 1);
  In(t, "b", {2, 1}, fb::DataType::U8, q).constant("sb", {}, std::vector<float>{1.f});
  t.constant("zb", {}, fb::DataType::U8, &z, 1).constant("out_scale", {}, std::vector<float>{-2.f});
  t.constant("zy", {}, fb::DataType::U8, &z, 1);
  ExpectError(t.run(), "out_scale");
}

TEST(Quantize, PerAxisLengthMismatchIsRefused) {
  const std::vector<float> x = RandomFloats(6, 3);
  fb::AxisParamsT p;
  p.axis = 1;
  auto r = OpTest(fb::OpType::QuantizeLinear)
               .input("x", {2, 3}, x)
               .constant("s", {2}, std::vector<float>{1.f, 1.f})
               .params(p)
               .run();
  ExpectError(r, "axis 1");
  // The zero point's length differs from the scale's.
  const std::vector<uint8_t> zp = {1, 2};
  auto r2 = OpTest(fb::OpType::QuantizeLinear)
                .input("x", {2, 3}, x)
                .constant("s", {3}, std::vector<float>{1.f, 1.f, 1.f})
                .constant("z", {2}, fb::DataType::U8, zp.data(), 2)
                .params(p)
                .run();
  ExpectError(r2, "zero point");
}

TEST(Quantize, MismatchedDtypesAreRefused) {
  // DequantizeLinear: x u8, zero point i8.
  const std::vector<uint8_t> q = {1, 2};
  const int8_t z = 0;
  OpTest d(fb::OpType::DequantizeLinear);
  In(d, "q", {2}, fb::DataType::U8, q).constant("s", {}, std::vector<float>{1.f}).constant("z", {}, fb::DataType::I8, &z, 1);
  ExpectError(d.run(), "x_zero_point");
  // MatMulInteger on floats.
  auto r = OpTest(fb::OpType::MatMulInteger).input("a", {1, 2}, {1.f, 2.f}).input("b", {2, 1}, {1.f, 2.f}).run();
  ExpectError(r, "int8 or uint8");
  // QuantizeLinear to i32 zero point: not an 8-bit type.
  const int32_t z32 = 0;
  OpTest t(fb::OpType::QuantizeLinear);
  t.input("x", {2}, {1.f, 2.f}).constant("s", {}, std::vector<float>{1.f}).constant("z32", {}, fb::DataType::I32, &z32, 4);
  ExpectError(t.run(), "y_zero_point");
}

}  // namespace
}  // namespace kiln
