// Sgemm (gemm.h): packing, cache blocking, threading and ISA dispatch; the
// portable scalar micro-kernel. Per-ISA micro-kernels: gemm_avx512.cpp,
// gemm_avx2.cpp.
#include "gemm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "thread_pool.h"

namespace kiln {
namespace gemm_detail {
namespace {

constexpr int kScalarMr = 4, kScalarNr = 8;

void MicroScalar(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool load_c) {
  float acc[kScalarMr][kScalarNr] = {};
  for (int64_t k = 0; k < kc; ++k) {
    for (int i = 0; i < kScalarMr; ++i) {
      const float av = a[i];
      for (int j = 0; j < kScalarNr; ++j) acc[i][j] += av * b[j];
    }
    a += kScalarMr;
    b += kScalarNr;
  }
  for (int i = 0; i < kScalarMr; ++i)
    for (int j = 0; j < kScalarNr; ++j) c[i * ldc + j] = (load_c ? c[i * ldc + j] : 0.f) + acc[i][j];
}

float FmaLoopScalar(int64_t iters) {
  // Distinct starts: identical chains would be computed once (see FmaLoopAvx512).
  float a[8] = {1.f, 1.01f, 1.02f, 1.03f, 1.04f, 1.05f, 1.06f, 1.07f};
  for (int64_t i = 0; i < iters; ++i)
    for (float& v : a) v = std::fma(v, 0.999999f, 1e-7f);
  return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

const GemmKernel kScalarKernel = {kScalarMr, kScalarNr, 64, 256, 2048, &MicroScalar, &FmaLoopScalar, 8 * 2};

// A grow-only, 64-byte aligned scratch buffer; one per thread and operand.
struct Scratch {
  float* p = nullptr;
  size_t n = 0;
  ~Scratch() { std::free(p); }
  float* get(size_t need) {
    if (need > n) {
      std::free(p);
      size_t bytes = (need * sizeof(float) + 63) / 64 * 64;
      p = static_cast<float*>(std::aligned_alloc(64, bytes));
      n = need;
    }
    return p;
  }
};
thread_local Scratch tl_pack_a, tl_pack_b;

struct Problem {
  bool ta, tb;
  int64_t K;
  float alpha;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float beta;
  float* C;
  int64_t ldc;
};

// Rows [i0, i0 + mc) x cols [k0, k0 + kc) of alpha * op(A) as mr-tall
// panels: panel p holds a[k * mr + r] = A(i0 + p * mr + r, k0 + k), zero past mc.
void PackA(const Problem& pr, int mr, int64_t i0, int64_t mc, int64_t k0, int64_t kc, float* dst) {
  for (int64_t p = 0; p < mc; p += mr) {
    const int64_t rows = std::min<int64_t>(mr, mc - p);
    float* d = dst + p * kc;
    if (!pr.ta) {  // A(i, k) = A[i * lda + k]
      for (int64_t r = 0; r < rows; ++r) {
        const float* s = pr.A + (i0 + p + r) * pr.lda + k0;
        for (int64_t k = 0; k < kc; ++k) d[k * mr + r] = pr.alpha * s[k];
      }
    } else {  // A(i, k) = A[k * lda + i]
      for (int64_t k = 0; k < kc; ++k) {
        const float* s = pr.A + (k0 + k) * pr.lda + i0 + p;
        for (int64_t r = 0; r < rows; ++r) d[k * mr + r] = pr.alpha * s[r];
      }
    }
    if (rows < mr)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t r = rows; r < mr; ++r) d[k * mr + r] = 0.f;
  }
}

// Rows [k0, k0 + kc) x cols [j0, j0 + nc) of op(B) as nr-wide panels:
// panel p holds b[k * nr + c] = B(k0 + k, j0 + p * nr + c), zero past nc.
void PackB(const Problem& pr, int nr, int64_t k0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t p = 0; p < nc; p += nr) {
    const int64_t cols = std::min<int64_t>(nr, nc - p);
    float* d = dst + p * kc;
    if (!pr.tb) {  // B(k, j) = B[k * ldb + j]
      for (int64_t k = 0; k < kc; ++k) {
        const float* s = pr.B + (k0 + k) * pr.ldb + j0 + p;
        float* dk = d + k * nr;
        if (cols == nr) {
          for (int c = 0; c < nr; ++c) dk[c] = s[c];
        } else {
          for (int64_t c = 0; c < cols; ++c) dk[c] = s[c];
          for (int64_t c = cols; c < nr; ++c) dk[c] = 0.f;
        }
      }
    } else {  // B(k, j) = B[j * ldb + k]
      for (int64_t c = 0; c < cols; ++c) {
        const float* s = pr.B + (j0 + p + c) * pr.ldb + k0;
        for (int64_t k = 0; k < kc; ++k) d[k * nr + c] = s[k];
      }
      if (cols < nr)
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t c = cols; c < nr; ++c) d[k * nr + c] = 0.f;
    }
  }
}

// C[m0, m1) x [n0, n1) = alpha * op(A) op(B) + beta * C on the calling thread.
void GemmRange(const GemmKernel& kr, const Problem& pr, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  if (m1 <= m0 || n1 <= n0) return;
  if (pr.beta != 0.f && pr.beta != 1.f)
    for (int64_t i = m0; i < m1; ++i)
      for (int64_t j = n0; j < n1; ++j) pr.C[i * pr.ldc + j] *= pr.beta;
  if (pr.K == 0) {
    if (pr.beta == 0.f)
      for (int64_t i = m0; i < m1; ++i) std::fill(pr.C + i * pr.ldc + n0, pr.C + i * pr.ldc + n1, 0.f);
    return;
  }
  const int mr = kr.mr, nr = kr.nr;
  const int64_t KC = std::min(kr.kc, pr.K);
  const int64_t NC = std::min<int64_t>(kr.nc, (n1 - n0 + nr - 1) / nr * nr);
  const int64_t MC = std::min<int64_t>(kr.mc, (m1 - m0 + mr - 1) / mr * mr);
  float* pack_b = tl_pack_b.get(static_cast<size_t>(KC * NC));
  float* pack_a = tl_pack_a.get(static_cast<size_t>(KC * MC));
  alignas(64) float tmp[16 * 64];  // an edge tile (mr * nr <= 1024)
  for (int64_t jc = n0; jc < n1; jc += NC) {
    const int64_t nc = std::min(NC, n1 - jc);
    for (int64_t pc = 0; pc < pr.K; pc += KC) {
      const int64_t kc = std::min(KC, pr.K - pc);
      const bool load = pc > 0 || pr.beta != 0.f;
      PackB(pr, nr, pc, kc, jc, nc, pack_b);
      for (int64_t ic = m0; ic < m1; ic += MC) {
        const int64_t mc = std::min(MC, m1 - ic);
        PackA(pr, mr, ic, mc, pc, kc, pack_a);
        for (int64_t jr = 0; jr < nc; jr += nr) {
          const int64_t nrr = std::min<int64_t>(nr, nc - jr);
          const float* pb = pack_b + jr * kc;
          for (int64_t ir = 0; ir < mc; ir += mr) {
            const int64_t mrr = std::min<int64_t>(mr, mc - ir);
            const float* pa = pack_a + ir * kc;
            float* c = pr.C + (ic + ir) * pr.ldc + jc + jr;
            if (mrr == mr && nrr == nr) {
              kr.micro(kc, pa, pb, c, pr.ldc, load);
            } else {
              kr.micro(kc, pa, pb, tmp, nr, false);
              for (int64_t i = 0; i < mrr; ++i)
                for (int64_t j = 0; j < nrr; ++j)
                  c[i * pr.ldc + j] = (load ? c[i * pr.ldc + j] : 0.f) + tmp[i * nr + j];
            }
          }
        }
      }
    }
  }
}

const GemmKernel* KernelFor(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return Avx512Kernel();
    case Isa::kAvx2: return Avx2Kernel();
    case Isa::kScalar: return &kScalarKernel;
  }
  return &kScalarKernel;
}

}  // namespace
}  // namespace gemm_detail

bool GemmIsaSupported(Isa isa) {
  if (isa == Isa::kScalar) return true;
  if (!gemm_detail::KernelFor(isa)) return false;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (isa == Isa::kAvx512) return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  if (isa == Isa::kAvx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return false;
}

Isa GemmBestIsa() {
  static const Isa best = GemmIsaSupported(Isa::kAvx512) ? Isa::kAvx512
                          : GemmIsaSupported(Isa::kAvx2) ? Isa::kAvx2
                                                         : Isa::kScalar;
  return best;
}

const char* GemmIsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kScalar: return "scalar";
  }
  return "?";
}

void SgemmWithIsa(Isa isa, ThreadPool& pool, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc) {
  using namespace gemm_detail;
  if (M <= 0 || N <= 0) return;
  const GemmKernel* kp = KernelFor(isa);
  if (!kp) kp = &kScalarKernel;
  const GemmKernel& kr = *kp;
  const Problem pr{trans_a, trans_b, K, alpha, A, lda, B, ldb, beta, C, ldc};
  const int threads = pool.threads();
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(std::max<int64_t>(K, 1));
  if (threads <= 1 || work < 64.0 * 1024.0) {
    GemmRange(kr, pr, 0, M, 0, N);
    return;
  }
  // Split over the dimension whose panels spread more evenly over the threads.
  const int64_t pn = (N + kr.nr - 1) / kr.nr, pm = (M + kr.mr - 1) / kr.mr;
  auto balance = [threads](int64_t panels) {
    const int64_t per = (panels + threads - 1) / threads;
    return static_cast<double>(panels) / static_cast<double>(per * threads);
  };
  if (pn >= 8 * threads || balance(pn) >= balance(pm)) {
    pool.parallelFor(pn, [&](int64_t b, int64_t e) {
      GemmRange(kr, pr, 0, M, b * kr.nr, std::min<int64_t>(N, e * kr.nr));
    });
  } else {
    pool.parallelFor(pm, [&](int64_t b, int64_t e) {
      GemmRange(kr, pr, b * kr.mr, std::min<int64_t>(M, e * kr.mr), 0, N);
    });
  }
}

void Sgemm(ThreadPool& pool, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  SgemmWithIsa(GemmBestIsa(), pool, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

double MeasureFmaGflops(Isa isa, double seconds) {
  const gemm_detail::GemmKernel* k = gemm_detail::KernelFor(isa);
  using Clock = std::chrono::steady_clock;
  int64_t iters = 1 << 16;
  volatile float sink = 0;
  for (;;) {
    auto t0 = Clock::now();
    sink = sink + k->fma_loop(iters);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s >= seconds || iters >= (int64_t{1} << 40)) return static_cast<double>(iters) * k->fma_flops_per_iter / s / 1e9;
    iters = s > 0 ? static_cast<int64_t>(static_cast<double>(iters) * std::min(16.0, 1.2 * seconds / s)) : iters * 16;
  }
}

}  // namespace kiln
