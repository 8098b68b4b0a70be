// Host kernels: elementwise ops. Unary ops (f32, f64; integers where ONNX
// defines them), broadcasting binary ops (every arithmetic type), variadic
// Max/Min/Sum/Mean, comparisons, logic, IsNaN/IsInf, Where, Cast.
// All tolerate out == input 0 (the session runs them in place).
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>

#include "broadcast.h"
#include "elements.h"
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

template <typename T, typename F>
void Map(ThreadPool& pool, const Tensor& in, Tensor& out, F f) {
  const T* x = in.host<T>();
  T* y = out.host<T>();
  pool.parallelFor(in.elementCount(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = f(x[i]);
  }, 16384);
}

// min(max(g, 0), 1) by comparisons (std::fmin/fmax are libm calls here);
// NaN gives 0.
template <typename T>
inline T Clamp01(T g) { return g > T(0) ? (g < T(1) ? g : T(1)) : T(0); }

// log(1 + e^v) without overflow for large v.
template <typename T>
inline T Softplus(T v) { return v > T(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); }

// A scalar bound given as input i (Clip's min and max), or `fallback`.
double ScalarInput(const std::vector<Tensor*>& in, size_t i, double fallback) {
  if (i >= in.size() || !in[i] || in[i]->elementCount() < 1) return fallback;
  return LoadDouble(in[i]->hostData(), in[i]->dtype(), 0);
}

// The unary ops on integers: those ONNX defines for them.
template <typename T>
Status UnaryInt(const GraphOp& op, ThreadPool& p, const Tensor& x, Tensor& y, const std::vector<Tensor*>& in) {
  using U = WrapType<T>;
  switch (op.type) {
    case fb::OpType::Neg: Map<T>(p, x, y, [](T v) { return static_cast<T>(U(0) - static_cast<U>(v)); }); break;
    case fb::OpType::Abs:
      Map<T>(p, x, y, [](T v) { return v < T(0) ? static_cast<T>(U(0) - static_cast<U>(v)) : v; });
      break;
    case fb::OpType::Sign: Map<T>(p, x, y, [](T v) { return static_cast<T>((v > T(0)) - (v < T(0))); }); break;
    case fb::OpType::Relu: Map<T>(p, x, y, [](T v) { return v > T(0) ? v : T(0); }); break;
    case fb::OpType::Ceil:
    case fb::OpType::Floor:
    case fb::OpType::Round: Map<T>(p, x, y, [](T v) { return v; }); break;
    case fb::OpType::Clip: {
      auto* prm = op.params<fb::ClipParams>();
      const T lo = FromDouble<T>(ScalarInput(in, 1, prm && std::isfinite(prm->min()) ? prm->min() : -1e300));
      const T hi = FromDouble<T>(ScalarInput(in, 2, prm && std::isfinite(prm->max()) ? prm->max() : 1e300));
      Map<T>(p, x, y, [lo, hi](T v) { return v < lo ? lo : (v > hi ? hi : v); });
      break;
    }
    default: return Unsupported("host %s supports floating-point inputs, not %s", op.typeName(), DataTypeName(x.dtype()));
  }
  return Status::Ok();
}

// The unary ops on f32 and f64.
template <typename T>
Status UnaryFloat(const GraphOp& op, ThreadPool& p, const Tensor& x, Tensor& y, const std::vector<Tensor*>& in) {
  switch (op.type) {
    // The parameter-free ops: one row each in unary_math.inc.
#define KILN_HOST_UNARY(Op, Expr) \
  case fb::OpType::Op:            \
    Map<T>(p, x, y, [](T v) { return static_cast<T>(Expr); }); \
    break;
#include "unary_math.inc"
#undef KILN_HOST_UNARY
    case fb::OpType::LeakyRelu: {
      auto* prm = op.params<fb::LeakyReluParams>();
      T a = prm ? prm->alpha() : T(0.01);
      Map<T>(p, x, y, [a](T v) { return v >= T(0) ? v : a * v; });
      break;
    }
    case fb::OpType::Clip: {
      auto* prm = op.params<fb::ClipParams>();
      T lo = static_cast<T>(ScalarInput(in, 1, prm ? prm->min() : -INFINITY));
      T hi = static_cast<T>(ScalarInput(in, 2, prm ? prm->max() : INFINITY));
      Map<T>(p, x, y, [lo, hi](T v) { return v < lo ? lo : (v > hi ? hi : v); });
      break;
    }
    case fb::OpType::Sigmoid: {
      if constexpr (std::is_same<T, float>::value) {
        const float* xs = x.host<float>();
        float* ys = y.host<float>();
        p.parallelFor(x.elementCount(), [&](int64_t b, int64_t e) { SigmoidF32(xs + b, ys + b, e - b); }, 16384);
      } else {
        Map<T>(p, x, y, [](T v) { return T(1) / (T(1) + std::exp(-v)); });
      }
      break;
    }
    case fb::OpType::HardSigmoid: {
      auto* prm = op.params<fb::HardSigmoidParams>();
      T a = prm ? prm->alpha() : T(0.2), b = prm ? prm->beta() : T(0.5);
      Map<T>(p, x, y, [a, b](T v) { return Clamp01(a * v + b); });
      break;
    }
    case fb::OpType::Elu: {
      auto* prm = op.params<fb::EluParams>();
      T a = prm ? prm->alpha() : T(1);
      Map<T>(p, x, y, [a](T v) { return v > T(0) ? v : a * (std::exp(v) - T(1)); });
      break;
    }
    case fb::OpType::Celu: {
      auto* prm = op.params<fb::EluParams>();
      T a = prm ? prm->alpha() : T(1);
      Map<T>(p, x, y, [a](T v) { return v > T(0) ? v : a * (std::exp(v / a) - T(1)); });
      break;
    }
    case fb::OpType::ThresholdedRelu: {
      auto* prm = op.params<fb::EluParams>();
      T a = prm ? prm->alpha() : T(1);
      Map<T>(p, x, y, [a](T v) { return v > a ? v : T(0); });
      break;
    }
    case fb::OpType::Selu: {
      auto* prm = op.params<fb::SeluParams>();
      T a = prm ? prm->alpha() : T(1.67326319), g = prm ? prm->gamma() : T(1.05070102);
      Map<T>(p, x, y, [a, g](T v) { return g * (v > T(0) ? v : a * (std::exp(v) - T(1))); });
      break;
    }
    case fb::OpType::Shrink: {
      auto* prm = op.params<fb::ShrinkParams>();
      T bias = prm ? prm->bias() : T(0), l = prm ? prm->lambd() : T(0.5);
      Map<T>(p, x, y, [bias, l](T v) { return v < -l ? v + bias : (v > l ? v - bias : T(0)); });
      break;
    }
    case fb::OpType::Gelu: {
      auto* prm = op.params<fb::GeluParams>();
      if (prm && prm->approximate() == fb::GeluApproximation::Tanh)
        Map<T>(p, x, y, [](T v) {
          return T(0.5) * v * (T(1) + std::tanh(T(0.7978845608028654) * (v + T(0.044715) * v * v * v)));
        });
      else
        Map<T>(p, x, y, [](T v) { return T(0.5) * v * (T(1) + std::erf(v * T(0.7071067811865476))); });
      break;
    }
    default: return Internal("RunUnary: %s", op.typeName());
  }
  return Status::Ok();
}

Status RunUnary(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  ThreadPool& p = be.pool();
  if (op.type == fb::OpType::Identity) {
    if (x.isContainer()) return y.copyFromHostTensor(x);  // a sequence's elements or an optional's value, shared
    if (x.hostData() != y.hostData()) std::memcpy(y.hostData(), x.hostData(), x.byteSize());
    return Status::Ok();
  }
  if (op.type == fb::OpType::Not) {
    const uint8_t* a = x.host<uint8_t>();
    uint8_t* r = y.host<uint8_t>();
    for (int64_t i = 0; i < x.elementCount(); ++i) r[i] = !a[i];
    return Status::Ok();
  }
  switch (x.dtype()) {
    case fb::DataType::F32: return UnaryFloat<float>(op, p, x, y, in);
    case fb::DataType::F64: return UnaryFloat<double>(op, p, x, y, in);
    case fb::DataType::BOOL: break;
    default:
      if (!IsFloating(x.dtype()))
        return VisitDataType(x.dtype(), [&](auto tag) -> Status {
          using T = decltype(tag);
          if constexpr (std::is_integral<T>::value) return UnaryInt<T>(op, p, x, y, in);
          return Internal("RunUnary");
        });
  }
  return Unsupported("host %s does not support %s", op.typeName(), DataTypeName(x.dtype()));
}

// IsNaN and IsInf.
Status RunToBool(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  uint8_t* r = out[0]->host<uint8_t>();
  auto* prm = op.params<fb::IsInfParams>();
  const bool pos = !prm || prm->detect_positive(), neg = !prm || prm->detect_negative();
  const bool nan = op.type == fb::OpType::IsNaN;
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    double v = LoadDouble(x.hostData(), x.dtype(), i);
    r[i] = nan ? v != v : ((pos && v == INFINITY) || (neg && v == -INFINITY));
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
// signed overflow is undefined in C++. x / 0 and x % 0 are 0, and MIN / -1
// wraps to MIN instead of trapping (SIGFPE on x86) on a hostile model.
template <typename T, bool = std::is_integral<T>::value>
struct Wrapping {
  static T add(T u, T v) { return u + v; }
  static T sub(T u, T v) { return u - v; }
  static T mul(T u, T v) { return u * v; }
  static T div(T u, T v) { return u / v; }
  // Mod: fmod (the dividend's sign) or, without it, the divisor's sign.
  static T mod(T u, T v, bool fmod) {
    T r = std::fmod(u, v);
    if (!fmod && r != 0 && ((r < 0) != (v < 0))) r += v;
    return r;
  }
};
template <typename T>
struct Wrapping<T, true> {
  using U = WrapType<T>;
  static T add(T u, T v) { return static_cast<T>(static_cast<U>(static_cast<U>(u) + static_cast<U>(v))); }
  static T sub(T u, T v) { return static_cast<T>(static_cast<U>(static_cast<U>(u) - static_cast<U>(v))); }
  static T mul(T u, T v) { return static_cast<T>(static_cast<U>(static_cast<U>(u) * static_cast<U>(v))); }
  static T div(T u, T v) { return v == 0 ? T(0) : std::is_signed<T>::value && v == T(-1) ? sub(T(0), u) : T(u / v); }
  static T mod(T u, T v, bool fmod) {
    if (v == 0 || (std::is_signed<T>::value && v == T(-1))) return T(0);
    T r = static_cast<T>(u % v);
    if (!fmod && r != 0 && ((r < 0) != (v < 0))) r = static_cast<T>(r + v);
    return r;
  }
};

// Bit shifts of unsigned integers; a shift by the type's width or more is 0.
template <typename T>
T Shift(T u, T v, bool left) {
  if (v >= T(sizeof(T) * 8)) return T(0);
  using W = WrapType<T>;  // u16 << 15 promoted to int would overflow
  return left ? static_cast<T>(static_cast<W>(u) << v) : static_cast<T>(u >> v);
}

template <typename T>
Status Arith(const GraphOp& op, ThreadPool& p, const Tensor& a, const Tensor& b, Tensor& y) {
  using W = Wrapping<T>;
  switch (op.type) {
    case fb::OpType::Sum:
    case fb::OpType::Mean:
    case fb::OpType::Add: Binary<T, T>(p, a, b, y, [](T u, T v) { return W::add(u, v); }); break;
    case fb::OpType::Sub: Binary<T, T>(p, a, b, y, [](T u, T v) { return W::sub(u, v); }); break;
    case fb::OpType::Mul: Binary<T, T>(p, a, b, y, [](T u, T v) { return W::mul(u, v); }); break;
    case fb::OpType::Div: Binary<T, T>(p, a, b, y, [](T u, T v) { return W::div(u, v); }); break;
    case fb::OpType::Max: Binary<T, T>(p, a, b, y, [](T u, T v) { return u >= v || u != u ? u : v; }); break;
    case fb::OpType::Min: Binary<T, T>(p, a, b, y, [](T u, T v) { return u <= v || u != u ? u : v; }); break;
    case fb::OpType::Mod: {
      auto* prm = op.params<fb::ModParams>();
      const bool fmod = prm && prm->fmod();
      if (std::is_floating_point<T>::value && !fmod)
        return InvalidArgument("Mod of floating-point inputs needs fmod=1 (ONNX)");
      Binary<T, T>(p, a, b, y, [fmod](T u, T v) { return W::mod(u, v, fmod); });
      break;
    }
    case fb::OpType::BitShift: {
      if constexpr (std::is_unsigned<T>::value) {
        auto* prm = op.params<fb::BitShiftParams>();
        const bool left = prm && prm->left();
        Binary<T, T>(p, a, b, y, [left](T u, T v) { return Shift(u, v, left); });
        break;
      }
      return Unsupported("BitShift needs unsigned integers, has %s", DataTypeName(a.dtype()));
    }
    case fb::OpType::Equal: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u == v); }); break;
    case fb::OpType::Less: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u < v); }); break;
    case fb::OpType::Greater: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u > v); }); break;
    case fb::OpType::LessOrEqual: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u <= v); }); break;
    case fb::OpType::GreaterOrEqual: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u >= v); }); break;
    case fb::OpType::And: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u && v); }); break;
    case fb::OpType::Or: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(u || v); }); break;
    case fb::OpType::Xor: Binary<T, uint8_t>(p, a, b, y, [](T u, T v) { return uint8_t(!u != !v); }); break;
    default: return Internal("Arith: %s", op.typeName());
  }
  return Status::Ok();
}

bool IsLogic(fb::OpType t) { return t == fb::OpType::And || t == fb::OpType::Or || t == fb::OpType::Xor; }

Status ArithAnyType(const GraphOp& op, ThreadPool& p, const Tensor& a, const Tensor& b, Tensor& y) {
  const fb::DataType t = a.dtype();
  // And, Or, Xor take any type (nonzero is true; ONNX declares them on bool).
  if (t == fb::DataType::BOOL && !IsLogic(op.type) && op.type != fb::OpType::Equal)
    return Unsupported("host %s does not take bool inputs", op.typeName());
  return VisitDataType(t, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic<T>::value) {
      return Arith<T>(op, p, a, b, y);
    } else {
      return Unsupported("host %s does not support %s", op.typeName(), DataTypeName(t));
    }
  });
}

// Pow: the exponent may have its own type; computed in double, the result
// converted to the base's type (ONNX: the output has the base's type).
Status RunPow(ThreadPool& p, const Tensor& a, const Tensor& b, Tensor& y) {
  if (a.dtype() == fb::DataType::F32 && b.dtype() == fb::DataType::F32) {
    Binary<float, float>(p, a, b, y, [](float u, float v) { return std::pow(u, v); });
    return Status::Ok();
  }
  if (!IsArithmetic(a.dtype()) || !IsArithmetic(b.dtype()))
    return Unsupported("host Pow does not support %s ^ %s", DataTypeName(a.dtype()), DataTypeName(b.dtype()));
  const void* pa = a.hostData();
  const void* pb = b.hostData();
  void* py = y.hostData();
  const fb::DataType ta = a.dtype(), tb = b.dtype();
  ForEachBroadcastRow<2>(p, y.shape(), {&a.shape(), &b.shape()}, [&](const BroadcastRow<2>& r) {
    for (int64_t i = 0; i < r.count; ++i) {
      double u = LoadDouble(pa, ta, r.in[0] + i * r.stride[0]);
      double v = LoadDouble(pb, tb, r.in[1] + i * r.stride[1]);
      StoreDouble(py, ta, r.out + i, std::pow(u, v));
    }
  });
  return Status::Ok();
}

Status RunBinary(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be);

// f16 and bf16: widened to f32, computed, the result narrowed back (a
// comparison writes its bools directly).
Status BinaryViaF32(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  std::vector<std::vector<float>> wide(in.size());
  std::vector<std::unique_ptr<Tensor>> wrapped;
  std::vector<Tensor*> args;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k]->dtype() != in[0]->dtype())
      return InvalidArgument("%s: input %zu is %s, input 0 %s", op.typeName(), k, DataTypeName(in[k]->dtype()),
                             DataTypeName(in[0]->dtype()));
    wide[k].resize(static_cast<size_t>(in[k]->elementCount()));
    for (int64_t i = 0; i < in[k]->elementCount(); ++i)
      wide[k][static_cast<size_t>(i)] = static_cast<float>(LoadDouble(in[k]->hostData(), in[k]->dtype(), i));
    wrapped.push_back(Tensor::wrap(in[k]->shape(), fb::DataType::F32, wide[k].data()));
    args.push_back(wrapped.back().get());
  }
  Tensor& y = *out[0];
  if (y.dtype() == fb::DataType::BOOL) return RunBinary(op, args, out, be);
  std::vector<float> result(static_cast<size_t>(y.elementCount()));
  auto ry = Tensor::wrap(y.shape(), fb::DataType::F32, result.data());
  std::vector<Tensor*> outs = {ry.get()};
  KILN_RETURN_IF_ERROR(RunBinary(op, args, outs, be));
  for (int64_t i = 0; i < y.elementCount(); ++i) StoreDouble(y.hostData(), y.dtype(), i, result[static_cast<size_t>(i)]);
  return Status::Ok();
}

Status RunBinary(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  ThreadPool& p = be.pool();
  Tensor& y = *out[0];
  const fb::DataType t0 = in[0]->dtype();
  if ((t0 == fb::DataType::F16 || t0 == fb::DataType::BF16) && op.type != fb::OpType::Pow) return BinaryViaF32(op, in, out, be);
  if (op.type == fb::OpType::Pow) return RunPow(p, *in[0], *in[1], y);
  if (op.type == fb::OpType::PRelu) {
    KILN_RETURN_IF_ERROR(NeedF32(*in[0], op));
    KILN_RETURN_IF_ERROR(NeedF32(*in[1], op));
    Binary<float, float>(p, *in[0], *in[1], y, [](float u, float v) { return u >= 0.f ? u : u * v; });
    return Status::Ok();
  }
  const bool mean = op.type == fb::OpType::Mean;
  if (mean && !IsFloating(in[0]->dtype()))
    return InvalidArgument("Mean needs floating-point inputs, has %s", DataTypeName(in[0]->dtype()));
  if (in.size() == 1) {  // Max / Min / Sum / Mean of one input
    if (in[0]->hostData() != y.hostData()) std::memcpy(y.hostData(), in[0]->hostData(), y.byteSize());
    return Status::Ok();
  }
  // Variadic ops fold into the output: y = in0 op in1, then y = y op in_k,
  // which needs y's shape to be that of in0 op in1 when there are more.
  if (in.size() > 2) {
    KILN_ASSIGN_OR_RETURN(auto s01, BroadcastShapes(in[0]->shape(), in[1]->shape()));
    if (s01 != y.shape()) return Unsupported("host %s: broadcasting beyond the first two inputs", op.typeName());
  }
  KILN_RETURN_IF_ERROR(ArithAnyType(op, p, *in[0], *in[1], y));
  for (size_t k = 2; k < in.size(); ++k) KILN_RETURN_IF_ERROR(ArithAnyType(op, p, y, *in[k], y));
  if (mean) {
    const double n = static_cast<double>(in.size());
    for (int64_t i = 0; i < y.elementCount(); ++i)
      StoreDouble(y.hostData(), y.dtype(), i, LoadDouble(y.hostData(), y.dtype(), i) / n);
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
  // Integers to integers exactly (i64 and u64 beyond 2^53 included), with
  // the wrap-around of a C++ conversion (ONNX leaves overflow undefined);
  // everything else through double, saturating to integers.
  const bool int_to_int = !IsFloating(x.dtype()) && x.dtype() != fb::DataType::BOOL && !IsFloating(y.dtype()) &&
                          y.dtype() != fb::DataType::BOOL;
  if (int_to_int) {
    VisitDataType(x.dtype(), [&](auto from) {
      using S = decltype(from);
      return VisitDataType(y.dtype(), [&](auto to) {
        using D = decltype(to);
        if constexpr (std::is_integral<S>::value && std::is_integral<D>::value)
          for (int64_t i = 0; i < n; ++i) static_cast<D*>(dst)[i] = static_cast<D>(static_cast<const S*>(src)[i]);
        return 0;
      });
    });
    return Status::Ok();
  }
  for (int64_t i = 0; i < n; ++i) StoreDouble(dst, y.dtype(), i, LoadDouble(src, x.dtype(), i));
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
StatusOr<std::unique_ptr<Execution>> CreateHostToBool(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunToBool);
}
StatusOr<std::unique_ptr<Execution>> CreateHostWhere(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunWhere);
}
StatusOr<std::unique_ptr<Execution>> CreateHostCast(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunCast);
}

}  // namespace kiln
