// Host kernels: QLinearConv and ConvInteger on 1-D and 2-D inputs.
//  - Convolutions with several input channels a group go through QGemm
//    (qgemm.h): the weights, centered on their zero points, are packed once
//    (at resize when they are constants), and the unfolded input is gathered
//    a column block at a time straight into the GEMM's panels, with the
//    input's zero point as the padding. sum (w - zw)(x - zx) = sum (w - zw) x
//    - zx * rowsum, so the zero point of x is a per-channel offset folded
//    into the bias; int8 inputs are read as x + 128 with zx + 128.
//    QLinearConvs other than 1x1 where the CPU has the pixel kernel
//    (QConvPixels: AVX-512 VNNI) skip the gather: the input is copied once
//    into padded NC4HW4 planes (4 channels interleaved, the kernel's dot
//    width), the weights are ordered by channel quad, then tap, then channel
//    in the quad, so that each group of 4 k is 4 channels of one input
//    position, and the kernel reads each output pixel's groups from the copy
//    in place at its own offset (a 3x3 conv's unfolded input, 9 times the
//    input, is never written; any stride, only real output pixels).
//  - Depthwise 2-D convolutions (QLinearConv, strides 1 or 2) go through the
//    integer depthwise kernel where the CPU has AVX-512 VNNI and VBMI
//    (DepthwiseQ8Dot: no dilation, kernels up to 8x8), else the flat
//    depthwise kernel in its 8-bit mode (nn_depthwise.h): exact integer sums
//    in float. Both requantize on the way out.
//  - Anything else (3-D and wider, weights whose centered values leave int8,
//    per-channel x zero points) runs the reference kernels (quant.cpp).
// The requantization is the reference's (and onnxruntime's), float(int32
// sum) * (x_scale * w_scale / y_scale) in f32, rounded half to even, so the
// paths agree bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "host_backend.h"
#include "ops/nn_conv.h"
#include "ops/nn_depthwise.h"
#include "ops/op_params.h"
#include "ops/quant.h"
#include "qgemm.h"
#include "thread_pool.h"

namespace kiln {
namespace {

using IntVec = std::vector<int64_t>;

// The unfolded input of one group of one image (QBSource), read from a
// padded copy of the group's planes (the zero point in the border, int8
// values offset to uint8 already). A column block is the same runs of
// output rows for every kernel tap, so they are worked out once a block;
// each tap's row is then its plane offset plus those runs, each copied in
// 16-byte chunks (stride 1) that may run past its end (the next run
// overwrites them; the padded planes and B's rows have the slack).
struct ConvRows {
  const uint8_t* x = nullptr;  // the group's first padded plane
  int64_t oh = 1, ow = 1, sh = 1, sw = 1, wp = 1;
  bool pointwise = false;      // x is the input itself: B's rows are its planes
  // Stride 1: the GEMM computes "wide" output rows, wp columns each (the
  // last wp - ow of a row are junk, dropped afterwards), so that B's row for
  // a tap is one contiguous stretch of the padded planes: no gather at all.
  bool wide = false;
  const int64_t* tap_off = nullptr;  // [K]: offset of row k's first read in x
};

constexpr int64_t kRowSlack = 32;  // bytes a copy may read past a run (writes: 16)

// The quads of 4 channels (the pixel kernel's dot width) that c channels fill.
constexpr int64_t Quads(int64_t c) { return (c + 3) / 4; }

// d[i] = src[2 * i] for i < n: even bytes, 16 from each 32 (SSE2 where
// x86-64 has it); may read up to 32 bytes and write up to 16 past n.
inline void EvenBytes(const uint8_t* __restrict src, int64_t n, uint8_t* __restrict d) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128i lo = _mm_set1_epi16(0x00ff);
  for (; i < n; i += 16) {
    const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)), lo);
    const __m128i b = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i + 16)), lo);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm_packus_epi16(a, b));
  }
#endif
  for (; i < n; ++i) d[i] = src[2 * i];
}

// d[i] = src[i] ^ flip for i < n (int8 read as uint8 when flip is 0x80).
inline void CopyFlip(const uint8_t* __restrict src, int64_t n, uint8_t flip, uint8_t* __restrict d) {
  if (flip == 0) {
    std::memcpy(d, src, static_cast<size_t>(n));
    return;
  }
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)), f));
#endif
  for (; i < n; ++i) d[i] = src[i] ^ flip;
}

// d[i] = src[s * i] ^ flip for i < n, reading only src[0 .. avail) and
// writing only d[0 .. n) (threads fill neighbouring rows at once).
inline void Subsample(const uint8_t* __restrict src, int64_t avail, int64_t n, int64_t s, uint8_t flip,
                      uint8_t* __restrict d) {
  int64_t i = 0;
#if defined(__SSE2__)
  if (s == 2) {
    const __m128i lo = _mm_set1_epi16(0x00ff), f = _mm_set1_epi8(static_cast<char>(flip));
    for (; i + 16 <= n && 2 * i + 32 <= avail; i += 16) {
      const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)), lo);
      const __m128i b = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i + 16)), lo);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm_xor_si128(_mm_packus_epi16(a, b), f));
    }
  }
#endif
  for (; i < n; ++i) d[i] = src[s * i] ^ flip;
}

// QBSource::row: B's rows read in place where they are contiguous (the
// pointwise planes, the wide path's padded planes, which have the slack for
// a block's last panel), so the GEMM skips ConvBlock's copy.
const uint8_t* ConvRow(const void* ctx, int64_t k, int64_t j0, int64_t n) {
  const ConvRows& r = *static_cast<const ConvRows*>(ctx);
  if (r.wide) return r.x + r.tap_off[k] + j0;
  const int64_t plane = r.oh * r.ow;
  if (r.pointwise && j0 + n <= plane) return r.x + k * plane + j0;  // not past the plane (the tensor's end)
  return nullptr;
}

void ConvBlock(const void* ctx, int64_t k0, int64_t kn, int64_t j0, int64_t n, uint8_t* __restrict dst,
               int64_t stride) {
  const ConvRows& r = *static_cast<const ConvRows*>(ctx);
  if (r.pointwise) {
    for (int64_t k = 0; k < kn; ++k)
      std::memcpy(dst + k * stride, r.x + (k0 + k) * r.oh * r.ow + j0, static_cast<size_t>(n));
    return;
  }
  if (r.wide) {
    for (int64_t k = 0; k < kn; ++k)
      std::memcpy(dst + k * stride, r.x + r.tap_off[k0 + k] + j0, static_cast<size_t>(n));
    return;
  }
  struct Run {
    int64_t at, src, len;
  };
  thread_local std::vector<Run> runs;  // the output rows the block spans
  runs.clear();
  for (int64_t q = 0, oy = j0 / r.ow, ox = j0 % r.ow; q < n;) {
    const int64_t len = std::min(n - q, r.ow - ox);
    runs.push_back({q, oy * r.sh * r.wp + ox * r.sw, len});
    q += len;
    ox = 0;
    ++oy;
  }
  const int64_t count = static_cast<int64_t>(runs.size());
  for (int64_t k = 0; k < kn; ++k) {
    const uint8_t* __restrict plane = r.x + r.tap_off[k0 + k];
    uint8_t* __restrict row = dst + k * stride;
    for (int64_t i = 0; i < count; ++i) {
      const Run& run = runs[static_cast<size_t>(i)];
      const uint8_t* __restrict src = plane + run.src;
      uint8_t* __restrict d = row + run.at;
      const int64_t len = run.len;
      if (r.sw == 1) {
        for (int64_t c = 0; c < len; c += 16) std::memcpy(d + c, src + c, 16);
      } else if (r.sw == 2) {
        EvenBytes(src, len, d);
      } else {
        for (int64_t c = 0; c < len; ++c) d[c] = src[c * r.sw];
      }
    }
  }
}

class QConvExecution final : public Execution {
 public:
  // qlinear: QLinearConv (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp,
  // B); else ConvInteger (x, w, x_zp, w_zp).
  QConvExecution(HostBackend* b, const GraphOp& op, int index, bool qlinear, bool constant_w)
      : Execution(b), op_(op), index_(index), qlinear_(qlinear), constant_w_(constant_w) {}

  // Ahead-of-time bundles: each group's panels and row sums.
  void prepacked(std::vector<Prepacked>* out) const override {
    for (size_t g = 0; g < packed_.size(); ++g) {
      const QPackedA& a = packed_[g];
      out->push_back({panelKey() + std::to_string(g), QPackedMeta(a), a.panels(), a.panelBytes()});
      out->push_back({rowSumKey() + std::to_string(g), QPackedMeta(a), a.rowSums(),
                      static_cast<size_t>(a.M) * sizeof(int32_t)});
    }
  }

  Status onResize(const std::vector<Tensor*>& in, const std::vector<Tensor*>&) override {
    packed_.clear();
    dw_w_.clear();
    dw_q8_ = {};
    packed_ok_ = false;
    geometry_for_ = false;
    if (constant_w_) packWeights(in);
    return Status::Ok();
  }

  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    HostBackend& be = *static_cast<HostBackend*>(backend());
    auto reference = [&] {
      return qlinear_ ? quant::RunQLinearConvReference(op_, in, out, be)
                      : quant::RunConvIntegerReference(op_, in, out, be);
    };
    if (out[0]->elementCount() == 0) return Status::Ok();
    if (!constant_w_) {
      packWeights(in);
      geometry_for_ = false;
    }
    if (!packed_ok_) return reference();
    // The geometry (tap and group offsets, paths) once for the shapes, not
    // every run.
    if (!geometry_for_ || in[0]->shape() != geometry_x_ || out[0]->shape() != geometry_y_) {
      geometry_ok_ = geometry(in, out);
      geometry_x_ = in[0]->shape(), geometry_y_ = out[0]->shape();
      geometry_for_ = true;
    }
    if (!geometry_ok_) return reference();
    const Tensor& x = *in[0];
    const Tensor* xz = in.size() > 2 ? in[2] : nullptr;
    KILN_ASSIGN_OR_RETURN(IntVec zx, quant::ZeroPoints(op_, xz, "x_zero_point", x.dtype(), 1));
    if (zx.size() != 1) return reference();  // per-channel x zero points (the reference rejects them)
    const int32_t zxr = static_cast<int32_t>(zx[0] + (x_signed_ ? 128 : 0));  // as read
    // Per output channel: the offset added to the sum, and the scale.
    row_add_.assign(static_cast<size_t>(M_), 0);
    const Tensor* bias = qlinear_ && in.size() > 8 ? in[8] : nullptr;
    int64_t lo = 0, hi = 0;
    quant::QuantRange(out[0]->dtype(), &lo, &hi);
    if (qlinear_) {
      KILN_ASSIGN_OR_RETURN(std::vector<float> sx, quant::Scales(op_, *in[1], "x_scale"));
      KILN_ASSIGN_OR_RETURN(std::vector<float> sw, quant::Scales(op_, *in[4], "w_scale"));
      KILN_ASSIGN_OR_RETURN(std::vector<float> sy, quant::Scales(op_, *in[6], "y_scale"));
      KILN_ASSIGN_OR_RETURN(IntVec zy, quant::ZeroPoints(op_, in[7], "y_zero_point", out[0]->dtype(), 1));
      if (sx.size() != 1 || sy.size() != 1 || zy.size() != 1 || (sw.size() != 1 && static_cast<int64_t>(sw.size()) != M_) ||
          (bias && (bias->dtype() != fb::DataType::I32 || bias->elementCount() != M_)))
        return reference();  // which names the problem
      KILN_RETURN_IF_ERROR(quant::ActivationRange(op_, sy[0], zy[0], &lo, &hi));
      row_scale_.resize(static_cast<size_t>(M_));
      for (int64_t m = 0; m < M_; ++m)
        row_scale_[static_cast<size_t>(m)] = sx[0] * sw[sw.size() == 1 ? 0 : static_cast<size_t>(m)] / sy[0];
      y_zero_ = static_cast<int32_t>(zy[0]);
    }
    const int32_t* bv = bias ? bias->host<int32_t>() : nullptr;
    const int64_t in_plane = h_ * w_, out_plane = oh_ * ow_;
    if (depthwise_) {
      // Exact float sums: bias + (w - zw)(x - zx), the zero point subtracted on the way in.
      dw_bias_.assign(static_cast<size_t>(M_), 0.f);
      for (int64_t m = 0; m < M_; ++m) dw_bias_[static_cast<size_t>(m)] = bv ? static_cast<float>(bv[m]) : 0.f;
      nn::DepthwiseQuant q;
      q.x_zero = static_cast<int32_t>(zx[0]);
      q.x_signed = x_signed_;
      q.y_mult = row_scale_.data();
      q.y_zero = y_zero_;
      q.q_lo = static_cast<int32_t>(lo);
      q.q_hi = static_cast<int32_t>(hi);
      nn::DepthwiseArgs a = dw_args_;
      a.quant = &q;
      // Small planes, 16 channels a vector, where the float sums stay exact
      // (|bias| below 2^23): the integer kernel's per-plane set-up outweighed
      // a 7x7 plane's work (960 channels 3x3 on 7x7: 0.029 -> 0.022 ms).
      if (dw_c16_ && SmallBias(bv) &&
          nn::DepthwiseChannels16Quant(be.pool(), a, x.hostData(), dw_w_.data(), dw_bias_.data(), out[0]->hostData()))
        return Status::Ok();
      if (dw_dot_ && nn::DepthwiseQ8Dot(be.pool(), a, dw_q8_, bv, x.hostData(), out[0]->hostData()))
        return Status::Ok();
      if (!nn::DepthwiseFlat2DQuant(be.pool(), a, x.hostData(), dw_w_.data(), dw_bias_.data(), out[0]->hostData()))
        return Status(StatusCode::kOutOfMemory, "QLinearConv: cannot allocate the depthwise scratch");
      return Status::Ok();
    }
    for (int64_t m = 0; m < M_; ++m) {
      const uint32_t s = static_cast<uint32_t>(packed_[static_cast<size_t>(m / Mg_)].rowSums()[m % Mg_]);
      row_add_[static_cast<size_t>(m)] =
          static_cast<int32_t>((bv ? static_cast<uint32_t>(bv[m]) : 0u) - static_cast<uint32_t>(zxr) * s);
    }
    QEpilogue ep;
    ep.y_zero = y_zero_;
    ep.lo = static_cast<int32_t>(lo);
    ep.hi = static_cast<int32_t>(hi);
    ep.out_i8 = out[0]->dtype() == fb::DataType::I8;
    const size_t elem = qlinear_ ? 1 : sizeof(int32_t);
    const uint8_t* xb = static_cast<const uint8_t*>(x.hostData());
    uint8_t* yb = static_cast<uint8_t*>(out[0]->hostData());
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t g = 0; g < group_; ++g) {
        ConvRows rows = rows_;
        const uint8_t* planes = xb + (n * C_ + g * Cg_) * in_plane;
        QBSource src{&ConvBlock, &rows, &ConvRow};
        ep.row_add = row_add_.data() + g * Mg_;
        ep.row_scale = qlinear_ ? row_scale_.data() + g * Mg_ : nullptr;
        uint8_t* y = yb + (n * M_ + g * Mg_) * out_plane * static_cast<int64_t>(elem);
        if (pixels_) {
          padQuads(be.pool(), planes, static_cast<uint8_t>(zxr));
          QPixelSource px;
          px.base = padded_.data();
          px.pixel_off = pixel_off_.data();
          px.group_off = group_off_.data();
          QConvPixels(be.pool(), packed_[static_cast<size_t>(g)], out_plane, px, ep, y, out_plane);
          continue;
        }
        if (rows.pointwise && !x_signed_ && !subsample_) {
          rows.x = planes;
        } else if (rows.pointwise) {
          compactPlanes(be.pool(), planes);
          rows.x = padded_.data();
        } else {
          padPlanes(be.pool(), planes, static_cast<uint8_t>(zxr));
          rows.x = padded_.data();
        }
        if (!rows.wide) {
          if (!QGemm(be.pool(), packed_[static_cast<size_t>(g)], out_plane, src, ep, y, out_plane))
            return OutOfMemory("%s: cannot allocate the GEMM's scratch", op_.typeName());
          continue;
        }
        // Wide rows into a scratch, then each row's first ow columns out.
        const int64_t wide = oh_ * wp_;
        wide_out_.resize(static_cast<size_t>(Mg_ * wide) * elem);
        if (!QGemm(be.pool(), packed_[static_cast<size_t>(g)], wide, src, ep, wide_out_.data(), wide))
          return OutOfMemory("%s: cannot allocate the GEMM's scratch", op_.typeName());
        const size_t row = static_cast<size_t>(ow_) * elem;
        be.pool().parallelFor(Mg_, [&](int64_t m0, int64_t m1) {
          for (int64_t m = m0; m < m1; ++m)
            for (int64_t oy = 0; oy < oh_; ++oy)
              std::memcpy(y + (m * out_plane + oy * ow_) * static_cast<int64_t>(elem),
                          wide_out_.data() + (m * wide + oy * wp_) * static_cast<int64_t>(elem), row);
        }, std::max<int64_t>(1, (int64_t{32} << 10) / std::max<int64_t>(wide * static_cast<int64_t>(elem), 1)));
      }
    return Status::Ok();
  }

 private:
  const Tensor& weights(const std::vector<Tensor*>& in) const { return *in[qlinear_ ? 3 : 1]; }
  // Every output channel's bias (null: none) below 2^23 in magnitude.
  bool SmallBias(const int32_t* bias) const {
    for (int64_t m = 0; bias && m < M_; ++m)
      if (bias[m] > (1 << 23) || bias[m] < -(1 << 23)) return false;
    return true;
  }
  // A bundle's blobs: the pixel kernel's panels are not the plain ones.
  std::string panelKey() const { return pixels_ ? "qpanels4p." : "qpanels."; }
  std::string rowSumKey() const { return pixels_ ? "qrowsum4p." : "qrowsum."; }
  const Tensor* weightZero(const std::vector<Tensor*>& in) const {
    const size_t k = qlinear_ ? 5 : 3;
    return k < in.size() ? in[k] : nullptr;
  }

  // padded_ = the group's Cg_ planes with pt_ / pl_ rows and columns of
  // `pad` before and enough after, int8 values offset to uint8 (^ 0x80).
  // Split over the threads by channel.
  void padPlanes(ThreadPool& pool, const uint8_t* planes, uint8_t pad) {
    const ConvRows& r = rows_;
    // Past the planes: a copy's over-read (kRowSlack), and the wide path's
    // last tap read in place up to a whole last panel (ConvRow).
    const int64_t plane = hp_ * wp_, reach = std::max(Cg_ * plane, (tap_off_.empty() ? 0 : tap_off_.back()) + oh_ * wp_);
    const size_t bytes = static_cast<size_t>(reach + kRowSlack * r.sw + kRowSlack + 64);
    padded_.resize(bytes);
    std::memset(padded_.data() + Cg_ * plane, pad, bytes - static_cast<size_t>(Cg_ * plane));
    const uint8_t flip = x_signed_ ? 0x80 : 0;
    const int64_t cols = std::min(w_, wp_ - pl_);
    pool.parallelFor(Cg_, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        uint8_t* __restrict out = padded_.data() + c * plane;
        std::memset(out, pad, static_cast<size_t>(plane));
        for (int64_t y = 0; y < h_ && y + pt_ < hp_; ++y)
          CopyFlip(planes + (c * h_ + y) * w_, cols, flip, out + (y + pt_) * wp_ + pl_);
      }
    }, std::max<int64_t>(1, (int64_t{32} << 10) / std::max<int64_t>(plane, 1)));
  }

  // padded_ = B of a pointwise product made from the input: each channel's
  // oh_ x ow_ positions (every sh-th row, every sw-th column of a 1x1
  // strided conv without padding), int8 values offset to uint8; split over
  // the threads by channel.
  void compactPlanes(ThreadPool& pool, const uint8_t* planes) {
    const int64_t plane = oh_ * ow_;
    padded_.resize(static_cast<size_t>(Cg_ * plane + kRowSlack + 64));
    const uint8_t flip = x_signed_ ? 0x80 : 0;
    const int64_t sh = rows_.sh, sw = rows_.sw;
    pool.parallelFor(Cg_, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t oy = 0; oy < oh_; ++oy)
          Subsample(planes + (c * h_ + oy * sh) * w_, w_, ow_, sw, flip, padded_.data() + c * plane + oy * ow_);
    }, std::max<int64_t>(1, (int64_t{32} << 10) / std::max<int64_t>(plane * sh * sw, 1)));
  }

  // padded_ = the group's planes as padPlanes makes them, in NC4HW4 form:
  // quad q's position i (of hp_ x wp_) holds channels 4q .. 4q + 3 at
  // padded_[(q * quad_cols_ + i) * 4 ..] (channels past Cg_, whose weights
  // are zero, hold the pad too), QConvPixels' input.
  void padQuads(ThreadPool& pool, const uint8_t* planes, uint8_t pad) {
    const int64_t quads = Quads(Cg_), quad_bytes = quad_cols_ * 4;
    padded_.resize(static_cast<size_t>(quads * quad_bytes));
    const uint8_t flip = x_signed_ ? 0x80 : 0;
    const int64_t cols = std::min(w_, wp_ - pl_);
    if (Cg_ % 4 != 0) pad_plane_.assign(static_cast<size_t>(h_ * w_), static_cast<uint8_t>(pad ^ flip));  // read back as pad
    uint8_t* base = padded_.data();
    const int64_t rows = std::max<int64_t>(0, std::min(h_, hp_ - pt_));
    pool.parallelFor(quads, [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        uint8_t* quad = base + q * quad_bytes;
        uint8_t* first = quad + (pt_ * wp_ + pl_) * 4;  // the first input pixel's place
        const uint8_t* src[4];
        for (int64_t g = 0; g < 4; ++g) src[g] = 4 * q + g < Cg_ ? planes + (4 * q + g) * h_ * w_ : pad_plane_.data();
        QInterleave4Rows(src, rows, cols, w_, flip, first, wp_ * 4);
        // The pad around the input's pixels only: the rows above and the
        // first row's left pad, then from each row's end to the next row's
        // start, after the last row to the quad's end (bottom rows, slack).
        if (rows <= 0 || cols <= 0) {
          std::memset(quad, pad, static_cast<size_t>(quad_bytes));
          continue;
        }
        std::memset(quad, pad, static_cast<size_t>(first - quad));
        for (int64_t r = 0; r < rows; ++r) {
          uint8_t* gap = first + (r * wp_ + cols) * 4;
          const int64_t gap_bytes = r + 1 < rows ? (wp_ - cols) * 4 : quad + quad_bytes - gap;
          std::memset(gap, pad, static_cast<size_t>(gap_bytes));
        }
      }
    }, std::max<int64_t>(1, (int64_t{64} << 10) / std::max<int64_t>(quad_bytes, 1)));
  }

  // Packs the centered weights (GEMM panels, or floats for the depthwise
  // kernel); packed_ok_ stays false where the fast paths do not apply.
  void packWeights(const std::vector<Tensor*>& in) {
    packed_ok_ = false;
    pixels_ = false;
    packed_.clear();
    const Tensor& w = weights(in);
    const Tensor* wz = weightZero(in);
    const int rank = w.dimensions();
    if ((rank != 3 && rank != 4) || in[0]->dimensions() != rank) return;
    if (w.dtype() != fb::DataType::I8 && w.dtype() != fb::DataType::U8) return;
    if (in[0]->dtype() != fb::DataType::I8 && in[0]->dtype() != fb::DataType::U8) return;
    const auto* p = op_.params<fb::ConvParams>();
    const int64_t M = w.length(0), per = w.elementCount() / std::max<int64_t>(M, 1);
    const int64_t group = p ? p->group() : 1;
    if (M <= 0 || group <= 0 || M % group != 0) return;
    const int64_t Mg = M / group;
    const bool depthwise = qlinear_ && rank == 4 && group == M && per == w.length(2) * w.length(3) &&
                           in[0]->length(1) == group;
    // The pixel kernel where the CPU has one, for kernels of more than one
    // tap whose channels fill their quads (at most a quarter of the
    // products on padding channels: not a first layer's 3 channels). 1x1
    // convs keep the GEMM, their B read in place or subsampled once.
    const int64_t taps = rank == 4 ? w.length(2) * w.length(3) : w.length(2), cg = w.length(1);
    pixels_ = qlinear_ && !depthwise && pixels_on_ && taps > 1 && QPixelRows(QIsaFor(Quads(cg) * 4 * taps)) != 0 &&
              cg * taps == per && 16 * Quads(cg) <= 5 * cg;
    const int64_t depth = pixels_ ? Quads(cg) * 4 * taps : per;
    if (!depthwise && adoptPanels(Mg, depth, group)) {
      packed_ok_ = true;
      return;
    }
    std::vector<int8_t> centered;
    if (!quant::CenteredInt8(op_, w, wz, "w_zero_point", M, per, &centered)) return;  // the reference reports or handles it
    if (depthwise) {
      dw_w_.assign(centered.begin(), centered.end());
      dw_q8_ = nn::PackDepthwiseQ8(centered.data(), M, w.length(2), w.length(3));
    } else {
      std::vector<int8_t> ordered;
      if (pixels_) {  // row m's k = (quad, tap, channel in the quad), zero past cg
        ordered.assign(static_cast<size_t>(M * depth), 0);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t t = 0; t < taps; ++t)
              ordered[static_cast<size_t>(m * depth + ((c / 4) * taps + t) * 4 + c % 4)] =
                  centered[static_cast<size_t>(m * per + c * taps + t)];
      }
      const int8_t* a = pixels_ ? ordered.data() : centered.data();
      for (int64_t g = 0; g < group; ++g)
        packed_.push_back(QPackA(QBestIsa(), Mg, depth, a + g * Mg * depth, depth, pixels_));
    }
    packed_ok_ = true;
  }

  // An ahead-of-time bundle's panels and row sums for every group, when it
  // has them all, made for these sizes and this CPU's kernel.
  bool adoptPanels(int64_t Mg, int64_t per, int64_t group) {
    HostBackend& be = *static_cast<HostBackend*>(backend());
    std::vector<QPackedA> views(static_cast<size_t>(group));
    bool all = true, any = false;
    for (int64_t g = 0; g < group; ++g) {
      const fb::PrepackedBlob* p = be.bundled(index_, panelKey() + std::to_string(g));
      const fb::PrepackedBlob* r = be.bundled(index_, rowSumKey() + std::to_string(g));
      any = any || p || r;
      all = all && p && r && p->meta() &&
            QViewPackedA(QBestIsa(), Mg, per, pixels_, std::vector<int64_t>(p->meta()->begin(), p->meta()->end()),
                         p->data()->data(), p->data()->size(), r->data()->data(), r->data()->size(),
                         &views[static_cast<size_t>(g)]);
    }
    for (int64_t g = 0; any && g < group; ++g)
      for (const std::string& key : {panelKey(), rowSumKey()})
        if (be.bundled(index_, key + std::to_string(g))) be.noteBundled(index_, key + std::to_string(g), all);
    if (!all) return false;
    packed_ = std::move(views);
    return true;
  }

  // The shapes of this run; false where the fast paths do not apply.
  bool geometry(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
    const Tensor& x = *in[0];
    const Tensor& w = weights(in);
    const Tensor& y = *out[0];
    const auto* p = op_.params<fb::ConvParams>();
    const size_t nsp = static_cast<size_t>(x.dimensions() - 2);
    const IntVec xin(x.shape().begin() + 2, x.shape().end()), yout(y.shape().begin() + 2, y.shape().end());
    const IntVec kernel(w.shape().begin() + 2, w.shape().end());
    const IntVec strides = nn::IntsOr(p ? p->strides() : nullptr, nsp, 1);
    const IntVec dil = nn::IntsOr(p ? p->dilations() : nullptr, nsp, 1);
    const IntVec pads = nn::WindowPads(p ? p->auto_pad() : fb::AutoPad::NotSet, nn::IntsOr(p ? p->pads() : nullptr, 0, 0),
                                       xin, yout, kernel, strides, dil);
    batch_ = x.length(0);
    C_ = x.length(1);
    M_ = w.length(0);
    group_ = p ? p->group() : 1;
    if (group_ <= 0 || C_ % group_ != 0 || M_ % group_ != 0 || w.length(1) * group_ != C_) return false;
    Cg_ = C_ / group_;
    Mg_ = M_ / group_;
    x_signed_ = x.dtype() == fb::DataType::I8;
    const bool two = nsp == 2;
    h_ = two ? xin[0] : 1;
    w_ = xin[nsp - 1];
    oh_ = two ? yout[0] : 1;
    ow_ = yout[nsp - 1];
    ConvRows& r = rows_;
    r.oh = oh_, r.ow = ow_;
    const int64_t kh = two ? kernel[0] : 1, kw = kernel[nsp - 1];
    r.sh = two ? strides[0] : 1, r.sw = strides[nsp - 1];
    const int64_t dh = two ? dil[0] : 1, dw = dil[nsp - 1];
    pt_ = two ? pads[0] : 0, pl_ = pads[nsp - 1];
    if (pt_ < 0 || pl_ < 0) return false;
    // The padded planes cover every input position the taps read (an
    // output may read past the input's end: the far padding).
    hp_ = std::max(h_ + pt_, (oh_ - 1) * r.sh + (kh - 1) * dh + 1);
    r.wp = wp_ = std::max(w_ + pl_, (ow_ - 1) * r.sw + (kw - 1) * dw + 1);
    r.pointwise = kh == 1 && kw == 1 && r.sh == 1 && r.sw == 1 && pt_ == 0 && pl_ == 0 && h_ == oh_ && w_ == ow_;
    // A strided 1x1 conv that reads inside the input only: the positions it
    // reads, copied out once (compactPlanes), are a pointwise product's B.
    subsample_ = !r.pointwise && kh == 1 && kw == 1 && pt_ == 0 && pl_ == 0 && (oh_ - 1) * r.sh < h_ &&
                 (ow_ - 1) * r.sw < w_ && subsample_on_;
    r.pointwise = r.pointwise || subsample_;
    r.wide = !r.pointwise && r.sh == 1 && r.sw == 1 && wide_on_;
    // Row k = (c, ky, kx) of B starts at plane c, row ky * dh, column kx * dw;
    tap_off_.clear();
    for (int64_t c = 0; c < Cg_; ++c)
      for (int64_t ky = 0; ky < kh; ++ky)
        for (int64_t kx = 0; kx < kw; ++kx) tap_off_.push_back((c * hp_ + ky * dh) * wp_ + kx * dw);
    r.tap_off = tap_off_.data();
    depthwise_ = !dw_w_.empty();
    if (depthwise_) {
      nn::DepthwiseArgs& a = dw_args_;
      a.n = batch_, a.c = C_, a.m = M_;
      a.h = h_, a.w = w_, a.oh = oh_, a.ow = ow_;
      a.kh = kh, a.kw = kw, a.sh = r.sh, a.sw = r.sw, a.dh = dh, a.dw = dw, a.pt = pt_, a.pl = pl_;
      dw_dot_ = dot_on_ && nn::DepthwiseQ8DotSuits(a);
      // Stride 1 only: at stride 2 the transpose of the larger input cost
      // more than it saved (576 channels 14x14 -> 7x7: 0.021 -> 0.023 ms).
      dw_c16_ = c16_on_ && a.sh == 1 && a.sw == 1 && nn::DepthwiseChannels16Suits(a);
      if (!dw_dot_ && !nn::DepthwiseFlatSuits(a)) return false;
    } else if (static_cast<int64_t>(packed_.size()) != group_ || packed_[0].M != Mg_ ||
               packed_[0].K != (pixels_ ? Quads(Cg_) * 4 : Cg_) * kh * kw) {
      return false;
    }
    if (pixels_) {
      // Quad planes of hp_ x wp_ positions (rounded up to whole lines);
      // output pixel (oy, ox) reads from (oy * sh, ox * sw) of them on.
      const int64_t taps = kh * kw, quads = Quads(Cg_);
      quad_cols_ = (hp_ * wp_ + 15) / 16 * 16;
      group_off_.clear();
      for (int64_t q = 0; q < quads; ++q)
        for (int64_t t = 0; t < taps; ++t)
          group_off_.push_back((q * quad_cols_ + (t / kw) * dh * wp_ + (t % kw) * dw) * 4);
      pixel_off_.resize(static_cast<size_t>(oh_ * ow_));
      for (int64_t oy = 0; oy < oh_; ++oy)
        for (int64_t ox = 0; ox < ow_; ++ox)
          pixel_off_[static_cast<size_t>(oy * ow_ + ox)] = (oy * r.sh * wp_ + ox * r.sw) * 4;
    }
    return true;
  }

  const GraphOp& op_;
  const int index_;  // the op's index in its graph (its bundle key)
  const bool qlinear_, constant_w_;
  // KILN_HOST_QCONV_WIDE=0 turns the wide stride-1 path off (kiln-bench
  // comparisons, tests); KILN_HOST_QDW_DOT=0 the integer depthwise kernel
  // (the float one runs).
  const bool wide_on_ = conv::PathEnabled("KILN_HOST_QCONV_WIDE");
  const bool dot_on_ = conv::PathEnabled("KILN_HOST_QDW_DOT");
  // KILN_HOST_QDW_C16=0: small planes take the integer (or flat) kernel too.
  const bool c16_on_ = conv::PathEnabled("KILN_HOST_QDW_C16");
  // KILN_HOST_QCONV_PIXELS=0: convs the pixel kernel takes gather B for
  // the GEMM instead (no NC4HW4 copy).
  const bool pixels_on_ = conv::PathEnabled("KILN_HOST_QCONV_PIXELS");
  // KILN_HOST_QCONV_SUBSAMPLE=0: strided 1x1 convs gather B from padded
  // planes as other strided convs do.
  const bool subsample_on_ = conv::PathEnabled("KILN_HOST_QCONV_SUBSAMPLE");
  bool packed_ok_ = false, depthwise_ = false, x_signed_ = false, dw_dot_ = false, dw_c16_ = false, pixels_ = false;
  bool subsample_ = false;
  // geometry()'s result and the shapes it was worked out for (geometry_for_:
  // since the last resize or weight packing).
  bool geometry_for_ = false, geometry_ok_ = false;
  IntVec geometry_x_, geometry_y_;
  std::vector<QPackedA> packed_;  // per group
  std::vector<float> dw_w_, dw_bias_;
  nn::DepthwiseQ8Weights dw_q8_;  // the same weights as DepthwiseQ8Dot reads them
  nn::DepthwiseArgs dw_args_;
  ConvRows rows_;
  std::vector<uint8_t> padded_, wide_out_;
  std::vector<int64_t> tap_off_;
  std::vector<int64_t> group_off_, pixel_off_;  // QConvPixels' offsets
  std::vector<uint8_t> pad_plane_;  // a missing channel's plane
  int64_t quad_cols_ = 0;
  int64_t pt_ = 0, pl_ = 0, hp_ = 1, wp_ = 1;
  int64_t batch_ = 0, C_ = 0, M_ = 0, group_ = 1, Cg_ = 0, Mg_ = 0, h_ = 1, w_ = 1, oh_ = 1, ow_ = 1;
  std::vector<int32_t> row_add_;
  std::vector<float> row_scale_;
  int32_t y_zero_ = 0;
};


}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostQLinearConv(const GraphOp& op, const Graph& graph, HostBackend* b) {
  const bool constant = quant::ConstantInput(op, graph, 3) && quant::ConstantInput(op, graph, 5);
  return std::unique_ptr<Execution>(
      new QConvExecution(b, op, static_cast<int>(&op - graph.ops.data()), true, constant));
}

StatusOr<std::unique_ptr<Execution>> CreateHostConvInteger(const GraphOp& op, const Graph& graph, HostBackend* b) {
  const bool constant = quant::ConstantInput(op, graph, 1) && quant::ConstantInput(op, graph, 3);
  return std::unique_ptr<Execution>(
      new QConvExecution(b, op, static_cast<int>(&op - graph.ops.data()), false, constant));
}

}  // namespace kiln
