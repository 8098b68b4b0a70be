// Host kernels: sampling (GridSample, RoiAlign) and signal processing (DFT,
// STFT, Hann/Hamming/Blackman windows). f32 (DFT and STFT f32 and f64),
// computed in double where sums are long.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "elements.h"
#include "host_backend.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {
namespace {

constexpr double kPi = 3.14159265358979323846;

// ---- GridSample ----

// A coordinate reflected into [lo, hi] (ONNX's reflection padding).
float Reflect(float x, float lo, float hi) {
  const float span = hi - lo;
  if (span <= 0) return lo;
  if (x < lo) {
    const float d = lo - x;
    const int flips = static_cast<int>(d / span);
    const float r = d - static_cast<float>(flips) * span;
    return flips % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const float d = x - hi;
    const int flips = static_cast<int>(d / span);
    const float r = d - static_cast<float>(flips) * span;
    return flips % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

struct GridSampler {
  const float* plane;
  int64_t h, w;
  fb::GridPadding padding;
  bool align;

  // The coordinate after border or reflection padding (zeros: unchanged).
  float pad(float x, int64_t n) const {
    if (padding == fb::GridPadding::Border) return std::min(std::max(x, 0.f), static_cast<float>(n - 1));
    if (padding == fb::GridPadding::Reflection) {
      x = align ? Reflect(x, 0.f, static_cast<float>(n - 1)) : Reflect(x, -0.5f, static_cast<float>(n) - 0.5f);
      return std::min(std::max(x, 0.f), static_cast<float>(n - 1));
    }
    return x;
  }
  // Pixel (y, x): 0 outside with zeros padding; clamped (border) or
  // reflected otherwise.
  float at(int64_t y, int64_t x) const {
    if (y < 0 || y >= h || x < 0 || x >= w) {
      if (padding == fb::GridPadding::Zeros) return 0.f;
      y = static_cast<int64_t>(pad(static_cast<float>(y), h));
      x = static_cast<int64_t>(pad(static_cast<float>(x), w));
    }
    return plane[y * w + x];
  }
};

// Bicubic's coefficient (PyTorch's and ONNX's).
constexpr float kGridCubicA = -0.75f;

Status RunGridSample(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  const Tensor& grid = *in[1];
  if (x.dtype() != fb::DataType::F32) return Unsupported("host GridSample supports f32, not %s", DataTypeName(x.dtype()));
  auto* p = op.params<fb::GridSampleParams>();
  const fb::ResizeMode mode = p ? p->mode() : fb::ResizeMode::Linear;
  const bool align = p && p->align_corners();
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = grid.shape()[1], ow = grid.shape()[2];
  float* y = out[0]->host<float>();
  auto unnorm = [align](float g, int64_t size) {
    return align ? (g + 1.f) / 2.f * static_cast<float>(size - 1) : ((g + 1.f) * static_cast<float>(size) - 1.f) / 2.f;
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      GridSampler s{x.host<float>() + (b * c + ch) * h * w, h, w, p ? p->padding() : fb::GridPadding::Zeros, align};
      for (int64_t i = 0; i < oh * ow; ++i) {
        const float* g = grid.host<float>() + (b * oh * ow + i) * 2;
        // Coordinates far outside read only padding: clamped a few pixels
        // out (the same taps), so that no huge or NaN value becomes an index.
        auto coord = [&](float v, int64_t size) {
          v = s.pad(unnorm(v, size), size);
          const float lim = static_cast<float>(size) + 4.f;
          return v != v ? -lim : std::min(std::max(v, -lim), lim);
        };
        float fx = coord(g[0], w), fy = coord(g[1], h);
        float v;
        if (mode == fb::ResizeMode::Nearest) {
          v = s.at(static_cast<int64_t>(std::nearbyint(fy)), static_cast<int64_t>(std::nearbyint(fx)));
        } else if (mode == fb::ResizeMode::Linear) {
          const float x0 = std::floor(fx), y0 = std::floor(fy), lx = fx - x0, ly = fy - y0;
          const int64_t ix = static_cast<int64_t>(x0), iy = static_cast<int64_t>(y0);
          v = (1 - ly) * ((1 - lx) * s.at(iy, ix) + lx * s.at(iy, ix + 1)) +
              ly * ((1 - lx) * s.at(iy + 1, ix) + lx * s.at(iy + 1, ix + 1));
        } else {
          const float x0 = std::floor(fx), y0 = std::floor(fy);
          v = 0;
          for (int r = -1; r <= 2; ++r) {
            float row = 0;
            for (int q = -1; q <= 2; ++q)
              row += CubicWeight(fx - (x0 + static_cast<float>(q)), kGridCubicA) *
                     s.at(static_cast<int64_t>(y0) + r, static_cast<int64_t>(x0) + q);
            v += CubicWeight(fy - (y0 + static_cast<float>(r)), kGridCubicA) * row;
          }
        }
        y[(b * c + ch) * oh * ow + i] = v;
      }
    }
  return Status::Ok();
}

// ---- RoiAlign ----

Status RunRoiAlign(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  const Tensor& rois = *in[1];
  if (x.dtype() != fb::DataType::F32 || rois.dtype() != fb::DataType::F32)
    return Unsupported("host RoiAlign supports f32, not %s", DataTypeName(x.dtype()));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> bidx, TensorInts(*in[2]), "RoiAlign batch_indices");
  auto* p = op.params<fb::RoiAlignParams>();
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t oh = out[0]->shape()[2], ow = out[0]->shape()[3];
  const float scale = p ? p->spatial_scale() : 1.f;
  const bool half = !p || p->half_pixel(), max_mode = p && p->max_mode();
  const int ratio = p ? p->sampling_ratio() : 0;
  const float offset = half ? 0.5f : 0.f;
  float* y = out[0]->host<float>();
  for (int64_t r = 0; r < rois.shape()[0]; ++r) {
    const int64_t b = bidx[static_cast<size_t>(r)];
    if (b < 0 || b >= n)
      return InvalidArgument("RoiAlign: batch index %lld is out of range for a batch of %lld", static_cast<long long>(b),
                             static_cast<long long>(n));
    const float* box = rois.host<float>() + r * 4;
    const float x1 = box[0] * scale - offset, y1 = box[1] * scale - offset;
    float rw = box[2] * scale - offset - x1, rh = box[3] * scale - offset - y1;
    if (!half) {
      rw = std::max(rw, 1.f);
      rh = std::max(rh, 1.f);
    }
    const float bw = rw / static_cast<float>(ow), bh = rh / static_cast<float>(oh);
    // The sampling grid of a bin, from the ROI's size: bounded (a hostile or
    // NaN ROI is refused, not cast to an integer).
    const double dgh = ratio > 0 ? ratio : std::ceil(static_cast<double>(rh) / static_cast<double>(oh));
    const double dgw = ratio > 0 ? ratio : std::ceil(static_cast<double>(rw) / static_cast<double>(ow));
    if (!(dgh >= 0) || !(dgw >= 0) || !std::isfinite(x1) || !std::isfinite(y1))
      return InvalidArgument("RoiAlign: ROI %lld [%g, %g, %g, %g] is not a finite box", static_cast<long long>(r), box[0],
                             box[1], box[2], box[3]);
    KILN_RETURN_IF_ERROR(CheckHostWork("RoiAlign", dgh * dgw * static_cast<double>(c * oh * ow)));
    const int64_t gh = static_cast<int64_t>(dgh), gw = static_cast<int64_t>(dgw);
    const float count = static_cast<float>(std::max<int64_t>(gh * gw, 1));
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* plane = x.host<float>() + (b * c + ch) * h * w;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          float acc = 0.f;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              float yy = y1 + static_cast<float>(ph) * bh + (static_cast<float>(iy) + 0.5f) * bh / static_cast<float>(gh);
              float xx = x1 + static_cast<float>(pw) * bw + (static_cast<float>(ix) + 0.5f) * bw / static_cast<float>(gw);
              float v = 0.f;
              if (!(yy < -1.f || yy > static_cast<float>(h) || xx < -1.f || xx > static_cast<float>(w))) {
                yy = std::max(yy, 0.f);
                xx = std::max(xx, 0.f);
                int64_t y0 = static_cast<int64_t>(yy), x0 = static_cast<int64_t>(xx), y1i, x1i;
                if (y0 >= h - 1) y0 = y1i = h - 1, yy = static_cast<float>(y0);
                else y1i = y0 + 1;
                if (x0 >= w - 1) x0 = x1i = w - 1, xx = static_cast<float>(x0);
                else x1i = x0 + 1;
                const float ly = yy - static_cast<float>(y0), lx = xx - static_cast<float>(x0), hy = 1 - ly, hx = 1 - lx;
                const float t[4] = {hy * hx * plane[y0 * w + x0], hy * lx * plane[y0 * w + x1i],
                                    ly * hx * plane[y1i * w + x0], ly * lx * plane[y1i * w + x1i]};
                // max mode takes the largest weighted corner (as onnxruntime does).
                v = max_mode ? std::max(std::max(t[0], t[1]), std::max(t[2], t[3])) : t[0] + t[1] + t[2] + t[3];
              }
              if (max_mode) acc = first ? v : std::max(acc, v);
              else acc += v;
              first = false;
            }
          y[((r * c + ch) * oh + ph) * ow + pw] = max_mode ? acc : acc / count;
        }
    }
  }
  return Status::Ok();
}

// ---- DFT, STFT ----

// One DFT of `n` points of a (possibly complex) sequence read through `at`,
// writing `bins` outputs (re, im) through `put`; zero-padded or truncated
// to n.
template <typename At, typename Put>
void Dft1(int64_t len, int64_t n, int64_t bins, bool inverse, At at, Put put) {
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    double re = 0, im = 0;
    for (int64_t t = 0; t < std::min(len, n); ++t) {
      const double ang = sign * 2 * kPi * static_cast<double>((k * t) % n) / static_cast<double>(n);
      double xr, xi;
      at(t, &xr, &xi);
      re += xr * std::cos(ang) - xi * std::sin(ang);
      im += xr * std::sin(ang) + xi * std::cos(ang);
    }
    if (inverse) re /= static_cast<double>(n), im /= static_cast<double>(n);
    put(k, re, im);
  }
}

Status RunDft(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  if (!IsFloating(x.dtype()) || !IsArithmetic(x.dtype())) return Unsupported("host DFT supports f32 and f64");
  auto* p = op.params<fb::DftParams>();
  const int rank = x.dimensions() - 1;  // the last dim is re/im
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 1, rank + 1), "DFT");
  const int64_t len = x.shape()[static_cast<size_t>(axis)], bins = y.shape()[static_cast<size_t>(axis)];
  const int64_t n = in.size() > 1 && in[1] ? LoadInt64(in[1]->hostData(), in[1]->dtype(), 0) : len;
  const int64_t comp_in = x.shape().back();
  int64_t outer, axis_len, inner;  // over the dims before the re/im one
  AroundAxis(std::vector<int64_t>(x.shape().begin(), x.shape().end() - 1), axis, &outer, &axis_len, &inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      Dft1(len, n, bins, p && p->inverse(),
           [&](int64_t t, double* re, double* im) {
             const int64_t at = ((o * len + t) * inner + i) * comp_in;
             *re = LoadDouble(x.hostData(), x.dtype(), at);
             *im = comp_in == 2 ? LoadDouble(x.hostData(), x.dtype(), at + 1) : 0;
           },
           [&](int64_t k, double re, double im) {
             const int64_t at = ((o * bins + k) * inner + i) * 2;
             StoreDouble(y.hostData(), y.dtype(), at, re);
             StoreDouble(y.hostData(), y.dtype(), at + 1, im);
           });
  return Status::Ok();
}

Status RunStft(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  if (!IsFloating(x.dtype()) || !IsArithmetic(x.dtype())) return Unsupported("host STFT supports f32 and f64");
  const int64_t step = LoadInt64(in[1]->hostData(), in[1]->dtype(), 0);
  const Tensor* window = in.size() > 2 ? in[2] : nullptr;
  const int64_t frames = y.shape()[1], bins = y.shape()[2];
  const int64_t len = in.size() > 3 && in[3] ? LoadInt64(in[3]->hostData(), in[3]->dtype(), 0) : window ? window->elementCount() : 0;
  if (window && window->elementCount() != len)
    return InvalidArgument("STFT: the window has %lld values for frames of %lld", static_cast<long long>(window->elementCount()),
                           static_cast<long long>(len));
  const int64_t total = x.shape()[1], comp = x.shape()[2];
  for (int64_t b = 0; b < x.shape()[0]; ++b)
    for (int64_t f = 0; f < frames; ++f)
      Dft1(len, len, bins, false,
           [&](int64_t t, double* re, double* im) {
             const int64_t at = (b * total + f * step + t) * comp;
             const double wv = window ? LoadDouble(window->hostData(), window->dtype(), t) : 1.0;
             *re = wv * LoadDouble(x.hostData(), x.dtype(), at);
             *im = comp == 2 ? wv * LoadDouble(x.hostData(), x.dtype(), at + 1) : 0;
           },
           [&](int64_t k, double re, double im) {
             const int64_t at = ((b * frames + f) * bins + k) * 2;
             StoreDouble(y.hostData(), y.dtype(), at, re);
             StoreDouble(y.hostData(), y.dtype(), at + 1, im);
           });
  return Status::Ok();
}

// Hann, Hamming and Blackman windows: periodic over N = size, symmetric over
// N = size - 1.
Status RunWindow(const GraphOp& op, const std::vector<Tensor*>&, const std::vector<Tensor*>& out, HostBackend&) {
  Tensor& y = *out[0];
  auto* p = op.params<fb::WindowParams>();
  const int64_t size = y.elementCount();
  const double n = static_cast<double>(!p || p->periodic() ? size : size - 1);
  for (int64_t i = 0; i < size; ++i) {
    const double a = 2 * kPi * static_cast<double>(i) / n;
    double v;
    if (op.type == fb::OpType::HannWindow) v = 0.5 - 0.5 * std::cos(a);
    else if (op.type == fb::OpType::HammingWindow) v = 25.0 / 46.0 - (1 - 25.0 / 46.0) * std::cos(a);
    else v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
    StoreDouble(y.hostData(), y.dtype(), i, n > 0 ? v : 1.0);
  }
  return Status::Ok();
}

// MelWeightMatrix: triangular filters with peaks of 1 between num_mel_bins + 2
// points spaced evenly on the mel scale (mel = 2595 log10(1 + f / 700)),
// each point rounded down to a DFT bin as (dft_length + 1) f / sample_rate.
Status RunMelWeightMatrix(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                          HostBackend&) {
  Tensor& y = *out[0];
  const int64_t bins = y.shape()[1], spec = y.shape()[0];
  const int64_t dft = LoadInt64(in[1]->hostData(), in[1]->dtype(), 0);
  const double rate = LoadDouble(in[2]->hostData(), in[2]->dtype(), 0);
  const double lo = LoadDouble(in[3]->hostData(), in[3]->dtype(), 0), hi = LoadDouble(in[4]->hostData(), in[4]->dtype(), 0);
  if (!(rate > 0) || !(lo >= 0) || !(hi > lo))
    return InvalidArgument("MelWeightMatrix: sample_rate %g and edges [%g, %g] Hz", rate, lo, hi);
  const double mlo = 2595 * std::log10(1 + lo / 700), mhi = 2595 * std::log10(1 + hi / 700);
  const double step = (mhi - mlo) / static_cast<double>(bins + 2);
  std::vector<int64_t> point(static_cast<size_t>(bins + 2));
  for (int64_t k = 0; k < bins + 2; ++k) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(k) * step + mlo) / 2595) - 1);
    const double bin = std::floor(static_cast<double>(dft + 1) * hz / rate);
    if (!(bin >= 0) || bin > static_cast<double>(spec))
      return InvalidArgument("MelWeightMatrix: the edge at %g Hz falls on DFT bin %g, outside the %lld bins", hz, bin,
                             static_cast<long long>(spec));
    point[static_cast<size_t>(k)] = static_cast<int64_t>(bin);
  }
  std::vector<double> w(static_cast<size_t>(spec * bins), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j < 0 || j >= spec)
      return InvalidArgument("MelWeightMatrix: the filter of band %lld reaches DFT bin %lld, past the %lld bins",
                             static_cast<long long>(i), static_cast<long long>(j), static_cast<long long>(spec));
    w[static_cast<size_t>(j * bins + i)] = v;
    return Status::Ok();
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t left = point[static_cast<size_t>(i)], center = point[static_cast<size_t>(i + 1)],
                  right = point[static_cast<size_t>(i + 2)];
    if (center == left) {
      KILN_RETURN_IF_ERROR(set(center, i, 1.0));
    } else {
      for (int64_t j = left; j <= center; ++j)
        KILN_RETURN_IF_ERROR(set(j, i, static_cast<double>(j - left) / static_cast<double>(center - left)));
    }
    for (int64_t j = center; j < right; ++j)
      KILN_RETURN_IF_ERROR(set(j, i, static_cast<double>(right - j) / static_cast<double>(right - center)));
  }
  for (int64_t k = 0; k < spec * bins; ++k) StoreDouble(y.hostData(), y.dtype(), k, w[static_cast<size_t>(k)]);
  (void)op;
  return Status::Ok();
}

}  // namespace

KILN_HOST_FN_FACTORY(MelWeightMatrix)
KILN_HOST_FN_FACTORY(GridSample)
KILN_HOST_FN_FACTORY(RoiAlign)
KILN_HOST_FN_FACTORY(Dft)
KILN_HOST_FN_FACTORY(Stft)
KILN_HOST_FN_FACTORY(Window)

}  // namespace kiln
