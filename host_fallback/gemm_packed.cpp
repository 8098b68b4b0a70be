// The operands Sgemm takes packed once (gemm.h: PackA / PackB, their fp16
// form at precision low, the pool's threads for large matrices, and views
// of panels stored in an ahead-of-time bundle). The panel layouts
// themselves are gemm.cpp's (gemm_detail::PackPanelsA / PackPanelsB), the
// same code GemmRange packs its cache blocks with.
#include <algorithm>
#include <cstdint>

#include "gemm.h"
#include "half.h"
#include "thread_pool.h"

namespace kiln {

namespace {

// Packed panels to fp16 (precision low): p->half takes them, p->data is freed.
void MoveToHalf(PackedPanels* p) {
  p->half.resize(p->data.size());
  for (size_t i = 0; i < p->data.size(); ++i) p->half[i] = FloatToHalf(p->data[i]);
  decltype(p->data)().swap(p->data);
}

// PackA's / PackB's result without panels: the sizes alone.
PackedA GeometryA(Isa isa, int64_t M, int64_t K) {
  PackedA p;
  p.isa = isa;
  p.M = M;
  p.K = K;
  const int mr = gemm_detail::KernelForIsa(isa).mr;
  p.m_pad = (M + mr - 1) / mr * mr;
  return p;
}
PackedB GeometryB(Isa isa, int64_t K, int64_t N) {
  PackedB p;
  p.isa = isa;
  p.K = K;
  p.N = N;
  const int nr = gemm_detail::KernelForIsa(isa).nr;
  p.n_pad = (N + nr - 1) / nr * nr;
  return p;
}

// Packs panels [0, panels) of each cache block of K: `pack(k0, kc, panel0,
// count)` packs `count` panels from `panel0` of the block at k0; on the
// pool's threads, a range of (block, panel) pairs each, when the matrix is
// large enough to pay for waking them.
template <typename F>
void PackBlocks(ThreadPool* pool, int64_t K, int64_t kc_max, int64_t panels, int64_t floats, const F& pack) {
  const int64_t blocks = (K + kc_max - 1) / kc_max;
  auto range = [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t b = begin / panels, p0 = begin % panels;
      const int64_t count = std::min(panels - p0, end - begin);
      pack(b * kc_max, std::min(kc_max, K - b * kc_max), p0, count);
      begin += count;
    }
  };
  constexpr int64_t kParallelFloats = int64_t{1} << 16;  // 256 KiB
  if (pool && pool->threads() > 1 && floats >= kParallelFloats) {
    pool->parallelFor(blocks * panels, range);
  } else {
    range(0, blocks * panels);
  }
}

}  // namespace

PackedA PackA(Isa isa, bool trans_a, int64_t M, int64_t K, float alpha, const float* A, int64_t lda, bool half,
              ThreadPool* pool) {
  using namespace gemm_detail;
  const GemmKernel& kr = KernelForIsa(isa);
  PackedA p = GeometryA(isa, M, K);
  p.data.resize(static_cast<size_t>(p.m_pad * K));  // every element written below, padding included
  // The blocks GemmRange walks (KC = min(kc, K)); a panel is mr rows.
  PackBlocks(pool, K, kr.kc, p.m_pad / kr.mr, p.m_pad * K, [&](int64_t k0, int64_t kc, int64_t p0, int64_t count) {
    const int64_t i0 = p0 * kr.mr;
    PackPanelsA(kr, trans_a, alpha, A, lda, K, i0, std::min(count * kr.mr, M - i0), k0, kc,
                p.data.data() + k0 * p.m_pad + i0 * kc);
  });
  if (half) MoveToHalf(&p);
  return p;
}

PackedB PackB(Isa isa, bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, bool half, ThreadPool* pool) {
  using namespace gemm_detail;
  const GemmKernel& kr = KernelForIsa(isa);
  PackedB p = GeometryB(isa, K, N);
  p.data.resize(static_cast<size_t>(p.n_pad * K));  // every element written below, padding included
  PackBlocks(pool, K, kr.kc, p.n_pad / kr.nr, p.n_pad * K, [&](int64_t k0, int64_t kc, int64_t p0, int64_t count) {
    const int64_t j0 = p0 * kr.nr;
    PackPanelsB(kr.nr, trans_b, B, ldb, K, k0, kc, j0, std::min(count * kr.nr, N - j0),
                p.data.data() + k0 * p.n_pad + j0 * kc);
  });
  if (half) MoveToHalf(&p);
  return p;
}

std::vector<int64_t> PackedMeta(bool trans, bool half, const PackedA& a) {
  return {static_cast<int64_t>(a.isa), trans, half, a.M, a.K, a.m_pad};
}
std::vector<int64_t> PackedMeta(bool trans, bool half, const PackedB& b) {
  return {static_cast<int64_t>(b.isa), trans, half, b.K, b.N, b.n_pad};
}

namespace {

// Panels of `count` elements in place, fp16 when `half`.
bool ViewPanels(bool half, int64_t count, const void* data, size_t bytes, PackedPanels* p) {
  if (!data || reinterpret_cast<uintptr_t>(data) % 64 != 0 ||
      bytes != static_cast<size_t>(count) * (half ? sizeof(uint16_t) : sizeof(float)))
    return false;
  p->data_view = half ? nullptr : static_cast<const float*>(data);
  p->half_view = half ? static_cast<const uint16_t*>(data) : nullptr;
  p->view_bytes = bytes;
  return true;
}

}  // namespace

bool ViewPackedA(Isa isa, bool trans_a, int64_t M, int64_t K, bool half, const std::vector<int64_t>& meta,
                 const void* data, size_t bytes, PackedA* out) {
  PackedA p = GeometryA(isa, M, K);
  if (meta != PackedMeta(trans_a, half, p) || !ViewPanels(half, p.m_pad * K, data, bytes, &p)) return false;
  *out = std::move(p);
  return true;
}

bool ViewPackedB(Isa isa, bool trans_b, int64_t K, int64_t N, bool half, const std::vector<int64_t>& meta,
                 const void* data, size_t bytes, PackedB* out) {
  PackedB p = GeometryB(isa, K, N);
  if (meta != PackedMeta(trans_b, half, p) || !ViewPanels(half, p.n_pad * K, data, bytes, &p)) return false;
  *out = std::move(p);
  return true;
}

}  // namespace kiln
