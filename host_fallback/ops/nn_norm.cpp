// Host kernels: BatchNormalization (inference form), InstanceNormalization,
// LayerNormalization (with the optional Mean and InvStdDev outputs). f32;
// statistics are accumulated in double, variance in a second pass
// (LayerNormalization's rows vectorized, KILN_SIMD_CLONES).
#include <algorithm>
#include <cmath>
#include <vector>

#include "host_backend.h"
#include "ops/nn_common.h"
#include "simd_clones.h"

namespace kiln {
namespace {

float Epsilon(const GraphOp& op) {
  const fb::NormParams* p = op.params<fb::NormParams>();
  return p ? p->epsilon() : 1e-5f;
}

// Batch x channel planes of X [N, C, ...] and the size of one.
void Planes(const Tensor& x, int64_t* planes, int64_t* plane) {
  *planes = x.length(0) * x.length(1);
  *plane = *planes ? x.elementCount() / *planes : 0;
}

Status RunBatchNorm(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                    HostBackend& be) {
  KILN_RETURN_IF_ERROR(nn::NeedF32(op, in));
  const float eps = Epsilon(op);
  const int64_t C = in[0]->length(1);
  const float* scale = in[1]->host<float>();
  const float* bias = in[2]->host<float>();
  const float* mean = in[3]->host<float>();
  const float* var = in[4]->host<float>();
  // y = x * a[c] + b[c] with a = scale / sqrt(var + eps), b = B - mean * a.
  std::vector<float> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    a[c] = scale[c] / std::sqrt(var[c] + eps);
    b[c] = bias[c] - mean[c] * a[c];
  }
  int64_t planes, plane;
  Planes(*in[0], &planes, &plane);
  const float* x = in[0]->host<float>();
  float* y = out[0]->host<float>();
  be.pool().parallelFor(planes, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const float ac = a[pl % C], bc = b[pl % C];
      const float* xp = x + pl * plane;
      float* yp = y + pl * plane;
      for (int64_t i = 0; i < plane; ++i) yp[i] = xp[i] * ac + bc;
    }
  });
  return Status::Ok();
}

Status RunInstanceNorm(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                       HostBackend& be) {
  KILN_RETURN_IF_ERROR(nn::NeedF32(op, in));
  const double eps = Epsilon(op);
  const int64_t C = in[0]->length(1);
  const float* scale = in[1]->host<float>();
  const float* bias = in[2]->host<float>();
  int64_t planes, plane;
  Planes(*in[0], &planes, &plane);
  const float* x = in[0]->host<float>();
  float* y = out[0]->host<float>();
  be.pool().parallelFor(planes, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const float* xp = x + pl * plane;
      float* yp = y + pl * plane;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < plane; ++i) sum += xp[i];
      const double mean = plane ? sum / static_cast<double>(plane) : 0;
      for (int64_t i = 0; i < plane; ++i) sq += (xp[i] - mean) * (xp[i] - mean);
      const double var = plane ? sq / static_cast<double>(plane) : 0;
      const float a = static_cast<float>(scale[pl % C] / std::sqrt(var + eps));
      const float b = static_cast<float>(bias[pl % C] - mean * a);
      for (int64_t i = 0; i < plane; ++i) yp[i] = xp[i] * a + b;
    }
  });
  return Status::Ok();
}

// `t` (scale or B), broadcast to the normalized shape `norm` and flattened.
std::vector<float> ExpandTo(const Tensor& t, const std::vector<int64_t>& norm) {
  const int64_t inner = [&] {
    int64_t n = 1;
    for (int64_t d : norm) n *= d;
    return n;
  }();
  const std::vector<int64_t>& s = t.shape();
  const size_t r = norm.size(), lead = r - s.size();
  std::vector<int64_t> stride(r, 0);  // t's stride along each normalized axis, 0 where it broadcasts
  for (int64_t i = static_cast<int64_t>(s.size()) - 1, st = 1; i >= 0; --i) {
    stride[lead + static_cast<size_t>(i)] = s[static_cast<size_t>(i)] == 1 ? 0 : st;
    st *= s[static_cast<size_t>(i)];
  }
  std::vector<float> v(static_cast<size_t>(inner));
  const float* src = t.host<float>();
  for (int64_t j = 0; j < inner; ++j) {
    int64_t rem = j, off = 0;
    for (size_t d = r; d-- > 0;) {
      off += rem % norm[d] * stride[d];
      rem /= norm[d];
    }
    v[static_cast<size_t>(j)] = src[off];
  }
  return v;
}

// Rows [0, rows) of LayerNormalization over `inner` elements each: mean and
// variance accumulated in double (two passes, as InstanceNorm), then y =
// (x - mean) * inv * scale + bias in float. The reductions keep 16 partial
// sums so that the compiler vectorizes them without reassociating one sum
// (which it may not); the cast to double rides along.
KILN_SIMD_CLONES
void LayerNormRows(const float* x, float* y, int64_t rows, int64_t inner, const float* scale, const float* bias,
                   double eps, float* mean_out, float* inv_out) {
  constexpr int kLanes = 16;
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * inner;
    float* __restrict yr = y + r * inner;
    double part[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= inner; i += kLanes)
      for (int l = 0; l < kLanes; ++l) part[l] += xr[i + l];
    // Halving steps, which vectorize, instead of 16 dependent adds.
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) part[l] += part[l + w];
    double sum = part[0];
    for (; i < inner; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(inner);
    for (double& v : part) v = 0;
    i = 0;
    for (; i + kLanes <= inner; i += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const double d = xr[i + l] - mean;
        part[l] += d * d;
      }
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) part[l] += part[l + w];
    double sq = part[0];
    for (; i < inner; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
    // The mean as float m plus the rest m_lo: x - m is exact where x is near
    // m (within a factor of 2), so a mean far from 0 (rows around 1000) loses
    // nothing to its rounding to float before the scaling by inv.
    const float m = static_cast<float>(mean), m_lo = static_cast<float>(mean - m), s = static_cast<float>(inv);
    if (bias)
      for (int64_t k = 0; k < inner; ++k) yr[k] = ((xr[k] - m) - m_lo) * s * scale[k] + bias[k];
    else
      for (int64_t k = 0; k < inner; ++k) yr[k] = ((xr[k] - m) - m_lo) * s * scale[k];
    if (mean_out) mean_out[r] = m;
    if (inv_out) inv_out[r] = s;
  }
}

Status RunLayerNorm(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                    HostBackend& be) {
  KILN_RETURN_IF_ERROR(nn::NeedF32(op, in));
  const fb::NormParams* p = op.params<fb::NormParams>();
  const Tensor& X = *in[0];
  const int rank = X.dimensions();
  int axis = p ? p->axis() : -1;
  if (axis < 0) axis += rank;
  const double eps = Epsilon(op);
  const std::vector<int64_t> norm(X.shape().begin() + axis, X.shape().end());
  int64_t inner = 1;
  for (int64_t d : norm) inner *= d;
  // Scale and B as given when they already have the normalized size (no
  // broadcast: the usual [E] of a transformer), else expanded to it.
  const Tensor* B = in.size() > 2 && in[2] ? in[2] : nullptr;
  std::vector<float> scale_x, bias_x;
  const float* scale = in[1]->host<float>();
  const float* bias = B ? B->host<float>() : nullptr;
  if (in[1]->elementCount() != inner) {
    scale_x = ExpandTo(*in[1], norm);
    scale = scale_x.data();
  }
  if (B && B->elementCount() != inner) {
    bias_x = ExpandTo(*B, norm);
    bias = bias_x.data();
  }
  const int64_t outer = inner ? X.elementCount() / inner : 0;
  if (outer == 0) return Status::Ok();
  const float* x = X.host<float>();
  float* y = out[0]->host<float>();
  float* mean_out = out.size() > 1 && out[1] ? out[1]->host<float>() : nullptr;
  float* inv_out = out.size() > 2 && out[2] ? out[2]->host<float>() : nullptr;
  be.pool().parallelFor(outer, [&](int64_t begin, int64_t end) {
    LayerNormRows(x + begin * inner, y + begin * inner, end - begin, inner, scale, bias, eps,
                  mean_out ? mean_out + begin : nullptr, inv_out ? inv_out + begin : nullptr);
  }, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, inner)));
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostBatchNorm(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunBatchNorm);
}
StatusOr<std::unique_ptr<Execution>> CreateHostInstanceNorm(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunInstanceNorm);
}
StatusOr<std::unique_ptr<Execution>> CreateHostLayerNorm(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunLayerNorm);
}

}  // namespace kiln
