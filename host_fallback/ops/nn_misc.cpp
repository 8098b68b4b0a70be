// Host kernels: Hardmax, LRN, MeanVarianceNormalization and the losses
// (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss). f32 and f64, plain
// loops: these ops are rare in inference graphs and never hot.
#include <cmath>
#include <cstring>
#include <vector>

#include "elements.h"
#include "host_backend.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {
namespace {

Status NeedFloat(const GraphOp& op, const Tensor& t) {
  if (t.dtype() != fb::DataType::F32 && t.dtype() != fb::DataType::F64)
    return Unsupported("host %s supports f32 and f64, not %s", op.typeName(), DataTypeName(t.dtype()));
  return Status::Ok();
}

// Calls f(T{}) with T float or double, the type of t.
template <typename F>
Status WithFloat(const Tensor& t, F&& f) {
  return t.dtype() == fb::DataType::F64 ? f(double{}) : f(float{});
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere.
Status RunHardmax(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  KILN_RETURN_IF_ERROR(NeedFloat(op, x));
  auto* p = op.params<fb::AxisParams>();
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : -1, x.dimensions()), "Hardmax");
  int64_t outer, n, inner;
  AroundAxis(x.shape(), axis, &outer, &n, &inner);
  return WithFloat(x, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* src = x.host<T>();
    T* dst = out[0]->host<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best = 0;
        for (int64_t j = 1; j < n; ++j)
          if (src[(o * n + j) * inner + i] > src[(o * n + best) * inner + i]) best = j;
        for (int64_t j = 0; j < n; ++j) dst[(o * n + j) * inner + i] = j == best ? T(1) : T(0);
      }
    return Status::Ok();
  });
}

// LRN across channels (axis 1): y = x / (bias + alpha / size * sum x^2)^beta
// over the window [c - (size - 1) / 2, c + ceil((size - 1) / 2)].
Status RunLRN(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  KILN_RETURN_IF_ERROR(NeedFloat(op, x));
  if (x.dimensions() < 2) return InvalidArgument("LRN: input must be [N, C, ...], is %s", ShapeToString(x.shape()).c_str());
  auto* p = op.params<fb::LrnParams>();
  const int64_t size = p ? p->size() : 0;
  if (size < 1) return InvalidArgument("LRN: size must be positive, is %lld", static_cast<long long>(size));
  const double alpha = p->alpha(), beta = p->beta(), bias = p->bias();
  int64_t outer, c, inner;
  AroundAxis(x.shape(), 1, &outer, &c, &inner);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  return WithFloat(x, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* src = x.host<T>();
    T* dst = out[0]->host<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t i = 0; i < inner; ++i) {
          double sq = 0;
          for (int64_t j = std::max<int64_t>(0, k - lo); j <= std::min(c - 1, k + hi); ++j) {
            double v = src[(o * c + j) * inner + i];
            sq += v * v;
          }
          const int64_t at = (o * c + k) * inner + i;
          dst[at] = static_cast<T>(src[at] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
        }
    return Status::Ok();
  });
}

// MeanVarianceNormalization: (x - mean) / sqrt(var) over `axes` (default
// [0, 2, 3]), var = E[x^2] - E[x]^2, with ONNX's 1e-9 added to the
// deviation.
Status RunMeanVarianceNormalization(const GraphOp& op, const std::vector<Tensor*>& in,
                                    const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  KILN_RETURN_IF_ERROR(NeedFloat(op, x));
  const int rank = x.dimensions();
  auto* p = op.params<fb::AxesParams>();
  std::vector<int64_t> axes = p && p->axes() ? ToI64(p->axes()) : std::vector<int64_t>{0, 2, 3};
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int ax, NormalizeAxis(a, rank), "MeanVarianceNormalization");
    reduced[static_cast<size_t>(ax)] = true;
  }
  // Group of element i: its coordinates on the kept dims, flattened.
  const std::vector<int64_t>& shape = x.shape();
  int64_t groups = 1;
  for (int d = 0; d < rank; ++d)
    if (!reduced[static_cast<size_t>(d)]) groups *= shape[static_cast<size_t>(d)];
  const int64_t n = x.elementCount();
  std::vector<int64_t> group(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, g = 0, mul = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t len = shape[static_cast<size_t>(d)], coord = rem % len;
      rem /= len;
      if (!reduced[static_cast<size_t>(d)]) {
        g += coord * mul;
        mul *= len;
      }
    }
    group[static_cast<size_t>(i)] = g;
  }
  std::vector<double> sum(static_cast<size_t>(groups), 0), sq(static_cast<size_t>(groups), 0);
  const double count = groups ? static_cast<double>(n) / static_cast<double>(groups) : 1;
  return WithFloat(x, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* src = x.host<T>();
    T* dst = out[0]->host<T>();
    for (int64_t i = 0; i < n; ++i) {
      sum[static_cast<size_t>(group[static_cast<size_t>(i)])] += src[i];
      sq[static_cast<size_t>(group[static_cast<size_t>(i)])] += static_cast<double>(src[i]) * src[i];
    }
    for (int64_t i = 0; i < n; ++i) {
      const size_t g = static_cast<size_t>(group[static_cast<size_t>(i)]);
      const double mean = sum[g] / count, var = std::max(0.0, sq[g] / count - mean * mean);
      dst[i] = static_cast<T>((src[i] - mean) / (std::sqrt(var) + 1e-9));
    }
    return Status::Ok();
  });
}

// NegativeLogLikelihoodLoss on log-probabilities lp [N, C, d...] (for
// SoftmaxCrossEntropyLoss, the log-softmax of the scores, also output 1).
template <typename T>
Status NllLoss(const GraphOp& op, const T* lp, const Tensor& target, const Tensor* weight, const std::vector<int64_t>& shape,
               Tensor& loss) {
  auto* p = op.params<fb::LossParams>();
  const fb::LossReduction red = p ? p->reduction() : fb::LossReduction::Mean;
  const bool has_ignore = p && p->has_ignore_index();
  const int64_t ignore = p ? p->ignore_index() : 0;
  const int64_t n = shape[0], c = shape[1];
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  std::vector<double> per(static_cast<size_t>(n * inner));
  double total = 0, wsum = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t at = b * inner + i;
      const int64_t t = target.dtype() == fb::DataType::I32 ? target.host<int32_t>()[at] : target.host<int64_t>()[at];
      if (has_ignore && t == ignore) {
        per[static_cast<size_t>(at)] = 0;
        continue;
      }
      if (t < 0 || t >= c)
        return InvalidArgument("%s: target %lld is out of range for %lld classes", op.typeName(),
                               static_cast<long long>(t), static_cast<long long>(c));
      const double w = weight ? LoadDouble(weight->hostData(), weight->dtype(), t) : 1.0;
      const double l = -static_cast<double>(lp[(b * c + t) * inner + i]) * w;
      per[static_cast<size_t>(at)] = l;
      total += l;
      wsum += w;
    }
  T* y = loss.host<T>();
  switch (red) {
    case fb::LossReduction::None:
      for (size_t k = 0; k < per.size(); ++k) y[k] = static_cast<T>(per[k]);
      break;
    case fb::LossReduction::Sum: y[0] = static_cast<T>(total); break;
    case fb::LossReduction::Mean: y[0] = static_cast<T>(wsum == 0 ? 0.0 : total / wsum); break;
  }
  return Status::Ok();
}

Status RunLoss(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  KILN_RETURN_IF_ERROR(NeedFloat(op, x));
  const Tensor* weight = in.size() > 2 ? in[2] : nullptr;
  return WithFloat(x, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (op.type == fb::OpType::NegativeLogLikelihoodLoss) return NllLoss<T>(op, x.host<T>(), *in[1], weight, x.shape(), *out[0]);
    // log-softmax over axis 1, into output 1 when it is asked for.
    std::vector<T> own;
    T* lp = nullptr;
    if (out.size() > 1 && out[1]) {
      lp = out[1]->host<T>();
    } else {
      own.resize(static_cast<size_t>(x.elementCount()));
      lp = own.data();
    }
    int64_t outer, c, inner;
    AroundAxis(x.shape(), 1, &outer, &c, &inner);
    const T* s = x.host<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < c; ++j) mx = std::max(mx, static_cast<double>(s[(o * c + j) * inner + i]));
        for (int64_t j = 0; j < c; ++j) sum += std::exp(s[(o * c + j) * inner + i] - mx);
        const double lse = mx + std::log(sum);
        for (int64_t j = 0; j < c; ++j) lp[(o * c + j) * inner + i] = static_cast<T>(s[(o * c + j) * inner + i] - lse);
      }
    return NllLoss<T>(op, lp, *in[1], weight, x.shape(), *out[0]);
  });
}

}  // namespace

KILN_HOST_FN_FACTORY(Hardmax)
KILN_HOST_FN_FACTORY(LRN)
KILN_HOST_FN_FACTORY(MeanVarianceNormalization)
KILN_HOST_FN_FACTORY(Loss)

}  // namespace kiln
