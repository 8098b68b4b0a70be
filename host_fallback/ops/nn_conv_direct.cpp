// The direct convolution of Conv with one input channel a group (depthwise;
// nn_conv.h, RunDirectConv): 2-D planes with strides 1 or 2 through the
// padded flat kernel or 16 channels a vector (nn_depthwise.cpp,
// nn_depthwise_c16.cpp), others one output row at a time (DepthwisePlane),
// split over batch x output channels so each thread owns whole output planes.
#include <algorithm>
#include <vector>

#include "host_backend.h"
#include "ops/nn_common.h"
#include "ops/nn_conv.h"
#include "ops/nn_depthwise.h"
#include "simd_clones.h"

namespace kiln::conv {
namespace {

// y[i] = clamp(y[i]) for i in [0, n): a NaN becomes lo.
inline void ClampRow(float* __restrict y, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] > lo ? (y[i] < hi ? y[i] : hi) : lo;
}

// One output plane of a depthwise Conv: yp = bias + the taps of wp over the
// single input plane xp, then the clamp when `clamp`. Row by row, so the
// output row and the input rows it reads stay in L1; a 3-wide kernel row
// adds its three taps in one pass over the columns where all three are
// inside the input (the border columns take the taps one by one).
KILN_SIMD_CLONES
void DepthwisePlane(const Taps& t, const float* __restrict xp, const float* __restrict wp, float bias, bool clamp,
                    float lo, float hi, float* __restrict yp) {
  const int64_t s = t.stride_w;
  for (int64_t r = 0; r < t.a_rows; ++r) {
    float* __restrict yr = yp + r * t.a_w;
    for (int64_t i = 0; i < t.a_w; ++i) yr[i] = bias;
    for (int64_t kr = 0; kr < t.k_rows; ++kr) {
      const int64_t off = t.row_off[static_cast<size_t>(kr * t.a_rows + r)];
      if (off < 0) continue;
      const float* __restrict xr = xp + off;
      const float* w = wp + kr * t.k_w;
      int64_t in_lo = 0, in_hi = 0;  // columns every tap of the row reaches
      if (t.k_w == 3) {
        in_lo = std::max(t.lo[0], std::max(t.lo[1], t.lo[2]));
        in_hi = std::min(t.hi[0], std::min(t.hi[1], t.hi[2]));
      }
      if (in_lo < in_hi) {
        const float w0 = w[0], w1 = w[1], w2 = w[2];
        const float* x0 = xr + t.b_start[0] + (in_lo - t.lo[0]) * s;
        const float* x1 = xr + t.b_start[1] + (in_lo - t.lo[1]) * s;
        const float* x2 = xr + t.b_start[2] + (in_lo - t.lo[2]) * s;
        float* yo = yr + in_lo;
        const int64_t n = in_hi - in_lo;
        if (s == 1)
          for (int64_t i = 0; i < n; ++i) yo[i] += w0 * x0[i] + w1 * x1[i] + w2 * x2[i];
        else if (s == 2)
          for (int64_t i = 0; i < n; ++i) yo[i] += w0 * x0[2 * i] + w1 * x1[2 * i] + w2 * x2[2 * i];
        else
          for (int64_t i = 0; i < n; ++i) yo[i] += w0 * x0[i * s] + w1 * x1[i * s] + w2 * x2[i * s];
      }
      for (int64_t kx = 0; kx < t.k_w; ++kx) {
        const float wv = w[kx];
        const int64_t lo_k = t.lo[static_cast<size_t>(kx)], hi_k = t.hi[static_cast<size_t>(kx)];
        const float* xk = xr + t.b_start[static_cast<size_t>(kx)] - lo_k * s;  // xk[a * s]: column a's input
        // [lo_k, hi_k) minus the interior the fused pass above covered.
        const int64_t cut_lo = in_lo < in_hi ? std::min(hi_k, in_lo) : hi_k;
        const int64_t cut_hi = in_lo < in_hi ? std::max(lo_k, in_hi) : hi_k;
        if (s == 1) {
          for (int64_t a = lo_k; a < cut_lo; ++a) yr[a] += wv * xk[a];
          for (int64_t a = cut_hi; a < hi_k; ++a) yr[a] += wv * xk[a];
        } else {
          for (int64_t a = lo_k; a < cut_lo; ++a) yr[a] += wv * xk[a * s];
          for (int64_t a = cut_hi; a < hi_k; ++a) yr[a] += wv * xk[a * s];
        }
      }
    }
    if (clamp) ClampRow(yr, t.a_w, lo, hi);
  }
}

}  // namespace

Status RunDirectConv(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be,
               bool channels16, bool no_activation) {
  KILN_RETURN_IF_ERROR(nn::NeedF32(op, in));
  const Tensor& X = *in[0];
  const Tensor& W = *in[1];
  const Tensor* B = in.size() > 2 ? in[2] : nullptr;
  Tensor& Y = *out[0];
  const fb::ConvParams* p = op.params<fb::ConvParams>();
  ConvAttrs a = ReadConvAttrs(p, W);
  if (no_activation) a.act = fb::Activation::None;
  const IntVec xin(X.shape().begin() + 2, X.shape().end());
  const IntVec yout(Y.shape().begin() + 2, Y.shape().end());
  a.pads = nn::WindowPads(p ? p->auto_pad() : fb::AutoPad::NotSet, nn::IntsOr(p ? p->pads() : nullptr, 0, 0), xin,
                          yout, a.kernel, a.strides, a.dilations);  // MakeTaps reads the begins
  const int64_t N = X.length(0), C = X.length(1), M = Y.length(1);
  const int64_t Mg = M / a.group;  // one input channel a group (ConvExecution's direct_)
  const int64_t in_plane = Prod(xin.begin(), xin.end()), out_plane = Prod(yout.begin(), yout.end());
  const int64_t ksize = Prod(a.kernel.begin(), a.kernel.end());
  const float* x = X.host<float>();
  const float* w = W.host<float>();
  const float* bias = B ? B->host<float>() : nullptr;
  float* y = Y.host<float>();
  if (out_plane == 0) return Status::Ok();
  float lo = 0, hi = 0;
  const bool fused = nn::ActivationAsClamp(a.act, a.act_min, a.act_max, &lo, &hi);
  const bool clamp = fused && a.act != fb::Activation::None;
  if (xin.size() == 2) {  // 2-D: the padded flat kernel (nn_depthwise.cpp) where it applies
    nn::DepthwiseArgs d;
    d.n = N, d.c = C, d.m = M, d.h = xin[0], d.w = xin[1], d.oh = yout[0], d.ow = yout[1];
    d.kh = a.kernel[0], d.kw = a.kernel[1], d.sh = a.strides[0], d.sw = a.strides[1];
    d.dh = a.dilations[0], d.dw = a.dilations[1], d.pt = a.pads[0], d.pl = a.pads[1];
    d.clamp = clamp, d.lo = lo, d.hi = hi;
    if (!fused) {
      d.plane_act = &PlaneActivation;
      d.plane_ctx = &a;
    }
    if (channels16 && nn::DepthwiseChannels16Suits(d)) {
      if (!nn::DepthwiseChannels16(be.pool(), d, x, w, bias, y))
        return Status(StatusCode::kOutOfMemory, "Conv: cannot allocate the depthwise scratch");
      return Status::Ok();
    }
    if (nn::DepthwiseFlatSuits(d)) {
      if (!nn::DepthwiseFlat2D(be.pool(), d, x, w, bias, y))
        return Status(StatusCode::kOutOfMemory, "Conv: cannot allocate the depthwise scratch");
      return Status::Ok();
    }
  }
  const Taps t = MakeTaps(yout, xin, a.kernel, a.strides, a.pads, a.dilations);

  be.pool().parallelFor(N * M, [&](int64_t begin, int64_t end) {
    for (int64_t nm = begin; nm < end; ++nm) {
      const int64_t n = nm / M, m = nm % M, g = m / Mg;
      float* yp = y + nm * out_plane;
      DepthwisePlane(t, x + (n * C + g) * in_plane, w + m * ksize, bias ? bias[m] : 0.f, clamp, lo, hi, yp);
      if (!fused) PlaneActivation(&a, yp, out_plane);
    }
  }, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, out_plane * ksize)));
  return Status::Ok();
}


}  // namespace kiln::conv
