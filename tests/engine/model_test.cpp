// Whole models on the host against naive references written here: a small
// CNN and a transformer encoder block built with NetBuilder. Prints the
// memory plan (planned bytes vs the lower bound vs the sum of all tensors).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "kiln/interpreter.h"
#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln {
namespace {

using test::RandomFloats;
using Vec = std::vector<float>;

void PrintMemory(const char* model, Session* s) {
  for (const MemoryUse& m : s->memory())
    std::cout << "[memory] " << model << " " << m.backend << ": planned " << m.planned_bytes << " B, lower bound "
              << m.lower_bound_bytes << " B, sum of tensors " << m.tensor_bytes << " B\n";
}

// ---- small CNN: conv3x3(pad 1)+bias -> relu -> maxpool 2x2/2 -> GAP -> flatten -> gemm(transB) -> softmax

Vec NaiveCnn(const Vec& x, int c, int h, int w, const NetBuilder& b) {
  auto tensor = [&](const char* name) {
    for (auto& t : b.net().tensors)
      if (t->name == name) return Vec(reinterpret_cast<const float*>(t->data.data()),
                                      reinterpret_cast<const float*>(t->data.data() + t->data.size()));
    return Vec();
  };
  Vec W = tensor("conv1.weight"), B = tensor("conv1.bias"), FW = tensor("fc.weight"), FB = tensor("fc.bias");
  const int oc = 8;
  Vec conv(static_cast<size_t>(oc * h * w));
  for (int o = 0; o < oc; ++o)
    for (int y = 0; y < h; ++y)
      for (int xx = 0; xx < w; ++xx) {
        double acc = B[o];
        for (int i = 0; i < c; ++i)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              int iy = y + ky - 1, ix = xx + kx - 1;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              acc += double(x[(i * h + iy) * w + ix]) * W[((o * c + i) * 3 + ky) * 3 + kx];
            }
        conv[(o * h + y) * w + xx] = std::max(0.0f, float(acc));
      }
  int ph = h / 2, pw = w / 2;
  Vec gap(oc, 0);
  for (int o = 0; o < oc; ++o) {
    double sum = 0;
    for (int y = 0; y < ph; ++y)
      for (int xx = 0; xx < pw; ++xx) {
        float m = -INFINITY;
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) m = std::max(m, conv[(o * h + 2 * y + dy) * w + 2 * xx + dx]);
        sum += m;
      }
    gap[o] = float(sum / (ph * pw));
  }
  Vec logits(4);
  for (int k = 0; k < 4; ++k) {
    double acc = FB[k];
    for (int o = 0; o < oc; ++o) acc += double(gap[o]) * FW[k * oc + o];
    logits[k] = float(acc);
  }
  float mx = *std::max_element(logits.begin(), logits.end());
  double den = 0;
  for (float v : logits) den += std::exp(v - mx);
  Vec out;
  for (float v : logits) out.push_back(float(std::exp(v - mx) / den));
  return out;
}

TEST(Models, SmallCnnMatchesNaiveReference) {
  NetBuilder b = test::TinyCnn();
  auto bytes = b.finish();
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Session* s = *(*interp)->createSession({});
  const int c = 3, h = 9, w = 11;
  ASSERT_TRUE(s->resizeTensor(s->getInput("image"), {1, c, h, w}).ok());
  ASSERT_TRUE(s->resize().ok());
  Vec x = RandomFloats(c * h * w, 11);
  auto in = Tensor::wrap({1, c, h, w}, fb::DataType::F32, x.data());
  ASSERT_TRUE(s->getInput("image")->copyFromHostTensor(*in).ok());
  ASSERT_TRUE(s->run().ok());
  Vec got(4);
  auto out = Tensor::wrap({1, 4}, fb::DataType::F32, got.data());
  ASSERT_TRUE(s->getOutput("probs")->copyToHostTensor(out.get()).ok());
  test::ExpectNear(got, NaiveCnn(x, c, h, w, b), 1e-4f, "tiny cnn");
  PrintMemory("tiny_cnn 1x3x9x11", s);
}

// ---- transformer encoder block (post-LN, 2 heads) ----

struct Dims {
  int seq = 7, d = 16, heads = 2, ff = 32;
};

Vec MatMul(const Vec& a, const Vec& b, int m, int k, int n) {
  Vec out(static_cast<size_t>(m * n));
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int t = 0; t < k; ++t) acc += double(a[i * k + t]) * b[t * n + j];
      out[i * n + j] = float(acc);
    }
  return out;
}

Vec LayerNorm(const Vec& x, const Vec& g, const Vec& beta, int rows, int d) {
  Vec out(x.size());
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < d; ++i) mean += x[r * d + i];
    mean /= d;
    for (int i = 0; i < d; ++i) var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
    var /= d;
    for (int i = 0; i < d; ++i) out[r * d + i] = float((x[r * d + i] - mean) / std::sqrt(var + 1e-5)) * g[i] + beta[i];
  }
  return out;
}

TEST(Models, TransformerBlockMatchesNaiveReference) {
  Dims D;
  NetBuilder b("encoder_block");
  uint32_t seed = 100;
  auto weight = [&](const std::string& name, std::vector<int64_t> shape, float scale = 0.3f) {
    Vec v = RandomFloats(static_cast<size_t>(test::Numel(shape)), seed++);
    for (float& f : v) f *= scale;
    return std::make_pair(b.addConstant(name, shape, v), v);
  };
  auto [wq, Wq] = weight("wq", {D.d, D.d});
  auto [wk, Wk] = weight("wk", {D.d, D.d});
  auto [wv, Wv] = weight("wv", {D.d, D.d});
  auto [wo, Wo] = weight("wo", {D.d, D.d});
  auto [w1, W1] = weight("w1", {D.d, D.ff});
  auto [w2, W2] = weight("w2", {D.ff, D.d});
  auto [g1, G1] = weight("ln1.g", {D.d}, 1.0f);
  auto [b1, B1] = weight("ln1.b", {D.d}, 0.1f);
  auto [g2, G2] = weight("ln2.g", {D.d}, 1.0f);
  auto [b2, B2] = weight("ln2.b", {D.d}, 0.1f);
  int dh = D.d / D.heads;
  int heads_shape = b.addConstant("heads_shape", {4}, std::vector<int64_t>{1, D.seq, D.heads, dh});
  int merge_shape = b.addConstant("merge_shape", {3}, std::vector<int64_t>{1, D.seq, D.d});
  int scale = b.addConstant("scale", {}, Vec{1.0f / std::sqrt(float(dh))});

  int x = b.addInput("x", fb::DataType::F32, {1, D.seq, D.d});
  auto op = [&](fb::OpType t, const std::string& name, std::vector<int> in, auto params) {
    return b.addOp(t, name, in, {name + ".out"}, params)[0];
  };
  auto op0 = [&](fb::OpType t, const std::string& name, std::vector<int> in) {
    return b.addOp(t, name, in, {name + ".out"})[0];
  };
  fb::TransposeParamsT to_heads, k_t, from_heads;
  to_heads.perm = {0, 2, 1, 3};
  k_t.perm = {0, 2, 3, 1};
  from_heads.perm = {0, 2, 1, 3};
  fb::AxisParamsT last;
  last.axis = -1;
  fb::NormParamsT ln;
  ln.axis = -1;
  ln.epsilon = 1e-5f;
  int q = op(fb::OpType::Transpose, "q.t", {op(fb::OpType::Reshape, "q.r", {op0(fb::OpType::MatMul, "q", {x, wq}), heads_shape}, fb::ReshapeParamsT{})}, to_heads);
  int k = op(fb::OpType::Transpose, "k.t", {op(fb::OpType::Reshape, "k.r", {op0(fb::OpType::MatMul, "k", {x, wk}), heads_shape}, fb::ReshapeParamsT{})}, k_t);
  int v = op(fb::OpType::Transpose, "v.t", {op(fb::OpType::Reshape, "v.r", {op0(fb::OpType::MatMul, "v", {x, wv}), heads_shape}, fb::ReshapeParamsT{})}, to_heads);
  int scores = op0(fb::OpType::Mul, "scores.scale", {op0(fb::OpType::MatMul, "scores", {q, k}), scale});
  int probs = op(fb::OpType::Softmax, "softmax", {scores}, last);
  int ctx = op0(fb::OpType::MatMul, "context", {probs, v});
  int merged = op(fb::OpType::Reshape, "merge", {op(fb::OpType::Transpose, "ctx.t", {ctx}, from_heads), merge_shape}, fb::ReshapeParamsT{});
  int attn = op0(fb::OpType::Add, "residual1", {op0(fb::OpType::MatMul, "proj", {merged, wo}), x});
  int h1 = op(fb::OpType::LayerNormalization, "ln1", {attn, g1, b1}, ln);
  int ffn = op0(fb::OpType::MatMul, "ff2", {op0(fb::OpType::Gelu, "gelu", {op0(fb::OpType::MatMul, "ff1", {h1, w1})}), w2});
  int y = op(fb::OpType::LayerNormalization, "ln2", {op0(fb::OpType::Add, "residual2", {ffn, h1}), g2, b2}, ln);
  b.addOutput(y);

  auto bytes = b.finish();
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ScheduleConfig config;
  config.numThread = 2;
  auto session = (*interp)->createSession(config);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Session* s = *session;
  Vec X = RandomFloats(static_cast<size_t>(D.seq * D.d), 7);
  auto in = Tensor::wrap({1, D.seq, D.d}, fb::DataType::F32, X.data());
  ASSERT_TRUE(s->getInput("x")->copyFromHostTensor(*in).ok());
  Status run = s->run();
  ASSERT_TRUE(run.ok()) << run.ToString();
  Vec got(X.size());
  auto out = Tensor::wrap({1, D.seq, D.d}, fb::DataType::F32, got.data());
  ASSERT_TRUE(s->getOutput()->copyToHostTensor(out.get()).ok());

  // Reference: per head attention with plain loops.
  Vec Q = MatMul(X, Wq, D.seq, D.d, D.d), K = MatMul(X, Wk, D.seq, D.d, D.d), V = MatMul(X, Wv, D.seq, D.d, D.d);
  Vec merged_ref(static_cast<size_t>(D.seq * D.d));
  for (int hd = 0; hd < D.heads; ++hd)
    for (int i = 0; i < D.seq; ++i) {
      Vec sc(static_cast<size_t>(D.seq));
      for (int j = 0; j < D.seq; ++j) {
        double acc = 0;
        for (int t = 0; t < dh; ++t) acc += double(Q[i * D.d + hd * dh + t]) * K[j * D.d + hd * dh + t];
        sc[j] = float(acc / std::sqrt(double(dh)));
      }
      float mx = *std::max_element(sc.begin(), sc.end());
      double den = 0;
      for (float& f : sc) den += (f = std::exp(f - mx));
      for (int t = 0; t < dh; ++t) {
        double acc = 0;
        for (int j = 0; j < D.seq; ++j) acc += sc[j] / den * V[j * D.d + hd * dh + t];
        merged_ref[i * D.d + hd * dh + t] = float(acc);
      }
    }
  Vec a = MatMul(merged_ref, Wo, D.seq, D.d, D.d);
  for (size_t i = 0; i < a.size(); ++i) a[i] += X[i];
  Vec h = LayerNorm(a, G1, B1, D.seq, D.d);
  Vec f1 = MatMul(h, W1, D.seq, D.d, D.ff);
  for (float& f : f1) f = 0.5f * f * (1 + std::erf(f / std::sqrt(2.0f)));
  Vec f2 = MatMul(f1, W2, D.seq, D.ff, D.d);
  for (size_t i = 0; i < f2.size(); ++i) f2[i] += h[i];
  test::ExpectNear(got, LayerNorm(f2, G2, B2, D.seq, D.d), 1e-4f, "encoder block");
  PrintMemory("encoder_block seq7 d16", s);
}

}  // namespace
}  // namespace kiln
