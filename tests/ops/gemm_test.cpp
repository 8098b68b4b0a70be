// Sgemm (host_fallback/gemm.h) against a naive double-accumulating triple
// loop: odd sizes in M, N, K, every transpose combination, alpha / beta,
// leading dimensions larger than the rows, on every micro-kernel this CPU runs
// (AVX-512, AVX2, NEON on arm64 builds, scalar).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu_features.h"
#include "gemm.h"
#include "half.h"
#include "thread_pool.h"

namespace kiln {
namespace {

std::vector<float> RandVec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Runs one case on `isa` and compares every element (including C's padding,
// which must stay untouched) with the naive result.
void Check(Isa isa, ThreadPool& pool, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
           int64_t pad, uint32_t seed) {
  const int64_t a_rows = ta ? K : M, a_cols = ta ? M : K;
  const int64_t b_rows = tb ? N : K, b_cols = tb ? K : N;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = N + pad;
  std::vector<float> A = RandVec(static_cast<size_t>(a_rows * lda), seed);
  std::vector<float> B = RandVec(static_cast<size_t>(b_rows * ldb), seed + 1);
  std::vector<float> C = RandVec(static_cast<size_t>(M * ldc), seed + 2);
  if (beta == 0.f)  // beta == 0 must not read C
    for (int64_t i = 0; i < M; ++i) C[static_cast<size_t>(i * ldc)] = NAN;
  std::vector<float> want = C;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) {
        double a = ta ? A[static_cast<size_t>(k * lda + i)] : A[static_cast<size_t>(i * lda + k)];
        double b = tb ? B[static_cast<size_t>(j * ldb + k)] : B[static_cast<size_t>(k * ldb + j)];
        s += a * b;
      }
      float& w = want[static_cast<size_t>(i * ldc + j)];
      w = static_cast<float>(alpha * s + (beta == 0.f ? 0.0 : beta * static_cast<double>(w)));
    }
  std::vector<float> got = C;
  SgemmWithIsa(isa, pool, ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, got.data(), ldc);
  const std::string what = std::string(GemmIsaName(isa)) + " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
                           " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K) +
                           " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta) +
                           " pad=" + std::to_string(pad) + " threads=" + std::to_string(pool.threads());
  const float tol = 1e-5f * static_cast<float>(K + 4);
  int bad = 0;
  for (size_t e = 0; e < got.size() && bad < 5; ++e) {
    if (!(std::fabs(got[e] - want[e]) <= tol)) {
      ADD_FAILURE() << what << ": element " << e << " got " << got[e] << " want " << want[e];
      ++bad;
    }
  }
  if (bad) FAIL() << what;
}

std::vector<Isa> Isas() {
  std::vector<Isa> v;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon})
    if (GemmIsaSupported(isa)) v.push_back(isa);
  return v;
}

TEST(Gemm, ReportsIsas) {
  EXPECT_TRUE(GemmIsaSupported(Isa::kScalar));
  EXPECT_TRUE(GemmIsaSupported(GemmBestIsa()));
  std::string have;
  for (Isa isa : Isas()) have += std::string(GemmIsaName(isa)) + " ";
  std::printf("Sgemm micro-kernels on this CPU: %s(best %s); CPU features: %s\n", have.c_str(),
              GemmIsaName(GemmBestIsa()), HostCpuFeatures().c_str());
}

// The caches kernels size their blocks by: read on every Linux machine
// (sysfs, or cpuid on x86-64), in order of level.
TEST(Gemm, HostCachesKnown) {
  const CpuCaches& c = HostCaches();
  std::printf("host caches: %s\n", HostCachesText().c_str());
#ifdef __linux__
  EXPECT_GT(c.l1d, 0);
  EXPECT_GT(c.l2, 0);
#endif
  if (c.l1d && c.l2) {
    EXPECT_LT(c.l1d, c.l2);
  }
  if (c.l2 && c.l3) {
    EXPECT_LE(c.l2, c.l3);
  }
}

// The NEON kernel is what an arm64 build runs (HWCAP_ASIMD is on every
// AArch64 Linux CPU), and is never offered elsewhere.
TEST(Gemm, NeonExactlyOnArm64) {
#if defined(__aarch64__)
  EXPECT_TRUE(GemmIsaSupported(Isa::kNeon));
  EXPECT_EQ(GemmBestIsa(), Isa::kNeon);
  EXPECT_EQ(HostCpuFeatures().rfind("asimd", 0), 0u) << HostCpuFeatures();
#else
  EXPECT_FALSE(GemmIsaSupported(Isa::kNeon));
  EXPECT_NE(GemmBestIsa(), Isa::kNeon);
#endif
}

TEST(Gemm, OddSizesAllTransposes) {
  const int64_t sizes[] = {1, 3, 7, 17, 65, 257};
  const float alphas[] = {1.f, 0.5f, -2.f};
  const float betas[] = {0.f, 1.f, 0.75f};
  ThreadPool pool(3);
  for (Isa isa : Isas()) {
    uint32_t seed = 1;
    for (int64_t M : sizes)
      for (int64_t N : sizes)
        for (int64_t K : sizes)
          for (int t = 0; t < 4; ++t) {
            ++seed;
            const bool ta = t & 1, tb = t & 2;
            Check(isa, pool, ta, tb, M, N, K, alphas[seed % 3], betas[(seed / 3) % 3], seed % 2 ? 5 : 0, seed);
            if (HasFatalFailure()) return;
          }
  }
}

TEST(Gemm, BlockEdgesAndThreads) {
  ThreadPool one(1), three(3);
  for (Isa isa : Isas()) {
    for (ThreadPool* pool : {&one, &three}) {
      Check(isa, *pool, false, false, 5, 4100, 3, 1.f, 0.f, 0, 11);   // several NC blocks
      Check(isa, *pool, false, false, 20, 1100, 300, 1.f, 1.f, 0, 16);  // NC sized from the L2 for a K block
      Check(isa, *pool, true, false, 300, 9, 600, 1.f, 1.f, 2, 12);   // several KC and MC blocks, split over M
      Check(isa, *pool, false, true, 130, 260, 513, 0.25f, 0.f, 1, 13);
      Check(isa, *pool, true, true, 2, 2, 0, 1.f, 0.5f, 0, 14);       // K == 0: C = beta * C
      Check(isa, *pool, false, false, 3, 3, 0, 1.f, 0.f, 0, 15);      // K == 0, beta == 0: C = 0
    }
  }
}

// PackA + SgemmPacked against Sgemm's own contract, with every epilogue part:
// C = clamp(op(A) B * alpha + beta * C + row_bias[i] + col_bias[j]).
// PackA's panels, fp32 or (every third case) fp16: the reference then takes
// alpha * A rounded to fp16, as the panels hold it.
TEST(Gemm, PackedAAndEpilogue) {
  ThreadPool one(1), two(2);
  uint32_t seed = 100;
  for (Isa isa : Isas())
    for (ThreadPool* pool : {&one, &two})
      for (int64_t M : {1, 7, 17, 65})
        for (int64_t N : {3, 33, 48, 257})  // 48: a last panel of exactly half a tile
          for (int64_t K : {1, 17, 300}) {  // 300: two of the kernels' K blocks
            ++seed;
            const bool ta = seed % 2, tb = seed % 3 == 0;
            const float alpha = seed % 2 ? 1.f : -0.5f, beta = seed % 4 < 2 ? 0.f : 1.f;
            const int64_t lda = ta ? M : K, ldb = tb ? K : N;
            std::vector<float> A = RandVec(static_cast<size_t>(M * K), seed);
            std::vector<float> B = RandVec(static_cast<size_t>(K * N), seed + 1);
            std::vector<float> C = RandVec(static_cast<size_t>(M * N), seed + 2);
            std::vector<float> rb = RandVec(static_cast<size_t>(M), seed + 3), cb = RandVec(static_cast<size_t>(N), seed + 4);
            GemmEpilogue ep;
            ep.row_bias = rb.data();
            ep.col_bias = seed % 5 ? cb.data() : nullptr;
            ep.clamp = seed % 7 != 0;
            ep.lo = -0.5f;
            ep.hi = 0.75f;
            const bool half = seed % 3 == 1;
            const std::string what = std::string(GemmIsaName(isa)) + (half ? " fp16 A" : "") + " threads " +
                                     std::to_string(pool->threads()) + " M " + std::to_string(M) + " N " +
                                     std::to_string(N) + " K " + std::to_string(K);
            std::vector<float> got = C;
            const PackedA pa = PackA(isa, ta, M, K, alpha, A.data(), lda, half);
            EXPECT_EQ(pa.bytes(), static_cast<size_t>(pa.m_pad * K) * (half ? 2 : 4)) << what;
            SgemmPacked(*pool, pa, tb, N, B.data(), ldb, beta, got.data(), N, &ep);
            int bad = 0;
            for (int64_t i = 0; i < M && bad < 5; ++i)
              for (int64_t j = 0; j < N && bad < 5; ++j) {
                double s = 0;
                for (int64_t k = 0; k < K; ++k) {
                  float a = alpha * (ta ? A[static_cast<size_t>(k * lda + i)] : A[static_cast<size_t>(i * lda + k)]);
                  if (half) a = HalfToFloat(FloatToHalf(a));
                  s += static_cast<double>(a) * (tb ? B[static_cast<size_t>(j * ldb + k)] : B[static_cast<size_t>(k * ldb + j)]);
                }
                double v = s + beta * C[static_cast<size_t>(i * N + j)] + rb[static_cast<size_t>(i)] +
                           (ep.col_bias ? cb[static_cast<size_t>(j)] : 0.0);
                if (ep.clamp) v = std::min<double>(ep.hi, std::max<double>(ep.lo, v));
                const float g = got[static_cast<size_t>(i * N + j)];
                if (!(std::fabs(g - v) <= 1e-5 * static_cast<double>(K + 4))) {
                  ADD_FAILURE() << what << ": C(" << i << ", " << j << ") got " << g << " want " << v;
                  ++bad;
                }
              }
            if (bad) FAIL() << what;
          }
}

// SgemmPacked with B read where it lies (rows on cache lines) and packed
// (rows or start off them), each with and without the epilogue's residual:
// C = clamp(A B + residual + row_bias) with beta ignored.
TEST(Gemm, PackedAResidualAndBInPlace) {
  ThreadPool one(1), two(2);
  uint32_t seed = 500;
  for (Isa isa : Isas())
    for (ThreadPool* pool : {&one, &two})
      for (int64_t N : {48, 196, 520})
        for (int64_t K : {17, 300})
          for (int64_t shift : {0, 1})  // B's first element on a line, or one float past it
            for (bool with_residual : {false, true})
              for (int64_t M : {19, 130}) {  // rows off the lines: B in place (few rows of A) or packed
                ++seed;
                const int64_t ldb = (N + 15) / 16 * 16 + (N % 3 == 0 ? 0 : 16);
                std::vector<float> A = RandVec(static_cast<size_t>(M * K), seed);
                std::vector<float> store = RandVec(static_cast<size_t>(K * ldb + 32), seed + 1);
                float* B = store.data();
                while (reinterpret_cast<uintptr_t>(B) % 64) ++B;
                B += shift;
                std::vector<float> R = RandVec(static_cast<size_t>(M * (N + 5)), seed + 2);
                std::vector<float> rb = RandVec(static_cast<size_t>(M), seed + 3);
                std::vector<float> got(static_cast<size_t>(M * N), 7.f);  // beta 1 would add these
                GemmEpilogue ep;
                ep.row_bias = rb.data();
                ep.clamp = true;
                ep.lo = -1.5f;
                ep.hi = 1.25f;
                if (with_residual) {
                  ep.residual = R.data();
                  ep.ld_residual = N + 5;
                }
                const PackedA pa = PackA(isa, false, M, K, 1.f, A.data(), K, false);
                SgemmPacked(*pool, pa, false, N, B, ldb, with_residual ? 1.f : 0.f, got.data(), N, &ep);
                const std::string what = std::string(GemmIsaName(isa)) + " threads " +
                                         std::to_string(pool->threads()) + " M " + std::to_string(M) + " N " +
                                         std::to_string(N) + " K " + std::to_string(K) + " shift " +
                                         std::to_string(shift) + (with_residual ? " residual" : "");
                int bad = 0;
                for (int64_t i = 0; i < M && bad < 5; ++i)
                  for (int64_t j = 0; j < N && bad < 5; ++j) {
                    double v = rb[static_cast<size_t>(i)] +
                               (with_residual ? R[static_cast<size_t>(i * (N + 5) + j)] : 0.0);
                    for (int64_t k = 0; k < K; ++k)
                      v += static_cast<double>(A[static_cast<size_t>(i * K + k)]) * B[k * ldb + j];
                    v = std::min<double>(ep.hi, std::max<double>(ep.lo, v));
                    const float g = got[static_cast<size_t>(i * N + j)];
                    if (!(std::fabs(g - v) <= 1e-5 * static_cast<double>(K + 4))) {
                      ADD_FAILURE() << what << ": C(" << i << ", " << j << ") got " << g << " want " << v;
                      ++bad;
                    }
                  }
                if (bad) FAIL() << what;
              }
}

// PackA / PackB on a pool's threads (large matrices: a range of panels of
// each K block a thread) write the same bytes as on one thread, padding
// included, though the panels' memory starts uninitialized; fp16 too.
TEST(Gemm, PackingOnThreadsSameBytes) {
  ThreadPool two(2), three(3);
  for (Isa isa : Isas())
    for (bool trans : {false, true})
      for (bool half : {false, true}) {
        const int64_t M = 301, K = 777, N = 515;  // edges in M / N, three K blocks with a short last one
        std::vector<float> A = RandVec(static_cast<size_t>(M * K), 7), B = RandVec(static_cast<size_t>(K * N), 8);
        const int64_t lda = trans ? M : K, ldb = trans ? K : N;
        const PackedA a1 = PackA(isa, trans, M, K, 0.5f, A.data(), lda, half);
        const PackedB b1 = PackB(isa, trans, K, N, B.data(), ldb, half);
        for (ThreadPool* pool : {&two, &three}) {
          const std::string what = std::string(GemmIsaName(isa)) + (trans ? " transposed" : "") +
                                   (half ? " fp16" : "") + " threads " + std::to_string(pool->threads());
          const PackedA a = PackA(isa, trans, M, K, 0.5f, A.data(), lda, half, pool);
          const PackedB b = PackB(isa, trans, K, N, B.data(), ldb, half, pool);
          ASSERT_EQ(a.panelBytes(), a1.panelBytes()) << what;
          ASSERT_EQ(b.panelBytes(), b1.panelBytes()) << what;
          EXPECT_EQ(0, std::memcmp(a.panels(), a1.panels(), a1.panelBytes())) << what;
          EXPECT_EQ(0, std::memcmp(b.panels(), b1.panels(), b1.panelBytes())) << what;
        }
      }
}

// Splitting C over threads changes which thread computes a tile, never its
// arithmetic: every entry point gives one thread's bits on 2 and 3 threads,
// on shapes that split by rows (few columns) and by columns (few rows), and
// a matrix-vector product whose panels split into groups of different
// sizes (SgemmPackedB's M == 1: 8 panels of 32, or 15 of 16).
TEST(Gemm, ThreadSplitsGiveOneThreadsBits) {
  ThreadPool one(1), two(2), three(3);
  // B given by a packer (a pointwise conv's unfolded input, as in
  // SgemmPackedImplicitB): row-major K x N at ctx.
  struct Dense {
    const float* b;
    int64_t n;
  };
  auto pack = [](const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst) {
    const Dense& d = *static_cast<const Dense*>(ctx);
    for (int64_t p = 0; p < nc; p += nr)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t c = 0; c < nr; ++c)
          dst[p * kc + k * nr + c] = p + c < nc ? d.b[(k0 + k) * d.n + j0 + p + c] : 0.f;
  };
  for (Isa isa : Isas())
    for (const auto& shape :
         std::vector<std::array<int64_t, 3>>{{300, 20, 600}, {9, 700, 300}, {130, 49, 1100}, {1, 230, 301}}) {
      const int64_t M = shape[0], N = shape[1], K = shape[2];
      const std::vector<float> A = RandVec(static_cast<size_t>(M * K), 41), B = RandVec(static_cast<size_t>(K * N), 42);
      const PackedA pa = PackA(isa, false, M, K, 1.f, A.data(), K, false);
      const PackedB pb = PackB(isa, false, K, N, B.data(), N, false);
      const Dense dense{B.data(), N};
      const BPacker packer{pack, &dense};
      GemmEpilogue ep;
      ep.clamp = true;
      ep.lo = -2.f;
      ep.hi = 2.f;
      auto run = [&](int form, ThreadPool& pool) {
        std::vector<float> c(static_cast<size_t>(M * N), 0.f);
        switch (form) {
          case 0: SgemmWithIsa(isa, pool, false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, c.data(), N, &ep); break;
          case 1: SgemmWithIsa(isa, pool, true, true, M, N, K, 1.f, A.data(), M, B.data(), K, 0.f, c.data(), N, &ep); break;
          case 2: SgemmPacked(pool, pa, false, N, B.data(), N, 0.f, c.data(), N, &ep); break;
          case 3: SgemmPackedImplicitB(pool, pa, N, packer, 0.f, c.data(), N, &ep); break;
          case 4: SgemmPackedB(pool, false, M, 1.f, A.data(), K, pb, 0.f, c.data(), N, &ep); break;
        }
        return c;
      };
      for (int form = 0; form < 5; ++form) {
        const std::vector<float> want = run(form, one);
        for (ThreadPool* pool : {&two, &three}) {
          const std::vector<float> got = run(form, *pool);
          EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
              << GemmIsaName(isa) << " form " << form << " M " << M << " N " << N << " K " << K << " threads "
              << pool->threads();
        }
      }
    }
}

// The epilogue inside each micro-kernel's full tiles and on the edge tiles:
// a NaN product clamps to lo (as the scalar clamp does), and with no row bias
// only the column bias is added. Row 3 of A is NaN, so row 3 of C is; M and
// N span full tiles of every kernel and edges.
TEST(Gemm, EpilogueClampsNaNToLoOnEveryKernel) {
  ThreadPool one(1);
  const int64_t M = 19, N = 70, K = 5;
  std::vector<float> A = RandVec(static_cast<size_t>(M * K), 3), B = RandVec(static_cast<size_t>(K * N), 4);
  std::vector<float> cb = RandVec(static_cast<size_t>(N), 5);
  A[3 * K + 2] = NAN;
  for (Isa isa : Isas())
    for (bool clamp : {true, false}) {
      GemmEpilogue ep;
      ep.col_bias = cb.data();
      ep.clamp = clamp;
      ep.lo = -0.25f;
      ep.hi = 0.5f;
      std::vector<float> C(static_cast<size_t>(M * N), 9.f);
      SgemmWithIsa(isa, one, false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C.data(), N, &ep);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double v = cb[static_cast<size_t>(j)];
          for (int64_t k = 0; k < K; ++k) v += static_cast<double>(A[i * K + k]) * B[k * N + j];
          if (clamp) v = std::isnan(v) ? ep.lo : std::min<double>(ep.hi, std::max<double>(ep.lo, v));
          const float g = C[static_cast<size_t>(i * N + j)];
          const bool ok = std::isnan(v) ? std::isnan(g) : std::fabs(g - v) <= 1e-5;
          ASSERT_TRUE(ok) << GemmIsaName(isa) << " clamp " << clamp << " C(" << i << ", " << j << ") got " << g
                          << " want " << v;
        }
    }
}

// fp16 -> fp32 widening (fp16 weights): each ISA's conversion this CPU runs
// against the scalar one, on every length up to 40 (vector bodies and tails)
// and on zeros, subnormals, infinities and NaN.
TEST(Gemm, WidenHalfEveryIsa) {
  std::vector<uint16_t> h;
  for (float v : {0.f, -0.f, 1.f, -2.5f, 65504.f, 6e-8f, 3e-5f, INFINITY, -INFINITY, NAN}) h.push_back(FloatToHalf(v));
  for (float v : RandVec(30, 9)) h.push_back(FloatToHalf(v * 100.f));
  std::vector<gemm_detail::WidenFn> fns = {&WidenHalf};
  if (GemmIsaSupported(Isa::kAvx512)) fns.push_back(gemm_detail::Avx512Kernel()->widen);
  if (GemmIsaSupported(Isa::kNeon)) fns.push_back(gemm_detail::NeonKernel()->widen);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (GemmIsaSupported(Isa::kAvx2) && __builtin_cpu_supports("f16c")) fns.push_back(gemm_detail::Avx2Kernel()->widen);
#endif
  for (size_t f = 0; f < fns.size(); ++f)
    for (size_t n = 0; n <= h.size(); ++n) {
      std::vector<float> got(n + 1, 7.f);
      fns[f](h.data(), got.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        const float want = HalfToFloat(h[i]);
        EXPECT_TRUE(got[i] == want || (std::isnan(got[i]) && std::isnan(want))) << "fn " << f << " n " << n << " [" << i << "]";
      }
      EXPECT_EQ(got[n], 7.f) << "fn " << f << " wrote past n = " << n;
    }
}

// PackB + SgemmPackedB against the naive product, with the epilogue's column
// bias and clamp: M == 1 (the packed matrix-vector path, odd panel counts,
// beta != 0), N not a multiple of any register tile, K over two K blocks,
// both transposes of A and B; and equal to the unpacked Sgemm bit for bit
// wherever M > 1 (same blocks, same summation order).
TEST(Gemm, PackedBAndGemv) {
  ThreadPool one(1), two(2), three(3);
  uint32_t seed = 300;
  for (Isa isa : Isas())
    for (ThreadPool* pool : {&one, &two, &three})
      for (int64_t M : {1, 2, 9, 130})
        for (int64_t N : {1, 5, 31, 33, 100, 1000})
          for (int64_t K : {1, 16, 17, 300, 600}) {
            ++seed;
            const bool ta = seed % 2, tb = seed % 3 != 0;
            const float alpha = seed % 4 ? 1.f : 0.5f, beta = seed % 5 < 2 ? 0.f : (seed % 5 == 2 ? 1.f : -0.25f);
            const int64_t lda = ta ? M : K, ldb = tb ? K : N;
            std::vector<float> A = RandVec(static_cast<size_t>(M * K), seed);
            std::vector<float> B = RandVec(static_cast<size_t>(K * N), seed + 1);
            std::vector<float> C = RandVec(static_cast<size_t>(M * N), seed + 2);
            std::vector<float> cb = RandVec(static_cast<size_t>(N), seed + 3);
            GemmEpilogue ep;
            ep.col_bias = seed % 3 ? cb.data() : nullptr;
            ep.clamp = seed % 7 < 3;
            ep.lo = -0.5f;
            ep.hi = 0.75f;
            // Every fourth case packs B as fp16: the reference then takes B rounded.
            const bool half = seed % 4 == 3;
            const std::string what = std::string(GemmIsaName(isa)) + (half ? " fp16 B" : "") + " threads " +
                                     std::to_string(pool->threads()) + " M " + std::to_string(M) + " N " +
                                     std::to_string(N) + " K " + std::to_string(K) + " ta " + std::to_string(ta) +
                                     " tb " + std::to_string(tb) + " beta " + std::to_string(beta);
            const PackedB pb = PackB(isa, tb, K, N, B.data(), ldb, half);
            EXPECT_EQ(pb.bytes(), static_cast<size_t>(pb.n_pad * K) * (half ? 2 : 4)) << what;
            if (half)
              for (float& v : B) v = HalfToFloat(FloatToHalf(v));
            ASSERT_EQ(pb.K, K);
            ASSERT_EQ(pb.N, N);
            std::vector<float> got = C;
            SgemmPackedB(*pool, ta, M, alpha, A.data(), lda, pb, beta, got.data(), N, &ep);
            int bad = 0;
            for (int64_t i = 0; i < M && bad < 5; ++i)
              for (int64_t j = 0; j < N && bad < 5; ++j) {
                double s = 0;
                for (int64_t k = 0; k < K; ++k)
                  s += static_cast<double>(ta ? A[static_cast<size_t>(k * lda + i)] : A[static_cast<size_t>(i * lda + k)]) *
                       (tb ? B[static_cast<size_t>(j * ldb + k)] : B[static_cast<size_t>(k * ldb + j)]);
                double v = alpha * s + (ep.col_bias ? cb[static_cast<size_t>(j)] : 0.0);
                if (beta != 0.f) v += beta * static_cast<double>(C[static_cast<size_t>(i * N + j)]);
                if (ep.clamp) v = std::min<double>(ep.hi, std::max<double>(ep.lo, v));
                const float g = got[static_cast<size_t>(i * N + j)];
                if (!(std::fabs(g - v) <= 1e-5 * static_cast<double>(K + 4))) {
                  ADD_FAILURE() << what << ": C(" << i << ", " << j << ") got " << g << " want " << v;
                  ++bad;
                }
              }
            if (bad) FAIL() << what;
            if (M > 1) {
              std::vector<float> plain = C;
              SgemmWithIsa(isa, *pool, ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, plain.data(), N,
                           &ep);
              ASSERT_EQ(0, std::memcmp(plain.data(), got.data(), plain.size() * sizeof(float))) << what;
            }
          }
}

}  // namespace
}  // namespace kiln
