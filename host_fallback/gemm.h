// Sgemm: a packed, cache-blocked f32 GEMM for the host backend (MatMul, Gemm,
// Conv via im2col). C = alpha * op(A) * op(B) + beta * C, row-major, where
// op(X) is X or X^T. GotoBLAS/BLIS structure: B is packed in KC x NC blocks
// of NR-wide panels, A in MC x KC blocks of MR-tall panels (alpha folded in),
// and a register-blocked MR x NR micro-kernel does the arithmetic. The
// micro-kernel is picked at run time by CPU features (AVX-512, AVX2+FMA, or a
// portable scalar one); per-ISA files are the only ones built with -m flags.
// Threads split the output over N panels or M panels (whichever balances
// better); each thread packs its own operands into thread-local buffers.
// beta == 0 never reads C (NaNs in C do not propagate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

class ThreadPool;

enum class Isa { kScalar, kAvx2, kAvx512, kNeon };

// True when this build and this CPU can run `isa` (kScalar always).
bool GemmIsaSupported(Isa isa);
// The fastest supported ISA (what Sgemm uses).
Isa GemmBestIsa();
const char* GemmIsaName(Isa isa);
// The blocking Sgemm chose for this machine: "avx512 8x32 tiles, K blocks
// of 256, column blocks of 512 (a quarter of the 2M L2)" (kiln-kernelbench
// prints it).
std::string GemmBlockingText();

// What Sgemm does to each output element after the product, while the tile
// is still in registers or L1 (a separate pass would stream C through memory
// again): C(i, j) = clamp(C(i, j) + row_bias[i] + col_bias[j]), each part
// optional. A NaN clamps to lo.
struct GemmEpilogue {
  const float* row_bias = nullptr;  // [M] or null (Conv: a bias a output channel)
  const float* col_bias = nullptr;  // [N] or null (Gemm: C broadcast along rows)
  bool clamp = false;
  float lo = 0.f, hi = 0.f;
  // A matrix added before the bias and activation (Conv's fused residual):
  // C = act(op(A) op(B) + residual + biases), beta taken as 0. Each tile of
  // it is copied into C just before the tile's first K block accumulates
  // there, so it is read once, while that tile is in L1, with no pass over
  // C of its own. residual[i * ld_residual + j] is C(i, j)'s.
  const float* residual = nullptr;
  int64_t ld_residual = 0;
  // Then, on each finished tile while it is in L1, an activation that is no
  // clamp (Sigmoid, Silu, HardSwish, ...): `rows` rows of `cols` at stride
  // ldc. Called from the pool's threads at once.
  void (*tile_act)(const void* ctx, float* c, int64_t ldc, int64_t rows, int64_t cols) = nullptr;
  const void* tile_ctx = nullptr;
};

// The storage PackedA and PackedB share: a kernel's panels for `isa`, fp32
// or, with `half` (precision low), IEEE fp16 widened (F16C, vcvtph2ps, NEON
// fcvtl where the CPU has them) a cache block at a time into the thread's
// scratch as the product needs them.
// An allocator whose resize() leaves floats uninitialized: packing writes
// every panel element (padding included), so zeroing first would only fault
// the pages in on one thread before the packing threads write them.
template <typename T>
struct UninitializedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <typename U>
  UninitializedAllocator(const UninitializedAllocator<U>&) {}  // NOLINT: converting, as std::allocator
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

struct PackedPanels {
  Isa isa = Isa::kScalar;
  std::vector<float, UninitializedAllocator<float>> data;  // fp32 panels, or empty when
  std::vector<uint16_t> half;  // fp16 panels
  // Or panels that live elsewhere (an ahead-of-time bundle's mapping): used
  // in place of data / half when set.
  const float* data_view = nullptr;
  const uint16_t* half_view = nullptr;
  size_t view_bytes = 0;
  const float* f32() const { return data_view ? data_view : half_view ? nullptr : (half.empty() ? data.data() : nullptr); }
  const uint16_t* f16() const { return half_view ? half_view : data_view ? nullptr : (half.empty() ? nullptr : half.data()); }
  // The bytes this object holds (a view holds none).
  size_t bytes() const { return data.size() * sizeof(float) + half.size() * sizeof(uint16_t); }
  // The panels' bytes wherever they are.
  const void* panels() const { return f16() ? static_cast<const void*>(f16()) : f32(); }
  size_t panelBytes() const { return data_view || half_view ? view_bytes : bytes(); }
};

// op(A) * alpha packed once for many products with different B (Conv weights
// at resize): the micro-kernel's panel layout for `isa`, K in the kernel's
// cache blocks. Read-only after PackA, so one may serve any thread. With
// `half` the panels take half the bytes; arithmetic stays fp32.
struct PackedA : PackedPanels {
  int64_t M = 0, K = 0, m_pad = 0;  // m_pad: M rounded up to the register tile
};
// With `pool`, large matrices are packed by its threads, a range of panels each.
PackedA PackA(Isa isa, bool trans_a, int64_t M, int64_t K, float alpha, const float* A, int64_t lda,
              bool half = false, ThreadPool* pool = nullptr);

// op(B) packed once for many products with different A (MatMul / Gemm
// weights at resize): the K x N matrix in the kernel's cache blocks of KC =
// min(kc, K) rows, block pc at data[pc * n_pad], each block as n_pad / nr
// panels of kc x nr (panel p at p * nr * kc, b[k * nr + c] = B(pc + k, p * nr
// + c)), zero past N. Repacking B on every call cost a quarter of the
// transformer encoder's time: its strided reads of a weight matrix bigger
// than L2 missed the cache. Read-only after PackB, so one may serve any thread.
// With `half` widened a cache block (or, for M == 1, a chunk of panels) at a
// time.
struct PackedB : PackedPanels {
  int64_t K = 0, N = 0, n_pad = 0;  // n_pad: N rounded up to the register tile
};
PackedB PackB(Isa isa, bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, bool half = false,
              ThreadPool* pool = nullptr);

// Ahead-of-time bundles: what PackA / PackB were called with, as stored
// with their panels, and the panels taken back in place from stored bytes
// (`data`, 64-byte aligned) when `meta` is what this call would make and
// the size fits (else false and *out untouched). alpha must be 1.
std::vector<int64_t> PackedMeta(bool trans, bool half, const PackedA& a);
std::vector<int64_t> PackedMeta(bool trans, bool half, const PackedB& b);
bool ViewPackedA(Isa isa, bool trans_a, int64_t M, int64_t K, bool half, const std::vector<int64_t>& meta,
                 const void* data, size_t bytes, PackedA* out);
bool ViewPackedB(Isa isa, bool trans_b, int64_t K, int64_t N, bool half, const std::vector<int64_t>& meta,
                 const void* data, size_t bytes, PackedB* out);

void Sgemm(ThreadPool& pool, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
           const GemmEpilogue* epilogue = nullptr);
// Many small products (attention's heads): a batch a thread, each product
// whole, where the batches divide among the threads or are many; else each
// product split over the threads (a fork and join each, half-width tiles).
inline bool BatchPerThread(int threads, int64_t batches) {
  return threads > 1 && batches >= threads && (batches % threads == 0 || batches >= 4 * threads);
}
// One thread's pool, for a product run inside a parallelFor over batches
// (which must not call back into the session's pool); with one thread
// parallelFor runs inline and keeps no state, so it is shared.
ThreadPool& SerialPool();
// Sgemm on a forced micro-kernel (tests, benchmarks); `isa` must be supported.
void SgemmWithIsa(Isa isa, ThreadPool& pool, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  float alpha, const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                  int64_t ldc, const GemmEpilogue* epilogue = nullptr);
// dst[i] = src[i] as fp32 for i in [0, n): fp16 weights widened with the
// fastest conversion the CPU has (F16C on x86-64; scalar otherwise).
void WidenHalf(const uint16_t* src, float* dst, int64_t n);

// A B that exists only implicitly (Conv's unfolded input): `pack` writes rows
// [k0, k0 + kc) x columns [j0, j0 + nc) of it into nr-wide panels, panel p
// (columns j0 + p * nr ...) at dst + p * kc, b[k * nr + c], zero past nc: the
// layout the GEMM packs an explicit B into. Called from the pool's threads
// at once, so it must only read shared state.
struct BPacker {
  void (*pack)(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int nr, float* dst);
  const void* ctx;
};

// C = a * op(B) + beta * C with a = PackA(...) (its alpha included).
void SgemmPacked(ThreadPool& pool, const PackedA& a, bool trans_b, int64_t N, const float* B, int64_t ldb, float beta,
                 float* C, int64_t ldc, const GemmEpilogue* epilogue = nullptr);

// C = a * B + beta * C for an implicit B [a.K x N] (see BPacker): the
// unfolded input is packed a cache block at a time, never stored whole.
void SgemmPackedImplicitB(ThreadPool& pool, const PackedA& a, int64_t N, const BPacker& b, float beta, float* C,
                          int64_t ldc, const GemmEpilogue* epilogue = nullptr);

// C = alpha * op(A) * b + beta * C with b = PackB(...). M == 1 streams the
// panels once (a matrix-vector product at memory speed).
void SgemmPackedB(ThreadPool& pool, bool trans_a, int64_t M, float alpha, const float* A, int64_t lda,
                  const PackedB& b, float beta, float* C, int64_t ldc, const GemmEpilogue* epilogue = nullptr);

// SgemmPackedB split by its caller: the panels of b (of PackedBPanelWidth
// columns) that each of `threads` threads would take, or 0 where the pool
// would split C by rows (few panels) or not at all (little work); then
// columns [n0, n1) of C (n0 a whole number of panels) on the calling
// thread, the same values, bit for bit, as SgemmPackedB's. A conv working
// on its own part of C while it is in cache (the transposed 1x1 conv's
// transpose back) takes one pass over the pool, not two.
int PackedBPanelWidth(const PackedB& b);
bool PackedBSplitsColumns(const PackedB& b, int64_t M, int threads);
void SgemmPackedBColumns(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda, const PackedB& b,
                         int64_t n0, int64_t n1, float beta, float* C, int64_t ldc,
                         const GemmEpilogue* epilogue = nullptr);

// The FMA throughput of `isa`'s peak probe on the calling thread, in
// GFLOP/s, timed over at least `seconds` (kiln-kernelbench's roof).
double MeasureFmaGflops(Isa isa, double seconds);

namespace gemm_detail {
// The GemmEpilogue of one full tile, applied by the micro-kernel to its
// registers before it stores them (a second pass over the tile cost 9% of a
// 1x1 conv with K = 64): + row_bias[i] + col_bias[j], then the clamp (NaN to
// lo). The biases point at the tile's first row and column, or are null.
struct TileEpilogue {
  const float* row_bias;
  const float* col_bias;
  bool clamp;
  float lo, hi;
};
// c[MR x NR] (row stride ldc) = ep((load_c ? c : 0) + sum_k a[k * MR + i] * b[k * ldb + j]);
// ep null: none. ldb is NR on packed panels, or the row stride of a B read
// where it lies (small M, where packing B cost more than it saved).
using MicroKernel = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc,
                             bool load_c, const TileEpilogue* ep);
// KILN_HOST_PREFETCH=0 turns the spread weight prefetch (micro_pf) off,
// for measuring.
bool PrefetchWeights();
// Asks for `lines` cache lines from p on at once (into L2): a tile that
// has no prefetching form, or a kernel without micro_pf.
inline void PrefetchLines(const char* p, int64_t lines) {
  for (int64_t l = 0; l < lines; ++l) __builtin_prefetch(p + l * 64, 0, 2);
}
// micro_pf's prefetches: `lines` cache lines from pf on, one every kc /
// lines steps of a k loop of kc (step() once a step), the rest at finish().
// A burst of them at a tile's start did not help: the misses queue behind
// each other where spread ones overlap the arithmetic.
struct SpreadPrefetch {
  const char *p, *end;
  int64_t every, left;
  SpreadPrefetch(const char* pf, int64_t lines, int64_t kc)
      : p(pf), end(pf + lines * 64), every(lines > 0 ? (kc / lines > 1 ? kc / lines : 1) : kc + 1), left(every) {}
  void step() {
    if (--left != 0) return;
    if (p < end) __builtin_prefetch(p, 0, 2);  // into L2
    p += 64;
    left = every;
  }
  void finish() {
    if (p < end) PrefetchLines(p, (end - p) / 64);
  }
};
// The next weight panel (`bytes` from next; null: none) split over the
// `parts` tiles that use the current one, whole cache lines each: tile t's
// share (possibly empty), for micro_pf / SpreadPrefetch.
struct PanelShare {
  const char* at = nullptr;
  int64_t lines = 0;
};
inline PanelShare ShareOfNext(const void* next, int64_t bytes, int64_t parts, int64_t t) {
  if (!next || parts <= 0) return {};
  const int64_t lines = (bytes + 63) / 64, per = (lines + parts - 1) / parts;
  const int64_t l0 = t * per < lines ? t * per : lines, l1 = l0 + per < lines ? l0 + per : lines;
  return {static_cast<const char*>(next) + l0 * 64, l1 - l0};
}
// MicroKernel that also asks for `lines` cache lines from `pf` on (into
// L2), spread over its k loop (SpreadPrefetch): the next weight panel of a
// product whose weights stream from memory, fetched while this tile computes.
using MicroKernelPf = void (*)(int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc,
                               bool load_c, const TileEpilogue* ep, const char* pf, int64_t lines);
// MicroKernel on the first `rows` (0 < rows <= mr) rows of a tile whose A
// holds step k's mr values at a + k * lda (lda = mr: packed panels; or an
// A read where it lies, transposed: the pixels of a small plane, y^T = x^T
// w^T, which packing cost 12% of a 7x7 1x1 conv), with MicroKernelPf's
// prefetches (pf null: none).
using MicroKernelA = void (*)(int rows, int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb,
                              float* c, int64_t ldc, bool load_c, const TileEpilogue* ep, const char* pf,
                              int64_t lines);
// Peak probe: `iters` rounds of independent FMA chains in registers;
// returns a value that depends on all of them (so none is optimised away).
using FmaLoop = float (*)(int64_t iters);
// y[p * nr + c] (p in [0, panels)) = sum_k a[k] * B(k, p * nr + c) over a
// PackedB's layout from its panel p0 on: K rows in blocks of KC, block pc
// at packed + pc * n_pad (a matrix-vector product over whole panels).
using GemvPanels = void (*)(int64_t K, int64_t KC, const float* a, const float* packed, int64_t n_pad, int64_t p0,
                            int64_t panels, float* y);
// d[k * mr + r] = alpha * A[r * lda + k] for r < mr, k < kc: one whole
// mr-row panel of an A that is not transposed (a transpose of row blocks in
// registers, where the generic loop writes one float at a time).
using PanelPackA = void (*)(const float* A, int64_t lda, int64_t kc, float alpha, float* d);
// fp16 -> fp32 of n values (null: the scalar conversion).
using WidenFn = void (*)(const uint16_t* src, float* dst, int64_t n);
struct GemmKernel {
  int mr, nr;              // register tile
  int64_t mc, kc, nc;      // cache blocks (mc a multiple of mr, nc of nr)
  MicroKernel micro;
  FmaLoop fma_loop;        // the ISA's FMA throughput probe (kiln-kernelbench)
  int fma_flops_per_iter;  // flops one iteration of fma_loop does
  GemvPanels gemv;         // M == 1 on packed B
  PanelPackA pack_a;       // a full panel of A, not transposed; null: the generic loop
  WidenFn widen;           // this ISA's fp16 widening, or null
  // An mr x nr/2 tile on the same panels (ldb nr), for a last panel of at
  // most nr/2 columns (13x13 = 169 = 5 x 32 + 9 fills 176 columns, not
  // 192), or null.
  MicroKernel micro_half = nullptr;
  MicroKernelPf micro_pf = nullptr;  // micro with prefetches, or null
  MicroKernelA micro_a = nullptr;  // full-width tiles of any rows on a strided A, or null
};
// nullptr when the build has no such kernel (AVX: non-x86; NEON: non-arm64).
const GemmKernel* Avx512Kernel();
const GemmKernel* Avx2Kernel();
const GemmKernel* NeonKernel();
// The kernel Sgemm runs for `isa` (the scalar one when the build lacks it):
// for callers that lay out their operands in its panels themselves (the
// Winograd convolution).
const GemmKernel& KernelForIsa(Isa isa);
// Rows [i0, i0 + mc) x columns [k0, k0 + kc) of alpha * op(A) (A is M x K,
// or K x M when trans_a) as kr's mr-tall panels, zero past mc; columns
// [j0, j0 + nc) x rows [k0, k0 + kc) of op(B) as nr-wide panels, zero past
// nc: the layouts GemmRange and PackA / PackB share.
void PackPanelsA(const GemmKernel& kr, bool trans_a, float alpha, const float* A, int64_t lda, int64_t K, int64_t i0,
                 int64_t mc, int64_t k0, int64_t kc, float* dst);
void PackPanelsB(int nr, bool trans_b, const float* B, int64_t ldb, int64_t K, int64_t k0, int64_t kc, int64_t j0,
                 int64_t nc, float* dst);
}  // namespace gemm_detail

}  // namespace kiln
