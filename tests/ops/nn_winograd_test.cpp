// Winograd 3x3 convolution on the host (nn_winograd.cpp): results against
// the naive reference on every tile, and the tile chosen by cost.
#include "ops/conv_test_util.h"
#include "ops/nn_winograd.h"

namespace kiln {
namespace {

using namespace nn_test;

// 3x3 stride-1 convs with enough channels take Winograd F(4x4, 3x3)
// (nn_winograd.cpp): partial edge tiles, asymmetric and absent pads, a
// channel count off the micro-kernel's panel width, batches, both threading
// modes (few blocks: every thread on each phase; many: a block a thread).
// Winograd rounds differently from the direct sum: its error is about 1e-6
// of the sum of |x * w| (ca. 150 here at 64 channels), so these outputs
// (about 8 in size) get 5e-4, still far below what a wrong tap or
// coefficient makes (about 0.1).
TEST(NnConv, Winograd3x3) {
  std::vector<std::pair<std::string, ConvCase>> cases;
  auto add = [&](const std::string& name, ConvCase k) { cases.emplace_back(name, k); };
  {
    ConvCase k{1, 16, 6, 6, 16, 3, 3};
    k.pt = k.pl = k.pb = k.pr = 1;
    add("16->16 on 6x6, one tile row and column partial", k);
  }
  {
    ConvCase k{2, 17, 13, 11, 33, 3, 3};
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    k.act = fb::Activation::Relu;
    add("17->33 on 13x11, batch 2, bias, relu", k);
  }
  {
    ConvCase k{1, 24, 9, 23, 40, 3, 3};
    k.pt = 0, k.pl = 2, k.pb = 1, k.pr = 0;
    k.bias = true;
    k.act = fb::Activation::Clip;
    k.act_min = -0.5f, k.act_max = 0.5f;
    add("24->40 on 9x23, asymmetric pads, clip", k);
  }
  {
    ConvCase k{1, 32, 20, 20, 16, 3, 3};
    k.act = fb::Activation::LeakyRelu;
    add("32->16 on 20x20 unpadded, leaky relu after", k);
  }
  {
    ConvCase k{1, 64, 56, 56, 64, 3, 3};
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    add("64->64 on 56x56 (several blocks, shared between threads)", k);
  }
  {
    ConvCase k{1, 16, 121, 118, 16, 3, 3};
    k.pt = k.pl = k.pb = k.pr = 1;
    add("16->16 on 121x118 (a block a thread)", k);
  }
  // Planes up to 8x8 take F(2x2, 3x3) (WinogradConv::Tile).
  {
    ConvCase k{2, 40, 7, 7, 24, 3, 3};
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    k.act = fb::Activation::Relu;
    add("F(2x2) 40->24 on 7x7, batch 2, bias, relu, a partial tile row and column", k);
  }
  {
    // 16 tiles against 128 x 128 weights: the threads share one block's
    // products (WinogradConv::BlockTiles) rather than a block each.
    ConvCase k{1, 128, 7, 7, 128, 3, 3};
    k.pt = k.pl = k.pb = k.pr = 1;
    k.bias = true;
    add("F(2x2) 128->128 on 7x7 (weights outweigh the tiles: products shared between threads)", k);
  }
  {
    ConvCase k{1, 16, 10, 8, 48, 3, 3};
    k.pt = 0, k.pl = 1, k.pb = 0, k.pr = 1;
    k.act = fb::Activation::Sigmoid;
    add("F(2x2) 16->48 on 8x8 from 10x8, sigmoid after", k);
  }
  // Each case on the tile the cost model picks, then on each tile forced.
  for (const char* tile : {"", "4", "2"}) {
    SCOPED_TRACE(std::string("KILN_HOST_WINOGRAD_TILE=") + tile);
    setenv("KILN_HOST_WINOGRAD_TILE", tile, 1);
    for (auto& [name, k] : cases) {
      k.tol = 5e-4f;
      RunConvCase(k, name);
    }
  }
  unsetenv("KILN_HOST_WINOGRAD_TILE");
}

// The tile choice weighs the products against the transformed weights
// read from memory once a block of tiles (WinogradConv::Tile): large
// planes take F(4x4); where a plane has few tiles for many channels, the
// 36 / 9 weights of F(4x4) cost more than F(2x2)'s extra products.
TEST(NnConv, WinogradTileByCost) {
  const Isa isa = GemmBestIsa();
  const int64_t mib = int64_t{1} << 20;
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    EXPECT_EQ(WinogradConv::Tile(isa, 64, 64, 56, 56, threads, mib), 4);
    EXPECT_EQ(WinogradConv::Tile(isa, 128, 128, 28, 28, threads, 2 * mib), 4);
    EXPECT_EQ(WinogradConv::Tile(isa, 256, 256, 14, 14, threads, 2 * mib), 2);
    EXPECT_EQ(WinogradConv::Tile(isa, 512, 512, 7, 7, threads, mib), 2);
    EXPECT_EQ(WinogradConv::Tile(isa, 512, 512, 7, 7, threads, 0), 2);  // L2 unknown: 1 MiB
    EXPECT_EQ(WinogradConv::Tile(isa, 8, 64, 56, 56, threads, mib), 0);   // too few channels
    EXPECT_EQ(WinogradConv::Tile(isa, 64, 64, 5, 40, threads, mib), 0);   // too few rows
  }
  // A block's transformed inputs and products fit the L2: 16 F(4x4) tiles
  // of 256 -> 256 channels (36 x 16 x 512 floats, 1.2 MB) are one block in
  // 2 MiB, two of 8 in 1 MiB. Two threads get a block each where the tiles
  // weigh at least half the weights (196 tiles of 64 -> 64), else they
  // share one block's products (16 tiles of 256 -> 256: each block would
  // read all 9 MB of weights).
  const int mr = gemm_detail::KernelForIsa(isa).mr;
  const int64_t m_pad = (256 + gemm_detail::KernelForIsa(isa).nr - 1) / gemm_detail::KernelForIsa(isa).nr *
                        gemm_detail::KernelForIsa(isa).nr;
  const int64_t whole = (16 + mr - 1) / mr * mr;
  EXPECT_EQ(WinogradConv::BlockTiles(16, 36, 256, m_pad, mr, 1, 2 * mib), whole);
  EXPECT_LT(WinogradConv::BlockTiles(16, 36, 256, m_pad, mr, 1, mib), whole);
  EXPECT_EQ(WinogradConv::BlockTiles(16, 36, 256, m_pad, mr, 2, 2 * mib), whole);
  const int64_t m64 = (64 + gemm_detail::KernelForIsa(isa).nr - 1) / gemm_detail::KernelForIsa(isa).nr *
                      gemm_detail::KernelForIsa(isa).nr;
  EXPECT_LE(WinogradConv::BlockTiles(196, 36, 64, m64, mr, 2, 2 * mib), (98 + mr - 1) / mr * mr);
  EXPECT_EQ(WinogradConv::BlockTiles(16, 36, 256, m_pad, mr, 1, 2 * mib) % mr, 0);
}

}  // namespace
}  // namespace kiln
