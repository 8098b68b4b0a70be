// Winograd F(4x4, 3x3) convolution (nn_winograd.h).
//
// The transform matrices (rows of B^T, G, A^T; points 0, 1, -1, 2, -2, inf):
//   B^T = [4  0 -5  0 1 0]   G = [ 1/4     0     0 ]   A^T = [1 1  1 1  1 0]
//         [0 -4 -4  1 1 0]       [-1/6  -1/6  -1/6 ]         [0 1 -1 2 -2 0]
//         [0  4 -4 -1 1 0]       [-1/6   1/6  -1/6 ]         [0 1  1 4  4 0]
//         [0 -2 -1  2 1 0]       [1/24  1/12   1/6 ]         [0 1 -1 8 -8 1]
//         [0  2 -1 -2 1 0]       [1/24 -1/12   1/6 ]
//         [0  4  0 -5 0 1]       [   0     0     1 ]
//
// Data of one block of tb tiles (tb a multiple of the micro-kernel's mr):
//   v    [36][tb / mr][C][mr]   transformed inputs: for each of the 36 patch
//                               positions, the micro-kernel's A panels
//   u_   [36][M / nr][C][nr]    transformed weights: its B panels
//   prod [36][tb][m_pad]        the 36 products, a row a tile
// The input transform is vectorized over the 8 tiles of a panel (lanes), the
// output transform over 16 output channels.
#include "ops/nn_winograd.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "scratch.h"
#include "simd_clones.h"
#include "thread_pool.h"

namespace kiln {
namespace {

constexpr int kLanes = 8;  // input-transform lanes; >= every micro-kernel's mr
constexpr int kOutLanes = 16;

thread_local ScratchBuffer tl_v, tl_prod;

// B^T d along one axis, on kLanes lanes: in[k] is row (or column) k of the patch.
#define KILN_WINO_BT(in, out, l)                                        \
  do {                                                                  \
    const float d0 = in(0, l), d1 = in(1, l), d2 = in(2, l), d3 = in(3, l), d4 = in(4, l), d5 = in(5, l); \
    out(0, l) = 4.f * d0 - 5.f * d2 + d4;                               \
    out(1, l) = -4.f * (d1 + d2) + d3 + d4;                             \
    out(2, l) = 4.f * (d1 - d2) - d3 + d4;                              \
    out(3, l) = 2.f * (d3 - d1) - d2 + d4;                              \
    out(4, l) = 2.f * (d1 - d3) - d2 + d4;                              \
    out(5, l) = 4.f * d1 - 5.f * d3 + d5;                               \
  } while (0)

// A^T m along one axis.
#define KILN_WINO_AT(in, out, l)                                        \
  do {                                                                  \
    const float m0 = in(0, l), m1 = in(1, l), m2 = in(2, l), m3 = in(3, l), m4 = in(4, l), m5 = in(5, l); \
    const float s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4; \
    out(0, l) = m0 + s12 + s34;                                         \
    out(1, l) = d12 + 2.f * d34;                                        \
    out(2, l) = s12 + 4.f * s34;                                        \
    out(3, l) = d12 + 8.f * d34 + m5;                                   \
  } while (0)

// The input transform of channel xc for the tiles [t0, t0 + panels * mr) of
// a TW-wide tile grid of T tiles: writes v[(xi * panels + p) * panel_stride + l]
// (panel_stride = C * mr, v already offset to the channel).
KILN_SIMD_CLONES
void InputChannel(const float* __restrict xc, int64_t H, int64_t W, int64_t pad_t, int64_t pad_l, int64_t TW,
                  int64_t T, int64_t t0, int64_t panels, int mr, float* __restrict v, int64_t panel_stride) {
  for (int64_t p = 0; p < panels; ++p) {
    float d[6][6][kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const int64_t t = t0 + p * mr + l;
      if (l >= mr || t >= T) {
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 6; ++j) d[i][j][l] = 0.f;
        continue;
      }
      const int64_t r0 = t / TW * 4 - pad_t, c0 = t % TW * 4 - pad_l;
      if (r0 >= 0 && r0 + 6 <= H && c0 >= 0 && c0 + 6 <= W) {
        const float* s = xc + r0 * W + c0;
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 6; ++j) d[i][j][l] = s[i * W + j];
      } else {
        for (int i = 0; i < 6; ++i) {
          const int64_t r = r0 + i;
          for (int j = 0; j < 6; ++j) {
            const int64_t c = c0 + j;
            d[i][j][l] = r >= 0 && r < H && c >= 0 && c < W ? xc[r * W + c] : 0.f;
          }
        }
      }
    }
    float t[6][6][kLanes], o[6][6][kLanes];
    for (int j = 0; j < 6; ++j) {  // columns: t = B^T d
#define IN(k, l) d[k][j][l]
#define OUT(k, l) t[k][j][l]
      for (int l = 0; l < kLanes; ++l) KILN_WINO_BT(IN, OUT, l);
#undef IN
#undef OUT
    }
    for (int i = 0; i < 6; ++i) {  // rows: o = t B
#define IN(k, l) t[i][k][l]
#define OUT(k, l) o[i][k][l]
      for (int l = 0; l < kLanes; ++l) KILN_WINO_BT(IN, OUT, l);
#undef IN
#undef OUT
    }
    float* dst = v + p * panel_stride;
    const int64_t xi_stride = panels * panel_stride;
    for (int xi = 0; xi < 36; ++xi)
      std::memcpy(dst + xi * xi_stride, o[xi / 6][xi % 6], static_cast<size_t>(mr) * sizeof(float));
  }
}

// The output transform of one tile for output channels [0, M): prod points at
// the tile's row of product 0 (products xi_stride apart); writes the valid
// part of the 4x4 block at (oy0, ox0) of each channel plane of y.
KILN_SIMD_CLONES
void OutputTile(const float* __restrict prod, int64_t xi_stride, int64_t M, const float* bias, bool clamp, float lo,
                float hi, float* __restrict y, int64_t OH, int64_t OW, int64_t oy0, int64_t ox0) {
  const int64_t rows = std::min<int64_t>(4, OH - oy0), cols = std::min<int64_t>(4, OW - ox0);
  const int64_t plane = OH * OW;
  for (int64_t m0 = 0; m0 < M; m0 += kOutLanes) {
    const int64_t n = std::min<int64_t>(kOutLanes, M - m0);
    float s[6][6][kOutLanes], t[4][6][kOutLanes], o[4][4][kOutLanes], b[kOutLanes];
    for (int xi = 0; xi < 36; ++xi)
      for (int l = 0; l < kOutLanes; ++l) s[xi / 6][xi % 6][l] = prod[xi * xi_stride + m0 + l];
    for (int l = 0; l < kOutLanes; ++l) b[l] = bias && l < n ? bias[m0 + l] : 0.f;
    for (int j = 0; j < 6; ++j) {
#define IN(k, l) s[k][j][l]
#define OUT(k, l) t[k][j][l]
      for (int l = 0; l < kOutLanes; ++l) KILN_WINO_AT(IN, OUT, l);
#undef IN
#undef OUT
    }
    for (int i = 0; i < 4; ++i) {
#define IN(k, l) t[i][k][l]
#define OUT(k, l) o[i][k][l]
      for (int l = 0; l < kOutLanes; ++l) KILN_WINO_AT(IN, OUT, l);
#undef IN
#undef OUT
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < kOutLanes; ++l) {
          const float r = o[i][j][l] + b[l];
          o[i][j][l] = clamp ? (r > lo ? (r < hi ? r : hi) : lo) : r;
        }
    }
    for (int64_t l = 0; l < n; ++l) {
      float* yp = y + (m0 + l) * plane + oy0 * OW + ox0;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) yp[i * OW + j] = o[i][j][l];
    }
  }
}

}  // namespace

struct Winograd43Conv::Block {
  int64_t H, W, pad_t, pad_l, OH, OW, TW, T;
  int64_t tb, panels;  // tiles a block (a multiple of mr) and its A panels
  const float* bias;
  bool clamp;
  float lo, hi;
};

bool Winograd43Conv::Suits(int64_t C, int64_t M, int64_t OH, int64_t OW) {
  // Few channels leave the GEMMs too short to pay for the transforms; a tiny
  // plane wastes most of its 4x4 tiles' outputs.
  return C >= 16 && M >= 16 && OH >= 6 && OW >= 6;
}

void Winograd43Conv::prepare(Isa isa, const float* w, int64_t M, int64_t C) {
  kernel_ = &gemm_detail::KernelForIsa(isa);
  const int nr = kernel_->nr;
  M_ = M;
  C_ = C;
  m_panels_ = (M + nr - 1) / nr;
  m_pad_ = m_panels_ * nr;
  u_.assign(static_cast<size_t>(36 * m_pad_ * C), 0.f);
  static const double G[6][3] = {{0.25, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                 {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (m * C + c) * 9;
      double gg[6][3];  // G g
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 3; ++j) gg[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
          const double uij = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];  // (G g G^T)[i][j]
          const int64_t xi = i * 6 + j;
          u_[static_cast<size_t>(((xi * m_panels_ + m / nr) * C + c) * nr + m % nr)] = static_cast<float>(uij);
        }
    }
  }
}

// Phase 0: the input transform of channels [begin, end); 1: the products
// (xi, panel) in [begin, end); 2: the output transform of the block's tiles
// [begin, end).
void Winograd43Conv::runBlock(const Block& b, const float* x, float* y, int64_t t0, float* v, float* prod, int phase,
                              int64_t begin, int64_t end) const {
  const int mr = kernel_->mr, nr = kernel_->nr;
  if (phase == 0) {
    for (int64_t c = begin; c < end; ++c)
      InputChannel(x + c * b.H * b.W, b.H, b.W, b.pad_t, b.pad_l, b.TW, b.T, t0, b.panels, mr, v + c * mr, C_ * mr);
  } else if (phase == 1) {
    for (int64_t idx = begin; idx < end; ++idx) {
      const int64_t xi = idx / m_panels_, np = idx % m_panels_;
      const float* bp = u_.data() + (xi * m_panels_ + np) * C_ * nr;
      for (int64_t p = 0; p < b.panels; ++p)
        kernel_->micro(C_, v + (xi * b.panels + p) * C_ * mr, bp, nr, prod + (xi * b.tb + p * mr) * m_pad_ + np * nr,
                       m_pad_, false, nullptr);
    }
  } else {
    for (int64_t tl = begin; tl < end; ++tl) {
      const int64_t t = t0 + tl;
      if (t >= b.T) break;
      OutputTile(prod + tl * m_pad_, b.tb * m_pad_, M_, b.bias, b.clamp, b.lo, b.hi, y, b.OH, b.OW, t / b.TW * 4,
                 t % b.TW * 4);
    }
  }
}

void Winograd43Conv::run(ThreadPool& pool, const float* x, int64_t H, int64_t W, int64_t pad_t, int64_t pad_l,
                         float* y, int64_t OH, int64_t OW, const float* bias, bool clamp, float lo, float hi) const {
  const int mr = kernel_->mr;
  Block b{H, W, pad_t, pad_l, OH, OW, (OW + 3) / 4, 0, 0, 0, bias, clamp, lo, hi};
  b.T = (OH + 3) / 4 * b.TW;
  // Tiles a block: its transformed inputs and products (36 x tb x (C + M))
  // within about 1 MiB, so they stay in L2 between the three phases.
  constexpr int64_t kBlockFloats = 256 * 1024;
  const int64_t cap = std::max<int64_t>(mr, kBlockFloats / (36 * (C_ + m_pad_)) / mr * mr);
  b.tb = std::min<int64_t>((b.T + mr - 1) / mr * mr, cap);
  b.panels = b.tb / mr;
  const int64_t blocks = (b.T + b.tb - 1) / b.tb;
  const size_t v_size = static_cast<size_t>(36 * b.tb * C_), prod_size = static_cast<size_t>(36 * b.tb * m_pad_ + kOutLanes);
  const int threads = pool.threads();
  if (threads == 1 || blocks >= 2 * threads) {
    // Whole blocks a thread, each in its own scratch: no barrier between phases.
    pool.parallelFor(blocks, [&](int64_t begin, int64_t end) {
      float* v = tl_v.get(v_size);
      float* prod = tl_prod.get(prod_size);
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t t0 = blk * b.tb;
        runBlock(b, x, y, t0, v, prod, 0, 0, C_);
        runBlock(b, x, y, t0, v, prod, 1, 0, 36 * m_panels_);
        runBlock(b, x, y, t0, v, prod, 2, 0, b.tb);
      }
    });
    return;
  }
  // Few blocks: every thread works on each phase of each block.
  float* v = tl_v.get(v_size);
  float* prod = tl_prod.get(prod_size);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t t0 = blk * b.tb;
    pool.parallelFor(C_, [&](int64_t s, int64_t e) { runBlock(b, x, y, t0, v, prod, 0, s, e); });
    pool.parallelFor(36 * m_panels_, [&](int64_t s, int64_t e) { runBlock(b, x, y, t0, v, prod, 1, s, e); });
    pool.parallelFor(b.tb, [&](int64_t s, int64_t e) { runBlock(b, x, y, t0, v, prod, 2, s, e); });
  }
}

}  // namespace kiln
