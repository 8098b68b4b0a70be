// Host kernels: elementwise ops. Unary float ops, broadcasting binary ops
// (f32, i32, i64), variadic Max/Min, comparisons, logic, Where, Cast.
// All tolerate out == input 0 (the session runs them in place).
#include <cmath>
#include <cstring>
#include <type_traits>

#include "broadcast.h"
#include "half.h"
#include "host_backend.h"
#include "ops/shape_inference.h"
#include "vec_math.h"

namespace kiln {
namespace {

Status NeedF32(const Tensor& t, const GraphOp& op) {
  if (t.dtype() != fb::DataType::F32)
    return Unsupported("host %s supports f32, not %s", op.typeName(), DataTypeName(t.dtype()));
  return Status::Ok();
}

// ---- unary ----

template <typename F>
void MapF32(ThreadPool& pool, const Tensor& in, Tensor& out, F f) {
  const float* x = in.host<float>();
  float* y = out.host<float>();
  pool.parallelFor(in.elementCount(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = f(x[i]);
  }, 16384);
}

// min(max(g, 0), 1) by comparisons (std::fmin/fmax are libm calls here);
// NaN gives 0.
inline float Clamp01(float g) { return g > 0.f ? (g < 1.f ? g : 1.f) : 0.f; }

float ScalarInput(const std::vector<Tensor*>& in, size_t i, float fallback) {
  if (i >= in.size() || !in[i]) return fallback;
  return in[i]->dtype() == fb::DataType::F32 ? in[i]->host<float>()[0] : fallback;
}

Status RunUnary(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  ThreadPool& p = be.pool();
  if (op.type == fb::OpType::Identity) {
    if (x.hostData() != y.hostData()) std::memcpy(y.hostData(), x.hostData(), x.byteSize());
    return Status::Ok();
  }
  if (op.type == fb::OpType::Not) {
    const uint8_t* a = x.host<uint8_t>();
    uint8_t* r = y.host<uint8_t>();
    for (int64_t i = 0; i < x.elementCount(); ++i) r[i] = !a[i];
    return Status::Ok();
  }
  if (op.type == fb::OpType::Neg || op.type == fb::OpType::Abs) {
    if (x.dtype() == fb::DataType::I64 || x.dtype() == fb::DataType::I32) {
      bool neg = op.type == fb::OpType::Neg;
      for (int64_t i = 0; i < x.elementCount(); ++i) {
        if (x.dtype() == fb::DataType::I64) {
          int64_t v = x.host<int64_t>()[i];
          y.host<int64_t>()[i] = neg ? -v : (v < 0 ? -v : v);
        } else {
          int32_t v = x.host<int32_t>()[i];
          y.host<int32_t>()[i] = neg ? -v : (v < 0 ? -v : v);
        }
      }
      return Status::Ok();
    }
  }
  KILN_RETURN_IF_ERROR(NeedF32(x, op));
  switch (op.type) {
    // The parameter-free ops: one row each in unary_math.inc.
#define KILN_HOST_UNARY(Op, Expr) \
  case fb::OpType::Op:            \
    MapF32(p, x, y, [](float v) { return Expr; }); \
    break;
#include "unary_math.inc"
#undef KILN_HOST_UNARY
    case fb::OpType::LeakyRelu: {
      auto* prm = op.params<fb::LeakyReluParams>();
      float a = prm ? prm->alpha() : 0.01f;
      MapF32(p, x, y, [a](float v) { return v >= 0.f ? v : a * v; });
      break;
    }
    case fb::OpType::Clip: {
      auto* prm = op.params<fb::ClipParams>();
      float lo = ScalarInput(in, 1, prm ? prm->min() : -INFINITY);
      float hi = ScalarInput(in, 2, prm ? prm->max() : INFINITY);
      MapF32(p, x, y, [lo, hi](float v) { return v < lo ? lo : (v > hi ? hi : v); });
      break;
    }
    case fb::OpType::Sigmoid: {
      const float* xs = x.host<float>();
      float* ys = y.host<float>();
      p.parallelFor(x.elementCount(), [&](int64_t b, int64_t e) { SigmoidF32(xs + b, ys + b, e - b); }, 16384);
      break;
    }
    case fb::OpType::HardSigmoid: {
      auto* prm = op.params<fb::HardSigmoidParams>();
      float a = prm ? prm->alpha() : 0.2f, b = prm ? prm->beta() : 0.5f;
      // Comparisons rather than std::fmin/fmax, which are libm calls here.
      MapF32(p, x, y, [a, b](float v) {
        const float g = a * v + b;
        return g > 0.f ? (g < 1.f ? g : 1.f) : 0.f;
      });
      break;
    }
    case fb::OpType::Elu: {
      auto* prm = op.params<fb::EluParams>();
      float a = prm ? prm->alpha() : 1.f;
      MapF32(p, x, y, [a](float v) { return v > 0.f ? v : a * (std::exp(v) - 1.f); });
      break;
    }
    case fb::OpType::Gelu: {
      auto* prm = op.params<fb::GeluParams>();
      if (prm && prm->approximate() == fb::GeluApproximation::Tanh)
        MapF32(p, x, y, [](float v) {
          return 0.5f * v * (1.f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
        });
      else
        MapF32(p, x, y, [](float v) { return 0.5f * v * (1.f + std::erf(v * 0.70710678f)); });
      break;
    }
    default: return Internal("RunUnary: %s", op.typeName());
  }
  return Status::Ok();
}

// ---- binary, broadcasting ----

template <typename T, typename R, typename F>
void Binary(ThreadPool& pool, const Tensor& a, const Tensor& b, Tensor& y, F f) {
  const T* pa = a.host<T>();
  const T* pb = b.host<T>();
  R* py = y.host<R>();
  ForEachBroadcastRow<2>(pool, y.shape(), {&a.shape(), &b.shape()}, [&](const BroadcastRow<2>& r) {
    const T* ra = pa + r.in[0];
    const T* rb = pb + r.in[1];
    R* ry = py + r.out;
    if (r.stride[0] && r.stride[1]) {
      for (int64_t i = 0; i < r.count; ++i) ry[i] = f(ra[i], rb[i]);
    } else if (r.stride[0]) {
      T vb = rb[0];
      for (int64_t i = 0; i < r.count; ++i) ry[i] = f(ra[i], vb);
    } else if (r.stride[1]) {  // e.g. a squeeze-excite scale [N,C,1,1] times [N,C,H,W]
      T va = ra[0];
      for (int64_t i = 0; i < r.count; ++i) ry[i] = f(va, rb[i]);
    } else {
      for (int64_t i = 0; i < r.count; ++i) ry[i] = f(ra[i * r.stride[0]], rb[i * r.stride[1]]);
    }
  });
}

// Integer Add, Sub, Mul and Div wrap around in two's complement (ONNX; the
// Vulkan binary.comp does the same): computed on the unsigned type, since
// signed overflow is undefined in C++. x / 0 is 0 and MIN / -1 wraps to MIN
// instead of trapping (SIGFPE on x86) on a hostile model.
template <typename T, bool = std::is_integral<T>::value>
struct Wrapping {
  static T add(T u, T v) { return u + v; }
  static T sub(T u, T v) { return u - v; }
  static T mul(T u, T v) { return u * v; }
  static T div(T u, T v) { return u / v; }
};
template <typename T>
struct Wrapping<T, true> {
  using U = typename std::make_unsigned<T>::type;
  static T add(T u, T v) { return static_cast<T>(static_cast<U>(static_cast<U>(u) + static_cast<U>(v))); }
  static T sub(T u, T v) { return static_cast<T>(static_cast<U>(static_cast<U>(u) - static_cast<U>(v))); }
  static T mul(T u, T v) { return static_cast<T>(static_cast<U>(static_cast<U>(u) * static_cast<U>(v))); }
  static T div(T u, T v) { return v == 0 ? T(0) : std::is_signed<T>::value && v == T(-1) ? sub(T(0), u) : T(u / v); }
};

template <typename T>
Status Arith(fb::OpType type, ThreadPool& p, const Tensor& a, const Tensor& b, Tensor& y) {
  using W = Wrapping<T>;
  switch (type) {
    case fb::OpType::Add: Binary<T, T>(p, a, b, y, [](T u, T v) { return W::add(u, v); }); break;
    case fb::OpType::Sub: Binary<T, T>(p, a, b, y, [](T u, T v) { return W::sub(u, v); }); break;
    case fb::OpType::Mul: Binary<T, T>(p, a, b, y, [](T u, T v) { return W::mul(u, v); }); break;
    case fb::OpType::Div: Binary<T, T>(p, a, b, y, [](T u, T v) { return W::div(u, v); }); break;
    case fb::OpType::Max: Binary<T, T>(p, a, b, y, [](T u, T v) { return u >= v || u != u ? u : v; }); break;
    case fb::OpType::Min: Binary<T, T>(p, a, b, y, [](T u, T v) { return u <= v || u != u ? u : v; }); break;
    case fb::OpType::Equal: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u == v); }); break;
    case fb::OpType::Less: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u < v); }); break;
    case fb::OpType::Greater: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u > v); }); break;
    case fb::OpType::And: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u && v); }); break;
    default: return Internal("Arith: %s", fb::EnumNameOpType(type));
  }
  return Status::Ok();
}

Status ArithAnyType(const GraphOp& op, ThreadPool& p, const Tensor& a, const Tensor& b, Tensor& y) {
  switch (a.dtype()) {
    case fb::DataType::F32: return Arith<float>(op.type, p, a, b, y);
    case fb::DataType::I32: return Arith<int32_t>(op.type, p, a, b, y);
    case fb::DataType::I64: return Arith<int64_t>(op.type, p, a, b, y);
    case fb::DataType::BOOL:
    case fb::DataType::U8:
      if (op.type == fb::OpType::And || op.type == fb::OpType::Equal) return Arith<uint8_t>(op.type, p, a, b, y);
      break;
    default: break;
  }
  return Unsupported("host %s supports f32, i32 and i64, not %s", op.typeName(), DataTypeName(a.dtype()));
}

Status RunBinary(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  ThreadPool& p = be.pool();
  Tensor& y = *out[0];
  if (op.type == fb::OpType::Pow || op.type == fb::OpType::PRelu) {
    KILN_RETURN_IF_ERROR(NeedF32(*in[0], op));
    KILN_RETURN_IF_ERROR(NeedF32(*in[1], op));
    if (op.type == fb::OpType::Pow)
      Binary<float, float>(p, *in[0], *in[1], y, [](float u, float v) { return std::pow(u, v); });
    else
      Binary<float, float>(p, *in[0], *in[1], y, [](float u, float v) { return u >= 0.f ? u : u * v; });
    return Status::Ok();
  }
  if (in.size() == 1) {  // Max / Min of one input
    if (in[0]->hostData() != y.hostData()) std::memcpy(y.hostData(), in[0]->hostData(), y.byteSize());
    return Status::Ok();
  }
  // Variadic Max/Min fold into the output: y = in0 op in1, then y = y op in_k.
  // When the first pair does not already have y's shape, start from a copy.
  KILN_RETURN_IF_ERROR(ArithAnyType(op, p, *in[0], *in[1], y));
  for (size_t k = 2; k < in.size(); ++k) {
    if (y.shape() != in[0]->shape() && k == 2) {
      // y holds in0 op in1 already broadcast to y's shape only if their
      // broadcast equals y's shape; recompute against the full shape.
      KILN_ASSIGN_OR_RETURN(auto s01, BroadcastShapes(in[0]->shape(), in[1]->shape()));
      if (s01 != y.shape()) return Unsupported("host %s: broadcasting beyond the first two inputs", op.typeName());
    }
    KILN_RETURN_IF_ERROR(ArithAnyType(op, p, y, *in[k], y));
  }
  return Status::Ok();
}

// ---- Where, Cast ----

Status RunWhere(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const uint8_t* c = in[0]->host<uint8_t>();
  const uint8_t* x = in[1]->host<uint8_t>();
  const uint8_t* yv = in[2]->host<uint8_t>();
  uint8_t* r = out[0]->host<uint8_t>();
  size_t es = out[0]->elementSize();
  ForEachBroadcastRow<3>(be.pool(), out[0]->shape(), {&in[0]->shape(), &in[1]->shape(), &in[2]->shape()},
                         [&](const BroadcastRow<3>& row) {
                           for (int64_t i = 0; i < row.count; ++i) {
                             bool cond = c[row.in[0] + i * row.stride[0]] != 0;
                             const uint8_t* src = cond ? x + (row.in[1] + i * row.stride[1]) * es
                                                       : yv + (row.in[2] + i * row.stride[2]) * es;
                             std::memcpy(r + (row.out + i) * es, src, es);
                           }
                         });
  return Status::Ok();
}

double LoadAsDouble(const void* p, fb::DataType t, int64_t i) {
  switch (t) {
    case fb::DataType::F32: return static_cast<const float*>(p)[i];
    case fb::DataType::F16: return HalfToFloat(static_cast<const uint16_t*>(p)[i]);
    case fb::DataType::BF16: return Bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
    case fb::DataType::I32: return static_cast<const int32_t*>(p)[i];
    case fb::DataType::I64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case fb::DataType::I8: return static_cast<const int8_t*>(p)[i];
    case fb::DataType::U8: return static_cast<const uint8_t*>(p)[i];
    case fb::DataType::BOOL: return static_cast<const uint8_t*>(p)[i] != 0;
  }
  return 0;
}

template <typename I>
I SaturatingCast(double v) {
  if (v != v) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

Status RunCast(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  const void* src = x.hostData();
  void* dst = y.hostData();
  int64_t n = x.elementCount();
  if (x.dtype() == y.dtype()) {
    if (src != dst) std::memcpy(dst, src, x.byteSize());
    return Status::Ok();
  }
  bool int_to_int = (x.dtype() == fb::DataType::I64 || x.dtype() == fb::DataType::I32) &&
                    (y.dtype() == fb::DataType::I64 || y.dtype() == fb::DataType::I32);
  for (int64_t i = 0; i < n; ++i) {
    if (int_to_int) {  // exact for all of i64's range
      int64_t v = x.dtype() == fb::DataType::I64 ? static_cast<const int64_t*>(src)[i] : static_cast<const int32_t*>(src)[i];
      if (y.dtype() == fb::DataType::I64)
        static_cast<int64_t*>(dst)[i] = v;
      else
        static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(v);
      continue;
    }
    double v = LoadAsDouble(src, x.dtype(), i);
    switch (y.dtype()) {
      case fb::DataType::F32: static_cast<float*>(dst)[i] = static_cast<float>(v); break;
      case fb::DataType::F16: static_cast<uint16_t*>(dst)[i] = FloatToHalf(static_cast<float>(v)); break;
      case fb::DataType::BF16: static_cast<uint16_t*>(dst)[i] = FloatToBf16(static_cast<float>(v)); break;
      case fb::DataType::I32: static_cast<int32_t*>(dst)[i] = SaturatingCast<int32_t>(v); break;
      case fb::DataType::I64: static_cast<int64_t*>(dst)[i] = SaturatingCast<int64_t>(v); break;
      case fb::DataType::I8: static_cast<int8_t*>(dst)[i] = SaturatingCast<int8_t>(v); break;
      case fb::DataType::U8: static_cast<uint8_t*>(dst)[i] = SaturatingCast<uint8_t>(v); break;
      case fb::DataType::BOOL: static_cast<uint8_t*>(dst)[i] = v != 0; break;
    }
  }
  (void)be;
  (void)op;
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostUnary(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunUnary);
}
StatusOr<std::unique_ptr<Execution>> CreateHostBinary(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunBinary);
}
StatusOr<std::unique_ptr<Execution>> CreateHostWhere(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunWhere);
}
StatusOr<std::unique_ptr<Execution>> CreateHostCast(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunCast);
}

}  // namespace kiln
