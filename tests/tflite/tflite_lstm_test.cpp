// UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM through the
// importer, run on the host, against a reference LSTM written here from
// TFLite's gate equations (gates input, forget, cell, output; peepholes on
// the input and forget gates from the old cell, on the output gate from
// the new one); and the variants with no ONNX form reported unsupported.
#include <cmath>
#include <tuple>

#include "tflite/tflite_builder.h"
#include "tflite/tflite_test_util.h"

namespace kiln::test {
namespace {

struct Dir {
  std::vector<float> w[4], r[4], b[4], p[3];  // TFLite order: i, f, c, o; peepholes i, f, o
};

Dir MakeDir(int in, int h, bool peep, uint32_t seed) {
  Dir d;
  for (int g = 0; g < 4; ++g) {
    d.w[g] = Random(static_cast<size_t>(h * in), seed + g, 0.5f);
    d.r[g] = Random(static_cast<size_t>(h * h), seed + 10 + g, 0.5f);
    d.b[g] = Random(static_cast<size_t>(h), seed + 20 + g, 0.3f);
  }
  if (peep)
    for (int k = 0; k < 3; ++k) d.p[k] = Random(static_cast<size_t>(h), seed + 30 + k, 0.3f);
  return d;
}

float Sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

// x: [T][B][I] (time-major view); returns y[T][B][H]; reverse runs t from T-1 down.
std::vector<float> LstmRef(const Dir& d, const std::vector<float>& x, int T, int B, int I, int H, bool reverse) {
  std::vector<float> y(static_cast<size_t>(T * B * H)), h(static_cast<size_t>(B * H)), c(static_cast<size_t>(B * H));
  for (int s = 0; s < T; ++s) {
    const int t = reverse ? T - 1 - s : s;
    for (int b = 0; b < B; ++b) {
      std::vector<float> gate(4 * static_cast<size_t>(H));
      for (int g = 0; g < 4; ++g)
        for (int u = 0; u < H; ++u) {
          float acc = d.b[g][static_cast<size_t>(u)];
          for (int i = 0; i < I; ++i) acc += d.w[g][static_cast<size_t>(u * I + i)] * x[static_cast<size_t>((t * B + b) * I + i)];
          for (int k = 0; k < H; ++k) acc += d.r[g][static_cast<size_t>(u * H + k)] * h[static_cast<size_t>(b * H + k)];
          gate[static_cast<size_t>(g * H + u)] = acc;
        }
      for (int u = 0; u < H; ++u) {
        const size_t cu = static_cast<size_t>(b * H + u);
        const float cold = c[cu];
        const bool peep = !d.p[0].empty();
        const float ig = Sigmoid(gate[static_cast<size_t>(u)] + (peep ? d.p[0][static_cast<size_t>(u)] * cold : 0));
        const float fg = Sigmoid(gate[static_cast<size_t>(H + u)] + (peep ? d.p[1][static_cast<size_t>(u)] * cold : 0));
        const float cg = std::tanh(gate[static_cast<size_t>(2 * H + u)]);
        c[cu] = fg * cold + ig * cg;
        const float og = Sigmoid(gate[static_cast<size_t>(3 * H + u)] + (peep ? d.p[2][static_cast<size_t>(u)] * c[cu] : 0));
        h[cu] = og * std::tanh(c[cu]);
        y[static_cast<size_t>((t * B + b) * H + u)] = h[cu];
      }
    }
  }
  return y;
}

// Adds one direction's 17 tensors (weights, recurrent weights, peepholes or
// -1, biases, projection -1 -1) to `ins` in TFLite's order.
void AddDir(TfliteBuilder& t, const Dir& d, int I, int H, const std::string& pre, std::vector<int32_t>* ins) {
  for (int g = 0; g < 4; ++g) ins->push_back(t.constF32(pre + "w" + std::to_string(g), {H, I}, d.w[g]));
  for (int g = 0; g < 4; ++g) ins->push_back(t.constF32(pre + "r" + std::to_string(g), {H, H}, d.r[g]));
  for (int k = 0; k < 3; ++k) ins->push_back(d.p[k].empty() ? -1 : t.constF32(pre + "p" + std::to_string(k), {H}, d.p[k]));
  for (int g = 0; g < 4; ++g) ins->push_back(t.constF32(pre + "b" + std::to_string(g), {H}, d.b[g]));
  ins->push_back(-1);
  ins->push_back(-1);
}

// [B][T][I] <-> [T][B][I]
std::vector<float> SwapBT(const std::vector<float>& v, int A, int Bn, int C) {
  std::vector<float> r(v.size());
  for (int a = 0; a < A; ++a)
    for (int b = 0; b < Bn; ++b)
      for (int c = 0; c < C; ++c) r[static_cast<size_t>((b * A + a) * C + c)] = v[static_cast<size_t>((a * Bn + b) * C + c)];
  return r;
}

TEST(TfliteLstm, UnidirectionalBatchMajorWithPeepholes) {
  for (bool time_major : {false, true}) {
    SCOPED_TRACE(time_major ? "time-major" : "batch-major");
    const int B = 2, T = 5, I = 3, H = 4;
    const Dir d = MakeDir(I, H, /*peep=*/!time_major, 100);
    TfliteBuilder t;
    const Shape xs = time_major ? Shape{T, B, I} : Shape{B, T, I};
    int x = t.tensor("x", xs);
    std::vector<int32_t> ins = {x};
    AddDir(t, d, I, H, "", &ins);
    ins.push_back(t.tensor("h_state", {B, H}));  // TFLite variables: zeros at the start
    ins.push_back(t.tensor("c_state", {B, H}));
    int y = t.tensor("y", time_major ? Shape{T, B, H} : Shape{B, T, H});
    t.op(tflite::UNIDIRECTIONAL_SEQUENCE_LSTM, ins, {y}, tflite::kUnidirectionalSequenceLSTMOptions,
         {test::B(tflite::opt::kLstmActivation, tflite::kActTanh), test::B(tflite::opt::kUniTimeMajor, time_major)});
    t.io({x}, {y});
    const std::vector<float> xv = Random(static_cast<size_t>(B * T * I), 7);
    auto out = RunModel(t.finish(), {{"x", {{xs.begin(), xs.end()}, xv}}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> want = LstmRef(d, time_major ? xv : SwapBT(xv, B, T, I), T, B, I, H, false);
    if (!time_major) want = SwapBT(want, T, B, H);
    EXPECT_EQ(out->at("y").shape, (std::vector<int64_t>{xs[0], xs[1], H}));
    ExpectNear(out->at("y").as<float>(), want, 1e-5f);
  }
}

TEST(TfliteLstm, BidirectionalMergedAndSeparate) {
  for (bool merge : {true, false}) {
    SCOPED_TRACE(merge ? "merged, batch-major" : "separate, time-major");
    const bool time_major = !merge;
    const int B = 2, T = 4, I = 3, H = 3;
    const Dir fw = MakeDir(I, H, false, 200), bw = MakeDir(I, H, false, 300);
    TfliteBuilder t;
    const Shape xs = time_major ? Shape{T, B, I} : Shape{B, T, I};
    int x = t.tensor("x", xs);
    std::vector<int32_t> ins = {x};
    AddDir(t, fw, I, H, "fw_", &ins);
    AddDir(t, bw, I, H, "bw_", &ins);
    for (const char* s : {"fw_h", "fw_c", "bw_h", "bw_c"}) ins.push_back(t.tensor(s, {B, H}));
    for (int k = 39; k < 48; ++k) ins.push_back(-1);  // no auxiliary input
    std::vector<int32_t> outs;
    if (merge)
      outs = {t.tensor("y", {B, T, 2 * H})};
    else
      outs = {t.tensor("y_fw", {T, B, H}), t.tensor("y_bw", {T, B, H})};
    t.op(tflite::BIDIRECTIONAL_SEQUENCE_LSTM, ins, outs, tflite::kBidirectionalSequenceLSTMOptions,
         {test::B(tflite::opt::kLstmActivation, tflite::kActTanh), test::B(tflite::opt::kBiMergeOutputs, merge),
          test::B(tflite::opt::kBiTimeMajor, time_major)});
    t.io({x}, outs);
    const std::vector<float> xv = Random(static_cast<size_t>(B * T * I), 9);
    auto out = RunModel(t.finish(), {{"x", {{xs.begin(), xs.end()}, xv}}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const std::vector<float> xt = time_major ? xv : SwapBT(xv, B, T, I);
    const std::vector<float> yf = LstmRef(fw, xt, T, B, I, H, false), yb = LstmRef(bw, xt, T, B, I, H, true);
    if (!merge) {
      ExpectNear(out->at("y_fw").as<float>(), yf, 1e-5f);
      ExpectNear(out->at("y_bw").as<float>(), yb, 1e-5f);
      continue;
    }
    std::vector<float> want(static_cast<size_t>(B * T * 2 * H));
    for (int b = 0; b < B; ++b)
      for (int s = 0; s < T; ++s)
        for (int u = 0; u < H; ++u) {
          want[static_cast<size_t>((b * T + s) * 2 * H + u)] = yf[static_cast<size_t>((s * B + b) * H + u)];
          want[static_cast<size_t>((b * T + s) * 2 * H + H + u)] = yb[static_cast<size_t>((s * B + b) * H + u)];
        }
    ExpectNear(out->at("y").as<float>(), want, 1e-5f);
  }
}

TEST(TfliteLstm, FormsWithoutAnOnnxEquivalentAreUnsupported) {
  const int B = 1, T = 2, I = 2, H = 2;
  const Dir d = MakeDir(I, H, false, 400);
  auto build = [&](bool cifg, float cell_clip) {
    TfliteBuilder t;
    int x = t.tensor("x", {B, T, I});
    std::vector<int32_t> ins = {x};
    AddDir(t, d, I, H, "", &ins);
    if (cifg) ins[1] = -1;
    ins.push_back(t.tensor("h", {B, H}));
    ins.push_back(t.tensor("c", {B, H}));
    int y = t.tensor("y", {B, T, H});
    t.op(tflite::UNIDIRECTIONAL_SEQUENCE_LSTM, ins, {y}, tflite::kUnidirectionalSequenceLSTMOptions,
         {test::B(tflite::opt::kLstmActivation, tflite::kActTanh), F(tflite::opt::kLstmCellClip, cell_clip)});
    t.io({x}, {y});
    return t.finish();
  };
  for (auto [cifg, clip, why] : {std::tuple<bool, float, const char*>{true, 0.f, "CIFG"}, {false, 3.f, "cell_clip"}}) {
    auto r = RunModel(build(cifg, clip), {{"x", {{B, T, I}, Random(4, 1)}}});
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace kiln::test
