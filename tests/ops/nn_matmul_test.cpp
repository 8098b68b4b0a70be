// MatMul and Gemm on the host with a constant B (packed once at resize,
// PackB) against the same op with B as a run-time input (packed on every
// call) and a naive double-accumulating reference: batched and broadcast A,
// K over two of the GEMM's K blocks, N off every register tile, one row (the
// packed matrix-vector path), and the batch-a-thread split of many small
// products (attention heads). Attention (fuse_attention's op) against a
// naive reference: masks of every broadcast form, sizes off the vector
// widths, heads a thread and heads split.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ops/nn_test_util.h"

namespace kiln {
namespace {

using namespace nn_test;

// A [..., M, K] x B [K, N] (B without batch dims, or with batch dims of 1).
std::vector<float> Naive(const std::vector<float>& a, int64_t rows, int64_t K, const std::vector<float>& b,
                         int64_t N) {
  std::vector<float> y(static_cast<size_t>(rows * N));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += static_cast<double>(a[i * K + k]) * b[k * N + j];
      y[i * N + j] = static_cast<float>(s);
    }
  return y;
}

TEST(NnMatMul, ConstantBPackedMatchesInputB) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c : std::vector<Case>{{{1, 300}, {300, 1000}},     // one row, two K blocks
                                         {{300}, {300, 33}},          // 1-D A: one row
                                         {{7, 17}, {17, 5}},
                                         {{2, 3, 65, 257}, {257, 70}},  // batches merged into one GEMM
                                         {{4, 9, 600}, {1, 600, 31}},   // B with a batch dim of 1
                                         {{3, 1, 16}, {16, 100}}}) {
    SCOPED_TRACE(Str(c.a) + " x " + Str(c.b));
    std::vector<float> a = Rand(c.a, 161), b = Rand(c.b, 162);
    const int64_t K = c.a.back(), N = c.b.back(), rows = Numel(c.a) / K;
    auto packed = OpTest(fb::OpType::MatMul).input("a", c.a, a).constant("b", c.b, b).run(Threads3());
    auto plain = OpTest(fb::OpType::MatMul).input("a", c.a, a).input("b", c.b, b).run(Threads3());
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    ASSERT_TRUE(plain.ok()) << plain.status().ToString();
    EXPECT_EQ(packed->at(0).shape, plain->at(0).shape);
    const std::vector<float> want = Naive(a, rows, K, b, N);
    const float tol = 1e-5f * static_cast<float>(K);
    ExpectNear(packed->at(0).f32(), want, tol, "constant B");
    ExpectNear(plain->at(0).f32(), want, tol, "input B");
  }
}

// [heads, S, D] x [heads, D, S]: one whole product a thread when the heads
// divide among the threads (6 on 3), split products otherwise (4 on 3).
TEST(NnMatMul, ManySmallProducts) {
  for (int64_t heads : {4, 6, 13})
    for (bool broadcast_a : {false, true}) {
      const int64_t S = 37, D = 20;
      const Shape as = broadcast_a ? Shape{1, S, D} : Shape{heads, S, D}, bs = {heads, D, S};
      SCOPED_TRACE(Str(as) + " x " + Str(bs));
      std::vector<float> a = Rand(as, 171), b = Rand(bs, 172);
      auto out = OpTest(fb::OpType::MatMul).input("a", as, a).input("b", bs, b).run(Threads3());
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(out->at(0).shape, (Shape{heads, S, S}));
      std::vector<float> want;
      for (int64_t h = 0; h < heads; ++h) {
        const std::vector<float> ah(a.begin() + (broadcast_a ? 0 : h * S * D),
                                    a.begin() + (broadcast_a ? 1 : h + 1) * S * D);
        const std::vector<float> bh(b.begin() + h * D * S, b.begin() + (h + 1) * D * S);
        const std::vector<float> y = Naive(ah, S, D, bh, S);
        want.insert(want.end(), y.begin(), y.end());
      }
      ExpectNear(out->at(0).f32(), want, kTol);
    }
}

// Gemm with a constant B of either layout, alpha, and a C that is a row (the
// epilogue's column bias) or a full matrix (beta on the stores), at one row
// and at many, with a fused clamp: the same as B given at run time.
TEST(NnGemm, ConstantBPackedMatchesInputB) {
  for (int64_t M : {1, 5, 130})
    for (int64_t N : {1, 33, 1000})
      for (int64_t K : {17, 300})
        for (bool tb : {false, true})
          for (bool full_c : {false, true}) {
            SCOPED_TRACE("M " + std::to_string(M) + " N " + std::to_string(N) + " K " + std::to_string(K) +
                         " trans_b " + std::to_string(tb) + (full_c ? " C [M, N]" : " C [N]"));
            const Shape as = {M, K}, bs = tb ? Shape{N, K} : Shape{K, N}, cs = full_c ? Shape{M, N} : Shape{N};
            std::vector<float> a = Rand(as, 181), b = Rand(bs, 182), c = Rand(cs, 183);
            fb::GemmParamsT p;
            p.alpha = 0.5f;
            p.beta = full_c ? 0.75f : 1.f;
            p.trans_b = tb;
            p.activation = fb::Activation::Relu;
            auto run = [&](bool constant_b) {
              OpTest t(fb::OpType::Gemm);
              t.input("a", as, a);
              if (constant_b)
                t.constant("b", bs, b);
              else
                t.input("b", bs, b);
              return t.constant("c", cs, c).params(p).run(Threads3());
            };
            auto packed = run(true), plain = run(false);
            ASSERT_TRUE(packed.ok()) << packed.status().ToString();
            ASSERT_TRUE(plain.ok()) << plain.status().ToString();
            std::vector<float> want;
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double s = 0;
                for (int64_t k = 0; k < K; ++k) s += static_cast<double>(a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
                want.push_back(RefAct(fb::Activation::Relu, 0.5 * s + p.beta * c[full_c ? i * N + j : j], 0, 0, 0));
              }
            const float tol = 1e-5f * static_cast<float>(K);
            ExpectNear(packed->at(0).f32(), want, tol, "constant B");
            ExpectNear(plain->at(0).f32(), want, tol, "input B");
          }
}

// softmax(scale * Q KT + mask) V, batch by batch, in doubles; the mask
// broadcast to the scores [batch..., L, S] by numpy's rules, index by index.
std::vector<float> NaiveAttention(const std::vector<float>& q, const std::vector<float>& kt,
                                  const std::vector<float>& v, const std::vector<float>* mask, const Shape& mshape,
                                  const Shape& batch, int64_t L, int64_t D, int64_t S, int64_t Dv, float scale) {
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  Shape scores = batch;
  scores.insert(scores.end(), {L, S});
  const size_t r = scores.size();
  auto mask_at = [&](int64_t b, int64_t i, int64_t j) {
    std::vector<int64_t> idx(r);  // the scores' index, outermost first
    idx[r - 1] = j, idx[r - 2] = i;
    for (size_t k = r - 2; k-- > 0;) idx[k] = b % scores[k], b /= scores[k];
    int64_t off = 0;
    for (size_t k = 0; k < mshape.size(); ++k) {
      const int64_t ix = mshape[k] == 1 ? 0 : idx[r - mshape.size() + k];
      off = off * mshape[k] + ix;
    }
    return (*mask)[static_cast<size_t>(off)];
  };
  std::vector<float> y(static_cast<size_t>(batches * L * Dv));
  std::vector<double> sc(static_cast<size_t>(S));
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < L; ++i) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += static_cast<double>(q[(b * L + i) * D + d]) * kt[(b * D + d) * S + j];
        s *= scale;
        if (mask) s += mask_at(b, i, j);
        sc[j] = s;
        mx = std::max(mx, s);
      }
      for (int64_t j = 0; j < S; ++j) sum += sc[j] = std::exp(sc[j] - mx);
      for (int64_t c = 0; c < Dv; ++c) {
        double o = 0;
        for (int64_t j = 0; j < S; ++j) o += sc[j] * v[(b * S + j) * Dv + c];
        y[(b * L + i) * Dv + c] = static_cast<float>(o / sum);
      }
    }
  return y;
}

TEST(NnAttention, MatchesTheNaiveReference) {
  struct Case {
    Shape batch;
    int64_t L, D, S, Dv;
    Shape mask;  // empty: none
  };
  const Case cases[] = {
      {{2, 4}, 16, 8, 12, 8, {}},          // 8 heads on 3 threads: each product split
      {{6}, 5, 3, 7, 5, {5, 7}},           // 6 heads, 2 a thread; one mask for all; odd sizes
      {{3}, 9, 16, 33, 4, {3, 1, 33}},     // one mask a batch, broadcast over rows
      {{1}, 130, 32, 70, 20, {1, 1, 70}},  // one long product split over the threads
      {{2, 2}, 4, 4, 4, 4, {2, 2, 4, 4}},  // a whole mask
      {{}, 7, 5, 9, 6, {9}},               // no batch dims; a mask row for every query
      {{2, 3}, 5, 4, 6, 4, {2, 1, 1, 6}},  // BERT's padding mask: one row a batch, all heads
      {{2, 3}, 5, 4, 6, 4, {3, 5, 6}},     // one mask a head, all batches
      {{2, 1, 3}, 4, 4, 5, 4, {2, 1, 1, 4, 5}},  // a batch dim of 1 between
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("batch " + Str(c.batch) + " L " + std::to_string(c.L) + " S " + std::to_string(c.S) + " mask " +
                 Str(c.mask));
    Shape qs = c.batch, ks = c.batch, vs = c.batch;
    qs.insert(qs.end(), {c.L, c.D});
    ks.insert(ks.end(), {c.D, c.S});
    vs.insert(vs.end(), {c.S, c.Dv});
    const std::vector<float> q = Rand(qs, 171), kt = Rand(ks, 172), v = Rand(vs, 173);
    std::vector<float> mask = Rand(c.mask.empty() ? Shape{1} : c.mask, 174);
    for (float& x : mask) x *= 4;
    fb::AttentionParamsT p;
    p.scale = 0.7f;
    OpTest t(fb::OpType::Attention);
    t.input("q", qs, q).input("kt", ks, kt).input("v", vs, v);
    if (!c.mask.empty()) t.input("mask", c.mask, mask);
    auto got = t.params(p).run(Threads3());
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    Shape ys = c.batch;
    ys.insert(ys.end(), {c.L, c.Dv});
    EXPECT_EQ(got->at(0).shape, ys);
    const std::vector<float> want =
        NaiveAttention(q, kt, v, c.mask.empty() ? nullptr : &mask, c.mask, c.batch, c.L, c.D, c.S, c.Dv, p.scale);
    ExpectNear(got->at(0).f32(), want, 1e-5f, "Attention");
  }
}

// Shapes outside Attention's form are refused at resize with the reason.
TEST(NnAttention, BadShapesNameTheProblem) {
  auto run = [](Shape qs, Shape ks, Shape vs, Shape ms) {
    OpTest t(fb::OpType::Attention);
    t.input("q", qs, Rand(qs, 1)).input("kt", ks, Rand(ks, 2)).input("v", vs, Rand(vs, 3));
    if (!ms.empty()) t.input("mask", ms, Rand(ms, 4));
    auto r = t.run();
    return r.ok() ? std::string("ok") : r.status().ToString();
  };
  EXPECT_EQ(run({2, 4, 8}, {2, 8, 6}, {2, 6, 3}, {}), "ok");
  EXPECT_NE(run({2, 4, 8}, {2, 7, 6}, {2, 6, 3}, {}).find("must be [..., L, D], [..., D, S] and [..., S, Dv]"),
            std::string::npos);
  EXPECT_NE(run({2, 4, 8}, {1, 8, 6}, {2, 6, 3}, {}).find("must be [..., L, D]"), std::string::npos);  // no broadcast
  EXPECT_NE(run({2, 4, 8}, {2, 8, 6}, {2, 6, 3}, {3, 6}).find("does not broadcast"), std::string::npos);
  EXPECT_EQ(run({2, 3, 4, 8}, {2, 3, 8, 6}, {2, 3, 6, 3}, {2, 1, 4, 6}), "ok");  // a padding mask's form
  EXPECT_NE(run({2, 3, 2, 3, 4, 8}, {2, 3, 2, 3, 8, 6}, {2, 3, 2, 3, 6, 3}, {2, 1, 2, 1, 4, 6}).find("alternates"),
            std::string::npos);  // four runs of batch dims
}

}  // namespace
}  // namespace kiln
