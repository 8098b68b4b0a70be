// QGemm: the host backend's 8-bit integer GEMM, behind QLinearConv and
// ConvInteger. C = ep(A * B): A is int8 [M x K] (weights, packed once at
// resize), B is uint8 [K x N] (activations, gathered a column block at a
// time by the caller's row function, so an unfolded convolution input is
// never stored whole), the products are summed exactly in int32, and the
// epilogue adds a per-row offset and requantizes (or stores the int32 sums).
//
// Micro-kernels, picked at run time by CPU features:
//   AMX           32 x 32 tile, tdpbsud on tile registers (Intel Sapphire
//                 Rapids on; K of 64 or more, else VNNI's), the OS asked
//                 for the tile state once (KILN_HOST_AMX=0: not used)
//   AVX-512 VNNI  8 x 32 tile, vpdpbusd (u8 x s8, four products a lane);
//                 and for convolutions a 32-channel x 8-pixel tile
//                 (QConvPixels) that reads the input in place
//   AVX2          6 x 16 tile, u8 widened to i16 and vpmaddwd (exact; the
//                 vpmaddubsw shortcut saturates at i16 and is not used)
//   NEON dotprod  8 x 8 tile, sdot on activations offset back to int8
//   scalar        4 x 16 tile, plain loops
// Operands are laid out in groups of `kg` consecutive k (the kernel's dot
// width): B panels b[(q * nr + c) * kg + g] = B(q * kg + g, p * nr + c).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {

class ThreadPool;

enum class QIsa { kScalar, kAvx2, kAvx512Vnni, kNeonDot, kAmx };

bool QIsaSupported(QIsa isa);
QIsa QBestIsa();
// The ISA QPackA(QBestIsa(), M, K, ...) packs for: QBestIsa's, or where
// that is AMX and K is below 64, AVX-512 VNNI's.
QIsa QIsaFor(int64_t K);
const char* QIsaName(QIsa isa);

// A packed once: mr-row panels of kq groups of kg values (int8, or int16 for
// the AVX2 kernel), zero past M and K; row_sum[i] = sum_k A(i, k) (for the
// caller's zero-point correction).
struct QPackedA {
  QIsa isa = QIsa::kScalar;
  int64_t M = 0, K = 0, kq = 0, m_pad = 0;
  bool pixel = false;  // panels of the pixel tile's rows (QConvPixels), not the GEMM tile's
  std::vector<int8_t> data;
  std::vector<int32_t> row_sum;
  // Or both kept elsewhere (an ahead-of-time bundle's mapping), used in place.
  const int8_t* data_view = nullptr;
  const int32_t* row_sum_view = nullptr;
  const int8_t* panels() const { return data_view ? data_view : data.data(); }
  const int32_t* rowSums() const { return row_sum_view ? row_sum_view : row_sum.data(); }
  size_t panelBytes() const;  // the panels' size for (isa, M, K)
  int panelRows() const;      // the rows of a panel: the kernel's mr, or its pixel tile's (pixel)
  size_t bytes() const { return data.size() + row_sum.size() * sizeof(int32_t); }  // held here
};
QPackedA QPackA(QIsa isa, int64_t M, int64_t K, const int8_t* A, int64_t lda, bool pixel = false);
// Ahead-of-time bundles: what QPackA was called with, and its result taken
// back in place from stored panels and row sums when made for (isa, M, K)
// and of the sizes those make (else false, *out untouched).
std::vector<int64_t> QPackedMeta(const QPackedA& a);
bool QViewPackedA(QIsa isa, int64_t M, int64_t K, bool pixel, const std::vector<int64_t>& meta, const void* panels,
                  size_t panel_bytes, const void* row_sums, size_t row_sum_bytes, QPackedA* out);

// The implicit B: block(ctx, k0, kn, j0, n, dst, stride) writes columns j0
// .. j0 + n of rows k0 .. k0 + kn of B to dst + (k - k0) * stride (and may
// write up to 16 bytes past each row's n: the stride has the room). Called
// for a few dozen rows at a time (an L1-sized piece of a column block), so
// the caller works out where the columns come from once for all of them.
// Called from the pool's threads at once, so it must only read shared state.
struct QBSource {
  void (*block)(const void* ctx, int64_t k0, int64_t kn, int64_t j0, int64_t n, uint8_t* dst, int64_t stride);
  const void* ctx;
  // Optional: row k's columns j0 .. j0 + n where B holds them contiguously
  // and n bytes may be read from there (columns past the block's own may hold
  // anything: their results are never stored), or null where not (block
  // copies that chunk). The GEMM then interleaves from B in place: one pass
  // over B instead of a copy and an interleave.
  const uint8_t* (*row)(const void* ctx, int64_t k, int64_t j0, int64_t n) = nullptr;
};

// dst[y * dst_stride + 4 * j + g] = planes[g][y * src_stride + j] ^ flip
// for y < rows, j < n: four planes' rows interleaved (a padded NC4HW4 plane
// of four channels, QConvPixels' input; src_stride 0 repeats one row).
void QInterleave4Rows(const uint8_t* const planes[4], int64_t rows, int64_t n, int64_t src_stride, uint8_t flip,
                      uint8_t* dst, int64_t dst_stride);

// What becomes of sum = A(i, :) * B(:, j) + row_add[i]:
//  - row_scale null: C is int32, C(i, j) = sum (ConvInteger);
//  - else C is uint8 (int8 with out_i8), C(i, j) = clamp(round_half_even(
//    float(sum) * row_scale[i]) + y_zero, lo, hi) in f32 arithmetic (as
//    onnxruntime requantizes), the clamp also being the fused activation's
//    (Relu: lo = y_zero).
struct QEpilogue {
  const int32_t* row_add = nullptr;  // [M] or null
  const float* row_scale = nullptr;  // [M] or null
  int32_t y_zero = 0, lo = 0, hi = 255;
  bool out_i8 = false;
};

// C (row stride ldc, in elements) = ep(a * B), B [a.K x N] from `b`.
// False when a thread's scratch cannot be allocated.
bool QGemm(ThreadPool& pool, const QPackedA& a, int64_t N, const QBSource& b, const QEpilogue& ep, void* C,
           int64_t ldc);

// Convolutions by pixels (AVX-512 VNNI): the kernel's tile is 32 output
// channels (the vector lanes: A's 128 bytes a k group, panels packed with
// pixel = true) by 8 output pixels, each pixel's 4 bytes of a k group
// broadcast from wherever that pixel reads them. A convolution's input,
// copied once into padded NC4HW4 planes (4 channels interleaved, the dot
// width) with A's k ordered by channel quad, then tap, then channel in the
// quad, gives every (pixel, k group) pair one address, base + pixel_off[p]
// + group_off[q]: the unfolded input is never written, any stride or
// dilation is a table of offsets, and no column is computed that is not an
// output (a B tile of 32 columns spends up to a third of its products on
// the padding between rows of a 7x7 plane).
struct QPixelSource {
  const uint8_t* base = nullptr;
  const int64_t* pixel_off = nullptr;  // [N]
  const int64_t* group_off = nullptr;  // [a.kq]
};
// The rows of the pixel tile's panels (32), 0 where the ISA has no pixel
// kernel.
int QPixelRows(QIsa isa);
// C (uint8 or int8, row stride ldc) = ep(a * B) for the N pixels of b; a
// packed with pixel = true, a requantizing epilogue (row_scale set).
void QConvPixels(ThreadPool& pool, const QPackedA& a, int64_t N, const QPixelSource& b, const QEpilogue& ep, void* C,
                 int64_t ldc);

namespace qgemm_detail {
// c[r * nr + j] = sum over kq groups of a panel (mr rows) times a B panel.
using QMicro = void (*)(int64_t kq, const int8_t* a, const uint8_t* b, int32_t* c);
// The requantizing epilogue on a finished tile (rows x cols of c, row
// stride nr): out[r * ldc + j] = byte(clamp(round(float(c + add[r]) *
// scale[r]) + zero, lo, hi)).
using QFinish = void (*)(const int32_t* c, int nr, int64_t rows, int64_t cols, const int32_t* add, const float* scale,
                         float zero, float lo, float hi, uint8_t* out, int64_t ldc);
// micro and finish in one: the tile requantized from registers (no int32
// tile stored and read back: a quarter of a small-K product's time).
using QMicroFinish = void (*)(int64_t kq, const int8_t* a, const uint8_t* b, int64_t rows, int64_t cols,
                              const int32_t* add, const float* scale, float zero, float lo, float hi, uint8_t* out,
                              int64_t ldc);
// micro_finish that also asks for `lines` cache lines from pf on, spread
// over its k loop (gemm_detail::SpreadPrefetch): the next weight panel.
using QMicroFinishPf = void (*)(int64_t kq, const int8_t* a, const uint8_t* b, int64_t rows, int64_t cols,
                                const int32_t* add, const float* scale, float zero, float lo, float hi, uint8_t* out,
                                int64_t ldc, const char* pf, int64_t lines);
// The pixel tile (QConvPixels): rows (<= pixel_rows) of a panel of A by
// pixels n (<= pixel_cols), pixel j's k group q the 4 bytes at base +
// pixel_off[j] + group_off[q]; requantized (QFinish's arithmetic, add and
// scale per row) and stored to out[r * ldc + j].
using QPixelTile = void (*)(int64_t kq, const int8_t* a, const uint8_t* base, const int64_t* pixel_off, int n,
                            const int64_t* group_off, int64_t rows, const int32_t* add, const float* scale,
                            float zero, float lo, float hi, uint8_t* out, int64_t ldc);
// A matrix-vector form for B of at most 4 columns (a classifier's batch of
// one): c[(p * mr + r) * 4 + j] = the sums of row r of panel p (of
// `panels`, abytes apart) with column j (< ncols) of b, whose k group q is
// b[q * 16 + 4 j .. + 3]. A tile of nr columns would spend nr / ncols times
// the multiply-adds.
using QGemv = void (*)(int64_t kq, const int8_t* a, int64_t abytes, int64_t panels, const uint8_t* b, int ncols,
                       int32_t* c);
struct QKernel {
  int mr, nr, kg;
  bool a16;  // A stored as int16 (kg values a group)
  QMicro micro;
  QFinish finish = nullptr;  // null: the portable loop
  QMicroFinish micro_finish = nullptr;  // null: micro, then finish
  QMicroFinishPf micro_finish_pf = nullptr;  // null: none
  QGemv gemv = nullptr;  // null: narrow B takes the tiles
  void (*done)() = nullptr;  // after a thread's task: state the kernel keeps between calls let go (AMX's tiles)
  QMicroFinish micro_finish_half = nullptr;  // micro_finish for tiles of at most nr / 2 columns (null: none)
  QPixelTile pixel_tile = nullptr;  // null: no pixel kernel
  int pixel_rows = 0, pixel_cols = 0;
};
const QKernel* Avx512VnniKernel();  // null when the build or the CPU lacks it
const QKernel* AmxKernel();  // A packed in rows of 64 k a step (QPackA), kq a multiple of 16
const QKernel* Avx2QKernel();
const QKernel* NeonDotKernel();
}  // namespace qgemm_detail

}  // namespace kiln
