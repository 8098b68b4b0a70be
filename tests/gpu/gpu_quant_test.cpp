// The quantized ops on a GPU backend against the host (gpu_quant.cpp), bit
// for bit (tolerance 0, integer outputs compared byte for byte): per-axis
// and per-tensor QuantizeLinear (ties, saturation, scales that are not
// powers of two, a scale fed at run time) and DequantizeLinear,
// DynamicQuantizeLinear (more elements than the reduction's work group, an
// all-positive input), MatMulInteger with per-row zero points,
// QLinearMatMul with broadcast batches and per-column scales and zero
// points, ConvInteger 1-D and QLinearConv grouped, strided and padded with
// a bias and per-channel weight scales, QLinearAdd, 8-bit MaxPool. Odd
// sizes throughout.
#include <cstdint>

#include "support/backend_compare.h"

namespace kiln::test {
namespace {

const ForwardType kGpu = TestGpu();

template <typename T>
OpTest& In(OpTest& t, const std::string& name, std::vector<int64_t> shape, fb::DataType dt, const std::vector<T>& v) {
  return t.input(name, std::move(shape), dt, v.data(), v.size() * sizeof(T));
}
template <typename T>
OpTest& Const(OpTest& t, const std::string& name, std::vector<int64_t> shape, fb::DataType dt, const std::vector<T>& v) {
  return t.constant(name, std::move(shape), dt, v.data(), v.size() * sizeof(T));
}

// Bytes in [lo, hi] from a fixed pattern.
template <typename T>
std::vector<T> Bytes(size_t n, int lo, int hi, uint32_t seed) {
  std::vector<T> v(n);
  const std::vector<float> r = Random(n, 0.f, 1.f, seed);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(lo + static_cast<int>(r[i] * static_cast<float>(hi - lo + 1)));
  return v;
}

TEST(GpuQuant, QuantizeLinear) {
  KILN_REQUIRE_BACKEND(kGpu);
  {
    // Per axis 1 of [2, 5, 3], i8, scales that are not powers of two.
    OpTest t(fb::OpType::QuantizeLinear);
    t.input("x", {2, 5, 3}, Random(30, -3.f, 3.f, 11));
    t.constant("s", {5}, std::vector<float>{0.0173f, 0.031f, 0.0029f, 0.11f, 0.0071f});
    Const(t, "z", {5}, fb::DataType::I8, std::vector<int8_t>{0, -7, 3, 100, -128});
    fb::AxisParamsT p;
    p.axis = 1;
    ExpectSameAsHost(t.params(p), kGpu, 0.f, "QuantizeLinear per axis i8");
  }
  {
    // Per tensor u8, the scale fed at run time; ties (x / 0.5 = k + 0.5),
    // saturation both ways, NaN-free.
    std::vector<float> x = Random(61, -200.f, 200.f, 12);
    for (int k = -6; k <= 6; ++k) x.push_back((static_cast<float>(k) + 0.5f) * 0.5f);
    OpTest t(fb::OpType::QuantizeLinear);
    t.input("x", {static_cast<int64_t>(x.size())}, x).input("s", {}, std::vector<float>{0.5f});
    Const(t, "z", {}, fb::DataType::U8, std::vector<uint8_t>{131});
    ExpectSameAsHost(t, kGpu, 0.f, "QuantizeLinear u8 ties");
  }
  {
    // Many quotients near .5 with an odd scale, no zero point (u8, 0).
    OpTest t(fb::OpType::QuantizeLinear);
    t.input("x", {997}, Random(997, -1.f, 4.f, 13)).input("s", {}, std::vector<float>{0.0137f});
    ExpectSameAsHost(t, kGpu, 0.f, "QuantizeLinear no zero point");
  }
}

TEST(GpuQuant, DequantizeLinear) {
  KILN_REQUIRE_BACKEND(kGpu);
  {
    OpTest t(fb::OpType::DequantizeLinear);
    In(t, "x", {3, 7}, fb::DataType::I8, Bytes<int8_t>(21, -128, 127, 21));
    t.constant("s", {3}, std::vector<float>{0.013f, 0.7f, 3.1f});
    Const(t, "z", {3}, fb::DataType::I8, std::vector<int8_t>{-3, 0, 127});
    fb::AxisParamsT p;
    p.axis = 0;
    ExpectSameAsHost(t.params(p), kGpu, 0.f, "DequantizeLinear per axis 0 i8");
  }
  {
    OpTest t(fb::OpType::DequantizeLinear);
    In(t, "x", {2, 3, 5}, fb::DataType::U8, Bytes<uint8_t>(30, 0, 255, 22));
    t.input("s", {5}, std::vector<float>{0.5f, 0.0037f, 1.f, 2.25f, 0.1f});
    fb::AxisParamsT p;
    p.axis = -1;
    ExpectSameAsHost(t.params(p), kGpu, 0.f, "DequantizeLinear per last axis u8, no zero point");
  }
}

TEST(GpuQuant, DynamicQuantizeLinear) {
  KILN_REQUIRE_BACKEND(kGpu);
  ExpectSameAsHost(OpTest(fb::OpType::DynamicQuantizeLinear).input("x", {7, 13}, Random(91, -2.3f, 1.1f, 31)).outputs(3),
                   kGpu, 0.f, "DynamicQuantizeLinear [7, 13]");
  ExpectSameAsHost(OpTest(fb::OpType::DynamicQuantizeLinear).input("x", {1001}, Random(1001, 0.2f, 9.f, 32)).outputs(3),
                   kGpu, 0.f, "DynamicQuantizeLinear all positive, 1001");
  ExpectSameAsHost(OpTest(fb::OpType::DynamicQuantizeLinear).input("x", {3, 5}, Random(15, -4.f, -0.5f, 33)).outputs(3),
                   kGpu, 0.f, "DynamicQuantizeLinear all negative");
}

TEST(GpuQuant, MatMulInteger) {
  KILN_REQUIRE_BACKEND(kGpu);
  OpTest t(fb::OpType::MatMulInteger);
  In(t, "a", {3, 5, 11}, fb::DataType::U8, Bytes<uint8_t>(165, 0, 255, 41));
  In(t, "b", {11, 7}, fb::DataType::I8, Bytes<int8_t>(77, -128, 127, 42));
  Const(t, "za", {5}, fb::DataType::U8, std::vector<uint8_t>{0, 128, 255, 17, 3});
  ExpectSameAsHost(t, kGpu, 0.f, "MatMulInteger per-row a zero point, no b zero point");
}

TEST(GpuQuant, QLinearMatMul) {
  KILN_REQUIRE_BACKEND(kGpu);
  {
    // a [2, 1, 5, 9] against b [3, 9, 7]: batches broadcast to [2, 3];
    // b per column scales and zero points, y i8.
    OpTest t(fb::OpType::QLinearMatMul);
    In(t, "a", {2, 1, 5, 9}, fb::DataType::U8, Bytes<uint8_t>(90, 0, 255, 51));
    t.input("sa", {}, std::vector<float>{0.0213f});
    Const(t, "za", {}, fb::DataType::U8, std::vector<uint8_t>{119});
    In(t, "b", {3, 9, 7}, fb::DataType::I8, Bytes<int8_t>(189, -128, 127, 52));
    t.constant("sb", {7}, std::vector<float>{0.0071f, 0.013f, 0.0009f, 0.021f, 0.0043f, 0.0111f, 0.03f});
    Const(t, "zb", {7}, fb::DataType::I8, std::vector<int8_t>{0, 3, -9, 12, -128, 127, 1});
    t.input("sy", {}, std::vector<float>{0.0507f});
    Const(t, "zy", {}, fb::DataType::I8, std::vector<int8_t>{-3});
    ExpectSameAsHost(t, kGpu, 0.f, "QLinearMatMul broadcast batches i8");
  }
  {
    // 2-D u8 throughout, per-row a scale and zero point.
    OpTest t(fb::OpType::QLinearMatMul);
    In(t, "a", {5, 13}, fb::DataType::U8, Bytes<uint8_t>(65, 0, 255, 53));
    t.constant("sa", {5}, std::vector<float>{0.01f, 0.002f, 0.031f, 0.0066f, 0.017f});
    Const(t, "za", {5}, fb::DataType::U8, std::vector<uint8_t>{113, 0, 255, 7, 128});
    In(t, "b", {13, 3}, fb::DataType::U8, Bytes<uint8_t>(39, 0, 255, 54));
    t.constant("sb", {}, std::vector<float>{0.00705f});
    Const(t, "zb", {}, fb::DataType::U8, std::vector<uint8_t>{114});
    t.constant("sy", {}, std::vector<float>{0.0107f});
    Const(t, "zy", {}, fb::DataType::U8, std::vector<uint8_t>{118});
    ExpectSameAsHost(t, kGpu, 0.f, "QLinearMatMul 2-D u8 per-row a");
  }
  {
    // Kiln's int32 bias of B's columns (input 8: fuse_qdq's quantized Gemm),
    // constant weights per column as that pass writes them.
    OpTest t(fb::OpType::QLinearMatMul);
    In(t, "a", {3, 21}, fb::DataType::U8, Bytes<uint8_t>(63, 0, 255, 55));
    t.constant("sa", {}, std::vector<float>{0.0189f});
    Const(t, "za", {}, fb::DataType::U8, std::vector<uint8_t>{97});
    Const(t, "b", {21, 6}, fb::DataType::I8, Bytes<int8_t>(126, -127, 127, 56));
    t.constant("sb", {6}, std::vector<float>{0.0031f, 0.0052f, 0.0017f, 0.0044f, 0.0023f, 0.0061f});
    Const(t, "zb", {6}, fb::DataType::I8, std::vector<int8_t>(6, 0));
    t.constant("sy", {}, std::vector<float>{0.0411f});
    Const(t, "zy", {}, fb::DataType::U8, std::vector<uint8_t>{131});
    Const(t, "bias", {6}, fb::DataType::I32, std::vector<int32_t>{1200, -3400, 0, 77, -9000, 25000});
    ExpectSameAsHost(t, kGpu, 0.f, "QLinearMatMul with an int32 bias");
  }
}

TEST(GpuQuant, ConvInteger) {
  KILN_REQUIRE_BACKEND(kGpu);
  OpTest t(fb::OpType::ConvInteger);
  In(t, "x", {2, 3, 9}, fb::DataType::I8, Bytes<int8_t>(54, -128, 127, 61));
  In(t, "w", {5, 3, 2}, fb::DataType::I8, Bytes<int8_t>(30, -128, 127, 62));
  Const(t, "zx", {}, fb::DataType::I8, std::vector<int8_t>{-7});
  fb::ConvParamsT p;
  p.pads = {1, 0};
  p.dilations = {2};
  ExpectSameAsHost(t.params(p), kGpu, 0.f, "ConvInteger 1-D dilated");
}

TEST(GpuQuant, QLinearConv) {
  KILN_REQUIRE_BACKEND(kGpu);
  OpTest t(fb::OpType::QLinearConv);
  In(t, "x", {2, 4, 5, 7}, fb::DataType::U8, Bytes<uint8_t>(280, 0, 255, 71));
  t.constant("sx", {}, std::vector<float>{0.023f});
  Const(t, "zx", {}, fb::DataType::U8, std::vector<uint8_t>{97});
  In(t, "w", {6, 2, 3, 3}, fb::DataType::I8, Bytes<int8_t>(108, -128, 127, 72));
  t.constant("sw", {6}, std::vector<float>{0.004f, 0.0113f, 0.007f, 0.0021f, 0.019f, 0.0057f});
  Const(t, "zw", {6}, fb::DataType::I8, std::vector<int8_t>{0, -3, 5, 0, 1, -1});
  t.constant("sy", {}, std::vector<float>{0.0917f});
  Const(t, "zy", {}, fb::DataType::U8, std::vector<uint8_t>{121});
  Const(t, "bias", {6}, fb::DataType::I32, std::vector<int32_t>{100, -2000, 7, 0, 31337, -5});
  fb::ConvParamsT p;
  p.group = 2;
  p.strides = {2, 1};
  p.pads = {1, 1, 0, 2};
  ExpectSameAsHost(t.params(p), kGpu, 0.f, "QLinearConv grouped, strided, padded, bias");
  // The fused activations fuse_qdq writes: clamps of the quantized output.
  p.activation = fb::Activation::Relu;
  ExpectSameAsHost(t.params(p), kGpu, 0.f, "QLinearConv with a fused Relu");
  p.activation = fb::Activation::Clip;
  p.activation_min = -1.5f;
  p.activation_max = 2.f;
  ExpectSameAsHost(t.params(p), kGpu, 0.f, "QLinearConv with a fused Clip");
}

// Products of K >= 4 take qmatmul_dot (four k a word, 4 x 4 outputs an
// invocation, zero points after the byte products): every pairing of u8
// and i8 with both zero points set, K leaving padding, rows and columns
// leaving partial blocks, batched A against shared B; K = 3 keeps the
// one-output kernel.
TEST(GpuQuant, MatMulByWords) {
  KILN_REQUIRE_BACKEND(kGpu);
  const fb::DataType u8 = fb::DataType::U8, i8 = fb::DataType::I8;
  uint32_t seed = 600;
  for (const auto& [at, bt] : {std::pair{u8, i8}, {i8, i8}, {u8, u8}, {i8, u8}})
    for (const int64_t k : {70, 3}) {
      const bool as = at == i8, bs = bt == i8;
      for (const bool ql : {true, false})
      for (const bool constant_b : {false, true}) {  // packed on the device each run, or once on the host
        OpTest t(ql ? fb::OpType::QLinearMatMul : fb::OpType::MatMulInteger);
        const std::vector<uint8_t> za{static_cast<uint8_t>(as ? 0xf3 : 129)}, zb{static_cast<uint8_t>(bs ? 5 : 121)};
        In(t, "a", {2, 6, k}, at, Bytes<uint8_t>(static_cast<size_t>(12 * k), 0, 255, ++seed));
        if (ql) {
          t.constant("sa", {}, std::vector<float>{0.017f});
          Const(t, "za", {}, at, za);
        }
        const std::vector<uint8_t> b = Bytes<uint8_t>(static_cast<size_t>(9 * k), 0, 255, ++seed);
        if (constant_b) Const(t, "b", {k, 9}, bt, b);
        else In(t, "b", {k, 9}, bt, b);
        if (ql) {
          t.constant("sb", {}, std::vector<float>{0.0093f});
          Const(t, "zb", {}, bt, zb);
          t.constant("sy", {}, std::vector<float>{0.61f});
          Const(t, "zy", {}, at, std::vector<uint8_t>{static_cast<uint8_t>(as ? 0xfe : 126)});
        } else {
          Const(t, "za", {}, at, za);
          Const(t, "zb", {}, bt, zb);
        }
        ExpectSameAsHost(t, kGpu, 0.f,
                         std::string(ql ? "QLinearMatMul" : "MatMulInteger") + (constant_b ? " (constant b)" : "") +
                             " a " + fb::EnumNameDataType(at) +
                             " b " + fb::EnumNameDataType(bt) + ", K " + std::to_string(k));
      }
    }
}

// Convs of four or more output channels a group take qconv_dot (four
// channels a word, 4 x 4 outputs an invocation, zero points applied after
// the byte products), depthwise ones qconv_dw: every pairing of u8 and i8,
// channel counts that leave padding channels and partial blocks, widths
// that leave partial columns, zero points on either side (per tensor and
// per channel), stride, dilation, padding that makes windows read outside
// X, groups, 1-D and 3-D, with blocks of 4 and of 8 columns.
TEST(GpuQuant, QLinearConvByChannelWords) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    fb::DataType xt, wt;
    std::vector<int64_t> x, w;
    int64_t group;
    std::vector<int> strides, pads, dilations;
    bool zw_per_channel;
  };
  const fb::DataType u8 = fb::DataType::U8, i8 = fb::DataType::I8;
  const Case cases[] = {
      {u8, i8, {1, 5, 9, 11}, {6, 5, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {i8, i8, {2, 8, 10, 9}, {10, 4, 3, 3}, 2, {2, 2}, {2, 1, 0, 2}, {2, 1}, false},
      {u8, u8, {1, 7, 6, 13}, {4, 7, 1, 1}, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},
      {i8, u8, {1, 3, 17}, {9, 3, 5}, 1, {3}, {2, 4}, {1}, true},
      {u8, i8, {1, 4, 3, 5, 6}, {5, 4, 2, 3, 3}, 1, {1, 1, 2}, {1, 0, 1, 0, 1, 1}, {1, 1, 1}, false},
      // Depthwise (qconv_dw: a row's columns an invocation).
      {u8, i8, {1, 6, 9, 13}, {6, 1, 3, 3}, 6, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},
      {i8, i8, {2, 5, 11, 10}, {5, 1, 3, 3}, 5, {2, 2}, {1, 0, 1, 1}, {1, 1}, false},
      {u8, u8, {1, 4, 19}, {4, 1, 5}, 4, {1}, {4, 2}, {2}, true},
  };
  uint32_t seed = 500;
  // Each case with the block GPUs take (4 columns) and CPU drivers' (8).
  for (const char* cols : {"4", "8"})
  for (const Case& c : cases) {
    setenv("KILN_GPU_QDOT_COLS", cols, 1);
    const int64_t cout = c.w[0];
    int64_t xn = 1, wn = 1;
    for (int64_t d : c.x) xn *= d;
    for (int64_t d : c.w) wn *= d;
    const bool xs = c.xt == i8, ws = c.wt == i8;
    // Every bit pattern, read as the tensor's type says.
    auto bytes = [&](int64_t n) { return Bytes<uint8_t>(static_cast<size_t>(n), 0, 255, ++seed); };
    std::vector<float> sw(static_cast<size_t>(cout));
    std::vector<uint8_t> zw(static_cast<size_t>(c.zw_per_channel ? cout : 1));
    std::vector<int32_t> bias(static_cast<size_t>(cout));
    for (int64_t m = 0; m < cout; ++m) {
      sw[static_cast<size_t>(m)] = 0.002f + 0.0007f * static_cast<float>(m);
      bias[static_cast<size_t>(m)] = static_cast<int32_t>(m * 977 % 4001) - 2000;
    }
    for (size_t m = 0; m < zw.size(); ++m) zw[m] = static_cast<uint8_t>(ws ? (m % 5) - 2 : 120 + 3 * m);
    for (const bool ql : {true, false})
    for (const bool constant_w : {false, true}) {  // packed on the device each run, or once on the host
      if (!ql && constant_w) continue;
      OpTest t(ql ? fb::OpType::QLinearConv : fb::OpType::ConvInteger);
      // QLinearConv's inputs: x, sx, zx, w, sw, zw, ...; ConvInteger's: x, w, zx, zw.
      const std::vector<uint8_t> x = bytes(xn), w = bytes(wn), zx{static_cast<uint8_t>(xs ? 0xf9 : 131)};
      const std::vector<int64_t> zw_shape = c.zw_per_channel ? std::vector<int64_t>{cout} : std::vector<int64_t>{};
      In(t, "x", c.x, c.xt, x);
      if (ql) {
        t.constant("sx", {}, std::vector<float>{0.031f});
        Const(t, "zx", {}, c.xt, zx);
      }
      if (constant_w) Const(t, "w", c.w, c.wt, w);
      else In(t, "w", c.w, c.wt, w);
      if (ql) t.constant("sw", {cout}, sw);
      if (!ql) Const(t, "zx", {}, c.xt, zx);
      Const(t, "zw", zw_shape, c.wt, zw);
      if (ql) {
        t.constant("sy", {}, std::vector<float>{0.77f});
        Const(t, "zy", {}, xs ? i8 : u8, std::vector<uint8_t>{static_cast<uint8_t>(xs ? 3 : 125)});
        Const(t, "bias", {cout}, fb::DataType::I32, bias);
      }
      fb::ConvParamsT p;
      p.group = c.group;
      p.strides = c.strides;
      p.pads = c.pads;
      p.dilations = c.dilations;
      const std::string what = std::string(ql ? "QLinearConv" : "ConvInteger") + (constant_w ? " (constant w)" : "") + " x " +
                               fb::EnumNameDataType(c.xt) + " w " + fb::EnumNameDataType(c.wt) + ", " +
                               std::to_string(c.x.size() - 2) + "-D, " + std::to_string(cout) + " channels";
      ExpectSameAsHost(t.params(p), kGpu, 0.f, what + ", " + cols + " columns an invocation");
      if (ql) {
        p.activation = fb::Activation::Relu;
        ExpectSameAsHost(t.params(p), kGpu, 0.f, what + ", fused Relu");
      }
    }
  }
  unsetenv("KILN_GPU_QDOT_COLS");
}

TEST(GpuQuant, QLinearAdd) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (const bool i8 : {false, true}) {
    const fb::DataType dt = i8 ? fb::DataType::I8 : fb::DataType::U8;
    for (const int form : {0, 1, 2}) {  // same shapes; B one value; a fused Relu, no C zero point
      OpTest t(fb::OpType::QLinearAdd);
      In(t, "a", {2, 3, 5, 7}, dt, Bytes<uint8_t>(210, 0, 255, 3));
      t.constant("sa", {}, std::vector<float>{0.031f});
      Const(t, "za", {}, dt, std::vector<uint8_t>{i8 ? uint8_t{0xF3} : uint8_t{121}});
      if (form == 1) In(t, "b", {}, dt, std::vector<uint8_t>{200});
      else In(t, "b", {2, 3, 5, 7}, dt, Bytes<uint8_t>(210, 0, 255, 4));
      t.constant("sb", {}, std::vector<float>{0.017f});
      Const(t, "zb", {}, dt, std::vector<uint8_t>{i8 ? uint8_t{5} : uint8_t{130}});
      t.constant("sc", {}, std::vector<float>{0.043f});
      if (form != 2) Const(t, "zc", {}, dt, std::vector<uint8_t>{i8 ? uint8_t{0xFE} : uint8_t{99}});
      fb::QuantActivationParamsT p;
      if (form == 2) p.activation = fb::Activation::Relu;
      ExpectSameAsHost(t.params(p), kGpu, 0.f, std::string("QLinearAdd ") + (i8 ? "i8" : "u8") + " form " +
                                                   std::to_string(form));
    }
  }
  // Every pair of bytes under the scales of int8 ResNet-18's first residual
  // add, whose sums fall near ties of the rounding: the multiply-adds must
  // each round once, as the host's fma (a CPU driver's split fma does not).
  std::vector<uint8_t> a(256 * 256), b(256 * 256);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i / 256), b[i] = static_cast<uint8_t>(i % 256);
  OpTest t(fb::OpType::QLinearAdd);
  In(t, "a", {256, 256}, fb::DataType::U8, a).constant("sa", {}, std::vector<float>{0.026023868f});
  Const(t, "za", {}, fb::DataType::U8, std::vector<uint8_t>{136});
  In(t, "b", {256, 256}, fb::DataType::U8, b).constant("sb", {}, std::vector<float>{0.0078618145f});
  Const(t, "zb", {}, fb::DataType::U8, std::vector<uint8_t>{0});
  t.constant("sc", {}, std::vector<float>{0.013670846f});
  Const(t, "zc", {}, fb::DataType::U8, std::vector<uint8_t>{0});
  ExpectSameAsHost(t.params(fb::QuantActivationParamsT()), kGpu, 0.f, "QLinearAdd near ties");
}

// MaxPool of quantized activations (pool_bytes): 2-D strided with pads and
// ceil mode, dilated, 1-D and 3-D, u8 and i8, the GPU's every byte as the host's.
TEST(GpuQuant, MaxPoolEightBit) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int32_t> kernel, strides, pads, dilations;
    bool ceil;
  };
  const Case cases[] = {
      {{2, 3, 11, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, true},
      {{1, 5, 9, 13}, {2, 3}, {1, 2}, {0, 1, 1, 0}, {2, 2}, false},
      {{1, 4, 17}, {3}, {2}, {1, 1}, {}, false},
      {{1, 2, 5, 6, 7}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0, 1, 1, 1}, {}, true},
  };
  for (const bool i8 : {false, true})
    for (const Case& c : cases) {
      const fb::DataType dt = i8 ? fb::DataType::I8 : fb::DataType::U8;
      int64_t n = 1;
      for (int64_t d : c.shape) n *= d;
      OpTest t(fb::OpType::MaxPool);
      In(t, "x", c.shape, dt, Bytes<uint8_t>(static_cast<size_t>(n), 0, 255, 31));
      fb::PoolParamsT p;
      p.kernel_shape = c.kernel, p.strides = c.strides, p.pads = c.pads, p.dilations = c.dilations;
      p.ceil_mode = c.ceil;
      ExpectSameAsHost(t.params(p), kGpu, 0.f,
                       std::string("MaxPool ") + (i8 ? "i8 " : "u8 ") + std::to_string(c.shape.size() - 2) + "-D");
    }
}

}  // namespace
}  // namespace kiln::test
