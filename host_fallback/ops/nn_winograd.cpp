// Winograd F(4x4, 3x3) and F(2x2, 3x3) convolution (nn_winograd.h).
//
// F(2x2, 3x3) (points 0, +-1, inf):
//   B^T = [1  0 -1  0]   G = [  1    0    0 ]   A^T = [1 1  1  0]
//         [0  1  1  0]       [1/2  1/2  1/2 ]         [0 1 -1 -1]
//         [0 -1  1  0]       [1/2 -1/2  1/2 ]
//         [0  1  0 -1]       [  0    0    1 ]
//
// F(4x4, 3x3):
// The transform matrices (rows of B^T, G, A^T; points 0, 1, -1, 2, -2, inf):
//   B^T = [4  0 -5  0 1 0]   G = [ 1/4     0     0 ]   A^T = [1 1  1 1  1 0]
//         [0 -4 -4  1 1 0]       [-1/6  -1/6  -1/6 ]         [0 1 -1 2 -2 0]
//         [0  4 -4 -1 1 0]       [-1/6   1/6  -1/6 ]         [0 1  1 4  4 0]
//         [0 -2 -1  2 1 0]       [1/24  1/12   1/6 ]         [0 1 -1 8 -8 1]
//         [0  2 -1 -2 1 0]       [1/24 -1/12   1/6 ]
//         [0  4  0 -5 0 1]       [   0     0     1 ]
//
// Data of one block of tb tiles (tb a multiple of the micro-kernel's mr),
// with P = 36 (F(4x4)) or 16 (F(2x2)) patch positions:
//   v    [P][tb / mr][C][mr]    transformed inputs: for each patch position,
//                               the micro-kernel's A panels
//   u_   [P][M / nr][C][nr]     transformed weights: its B panels
//   prod [P][tb][m_pad]         the P products, a row a tile
// The input transform is vectorized over the 8 tiles of a panel (lanes), the
// output transform over 16 output channels.
#include "ops/nn_winograd.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cpu_features.h"
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

// F(2x2, 3x3): B^T d and A^T m along one axis.
#define KILN_WINO23_BT(in, out, l)                                      \
  do {                                                                  \
    const float d0 = in(0, l), d1 = in(1, l), d2 = in(2, l), d3 = in(3, l); \
    out(0, l) = d0 - d2;                                                \
    out(1, l) = d1 + d2;                                                \
    out(2, l) = d2 - d1;                                                \
    out(3, l) = d1 - d3;                                                \
  } while (0)
#define KILN_WINO23_AT(in, out, l)                                      \
  do {                                                                  \
    const float m0 = in(0, l), m1 = in(1, l), m2 = in(2, l), m3 = in(3, l); \
    out(0, l) = m0 + m1 + m2;                                           \
    out(1, l) = m1 - m2 - m3;                                           \
  } while (0)

// B^T d and A^T m along one axis for the patch size A (6: F(4x4), 4: F(2x2)).
#define KILN_WINO_BT_OF(A, in, out, l)     \
  do {                                     \
    if constexpr ((A) == 6)                \
      KILN_WINO_BT(in, out, l);            \
    else                                   \
      KILN_WINO23_BT(in, out, l);          \
  } while (0)
#define KILN_WINO_AT_OF(A, in, out, l)     \
  do {                                     \
    if constexpr ((A) == 6)                \
      KILN_WINO_AT(in, out, l);            \
    else                                   \
      KILN_WINO23_AT(in, out, l);          \
  } while (0)

// The input transform of channel xc for the tiles [t0, t0 + live * mr) of
// a TW-wide tile grid whose tiles end at T (zeros past it): writes
// v[(xi * panels + p) * panel_stride + l] for p < live (panel_stride = C *
// mr, v already offset to the channel; panels: the block's capacity).
template <int A>  // the patch: 6 (F(4x4)) or 4 (F(2x2))
KILN_SIMD_CLONES_TEMPLATE void InputChannel(const float* __restrict xc, int64_t H, int64_t W, int64_t pad_t, int64_t pad_l, int64_t TW,
                  int64_t T, int64_t t0, int64_t panels, int64_t live, int mr, float* __restrict v,
                  int64_t panel_stride) {
  for (int64_t p = 0; p < live; ++p) {
    constexpr int R = A - 2;
    float d[A][A][kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const int64_t t = t0 + p * mr + l;
      if (l >= mr || t >= T) {
        for (int i = 0; i < A; ++i)
          for (int j = 0; j < A; ++j) d[i][j][l] = 0.f;
        continue;
      }
      const int64_t r0 = t / TW * R - pad_t, c0 = t % TW * R - pad_l;
      if (r0 >= 0 && r0 + A <= H && c0 >= 0 && c0 + A <= W) {
        const float* s = xc + r0 * W + c0;
        for (int i = 0; i < A; ++i)
          for (int j = 0; j < A; ++j) d[i][j][l] = s[i * W + j];
      } else {
        for (int i = 0; i < A; ++i) {
          const int64_t r = r0 + i;
          for (int j = 0; j < A; ++j) {
            const int64_t c = c0 + j;
            d[i][j][l] = r >= 0 && r < H && c >= 0 && c < W ? xc[r * W + c] : 0.f;
          }
        }
      }
    }
    float t[A][A][kLanes], o[A][A][kLanes];
    for (int j = 0; j < A; ++j) {  // columns: t = B^T d
#define IN(k, l) d[k][j][l]
#define OUT(k, l) t[k][j][l]
      for (int l = 0; l < kLanes; ++l) KILN_WINO_BT_OF(A, IN, OUT, l);
#undef IN
#undef OUT
    }
    for (int i = 0; i < A; ++i) {  // rows: o = t B
#define IN(k, l) t[i][k][l]
#define OUT(k, l) o[i][k][l]
      for (int l = 0; l < kLanes; ++l) KILN_WINO_BT_OF(A, IN, OUT, l);
#undef IN
#undef OUT
    }
    float* dst = v + p * panel_stride;
    const int64_t xi_stride = panels * panel_stride;
    // A copy of constant size where the panel is all lanes (mr 8: AVX-512,
    // NEON): two vector moves, where the run-time size called memmove 36
    // times a panel (a tenth of a 64-channel 56x56 conv's time).
    if (mr == kLanes)
      for (int xi = 0; xi < A * A; ++xi) std::memcpy(dst + xi * xi_stride, o[xi / A][xi % A], sizeof(o[0][0]));
    else
      for (int xi = 0; xi < A * A; ++xi)
        std::memcpy(dst + xi * xi_stride, o[xi / A][xi % A], static_cast<size_t>(mr) * sizeof(float));
  }
}

// The output transform of one tile for output channels [0, M): prod points at
// the tile's row of product 0 (products xi_stride apart); writes the valid
// part of the 4x4 block at (oy0, ox0) of each channel plane of y.
template <int A>
KILN_SIMD_CLONES_TEMPLATE void OutputTile(const float* __restrict prod, int64_t xi_stride, int64_t M, const float* bias, bool clamp, float lo,
                float hi, float* __restrict y, int64_t OH, int64_t OW, int64_t oy0, int64_t ox0) {
  constexpr int R = A - 2;
  const int64_t rows = std::min<int64_t>(R, OH - oy0), cols = std::min<int64_t>(R, OW - ox0);
  const int64_t plane = OH * OW;
  for (int64_t m0 = 0; m0 < M; m0 += kOutLanes) {
    const int64_t n = std::min<int64_t>(kOutLanes, M - m0);
    float s[A][A][kOutLanes], t[R][A][kOutLanes], o[R][R][kOutLanes], b[kOutLanes];
    for (int xi = 0; xi < A * A; ++xi)
      for (int l = 0; l < kOutLanes; ++l) s[xi / A][xi % A][l] = prod[xi * xi_stride + m0 + l];
    for (int l = 0; l < kOutLanes; ++l) b[l] = bias && l < n ? bias[m0 + l] : 0.f;
    for (int j = 0; j < A; ++j) {
#define IN(k, l) s[k][j][l]
#define OUT(k, l) t[k][j][l]
      for (int l = 0; l < kOutLanes; ++l) KILN_WINO_AT_OF(A, IN, OUT, l);
#undef IN
#undef OUT
    }
    for (int i = 0; i < R; ++i) {
#define IN(k, l) t[i][k][l]
#define OUT(k, l) o[i][k][l]
      for (int l = 0; l < kOutLanes; ++l) KILN_WINO_AT_OF(A, IN, OUT, l);
#undef IN
#undef OUT
      for (int j = 0; j < R; ++j)
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

struct WinogradConv::Block {
  int64_t H, W, pad_t, pad_l, OH, OW, TW, T;
  int64_t tb, panels;  // a block's capacity in tiles (a multiple of mr) and A panels
  int64_t step;        // tiles from one block's start to the next (<= tb)
  // The tiles of the block that starts at tile t0.
  int64_t Valid(int64_t t0) const { return std::min(step, T - t0); }
  const float* bias;
  bool clamp;
  float lo, hi;
};

int64_t WinogradConv::BlockTiles(int64_t T, int64_t P, int64_t C, int64_t m_pad, int mr, int threads,
                                 int64_t l2_bytes) {
  // The L2's floats for one block: 1 MiB (a Zen 4 or 5 core's L2, where this
  // was first tuned) when unknown; a 2 MiB L2 (Sapphire / Emerald Rapids)
  // takes 256 -> 256 channels on 14x14 in one block, so the weights are read
  // once, not twice (F(4x4) 2.9 -> 2.0 ms a conv of a model).
  const int64_t block_floats = (l2_bytes > 0 ? l2_bytes : int64_t{1} << 20) / static_cast<int64_t>(sizeof(float));
  const int64_t cap = std::max<int64_t>(mr, block_floats / (P * (C + m_pad)) / mr * mr);
  int64_t blocks = (T + cap - 1) / cap;
  // As many blocks as makes each thread the same share (196 tiles in
  // 88-tile blocks made 3 blocks for 2 threads: one thread did two), unless
  // the weights weigh more than twice the tiles' transformed inputs and
  // products: each block reads all of them, so there (few tiles, many
  // channels: 512 -> 512 on 7x7 is 16 tiles of F(2x2) against 16 MB of
  // weights) the threads share each block's products instead
  // (WinogradConv::run), each reading its part of the weights. ResNet-50's
  // 7x7 3x3 convs ran slower at 2 threads than at 1 (Zen 5, in the model:
  // 0.69 -> 0.85 ms; now 0.40); twice, since 128 -> 128 on 28x28 (49 tiles,
  // weights 1.3x the tiles') ran 0.43-0.45 ms split by tiles, 0.44-0.53
  // sharing the products.
  if (threads > 1 && 2 * T * (C + m_pad) >= C * m_pad)
    blocks = (std::max<int64_t>(blocks, threads) + threads - 1) / threads * threads;
  return ((T + blocks - 1) / blocks + mr - 1) / mr * mr;
}

int WinogradConv::Tile(Isa isa, int64_t C, int64_t M, int64_t OH, int64_t OW, int threads, int64_t l2_bytes) {
  // Few channels leave the GEMMs too short to pay for the transforms; a tiny
  // plane wastes most of its tiles' outputs.
  if (C < 16 || M < 16 || OH < 6 || OW < 6) return 0;
  if (const char* e = std::getenv("KILN_HOST_WINOGRAD_TILE")) {
    if (e[0] == '4' || e[0] == '2') return e[0] - '0';
  }
  // In a model every conv's weights are cold: a run reads them from memory
  // (or a shared L3) once for each block of tiles, and F(4x4)'s are 36 / 9
  // of the weights, F(2x2)'s 16 / 9. Cost = the products' flops + the
  // flops a core could have done in the time those bytes take to arrive
  // (kFlopsPerByte: about 20 on an Emerald Rapids VM core, 150 GFLOP/s
  // against some 8 GB/s of weights streamed; about 10 on a Zen 5 core).
  // Measured in a model (8 convs of distinct weights), one thread, Emerald
  // Rapids: 256 -> 256 on 14x14 F(2x2) 1.67 ms against F(4x4) 1.97 ms;
  // 128 -> 128 on 28x28 F(4x4) 1.38 against 1.5; 512 -> 512 on 7x7 F(2x2)
  // 3.3 against 6.8; 64 -> 64 on 56x56 F(4x4).
  // The transforms add about kTransformFlops a value they write (inputs
  // and products, P x tiles x (C + M)): scattered loads and stores more
  // than arithmetic. Without them F(2x2)'s 16 / 4 values an output against
  // F(4x4)'s 36 / 16 went unpriced, and 128 -> 128 on 28x28 at 2 threads
  // took F(2x2), 1.23 ms a conv against F(4x4)'s 0.99.
  constexpr double kFlopsPerByte = 16, kTransformFlops = 64;
  const gemm_detail::GemmKernel& k = gemm_detail::KernelForIsa(isa);
  const int64_t m_pad = (M + k.nr - 1) / k.nr * k.nr;
  auto cost = [&](int r) {
    const int64_t P = (r + 2) * (r + 2), T = (OH + r - 1) / r * ((OW + r - 1) / r);
    const int64_t tb = BlockTiles(T, P, C, m_pad, k.mr, threads, l2_bytes), blocks = (T + tb - 1) / tb;
    const double flops = 2.0 * static_cast<double>(P * blocks * tb * C * m_pad);
    const double weight_bytes = static_cast<double>(blocks * P * C * m_pad) * sizeof(float);
    const double transformed = static_cast<double>(P * blocks * tb * (C + M));
    return flops + kFlopsPerByte * weight_bytes + kTransformFlops * transformed;
  };
  return cost(2) < cost(4) ? 2 : 4;
}

namespace {

// The transformed weights of one panel and input channel: u[xi * stride + l]
// = (G g G^T)[xi] of filter l of the panel (g = w + l * w_stride, 3x3), for
// its `n` filters (the rest of the nr lanes zero). Lanes across filters,
// so the compiler vectorizes it (16 or 32 lanes: one or two AVX-512 registers).
template <int A>
KILN_SIMD_CLONES_TEMPLATE void TransformPanel(const float* w, int64_t w_stride, int n, int nr, float* __restrict u,
                                              int64_t stride) {
  constexpr int kMaxLanes = 32;
  // In double, rounded once at the end: F(4x4)'s G has thirds and sixths,
  // and a transform rounded in f32 moved outputs by 1e-4 relative.
  static const double G43[6][3] = {{0.25, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  static const double G23[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const double(*G)[3] = A == 6 ? G43 : G23;
  double g[9][kMaxLanes], gg[A][3][kMaxLanes];
  for (int l = 0; l < nr; ++l)
    for (int k = 0; k < 9; ++k) g[k][l] = l < n ? w[l * w_stride + k] : 0.0;
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < nr; ++l) gg[i][j][l] = G[i][0] * g[j][l] + G[i][1] * g[3 + j][l] + G[i][2] * g[6 + j][l];
  for (int i = 0; i < A; ++i)
    for (int j = 0; j < A; ++j) {
      float* __restrict out = u + (i * A + j) * stride;
      for (int l = 0; l < nr; ++l)
        out[l] = static_cast<float>(gg[i][0][l] * G[j][0] + gg[i][1][l] * G[j][1] + gg[i][2][l] * G[j][2]);
    }
}

}  // namespace

void WinogradConv::setGeometry(Isa isa, int64_t M, int64_t C, int tile) {
  isa_ = isa;
  kernel_ = &gemm_detail::KernelForIsa(isa);
  const int nr = kernel_->nr;
  r_ = tile == 2 ? 2 : 4;
  a_ = r_ + 2;
  M_ = M;
  C_ = C;
  m_panels_ = (M + nr - 1) / nr;
  m_pad_ = m_panels_ * nr;
  u_floats_ = static_cast<size_t>(a_ * a_ * m_pad_ * C);
}

void WinogradConv::adopt(Isa isa, int64_t M, int64_t C, int tile, const float* u) {
  setGeometry(isa, M, C, tile);
  u_.reset();
  u_view_ = u;
}

void WinogradConv::prepare(ThreadPool& pool, Isa isa, const float* w, int64_t M, int64_t C, int tile) {
  setGeometry(isa, M, C, tile);
  const int nr = kernel_->nr;
  u_view_ = nullptr;
  u_.reset(new float[u_floats_]);
  const int64_t panels = m_panels_;
  float* u = u_.get();
  // Panel by panel and channel by channel, the panel's nr filters in lanes:
  // each of the a * a transformed positions is written as one run of nr
  // floats.
  pool.parallelFor(panels, [&](int64_t begin, int64_t end) {
    for (int64_t mp = begin; mp < end; ++mp) {
      const int n = static_cast<int>(std::min<int64_t>(nr, M - mp * nr));
      for (int64_t c = 0; c < C; ++c)
        for (int l0 = 0; l0 < nr; l0 += 32)  // lanes 32 at a time (every kernel's nr is at most 32 today)
          (a_ == 6 ? &TransformPanel<6> : &TransformPanel<4>)(w + ((mp * nr + l0) * C + c) * 9, C * 9,
                                                              std::max(0, std::min(32, n - l0)), std::min(32, nr - l0),
                                                              u + (mp * C + c) * nr + l0, panels * C * nr);
    }
  });
}

// Phase 0: the input transform of channels [begin, end); 1: the products
// (xi, panel) in [begin, end); 2: the output transform of the block's tiles
// [begin, end).
void WinogradConv::runBlock(const Block& b, const float* x, float* y, int64_t t0, float* v, float* prod, int phase,
                              int64_t begin, int64_t end) const {
  const int mr = kernel_->mr, nr = kernel_->nr;
  const int64_t valid = b.Valid(t0);
  if (phase == 0) {
    const int64_t live = (valid + mr - 1) / mr;
    for (int64_t c = begin; c < end; ++c)
      (a_ == 6 ? &InputChannel<6> : &InputChannel<4>)(x + c * b.H * b.W, b.H, b.W, b.pad_t, b.pad_l, b.TW,
                                                       t0 + valid, t0, b.panels, live, mr, v + c * mr, C_ * mr);
  } else if (phase == 1) {
    // The transformed weights stream from memory (36 / 9 or 16 / 9 of the
    // weights, used by the block's few tiles): each product asks for its
    // share of the next panel (the next one in memory) while it computes
    // (micro_pf). 8 convs 512 -> 512 on 7x7 (F(2x2)) 24.4 -> 15.1 ms,
    // ResNet-50's 14x14 convs 1.59-1.73 -> 1.14-1.24 ms (Emerald Rapids,
    // 1 thread).
    const bool pf_on = gemm_detail::PrefetchWeights() && kernel_->micro_pf;
    const int64_t panel_bytes = C_ * nr * static_cast<int64_t>(sizeof(float));
    const float* last = transformed() + (a_ * a_ * m_panels_ - 1) * C_ * nr;
    // The block's tiles past the plane's last are not computed: whole
    // panels of them skipped, a last panel of fewer tiles than mr by the
    // kernel's rows form where it has one (ResNet's 28x28 planes are 49
    // tiles of F(4x4): 7 panels, the last of one tile).
    const int64_t panels = (valid + mr - 1) / mr;
    const int last_rows = static_cast<int>(valid - (panels - 1) * mr);
    for (int64_t idx = begin; idx < end; ++idx) {
      const int64_t xi = idx / m_panels_, np = idx % m_panels_;
      const float* bp = transformed() + (xi * m_panels_ + np) * C_ * nr;
      const float* next = pf_on && bp < last ? bp + C_ * nr : nullptr;
      for (int64_t p = 0; p < panels; ++p) {
        float* out = prod + (xi * b.tb + p * mr) * m_pad_ + np * nr;
        const float* ap = v + (xi * b.panels + p) * C_ * mr;
        const gemm_detail::PanelShare share =
            next ? gemm_detail::ShareOfNext(next, panel_bytes, panels, p) : gemm_detail::PanelShare{};
        if (p == panels - 1 && last_rows < mr && kernel_->micro_a) {
          kernel_->micro_a(last_rows, C_, ap, mr, bp, nr, out, m_pad_, false, nullptr, share.at, share.lines);
        } else if (next) {
          kernel_->micro_pf(C_, ap, bp, nr, out, m_pad_, false, nullptr, share.at, share.lines);
        } else {
          kernel_->micro(C_, ap, bp, nr, out, m_pad_, false, nullptr);
        }
      }
    }
  } else {
    for (int64_t tl = begin; tl < std::min(end, valid); ++tl) {
      const int64_t t = t0 + tl;
      (a_ == 6 ? &OutputTile<6> : &OutputTile<4>)(prod + tl * m_pad_, b.tb * m_pad_, M_, b.bias, b.clamp, b.lo, b.hi,
                                                   y, b.OH, b.OW, t / b.TW * r_, t % b.TW * r_);
    }
  }
}

void WinogradConv::run(ThreadPool& pool, const float* x, int64_t H, int64_t W, int64_t pad_t, int64_t pad_l,
                         float* y, int64_t OH, int64_t OW, const float* bias, bool clamp, float lo, float hi) const {
  const int mr = kernel_->mr;
  const int64_t P = a_ * a_;  // patch positions
  Block b{H, W, pad_t, pad_l, OH, OW, (OW + r_ - 1) / r_, 0, 0, 0, 0, bias, clamp, lo, hi};
  b.T = (OH + r_ - 1) / r_ * b.TW;
  // Tiles a block: its transformed inputs and products within the L2, so
  // they stay there between the three phases.
  const int threads = pool.threads();
  b.tb = BlockTiles(b.T, P, C_, m_pad_, mr, threads, HostCaches().l2);
  b.panels = b.tb / mr;
  const int64_t blocks = (b.T + b.tb - 1) / b.tb;
  // The tiles shared evenly over the blocks, at any tile (a block's last
  // panel may be partial; runBlock computes only its valid tiles): 49
  // tiles over 2 threads ran 32 and 17, now 25 and 24 (128 -> 128 on 28x28
  // at 2 threads 0.378 -> 0.359 ms; 64 -> 64 on 56x56 0.322 -> 0.288).
  b.step = (b.T + blocks - 1) / blocks;
  const size_t v_size = static_cast<size_t>(P * b.tb * C_), prod_size = static_cast<size_t>(P * b.tb * m_pad_ + kOutLanes);
  if (threads == 1 || blocks >= threads) {
    // Whole blocks a thread, each in its own scratch: no barrier between phases.
    pool.parallelFor(blocks, [&](int64_t begin, int64_t end) {
      float* v = tl_v.get(v_size);
      float* prod = tl_prod.get(prod_size);
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t t0 = blk * b.step;
        runBlock(b, x, y, t0, v, prod, 0, 0, C_);
        runBlock(b, x, y, t0, v, prod, 1, 0, P * m_panels_);
        runBlock(b, x, y, t0, v, prod, 2, 0, b.tb);
      }
    });
    return;
  }
  // Few blocks: every thread works on each phase of each block.
  float* v = tl_v.get(v_size);
  float* prod = tl_prod.get(prod_size);
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t t0 = blk * b.step;
    pool.parallelFor(C_, [&](int64_t s, int64_t e) { runBlock(b, x, y, t0, v, prod, 0, s, e); });
    pool.parallelFor(P * m_panels_, [&](int64_t s, int64_t e) { runBlock(b, x, y, t0, v, prod, 1, s, e); });
    pool.parallelFor(b.tb, [&](int64_t s, int64_t e) { runBlock(b, x, y, t0, v, prod, 2, s, e); });
  }
}

}  // namespace kiln
