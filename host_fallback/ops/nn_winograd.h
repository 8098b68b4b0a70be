// Conv 3x3, stride 1, dilation 1, one group, as Winograd F(4x4, 3x3): each
// 4x4 block of outputs ("tile") comes from a 6x6 input patch through
// Y = A^T [ (G g G^T) . (B^T d B) ] A, so the 9 x 16 = 144 multiplies a tile
// and a channel pair of the direct convolution become 36 (4x fewer); or as
// F(2x2, 3x3): 2x2 tiles from 4x4 patches, 36 multiplies become 16 (2.25x
// fewer) but the transformed weights are 16 / 9 of the weights, not 36 / 9.
// The P (36 or 16) element-wise products, summed over input channels, are P
// independent GEMMs [tiles x C] x [C x M], which run on Sgemm's register-blocked
// micro-kernel (gemm.h) straight from the transforms' outputs: the input
// transform writes the micro-kernel's A panels (mr tiles, k-major) and the
// weights are transformed and packed into its B panels (nr output channels)
// once, at resize. Tiles are processed in blocks sized so a block's
// transformed inputs and products stay in L2.
//
// Numerics: the transforms use the points 0, +-1, +-2 (exact in fp32 up to
// the 1/24 and 1/6 of G); outputs differ from the direct sum by a few ulp
// times the magnitude of the partial sums, well inside the 1e-4 the host
// tests allow.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gemm.h"

namespace kiln {

class ThreadPool;

class WinogradConv {
 public:
  // The output tile (4: F(4x4, 3x3), 2: F(2x2, 3x3)) that is the faster way
  // for C input and M output channels on an OH x OW output on `threads`
  // threads of `isa`'s kernel, each with an L2 of `l2_bytes` (0: unknown,
  // taken as 1 MiB), or 0 where im2col + Sgemm is. A cost model (see the
  // .cpp): the products' multiply-adds plus the transformed weights read
  // from memory, once for each block of tiles that cycles through the L2.
  // KILN_HOST_WINOGRAD_TILE=4 or 2 forces a tile where Winograd applies.
  static int Tile(Isa isa, int64_t C, int64_t M, int64_t OH, int64_t OW, int threads, int64_t l2_bytes);
  // The tiles of one block (a multiple of the kernel's mr) for T tiles of
  // a patch of P positions: the block's transformed inputs and products
  // (P x tiles x (C + m_pad) floats) within the L2, and as many blocks as
  // gives each of `threads` the same share.
  static int64_t BlockTiles(int64_t T, int64_t P, int64_t C, int64_t m_pad, int mr, int threads, int64_t l2_bytes);

  // Transforms the weights w [M, C, 3, 3] for output tiles of `tile` (4 or
  // 2) and packs them for `isa`'s micro-kernel, the panels split over
  // `pool`'s threads. Called once (the weights are constant).
  void prepare(ThreadPool& pool, Isa isa, const float* w, int64_t M, int64_t C, int tile);
  // The same state from transformed weights made earlier (an ahead-of-time
  // bundle: `u` holds prepare's u_ for these arguments, used in place).
  void adopt(Isa isa, int64_t M, int64_t C, int tile, const float* u);
  // The transformed weights and their count (for a bundle).
  const float* transformed() const { return u_view_ ? u_view_ : u_.get(); }
  size_t transformedFloats() const { return u_floats_; }
  bool ready() const { return kernel_ != nullptr; }
  int tile() const { return r_; }
  Isa isa() const { return isa_; }
  size_t bytes() const { return u_view_ ? 0 : u_floats_ * sizeof(float); }  // held here (a view holds none)

  // One image: y [M, OH, OW] = bias + conv(x [C, H, W]) with pads pad_t /
  // pad_l before the first row / column (rows and columns past the input
  // read as zero), then clamp to [lo, hi] when `clamp`. bias may be null.
  void run(ThreadPool& pool, const float* x, int64_t H, int64_t W, int64_t pad_t, int64_t pad_l, float* y,
           int64_t OH, int64_t OW, const float* bias, bool clamp, float lo, float hi) const;

 private:
  struct Block;  // the geometry of one run (nn_winograd.cpp)
  void runBlock(const Block& b, const float* x, float* y, int64_t t0, float* v, float* prod, int phase,
                int64_t begin, int64_t end) const;

  const gemm_detail::GemmKernel* kernel_ = nullptr;
  Isa isa_ = Isa::kScalar;
  int a_ = 6, r_ = 4;  // the patch and the output tile (6, 4 or 4, 2)
  int64_t M_ = 0, C_ = 0, m_panels_ = 0, m_pad_ = 0;
  // [a * a][m_panels][C][nr]: transformed weights, nr channels a panel.
  // Each element is written once by prepare (no zero-filling pass first).
  std::unique_ptr<float[]> u_;
  const float* u_view_ = nullptr;  // adopt()'s weights, used instead of u_
  size_t u_floats_ = 0;
  void setGeometry(Isa isa, int64_t M, int64_t C, int tile);
};

}  // namespace kiln
