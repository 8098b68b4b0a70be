// The fast int8 paths against references written here, bit for bit
// (requantizing as onnxruntime does: float(int32 sum) * multiplier in f32):
//  - QGemm on every micro-kernel this CPU (or qemu) runs: the int32 sums
//    exactly, and the requantizing epilogue, B gathered, and (where the
//    CPU has it) the pixel kernel reading B in place at any offsets;
//  - QLinearConv and ConvInteger through the host backend over shapes that
//    reach each path (GEMM with and without the unfold, groups, 1-D,
//    depthwise at strides 1 and 2, dilations, asymmetric pads), with uint8
//    and int8 inputs and weights, per-tensor and per-channel scales and
//    zero points, bias, a fused Relu / Clip, constant and non-constant
//    weights;
//  - a fused activation that has no integer form is refused by name.
#include <cmath>
#include <random>

#include "ops/op_params.h"
#include "qgemm.h"
#include "support/op_test.h"
#include "thread_pool.h"

namespace kiln {
namespace {

using test::OpTest;

int64_t RoundHalfEven(double v) {
  const double f = std::floor(v), r = v - f;
  const int64_t i = static_cast<int64_t>(f);
  if (r > 0.5) return i + 1;
  if (r < 0.5) return i;
  return i % 2 == 0 ? i : i + 1;
}

TEST(QGemm, EveryKernelSumsExactly) {
  ThreadPool pool(2);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
  int kernels = 0;
  for (QIsa isa : {QIsa::kScalar, QIsa::kAvx2, QIsa::kAvx512Vnni, QIsa::kNeonDot, QIsa::kAmx}) {
    if (!QIsaSupported(isa)) continue;
    ++kernels;
    // Odd sizes: partial tiles in M and N, K not a multiple of the dot width;
    // extremes (255 x -128) in every product of the last case.
    for (auto [M, K, N, extreme] : std::vector<std::tuple<int64_t, int64_t, int64_t, bool>>{
             {1, 1, 1, false}, {7, 13, 33, false}, {9, 130, 70, false}, {33, 577, 200, false}, {16, 4096, 40, true},
             // B of 1 to 4 columns (the gemv where the kernel has one): panels in
             // fours and alone, K not a multiple of 4, extremes.
             {45, 333, 3, false}, {70, 2050, 1, false}, {9, 70, 4, false}, {24, 64, 2, true}}) {
      std::vector<int8_t> A(static_cast<size_t>(M * K));
      std::vector<uint8_t> B(static_cast<size_t>(K * N));
      for (auto& v : A) v = static_cast<int8_t>(extreme ? -128 : s8(rng));
      for (auto& v : B) v = static_cast<uint8_t>(extreme ? 255 : u8(rng));
      const QPackedA pa = QPackA(isa, M, K, A.data(), K);
      std::vector<int32_t> add(static_cast<size_t>(M));
      for (auto& v : add) v = s8(rng) * 1000;
      struct Ctx {
        const uint8_t* b;
        int64_t n, k;
      } ctx{B.data(), N, K};
      const QBSource src{[](const void* c, int64_t k0, int64_t kn, int64_t j0, int64_t n, uint8_t* dst, int64_t stride) {
                           const Ctx& x = *static_cast<const Ctx*>(c);
                           for (int64_t k = 0; k < kn; ++k)
                             for (int64_t j = 0; j < n; ++j) dst[k * stride + j] = x.b[(k0 + k) * x.n + j0 + j];
                         },
                         &ctx};
      std::vector<int32_t> C(static_cast<size_t>(M * N), -1);
      QEpilogue raw;
      raw.row_add = add.data();
      ASSERT_TRUE(QGemm(pool, pa, N, src, raw, C.data(), N));
      std::vector<float> scale(static_cast<size_t>(M));
      for (auto& s : scale) s = 0.0004f * static_cast<float>(1 + u8(rng) % 7);
      QEpilogue q;
      q.row_add = add.data();
      q.row_scale = scale.data();
      q.y_zero = -3;
      q.lo = -100;
      q.hi = 120;
      q.out_i8 = true;
      std::vector<int8_t> Q(static_cast<size_t>(M * N));
      ASSERT_TRUE(QGemm(pool, pa, N, src, q, Q.data(), N));
      // The pixel kernel where the CPU has one: column j's k group g (4
      // bytes, k past K junk) at pixel_off[j] + group_off[g], the columns
      // stored last first with a gap after every third and the groups in
      // reverse (any offsets); C's rows ldc = N + 5 apart, the bytes between
      // left as they were.
      const int pixel_rows = QPixelRows(isa);
      std::vector<int8_t> G(static_cast<size_t>(M * (N + 5)), 77);
      if (pixel_rows != 0) {
        const QPackedA pp = QPackA(isa, M, K, A.data(), K, /*pixel=*/true);
        ASSERT_TRUE(pp.pixel);
        EXPECT_EQ(pp.m_pad % pixel_rows, 0);
        const int64_t groups = (K + 3) / 4, span = (N + N / 3 + 1) * 4;
        std::vector<uint8_t> in(static_cast<size_t>(groups * span), 0xA5);
        std::vector<int64_t> group_off(static_cast<size_t>(groups)), pixel_off(static_cast<size_t>(N));
        for (int64_t j = 0; j < N; ++j) pixel_off[static_cast<size_t>(j)] = (N - 1 - j + (N - 1 - j) / 3) * 4;
        for (int64_t g = 0; g < groups; ++g) {
          group_off[static_cast<size_t>(g)] = (groups - 1 - g) * span;
          for (int64_t k = 4 * g; k < std::min(K, 4 * g + 4); ++k)
            for (int64_t j = 0; j < N; ++j)
              in[static_cast<size_t>(group_off[static_cast<size_t>(g)] + pixel_off[static_cast<size_t>(j)] + k % 4)] =
                  B[static_cast<size_t>(k * N + j)];
        }
        QPixelSource px;
        px.base = in.data();
        px.pixel_off = pixel_off.data();
        px.group_off = group_off.data();
        QConvPixels(pool, pp, N, px, q, G.data(), N + 5);
      }
      int64_t bad = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          int64_t s = add[static_cast<size_t>(i)];
          for (int64_t k = 0; k < K; ++k) s += int64_t{A[static_cast<size_t>(i * K + k)]} * B[static_cast<size_t>(k * N + j)];
          const int32_t want = static_cast<int32_t>(s);
          const int64_t wq = std::min<int64_t>(120, std::max<int64_t>(-100, RoundHalfEven(static_cast<float>(want) * scale[static_cast<size_t>(i)]) - 3));
          bad += C[static_cast<size_t>(i * N + j)] != want || Q[static_cast<size_t>(i * N + j)] != wq ||
                 (pixel_rows != 0 && G[static_cast<size_t>(i * (N + 5) + j)] != wq);
        }
      for (int64_t i = 0; pixel_rows != 0 && i < M; ++i)
        for (int64_t j = N; j < N + 5; ++j) bad += G[static_cast<size_t>(i * (N + 5) + j)] != 77;
      EXPECT_EQ(bad, 0) << QIsaName(isa) << " M=" << M << " K=" << K << " N=" << N;
    }
  }
  EXPECT_GE(kernels, 2);  // scalar and the CPU's own
}

struct ConvCase {
  int64_t n = 1, c = 8, h = 9, w = 11, m = 16, kh = 3, kw = 3, sh = 1, sw = 1, dh = 1, dw = 1, group = 1;
  std::vector<int> pads = {1, 1, 1, 1};  // top, left, bottom, right
  bool one_d = false;
  fb::DataType xt = fb::DataType::U8, wt = fb::DataType::I8, yt = fb::DataType::U8;
  bool per_channel = true, bias = true, constant_w = true, integer = false;
  bool big_bias = false;  // some biases past 2^24 in magnitude (no exact float sums)
  fb::Activation act = fb::Activation::None;
  float act_min = 0, act_max = 6;
};

std::string Describe(const ConvCase& k) {
  char b[256];
  std::snprintf(b, sizeof b, "n%lld c%lld %lldx%lld m%lld k%lldx%lld s%lld,%lld d%lld,%lld g%lld %s x%s w%s y%s%s%s%s act%d",
                static_cast<long long>(k.n), static_cast<long long>(k.c), static_cast<long long>(k.h),
                static_cast<long long>(k.w), static_cast<long long>(k.m), static_cast<long long>(k.kh),
                static_cast<long long>(k.kw), static_cast<long long>(k.sh), static_cast<long long>(k.sw),
                static_cast<long long>(k.dh), static_cast<long long>(k.dw), static_cast<long long>(k.group),
                k.one_d ? "1-D" : "2-D", DataTypeName(k.xt), DataTypeName(k.wt), DataTypeName(k.yt),
                k.per_channel ? " per-channel" : "", k.bias ? " bias" : "", k.constant_w ? " const-w" : "",
                static_cast<int>(k.act));
  return b;
}

void RunCase(const ConvCase& k, uint32_t seed) {
  SCOPED_TRACE(Describe(k));
  std::mt19937 rng(seed);
  const bool xs = k.xt == fb::DataType::I8, ws = k.wt == fb::DataType::I8;
  const int64_t cg = k.c / k.group, mg = k.m / k.group;
  const int64_t oh = (k.h + k.pads[0] + k.pads[2] - ((k.kh - 1) * k.dh + 1)) / k.sh + 1;
  const int64_t ow = (k.w + k.pads[1] + k.pads[3] - ((k.kw - 1) * k.dw + 1)) / k.sw + 1;
  std::vector<uint8_t> x(static_cast<size_t>(k.n * k.c * k.h * k.w)), w(static_cast<size_t>(k.m * cg * k.kh * k.kw));
  for (auto& v : x) v = static_cast<uint8_t>(rng() & 255);
  for (auto& v : w) v = static_cast<uint8_t>(rng() & 255);
  auto xval = [&](size_t i) { return xs ? int64_t{static_cast<int8_t>(x[i])} : int64_t{x[i]}; };
  auto wval = [&](size_t i) { return ws ? int64_t{static_cast<int8_t>(w[i])} : int64_t{w[i]}; };
  // Weight zero points keep w - zw inside int8 (the GEMM's operand): 0 for
  // int8 weights where symmetric, near 128 for uint8 ones.
  const uint8_t zx = static_cast<uint8_t>(xs ? 3 : 119);
  std::vector<uint8_t> zw(static_cast<size_t>(k.per_channel ? k.m : 1));
  for (size_t i = 0; i < zw.size(); ++i)
    zw[i] = static_cast<uint8_t>(ws ? (k.per_channel ? 0 : 0) : 128 + (k.per_channel ? static_cast<int>(i % 2) : 0));
  if (!ws)  // keep w - zw in [-128, 127]: uint8 weights above zw + 127 are clipped
    for (size_t i = 0; i < w.size(); ++i) {
      const size_t m = i / static_cast<size_t>(cg * k.kh * k.kw);
      const int z = zw[k.per_channel ? m : 0];
      w[i] = static_cast<uint8_t>(std::min(z + 127, std::max(z - 128, static_cast<int>(w[i]))));
    }
  auto zwval = [&](int64_t m) {
    const uint8_t z = zw[k.per_channel ? static_cast<size_t>(m) : 0];
    return ws ? int64_t{static_cast<int8_t>(z)} : int64_t{z};
  };
  const int64_t zxv = xs ? int64_t{static_cast<int8_t>(zx)} : int64_t{zx};
  std::vector<int32_t> bias(static_cast<size_t>(k.m));
  for (auto& b : bias) b = static_cast<int32_t>(rng() % 20001) - 10000;
  if (k.big_bias)  // every fourth channel (the others stay in range, unsaturated)
    for (size_t i = 0; i < bias.size(); i += 4) bias[i] += (i % 8 ? 1 : -1) * ((1 << 24) + 3);
  // The reference sums.
  std::vector<int64_t> acc(static_cast<size_t>(k.n * k.m * oh * ow), 0);
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t m = 0; m < k.m; ++m)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          int64_t s = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t u = 0; u < k.kh; ++u)
              for (int64_t v = 0; v < k.kw; ++v) {
                const int64_t iy = y * k.sh - k.pads[0] + u * k.dh, ix = xo * k.sw - k.pads[1] + v * k.dw;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const int64_t c = m / mg * cg + ci;
                s += (xval(static_cast<size_t>(((b * k.c + c) * k.h + iy) * k.w + ix)) - zxv) *
                     (wval(static_cast<size_t>(((m * cg + ci) * k.kh + u) * k.kw + v)) - zwval(m));
              }
          acc[static_cast<size_t>(((b * k.m + m) * oh + y) * ow + xo)] = s;
        }
  fb::ConvParamsT p;
  p.group = static_cast<int32_t>(k.group);
  auto dims = [&](int64_t a, int64_t b) { return k.one_d ? std::vector<int32_t>{static_cast<int32_t>(b)}
                                                         : std::vector<int32_t>{static_cast<int32_t>(a), static_cast<int32_t>(b)}; };
  p.strides = dims(k.sh, k.sw);
  p.dilations = dims(k.dh, k.dw);
  p.pads = k.one_d ? std::vector<int32_t>{k.pads[1], k.pads[3]} : std::vector<int32_t>{k.pads[0], k.pads[1], k.pads[2], k.pads[3]};
  p.activation = k.act;
  p.activation_min = k.act_min;
  p.activation_max = k.act_max;
  const std::vector<int64_t> xshape = k.one_d ? std::vector<int64_t>{k.n, k.c, k.w} : std::vector<int64_t>{k.n, k.c, k.h, k.w};
  const std::vector<int64_t> wshape = k.one_d ? std::vector<int64_t>{k.m, cg, k.kw} : std::vector<int64_t>{k.m, cg, k.kh, k.kw};
  const std::vector<int64_t> zshape = k.per_channel ? std::vector<int64_t>{k.m} : std::vector<int64_t>{};
  auto add_w = [&](OpTest& t) {
    if (k.constant_w) t.constant("w", wshape, k.wt, w.data(), w.size());
    else t.input("w", wshape, k.wt, w.data(), w.size());
  };
  if (k.integer) {
    OpTest t(fb::OpType::ConvInteger);
    t.input("x", xshape, k.xt, x.data(), x.size());
    add_w(t);
    t.constant("zx", {}, k.xt, &zx, 1).constant("zw", zshape, k.wt, zw.data(), zw.size()).params(p);
    auto out = t.run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const auto y = out->at(0).i32();
    ASSERT_EQ(y.size(), acc.size());
    int64_t bad = 0;
    for (size_t i = 0; i < acc.size(); ++i) bad += y[i] != static_cast<int32_t>(acc[i]);
    EXPECT_EQ(bad, 0);
    return;
  }
  const float sx = 0.021f, sy = 0.37f;
  std::vector<float> sw(zw.size());
  for (size_t i = 0; i < sw.size(); ++i) sw[i] = 0.004f + 0.001f * static_cast<float>(i % 5);
  const uint8_t zy = static_cast<uint8_t>(k.yt == fb::DataType::I8 ? 0xF6 /* -10 */ : 100);
  OpTest t(fb::OpType::QLinearConv);
  t.input("x", xshape, k.xt, x.data(), x.size()).constant("sx", {}, std::vector<float>{sx});
  t.constant("zx", {}, k.xt, &zx, 1);
  add_w(t);
  t.constant("sw", zshape, sw).constant("zw", zshape, k.wt, zw.data(), zw.size());
  t.constant("sy", {}, std::vector<float>{sy}).constant("zy", {}, k.yt, &zy, 1);
  if (k.bias) t.constant("b", {k.m}, fb::DataType::I32, bias.data(), bias.size() * 4);
  t.params(p);
  auto out = t.run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->at(0).dtype, k.yt);
  const auto& bytes = out->at(0).bytes;
  ASSERT_EQ(bytes.size(), acc.size());
  const bool ys = k.yt == fb::DataType::I8;
  const int64_t zyv = ys ? -10 : 100;
  int64_t lo = ys ? -128 : 0, hi = ys ? 127 : 255;
  if (k.act == fb::Activation::Relu) lo = std::max(lo, zyv);
  if (k.act == fb::Activation::Clip) {
    lo = std::max(lo, zyv + RoundHalfEven(static_cast<double>(k.act_min / sy)));
    hi = std::min(hi, zyv + RoundHalfEven(static_cast<double>(k.act_max / sy)));
  }
  int64_t bad = 0, clamped = 0;
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t m = static_cast<int64_t>(i) / (oh * ow) % k.m;
    const int32_t s = static_cast<int32_t>(acc[i] + (k.bias ? bias[static_cast<size_t>(m)] : 0));
    const float mult = sx * sw[k.per_channel ? static_cast<size_t>(m) : 0] / sy;
    // f32 arithmetic, as onnxruntime: float(sum) * multiplier.
    const int64_t want = std::min(hi, std::max(lo, RoundHalfEven(static_cast<float>(s) * mult) + zyv));
    clamped += want == lo || want == hi;
    const int64_t got = ys ? int64_t{static_cast<int8_t>(bytes[i])} : int64_t{static_cast<uint8_t>(bytes[i])};
    bad += got != want;
  }
  EXPECT_EQ(bad, 0);
  EXPECT_LT(clamped, static_cast<int64_t>(acc.size()));  // the case is not all saturated
}

void GemmPathCases() {
  uint32_t seed = 1;
  ConvCase base;
  RunCase(base, seed++);
  for (auto xt : {fb::DataType::U8, fb::DataType::I8})
    for (auto wt : {fb::DataType::U8, fb::DataType::I8})
      for (auto yt : {fb::DataType::U8, fb::DataType::I8}) {
        ConvCase k;
        k.xt = xt, k.wt = wt, k.yt = yt;
        k.per_channel = wt == fb::DataType::I8;
        RunCase(k, seed++);
      }
  ConvCase pw;  // 1x1: the input planes are B's rows
  pw.kh = pw.kw = 1;
  pw.pads = {0, 0, 0, 0};
  pw.c = 67, pw.m = 35, pw.h = 12, pw.w = 13;
  RunCase(pw, seed++);
  ConvCase big;  // several column blocks and threads; 3 input channels
  big.c = 3, big.m = 32, big.h = 40, big.w = 41, big.sh = big.sw = 2, big.n = 2;
  RunCase(big, seed++);
  ConvCase deep;  // K = 1152
  deep.c = 128, deep.m = 20, deep.h = 6, deep.w = 5;
  RunCase(deep, seed++);
  ConvCase odd;  // dilation, asymmetric pads, a 2x5 kernel, stride 3
  odd.kh = 2, odd.kw = 5, odd.dh = 2, odd.dw = 1, odd.sh = 1, odd.sw = 3, odd.pads = {0, 2, 1, 0};
  RunCase(odd, seed++);
  ConvCase wide;  // stride 1 with dilation and uneven pads: the wide-row path's taps and junk columns
  wide.kh = 3, wide.kw = 2, wide.dh = 2, wide.dw = 3, wide.pads = {2, 0, 1, 3}, wide.h = 11, wide.w = 13, wide.n = 2;
  RunCase(wide, seed++);
  ConvCase grouped;
  grouped.c = 12, grouped.m = 18, grouped.group = 3;
  RunCase(grouped, seed++);
  ConvCase one_d;
  one_d.one_d = true, one_d.h = 1, one_d.kh = 1, one_d.w = 50, one_d.kw = 5, one_d.pads = {0, 2, 0, 2};
  RunCase(one_d, seed++);
  ConvCase relu;
  relu.act = fb::Activation::Relu;
  RunCase(relu, seed++);
  ConvCase clip;
  clip.act = fb::Activation::Clip, clip.act_min = -2.f, clip.act_max = 3.f, clip.yt = fb::DataType::I8;
  RunCase(clip, seed++);
  ConvCase dynamic_w;
  dynamic_w.constant_w = false;
  RunCase(dynamic_w, seed++);
  ConvCase nobias;
  nobias.bias = false, nobias.per_channel = false;
  RunCase(nobias, seed++);
  ConvCase integer;
  integer.integer = true;
  RunCase(integer, seed++);
  integer.xt = fb::DataType::I8, integer.kh = integer.kw = 1, integer.pads = {0, 0, 0, 0};
  RunCase(integer, seed++);
  ConvCase quads;  // 13 channels (a part quad), 5x5, several column blocks and both threads, int8 input
  quads.c = 13, quads.m = 40, quads.h = 30, quads.w = 61, quads.kh = quads.kw = 5, quads.pads = {2, 2, 2, 2};
  quads.xt = fb::DataType::I8, quads.n = 2;
  RunCase(quads, seed++);
  ConvCase s2;  // stride 2 over an odd and an even side (the pixel kernel's offsets skip a column and a row)
  s2.c = 24, s2.m = 40, s2.h = 29, s2.w = 34, s2.sh = s2.sw = 2, s2.xt = fb::DataType::I8;
  RunCase(s2, seed++);
  ConvCase down;  // 1x1 stride 2 (a ResNet downsample)
  down.c = 32, down.m = 16, down.h = 14, down.w = 15, down.kh = down.kw = 1, down.sh = down.sw = 2;
  down.pads = {0, 0, 0, 0};
  RunCase(down, seed++);
  ConvCase down_wide;  // 1x1 strides 3 and 2 over rows long enough for the vector subsample; int8 x, two images
  down_wide.c = 40, down_wide.m = 24, down_wide.h = 17, down_wide.w = 75, down_wide.kh = down_wide.kw = 1;
  down_wide.sh = 3, down_wide.sw = 2, down_wide.pads = {0, 0, 0, 0}, down_wide.xt = fb::DataType::I8, down_wide.n = 2;
  RunCase(down_wide, seed++);
  ConvCase down_pad;  // 1x1 stride 2 whose far padding is read (the last row and column: the zero point)
  down_pad.c = 20, down_pad.m = 12, down_pad.h = 14, down_pad.w = 40, down_pad.kh = down_pad.kw = 1;
  down_pad.sh = down_pad.sw = 2, down_pad.pads = {0, 0, 1, 1};
  RunCase(down_pad, seed++);
  ConvCase long_rows;  // stride 1 on 150-wide rows of uint8: the NC4HW4 copy's 64-column interleave and its tail
  long_rows.c = 8, long_rows.m = 24, long_rows.h = 7, long_rows.w = 150;
  RunCase(long_rows, seed++);
  ConvCase patch;  // 2x2, stride 3 in y and 2 in x, dilation 3 in x
  patch.c = 16, patch.m = 8, patch.h = 20, patch.w = 70, patch.kh = patch.kw = 2, patch.sh = 3, patch.sw = 2;
  patch.dw = 3, patch.pads = {1, 0, 0, 2};
  RunCase(patch, seed++);
}

// Each case with the pixel kernel (the NC4HW4 copy read in place, where the
// CPU has the kernel) and the strided 1x1 convs' subsampled copy, and with B
// gathered for the GEMM for both.
TEST(QLinearConvFast, GemmPaths) {
  for (const char* on : {"1", "0"}) {
    SCOPED_TRACE(std::string("KILN_HOST_QCONV_PIXELS and KILN_HOST_QCONV_SUBSAMPLE=") + on);
    setenv("KILN_HOST_QCONV_PIXELS", on, 1);
    setenv("KILN_HOST_QCONV_SUBSAMPLE", on, 1);
    GemmPathCases();
  }
  unsetenv("KILN_HOST_QCONV_PIXELS");
  unsetenv("KILN_HOST_QCONV_SUBSAMPLE");
}

// Depthwise QLinearConvs, each through the integer kernel (DepthwiseQ8Dot,
// where the CPU has VNNI and VBMI and the shape suits) and through the float
// one (KILN_HOST_QDW_DOT=0), against the exact reference.
TEST(QLinearConvFast, DepthwisePaths) {
  for (const char* dot : {"1", "0"}) {
    SCOPED_TRACE(std::string("KILN_HOST_QDW_DOT=") + dot);
    setenv("KILN_HOST_QDW_DOT", dot, 1);
    uint32_t seed = 100;
    for (int64_t s : {1, 2})
      for (auto xt : {fb::DataType::U8, fb::DataType::I8}) {
        ConvCase k;
        k.c = k.m = k.group = 24;
        k.h = 17, k.w = 19, k.sh = k.sw = s, k.xt = xt, k.yt = xt;
        k.act = fb::Activation::Clip, k.act_min = 0, k.act_max = 6;
        RunCase(k, seed++);
      }
    ConvCase five;  // 5x5, pad 2, per-tensor, batch 2, Relu
    five.c = five.m = five.group = 10, five.kh = five.kw = 5, five.pads = {2, 2, 2, 2}, five.n = 2;
    five.per_channel = false, five.act = fb::Activation::Relu;
    RunCase(five, seed++);
    ConvCase large;  // 56x56 and 57x57 planes: rows of several 16-output blocks and a partial one
    large.c = large.m = large.group = 6, large.h = 56, large.w = 57;
    RunCase(large, seed++);
    large.sh = large.sw = 2, large.h = 57, large.pads = {0, 0, 1, 1};  // TF-style same padding at stride 2
    RunCase(large, seed++);
    ConvCase banded;  // 100x90: the float kernel's bands of rows (BandRows)
    banded.c = banded.m = banded.group = 3, banded.h = 100, banded.w = 90;
    RunCase(banded, seed++);
    banded.sh = banded.sw = 2, banded.pads = {2, 1, 0, 1};
    RunCase(banded, seed++);
    ConvCase seven;  // 7x7 (two tap groups a row), stride 2, asymmetric pads, uint8 weights
    seven.c = seven.m = seven.group = 5, seven.kh = seven.kw = 7, seven.sh = seven.sw = 2, seven.h = 23, seven.w = 30;
    seven.pads = {3, 1, 2, 4}, seven.wt = fb::DataType::U8;
    RunCase(seven, seed++);
    ConvCase flat;  // 1x5 over one row, no bias, int8 output
    flat.c = flat.m = flat.group = 4, flat.kh = 1, flat.kw = 5, flat.h = 1, flat.w = 40, flat.pads = {0, 2, 0, 2};
    flat.bias = false, flat.yt = fb::DataType::I8;
    RunCase(flat, seed++);
    ConvCase dil;  // dilation 2: the flat kernel's taps spread
    dil.c = dil.m = dil.group = 8, dil.dh = dil.dw = 2, dil.pads = {2, 2, 2, 2};
    RunCase(dil, seed++);
    ConvCase s3;  // stride 3: the reference kernel
    s3.c = s3.m = s3.group = 8, s3.sh = s3.sw = 3;
    RunCase(s3, seed++);
    ConvCase mult;  // a channel multiplier of 2 (grouped GEMM)
    mult.c = 8, mult.m = 16, mult.group = 8;
    RunCase(mult, seed++);
  }
  unsetenv("KILN_HOST_QDW_DOT");
}

// Small planes with 16 channels or more, through the 16-channel kernel
// (DepthwiseChannels16Quant, on AVX-512, stride 1) and without it
// (KILN_HOST_QDW_C16=0), against the exact reference: a partial block of
// channels, 3x3, 5x5 on 14x14, int8 and uint8, a stride-2 case (the other
// kernels), biases past 2^24 (where the float sums would not be exact: the
// integer kernel takes them).
TEST(QLinearConvFast, DepthwiseSmallPlanes) {
  for (const char* c16 : {"1", "0"}) {
    SCOPED_TRACE(std::string("KILN_HOST_QDW_C16=") + c16);
    setenv("KILN_HOST_QDW_C16", c16, 1);
    uint32_t seed = 300;
    for (auto xt : {fb::DataType::U8, fb::DataType::I8}) {
      ConvCase seven;  // 40 channels (a block of 8), 7x7
      seven.c = seven.m = seven.group = 40, seven.h = seven.w = 7, seven.xt = xt, seven.yt = xt;
      seven.act = fb::Activation::Clip, seven.act_min = 0, seven.act_max = 6;
      RunCase(seven, seed++);
    }
    ConvCase s2;  // 16x16 at stride 2 to 8x8, TF-style padding, batch 2
    s2.c = s2.m = s2.group = 32, s2.h = s2.w = 16, s2.sh = s2.sw = 2, s2.pads = {0, 0, 1, 1}, s2.n = 2;
    RunCase(s2, seed++);
    ConvCase five;  // 5x5 on 14x14, per-tensor, Relu, int8 output
    five.c = five.m = five.group = 20, five.kh = five.kw = 5, five.h = five.w = 14, five.pads = {2, 2, 2, 2};
    five.per_channel = false, five.act = fb::Activation::Relu, five.yt = fb::DataType::I8;
    RunCase(five, seed++);
    ConvCase big;  // biases past 2^24
    big.c = big.m = big.group = 16, big.h = big.w = 7, big.big_bias = true;
    RunCase(big, seed++);
  }
  unsetenv("KILN_HOST_QDW_C16");
}

TEST(QLinearConvFast, ActivationWithoutIntegerFormIsRefused) {
  ConvCase k;
  k.act = fb::Activation::Sigmoid;
  const std::vector<uint8_t> x(static_cast<size_t>(k.c * k.h * k.w), 1);
  const std::vector<int8_t> w(static_cast<size_t>(k.m * k.c * 9), 1);
  const uint8_t z = 0;
  fb::ConvParamsT p;
  p.pads = {1, 1, 1, 1};
  p.activation = fb::Activation::Sigmoid;
  OpTest t(fb::OpType::QLinearConv);
  t.input("x", {1, k.c, k.h, k.w}, fb::DataType::U8, x.data(), x.size()).constant("sx", {}, std::vector<float>{1.f});
  t.constant("zx", {}, fb::DataType::U8, &z, 1).constant("w", {k.m, k.c, 3, 3}, fb::DataType::I8, w.data(), w.size());
  t.constant("sw", {}, std::vector<float>{1.f}).constant("zw", {}, fb::DataType::I8, &z, 1);
  t.constant("sy", {}, std::vector<float>{1.f}).constant("zy", {}, fb::DataType::U8, &z, 1).params(p);
  auto out = t.run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("Sigmoid"), std::string::npos) << out.status().ToString();
}

// QLinearMatMul with constant 2-D weights (QGemm on B^T X^T): a batched X
// of u8 or i8, int8 weights with per-column or per-tensor scales and zero
// points, with and without Kiln's int32 bias (input 8, fuse_qdq's Gemm),
// bit for bit against the sums written here; and the bias through the
// reference kernel (weights given as an input). 15 rows of K = 70: the
// AMX kernel where the CPU has it.
TEST(QLinearMatMulFast, ConstantWeightsAgainstReference) {
  std::mt19937 rng(21);
  struct Case {
    bool xi8, per_column, bias, const_w;
  };
  for (const Case& cs : {Case{false, false, false, true}, Case{false, true, false, true}, Case{true, false, false, true},
                         Case{true, true, false, true}, Case{false, true, true, true}, Case{true, false, true, true},
                         Case{false, true, true, false}}) {
      const bool xi8 = cs.xi8, per_column = cs.per_column;
      SCOPED_TRACE(std::string(xi8 ? "x i8" : "x u8") + (per_column ? ", per column" : ", per tensor") +
                   (cs.bias ? ", bias" : "") + (cs.const_w ? "" : ", weights an input"));
      const int64_t B = 3, M = 5, K = 70, N = 19;  // K of 64 or more: AMX where the CPU has it
      std::vector<uint8_t> x(static_cast<size_t>(B * M * K));
      std::vector<int8_t> w(static_cast<size_t>(K * N));
      for (auto& v : x) v = static_cast<uint8_t>(rng() & 255);
      for (auto& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 241) - 120);  // w - zw stays int8
      const uint8_t zx = xi8 ? 0xFB : 117;
      const int64_t zxv = xi8 ? -5 : 117;
      const size_t nz = per_column ? static_cast<size_t>(N) : 1;
      std::vector<int8_t> zw(nz);
      std::vector<float> sw(nz);
      for (size_t i = 0; i < nz; ++i) zw[i] = static_cast<int8_t>(static_cast<int>(i % 3) - 1), sw[i] = 0.003f + 0.0007f * static_cast<float>(i % 4);
      const float sx = 0.05f, sy = 0.11f;
      const uint8_t zy = 100;
      const fb::DataType xt = xi8 ? fb::DataType::I8 : fb::DataType::U8;
      OpTest t(fb::OpType::QLinearMatMul);
      t.input("x", {B, M, K}, xt, x.data(), x.size()).constant("sx", {}, std::vector<float>{sx});
      t.constant("zx", {}, xt, &zx, 1);
      if (cs.const_w)
        t.constant("w", {K, N}, fb::DataType::I8, w.data(), w.size());
      else
        t.input("w", {K, N}, fb::DataType::I8, w.data(), w.size());
      const std::vector<int64_t> zshape = per_column ? std::vector<int64_t>{N} : std::vector<int64_t>{};
      t.constant("sw", zshape, sw).constant("zw", zshape, fb::DataType::I8, zw.data(), zw.size());
      t.constant("sy", {}, std::vector<float>{sy}).constant("zy", {}, fb::DataType::U8, &zy, 1);
      std::vector<int32_t> bias(static_cast<size_t>(N), 0);
      if (cs.bias) {
        for (auto& v : bias) v = static_cast<int32_t>(rng() % 40001) - 20000;
        t.constant("bias", {N}, fb::DataType::I32, bias.data(), bias.size() * sizeof(int32_t));
      }
      auto out = t.run();
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      const auto& got = out->at(0).bytes;
      ASSERT_EQ(got.size(), static_cast<size_t>(B * M * N));
      int64_t bad = 0;
      for (int64_t r = 0; r < B * M; ++r)
        for (int64_t n = 0; n < N; ++n) {
          int64_t s = bias[static_cast<size_t>(n)];
          const size_t c = per_column ? static_cast<size_t>(n) : 0;
          for (int64_t k = 0; k < K; ++k) {
            const int64_t xv = xi8 ? int64_t{static_cast<int8_t>(x[static_cast<size_t>(r * K + k)])} : int64_t{x[static_cast<size_t>(r * K + k)]};
            s += (xv - zxv) * (int64_t{w[static_cast<size_t>(k * N + n)]} - zw[c]);
          }
          const float mult = sx * sw[c] / sy;
          const int64_t want = std::min<int64_t>(255, std::max<int64_t>(0, RoundHalfEven(static_cast<float>(s) * mult) + zy));
          bad += got[static_cast<size_t>(r * N + n)] != want;
        }
      EXPECT_EQ(bad, 0);
  }
}

// An 8-bit tensor fed to a float-only op without a DequantizeLinear: the
// error names the tensor and the missing step.
TEST(QLinearConvFast, QuantizedTensorIntoFloatOpIsRefusedByName) {
  const std::vector<uint8_t> x(2 * 5 * 5, 7);
  fb::ConvParamsT p;
  p.kernel_shape = {3, 3};
  OpTest t(fb::OpType::Conv);
  t.input("activations_q", {1, 2, 5, 5}, fb::DataType::U8, x.data(), x.size());
  t.constant("w", {4, 2, 3, 3}, std::vector<float>(72, 0.5f)).params(p);
  auto out = t.run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("'activations_q'"), std::string::npos) << out.status().ToString();
  EXPECT_NE(out.status().message().find("DequantizeLinear"), std::string::npos) << out.status().ToString();
}

}  // namespace
}  // namespace kiln
