// Host kernels: ReduceMean/Sum/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp
// (f32 and f64; i32 and i64 for all but L2 and the logs) and ArgMax/ArgMin (f32, i32, i64; output i64).
// Reduce axes may be a value input: they are resolved at onResize.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "host_backend.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {
namespace {

bool IsReduceType(fb::DataType t) {
  return t == fb::DataType::F32 || t == fb::DataType::F64 || t == fb::DataType::I32 || t == fb::DataType::I64;
}

// The reductions whose result is only meaningful in floating point.
bool FloatOnly(fb::OpType t) {
  return t == fb::OpType::ReduceL2 || t == fb::OpType::ReduceLogSum || t == fb::OpType::ReduceLogSumExp;
}

template <typename T>
struct Acc {
  using type = double;
};
template <>
struct Acc<int64_t> {
  using type = int64_t;
};
template <>
struct Acc<int32_t> {
  using type = int64_t;
};

// Integer sums and products wrap around (two's complement), as
// onnxruntime's do; done on the signed type they were undefined behaviour
// (the fuzzer's ReduceSum of two large int64 values).
template <typename A>
A WrapAdd(A a, A b) {
  if constexpr (std::is_integral<A>::value) {
    using U = typename std::make_unsigned<A>::type;
    return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
template <typename A>
A WrapMul(A a, A b) {
  if constexpr (std::is_integral<A>::value) {
    using U = typename std::make_unsigned<A>::type;
    return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}
template <typename A>
A WrapAbs(A v) {
  if constexpr (std::is_integral<A>::value) {
    using U = typename std::make_unsigned<A>::type;
    return v < A(0) ? static_cast<A>(U(0) - static_cast<U>(v)) : v;
  } else {
    return v < A(0) ? -v : v;
  }
}
// A double into the accumulator: integers saturate (NaN to 0) where a plain
// cast of an out-of-range value is undefined.
template <typename A>
A FromDouble(double v) {
  if constexpr (std::is_integral<A>::value) {
    if (!(v == v)) return A(0);
    if (v >= static_cast<double>(std::numeric_limits<A>::max())) return std::numeric_limits<A>::max();
    if (v <= static_cast<double>(std::numeric_limits<A>::lowest())) return std::numeric_limits<A>::lowest();
    return static_cast<A>(v);
  } else {
    return static_cast<A>(v);
  }
}

class ReduceExecution final : public Execution {
 public:
  ReduceExecution(HostBackend* b, const GraphOp& op) : Execution(b), op_(op) {}

  Status onResize(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    if (!IsReduceType(x.dtype()) || (FloatOnly(op_.type) && x.dtype() != fb::DataType::F32 && x.dtype() != fb::DataType::F64))
      return Unsupported("host %s does not support %s", op_.typeName(), DataTypeName(x.dtype()));
    KILN_ASSIGN_OR_RETURN(ReduceSpec s, ResolveReduce(op_, x.shape(), TensorValues(in)));
    noop_ = s.noop;
    // Kept dims (outer loop, in output order) and reduced dims (inner loop),
    // each merged where contiguous.
    const std::vector<int64_t> st = ContiguousStrides(x.shape());
    keep_shape_.clear();
    keep_stride_.clear();
    red_shape_.clear();
    red_stride_.clear();
    for (size_t d = 0; d < x.shape().size(); ++d) {
      int64_t n = x.shape()[d];
      if (n == 1) continue;
      auto& sh = s.reduce[d] ? red_shape_ : keep_shape_;
      auto& sd = s.reduce[d] ? red_stride_ : keep_stride_;
      if (!sh.empty() && sd.back() == st[d] * n) {
        sh.back() *= n;
        sd.back() = st[d];
      } else {
        sh.push_back(n);
        sd.push_back(st[d]);
      }
    }
    red_count_ = 1;
    for (int64_t n : red_shape_) red_count_ *= n;
    for (size_t d = 0; d < x.shape().size(); ++d)
      if (s.reduce[d] && x.shape()[d] == 0) red_count_ = 0;
    if (red_shape_.empty()) {  // nothing (or only unit dims) reduced
      red_shape_.push_back(red_count_);
      red_stride_.push_back(1);
    }
    return Status::Ok();
  }

  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    Tensor& y = *out[0];
    if (noop_) {
      if (x.hostData() != y.hostData() && y.byteSize() > 0) std::memcpy(y.hostData(), x.hostData(), y.byteSize());
      return Status::Ok();
    }
    switch (x.dtype()) {
      case fb::DataType::F32: run<float>(x, y); break;
      case fb::DataType::F64: run<double>(x, y); break;
      case fb::DataType::I32: run<int32_t>(x, y); break;
      case fb::DataType::I64: run<int64_t>(x, y); break;
      default: return Unsupported("host %s does not support %s", op_.typeName(), DataTypeName(x.dtype()));
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  void run(const Tensor& x, Tensor& y) {
    using A = typename Acc<T>::type;
    const T* src = x.host<T>();
    T* dst = y.host<T>();
    const int64_t total = y.elementCount();
    const fb::OpType type = op_.type;
    const size_t kr = keep_shape_.size(), rr = red_shape_.size();
    const int64_t inner = red_shape_.back(), istride = red_stride_.back();
    static_cast<HostBackend*>(backend())->pool().parallelFor(total, [&](int64_t b, int64_t e) {
      std::vector<int64_t> ridx(rr, 0);
      for (int64_t o = b; o < e; ++o) {
        int64_t base = 0, rem = o;
        for (size_t d = kr; d-- > 0;) {
          base += rem % keep_shape_[d] * keep_stride_[d];
          rem /= keep_shape_[d];
        }
        A acc = type == fb::OpType::ReduceProd ? A(1) : A(0);
        T best = type == fb::OpType::ReduceMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
        if (std::is_floating_point<T>::value && (type == fb::OpType::ReduceMax || type == fb::OpType::ReduceMin))
          best = type == fb::OpType::ReduceMax ? -std::numeric_limits<T>::infinity()
                                               : std::numeric_limits<T>::infinity();
        if (red_count_ > 0) {
          std::fill(ridx.begin(), ridx.end(), 0);
          int64_t off = base;
          const int64_t rows = red_count_ / inner;
          for (int64_t r = 0; r < rows; ++r) {
            const T* p = src + off;
            switch (type) {
              case fb::OpType::ReduceSum:
              case fb::OpType::ReduceMean:
                for (int64_t i = 0; i < inner; ++i) acc = WrapAdd(acc, static_cast<A>(p[i * istride]));
                break;
              case fb::OpType::ReduceProd:
                for (int64_t i = 0; i < inner; ++i) acc = WrapMul(acc, static_cast<A>(p[i * istride]));
                break;
              case fb::OpType::ReduceL2:
              case fb::OpType::ReduceSumSquare:
                for (int64_t i = 0; i < inner; ++i) {
                  const A v = static_cast<A>(p[i * istride]);
                  acc = WrapAdd(acc, WrapMul(v, v));
                }
                break;
              case fb::OpType::ReduceL1:
                for (int64_t i = 0; i < inner; ++i) {
                  acc = WrapAdd(acc, WrapAbs(static_cast<A>(p[i * istride])));
                }
                break;
              case fb::OpType::ReduceLogSum:
                for (int64_t i = 0; i < inner; ++i) acc = WrapAdd(acc, static_cast<A>(p[i * istride]));
                break;
              case fb::OpType::ReduceLogSumExp:
                for (int64_t i = 0; i < inner; ++i)
                  acc = WrapAdd(acc, FromDouble<A>(std::exp(static_cast<double>(p[i * istride]))));
                break;
              case fb::OpType::ReduceMax:
                for (int64_t i = 0; i < inner; ++i) {
                  T v = p[i * istride];
                  if (v > best || v != v) best = v;
                  if (best != best) break;
                }
                break;
              default:  // ReduceMin
                for (int64_t i = 0; i < inner; ++i) {
                  T v = p[i * istride];
                  if (v < best || v != v) best = v;
                  if (best != best) break;
                }
                break;
            }
            for (size_t d = rr - 1; d-- > 0;) {
              off += red_stride_[d];
              if (++ridx[d] < red_shape_[d]) break;
              off -= red_stride_[d] * red_shape_[d];
              ridx[d] = 0;
            }
          }
        }
        T v;
        switch (type) {
          case fb::OpType::ReduceMax:
          case fb::OpType::ReduceMin: v = best; break;
          case fb::OpType::ReduceMean:
            if (std::is_floating_point<T>::value)
              v = FromDouble<T>(static_cast<double>(acc) / static_cast<double>(red_count_));
            else
              v = red_count_ == 0 ? T(0) : static_cast<T>(acc / static_cast<A>(red_count_));
            break;
          case fb::OpType::ReduceL2: v = FromDouble<T>(std::sqrt(static_cast<double>(acc))); break;
          case fb::OpType::ReduceLogSum:
          case fb::OpType::ReduceLogSumExp: v = FromDouble<T>(std::log(static_cast<double>(acc))); break;
          default: v = static_cast<T>(acc); break;
        }
        dst[o] = v;
      }
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, red_count_)));
  }

  const GraphOp& op_;
  bool noop_ = false;
  std::vector<int64_t> keep_shape_, keep_stride_, red_shape_, red_stride_;
  int64_t red_count_ = 1;
};

template <typename T>
void ArgRun(ThreadPool& pool, const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner, bool is_max,
            bool last) {
  pool.parallelFor(outer * inner, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* p = x + (r / inner) * n * inner + r % inner;
      int64_t best = 0;
      T bv = p[0];
      for (int64_t i = 1; i < n; ++i) {
        T v = p[i * inner];
        bool better = is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
        if (better) {
          bv = v;
          best = i;
        }
      }
      y[r] = best;
    }
  }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n)));
}

Status RunArg(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const Tensor& x = *in[0];
  const fb::ArgParams* p = op.params<fb::ArgParams>();
  int axis = p ? p->axis() : 0;
  if (axis < 0) axis += x.dimensions();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < x.dimensions(); ++d) {
    if (d < axis) outer *= x.length(d);
    if (d > axis) inner *= x.length(d);
  }
  const int64_t n = x.length(axis);
  if (n == 0) {
    if (outer * inner > 0) return InvalidArgument("%s over an empty axis %d", op.typeName(), axis);
    return Status::Ok();
  }
  const bool is_max = op.type == fb::OpType::ArgMax, last = p && p->select_last_index();
  int64_t* y = out[0]->host<int64_t>();
  switch (x.dtype()) {
    case fb::DataType::F32: ArgRun(be.pool(), x.host<float>(), y, outer, n, inner, is_max, last); break;
    case fb::DataType::I32: ArgRun(be.pool(), x.host<int32_t>(), y, outer, n, inner, is_max, last); break;
    case fb::DataType::I64: ArgRun(be.pool(), x.host<int64_t>(), y, outer, n, inner, is_max, last); break;
    default: return Unsupported("host %s does not support %s", op.typeName(), DataTypeName(x.dtype()));
  }
  return Status::Ok();
}

// Input 0's dtype where the model fixes it (a graph input or constant); an
// intermediate's dtype is known only after shape inference (F32 here), and
// onResize checks it then.
fb::DataType InputType(const GraphOp& op, const Graph& g) {
  if (op.inputs.empty() || op.inputs[0] < 0) return fb::DataType::F32;
  const GraphTensor& t = g.tensors[static_cast<size_t>(op.inputs[0])];
  return t.producer < 0 ? t.dtype : fb::DataType::F32;
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostReduce(const GraphOp& op, const Graph& g, HostBackend* b) {
  fb::DataType t = InputType(op, g);
  if (!IsReduceType(t) || (op.type == fb::OpType::ReduceL2 && t != fb::DataType::F32))
    return Unsupported("host %s does not support %s", op.typeName(), DataTypeName(t));
  return std::unique_ptr<Execution>(new ReduceExecution(b, op));
}

StatusOr<std::unique_ptr<Execution>> CreateHostArg(const GraphOp& op, const Graph& g, HostBackend* b) {
  if (!IsReduceType(InputType(op, g)))
    return Unsupported("host %s does not support %s", op.typeName(), DataTypeName(InputType(op, g)));
  return MakeHostKernel(b, op, &RunArg);
}

}  // namespace kiln
