// Host kernels: the quantized ops (ONNX QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul,
// QLinearConv). Correctness first: the integer products are plain loops
// with exact 64-bit sums (stored as i32, as ONNX's int32 output), and every
// rounding to an integer is round-half-to-even with saturation to the
// quantized type, as ONNX's reference does. Scales must be positive and
// finite, zero points inside their type's range; the errors name the op
// and the tensor.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "broadcast.h"
#include "cpu_features.h"
#include "elements.h"
#include "host_backend.h"
#include "ops/nn_common.h"
#include "ops/op_params.h"
#include "ops/quant.h"
#include "ops/shape_inference.h"
#include "simd_clones.h"

namespace kiln {
namespace quant {

using IntVec = std::vector<int64_t>;

const char* NameOf(const Tensor& t) { return t.name().empty() ? "<unnamed>" : t.name().c_str(); }

// The range of an integer dtype (i8, u8, i32).
bool QuantRange(fb::DataType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case fb::DataType::I8: *lo = -128, *hi = 127; return true;
    case fb::DataType::U8: *lo = 0, *hi = 255; return true;
    case fb::DataType::I16: *lo = INT16_MIN, *hi = INT16_MAX; return true;
    case fb::DataType::U16: *lo = 0, *hi = UINT16_MAX; return true;
    case fb::DataType::I32: *lo = INT32_MIN, *hi = INT32_MAX; return true;
    default: return false;
  }
}

// Scales as floats (f32 arithmetic, as ONNX's reference): each one must be
// positive and finite.
StatusOr<std::vector<float>> Scales(const GraphOp& op, const Tensor& s, const char* what) {
  if (!IsFloating(s.dtype()))
    return InvalidArgument("%s: %s '%s' must be a float tensor, is %s", op.typeName(), what, NameOf(s),
                           DataTypeName(s.dtype()));
  const int64_t n = s.elementCount();
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double d = LoadDouble(s.hostData(), s.dtype(), i);
    if (!(d > 0) || !std::isfinite(d))
      return InvalidArgument("%s: %s '%s' [%lld] is %g; a scale must be positive and finite", op.typeName(), what,
                             NameOf(s), static_cast<long long>(i), d);
    v[static_cast<size_t>(i)] = static_cast<float>(d);
  }
  return v;
}

// Zero points as int64 (n zeros when absent): each one inside the range of
// `type` (the quantized operand's).
StatusOr<IntVec> ZeroPoints(const GraphOp& op, const Tensor* z, const char* what, fb::DataType type, int64_t n) {
  if (!z) return IntVec(static_cast<size_t>(n), 0);
  int64_t lo = 0, hi = 0;
  if (!QuantRange(type, &lo, &hi))
    return InvalidArgument("%s: the quantized type of %s '%s' is %s, not an 8-, 16- or 32-bit integer", op.typeName(),
                           what, NameOf(*z), DataTypeName(type));
  if (z->dtype() != type)
    return InvalidArgument("%s: %s '%s' is %s but its operand is %s", op.typeName(), what, NameOf(*z),
                           DataTypeName(z->dtype()), DataTypeName(type));
  IntVec v(static_cast<size_t>(z->elementCount()));
  for (size_t i = 0; i < v.size(); ++i) {
    const double d = LoadDouble(z->hostData(), z->dtype(), static_cast<int64_t>(i));
    if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)) || d != std::floor(d))
      return InvalidArgument("%s: %s '%s' [%zu] is %g, outside %s's range [%lld, %lld]", op.typeName(), what,
                             NameOf(*z), i, d, DataTypeName(type), static_cast<long long>(lo),
                             static_cast<long long>(hi));
    v[i] = static_cast<int64_t>(d);
  }
  return v;
}

Status ActivationRange(const GraphOp& op, float y_scale, int64_t y_zero, int64_t* lo, int64_t* hi) {
  float flo = 0, fhi = 0;
  KILN_RETURN_IF_ERROR(nn::QuantFusedClamp(op, &flo, &fhi));
  // Quantizing is monotonic and maps 0 to the zero point, so the clamp of
  // the real value is the clamp of the quantized one at the bounds' images.
  auto image = [&](float v) {  // round(v / y_scale), kept far inside int64
    return static_cast<int64_t>(std::min(1e9, std::max(-1e9, std::nearbyint(static_cast<double>(v / y_scale)))));
  };
  if (std::isfinite(flo)) *lo = std::max(*lo, y_zero + image(flo));
  if (std::isfinite(fhi)) *hi = std::min(*hi, y_zero + image(fhi));
  if (*hi < *lo) *hi = *lo;
  return Status::Ok();
}

bool ConstantInput(const GraphOp& op, const Graph& graph, size_t k) {
  if (k >= op.inputs.size()) return true;  // absent: nothing to change
  const int t = op.inputs[k];
  return t < 0 || (static_cast<size_t>(t) < graph.tensors.size() && graph.tensors[static_cast<size_t>(t)].isConstant());
}

}  // namespace quant

namespace {

using IntVec = std::vector<int64_t>;
using quant::Centered;
using quant::NameOf;
using quant::QuantRange;
using quant::Scales;
using quant::ZeroPoints;

const Tensor* Opt(const std::vector<Tensor*>& in, size_t k) { return k < in.size() ? in[k] : nullptr; }

// How a scale (and zero point) of `count` values applies to x: one value for
// all (count 1), or one per index along the axis (*inner, *n set so that
// element i takes value (i / inner) % n).
Status PerAxis(const GraphOp& op, const Tensor& x, const Tensor& s, const Tensor* z, int64_t* n, int64_t* inner) {
  const int64_t count = s.elementCount();
  *n = 1;
  *inner = 1;
  if (z && z->elementCount() != count)
    return InvalidArgument("%s: zero point '%s' has %lld values but the scale '%s' %lld", op.typeName(), NameOf(*z),
                           static_cast<long long>(z->elementCount()), NameOf(s), static_cast<long long>(count));
  if (count == 1 && s.dimensions() <= 1) return Status::Ok();
  if (s.dimensions() != 1)
    return InvalidArgument("%s: scale '%s' must be a scalar or 1-D, is %s", op.typeName(), NameOf(s),
                           ShapeToString(s.shape()).c_str());
  const auto* p = op.params<fb::AxisParams>();
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 1, x.dimensions()), "%s", op.typeName());
  int64_t outer;
  AroundAxis(x.shape(), axis, &outer, n, inner);
  if (*n != count)
    return InvalidArgument("%s: per-axis scale '%s' has %lld values but x '%s' %s has %lld along axis %d",
                           op.typeName(), NameOf(s), static_cast<long long>(count), NameOf(x),
                           ShapeToString(x.shape()).c_str(), static_cast<long long>(*n), axis);
  return Status::Ok();
}

// round(v) half to even, plus zp, saturated to [lo, hi].
inline int64_t Requantize(double v, int64_t zp, int64_t lo, int64_t hi) {
  double r = std::nearbyint(v) + static_cast<double>(zp);
  if (!(r >= static_cast<double>(lo))) return r != r ? zp : lo;  // NaN: the zero point
  if (r > static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(r);
}

void StoreInt(const Tensor& t, int64_t i, int64_t v) {
  switch (t.dtype()) {
    case fb::DataType::I8: static_cast<int8_t*>(t.hostData())[i] = static_cast<int8_t>(v); break;
    case fb::DataType::U8: static_cast<uint8_t*>(t.hostData())[i] = static_cast<uint8_t>(v); break;
    case fb::DataType::I32: static_cast<int32_t*>(t.hostData())[i] = static_cast<int32_t>(v); break;
    default: StoreDouble(t.hostData(), t.dtype(), i, static_cast<double>(v)); break;
  }
}

// ---- QuantizeLinear, DequantizeLinear ----

// The common forms as vector loops (f32 <-> 8-bit, one scale and zero point
// for the range), each the reference's arithmetic: x / scale in f32, round
// half to even, saturate (NaN to the zero point); (q - zero) * scale in f32.
KILN_SIMD_CLONES
void QuantizeRow(const float* __restrict x, int64_t n, float scale, float zero, float lo, float hi, bool to_i8,
                 uint8_t* __restrict y) {
  for (int64_t i = 0; i < n; ++i) {
    const float r = std::nearbyint(x[i] / scale) + zero;
    const float c = r >= lo ? (r <= hi ? r : hi) : (r == r ? lo : zero);
    y[i] = to_i8 ? static_cast<uint8_t>(static_cast<int8_t>(c)) : static_cast<uint8_t>(c);
  }
}

KILN_SIMD_CLONES
void DequantizeRow(const uint8_t* __restrict q, int64_t n, bool from_i8, float zero, float scale, float* __restrict y) {
  if (from_i8)
    for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(static_cast<int8_t>(q[i])) - zero) * scale;
  else
    for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(q[i]) - zero) * scale;
}

bool IsByte(fb::DataType t) { return t == fb::DataType::U8 || t == fb::DataType::I8; }

// Runs row(begin, count, channel) over [0, count) in runs of one channel
// (per-tensor: one run), split over the pool's threads.
template <typename Row>
void ForChannelRuns(ThreadPool& pool, int64_t count, int64_t n, int64_t inner, const Row& row) {
  pool.parallelFor(count, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e;) {
      const int64_t c = (i / inner) % n, end = n == 1 ? e : std::min(e, (i / inner + 1) * inner);
      row(i, end - i, c);
      i = end;
    }
  }, 16384);
}

Status RunQuantize(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const Tensor& x = *in[0];
  const Tensor& y = *out[0];
  const Tensor* z = Opt(in, 2);
  int64_t n, inner;
  KILN_RETURN_IF_ERROR(PerAxis(op, x, *in[1], z, &n, &inner));
  KILN_ASSIGN_OR_RETURN(std::vector<float> scale, Scales(op, *in[1], "y_scale"));
  KILN_ASSIGN_OR_RETURN(IntVec zp, ZeroPoints(op, z, "y_zero_point", y.dtype(), n));
  int64_t lo = 0, hi = 0;
  QuantRange(y.dtype(), &lo, &hi);
  const bool f64 = x.dtype() == fb::DataType::F64;
  const int64_t count = x.elementCount();
  if (x.dtype() == fb::DataType::F32 && IsByte(y.dtype())) {
    const float* xv = x.host<float>();
    uint8_t* yv = static_cast<uint8_t*>(y.hostData());
    const bool i8 = y.dtype() == fb::DataType::I8;
    ForChannelRuns(be.pool(), count, n, inner, [&](int64_t b, int64_t len, int64_t c) {
      QuantizeRow(xv + b, len, scale[static_cast<size_t>(c)], static_cast<float>(zp[static_cast<size_t>(c)]),
                  static_cast<float>(lo), static_cast<float>(hi), i8, yv + b);
    });
    return Status::Ok();
  }
  for (int64_t i = 0; i < count; ++i) {
    const size_t c = static_cast<size_t>((i / inner) % n);
    const double xv = LoadDouble(x.hostData(), x.dtype(), i);
    // x / scale in x's precision (f32 for f32, f16, bf16, i32), as the reference.
    const double q = f64 ? xv / static_cast<double>(scale[c]) : static_cast<double>(static_cast<float>(xv) / scale[c]);
    StoreInt(y, i, Requantize(q, zp[c], lo, hi));
  }
  return Status::Ok();
}

Status RunDequantize(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                     HostBackend& be) {
  const Tensor& x = *in[0];
  const Tensor& y = *out[0];
  const Tensor* z = Opt(in, 2);
  int64_t n, inner;
  KILN_RETURN_IF_ERROR(PerAxis(op, x, *in[1], z, &n, &inner));
  KILN_ASSIGN_OR_RETURN(std::vector<float> scale, Scales(op, *in[1], "x_scale"));
  KILN_ASSIGN_OR_RETURN(IntVec zp, ZeroPoints(op, z, "x_zero_point", x.dtype(), n));
  const int64_t count = x.elementCount();
  if (IsByte(x.dtype()) && y.dtype() == fb::DataType::F32) {
    const uint8_t* xv = static_cast<const uint8_t*>(x.hostData());
    float* yv = y.host<float>();
    const bool i8 = x.dtype() == fb::DataType::I8;
    ForChannelRuns(be.pool(), count, n, inner, [&](int64_t b, int64_t len, int64_t c) {
      DequantizeRow(xv + b, len, i8, static_cast<float>(zp[static_cast<size_t>(c)]), scale[static_cast<size_t>(c)],
                    yv + b);
    });
    return Status::Ok();
  }
  for (int64_t i = 0; i < count; ++i) {
    const size_t c = static_cast<size_t>((i / inner) % n);
    const int64_t d = LoadInt64(x.hostData(), x.dtype(), i) - zp[c];
    if (y.dtype() == fb::DataType::F64)
      StoreDouble(y.hostData(), y.dtype(), i, static_cast<double>(d) * static_cast<double>(scale[c]));
    else
      StoreDouble(y.hostData(), y.dtype(), i, static_cast<double>(static_cast<float>(d) * scale[c]));
  }
  return Status::Ok();
}

// ---- QLinearAdd ----

// No multiply-add contraction in a function: GCC's attribute; clang
// contracts only within one expression by default, which the kernels avoid
// by rounding each product in its own statement.
#if defined(__clang__)
#define KILN_NO_FP_CONTRACT
#else
#define KILN_NO_FP_CONTRACT __attribute__((optimize("fp-contract=off")))
#endif

// c = saturate(round_half_even(a ra + b rb + f)) over one row, onnxruntime's
// arithmetic for its QLinearAdd (com.microsoft's op, which its QDQ fusion
// also makes of DequantizeLinear -> Add -> QuantizeLinear): the ratios ra =
// sa / sc and rb = sb / sc and the fixed part f = zc - ra za - rb zb in f32
// once, then for each element fma(a, ra, fma(b, rb, f)). Against the chain's
// own f32 steps ((a - za) sa + (b - zb) sb, / sc, rounded, + zc) it differs
// by one step where the sum falls within rounding of a tie (11 of 1.6
// million values over int8 ResNet-18's eight residual adds), and matches
// onnxruntime there: quantized models then agree with onnxruntime's output
// instead of drifting a step a residual block. [lo, hi]: the type's range
// narrowed by a fused Relu / Clip. SA / SB: 1, or 0 where that input
// broadcasts.
template <bool I8, int SA, int SB>
__attribute__((always_inline)) inline void QAddLoop(const uint8_t* __restrict a, const uint8_t* __restrict b,
                                                    int64_t n, float ra, float rb, float f, float lo, float hi,
                                                    uint8_t* __restrict c) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t ab = a[i * SA], bb = b[i * SB];
    const float av = I8 ? static_cast<float>(static_cast<int8_t>(ab)) : static_cast<float>(ab);
    const float bv = I8 ? static_cast<float>(static_cast<int8_t>(bb)) : static_cast<float>(bb);
    const float y = std::fma(av, ra, std::fma(bv, rb, f));
    const float q = std::min(hi, std::max(lo, std::nearbyint(y)));  // max / min instructions (a NaN y gives lo)
    c[i] = static_cast<uint8_t>(static_cast<int32_t>(q));
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// 16 bytes as floats (int8 or uint8). Zero-masked forms with every lane
// set: GCC 12's plain ones warn inside its header (an "undefined" source
// vector). A function, not a lambda: clang does not give a lambda its
// enclosing function's target.
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 BytesToFloats(__m128i bytes, bool i8) {
  const __mmask16 all = 0xFFFF;
  return _mm512_maskz_cvtepi32_ps(all, i8 ? _mm512_maskz_cvtepi8_epi32(all, bytes)
                                          : _mm512_maskz_cvtepu8_epi32(all, bytes));
}

// QAddRowAvx512's constants, broadcast, and one step of it: 16 values (the
// lanes of `store` written). A function, not a lambda (clang, above).
struct QAddConsts {
  __m512 ra, rb, f, lo, hi;
};
__attribute__((target("avx512f,avx512bw,avx512vl,fma"), always_inline)) inline void QAddStep16(
    const QAddConsts& k, bool i8, __m128i ab, __m128i bb, __mmask16 store, uint8_t* c) {
  const __mmask16 all = 0xFFFF;
  const __m512 y = _mm512_fmadd_ps(BytesToFloats(ab, i8), k.ra, _mm512_fmadd_ps(BytesToFloats(bb, i8), k.rb, k.f));
  const __m512 clamped = _mm512_maskz_min_ps(all, _mm512_maskz_max_ps(all, y, k.lo), k.hi);  // lo where NaN
  const __m512i r = _mm512_maskz_cvt_roundps_epi32(all, clamped, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm512_mask_cvtepi32_storeu_epi8(c, store, r);
}

// QAddLoop<I8, 1, 1> in AVX-512 intrinsics, 16 lanes at a time (the tail
// masked), the clamp taken before the rounding (rounding is monotonic and
// the bounds are integers, so the bytes are the same; a NaN still gives
// lo), the rounding and the conversion one instruction, and the bytes
// stored straight from the int32 lanes.
__attribute__((target("avx512f,avx512bw,avx512vl,fma"))) void QAddRowAvx512(const uint8_t* __restrict a,
                                                                             const uint8_t* __restrict b, int64_t n,
                                                                             bool i8, float ra, float rb, float f,
                                                                             float lo, float hi,
                                                                             uint8_t* __restrict c) {
  const QAddConsts k{_mm512_set1_ps(ra), _mm512_set1_ps(rb), _mm512_set1_ps(f), _mm512_set1_ps(lo),
                     _mm512_set1_ps(hi)};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)  // plain loads (the widening takes them as its operand), then the masked tail
    QAddStep16(k, i8, _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)),
               _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)), 0xFFFF, c + i);
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    QAddStep16(k, i8, _mm_maskz_loadu_epi8(m, a + i), _mm_maskz_loadu_epi8(m, b + i), m, c + i);
  }
}

// The CPU runs QAddRowAvx512, and KILN_HOST_QADD_AVX512 is not 0 (read once:
// kiln-bench comparisons).
bool QAddAvx512() {
  static const bool ok = [] {
    const char* e = std::getenv("KILN_HOST_QADD_AVX512");
    return !(e && e[0] == '0') && CpuHasAvx512Bw() && CpuHasFma();
  }();
  return ok;
}
#endif

KILN_SIMD_CLONES
void QAddRow(const uint8_t* __restrict a, int64_t sa_step, const uint8_t* __restrict b, int64_t sb_step, int64_t n,
             bool i8, float ra, float rb, float f, float lo, float hi, uint8_t* __restrict c) {
#define KILN_QADD(S_A, S_B)                                           \
  (i8 ? QAddLoop<true, S_A, S_B>(a, b, n, ra, rb, f, lo, hi, c)       \
      : QAddLoop<false, S_A, S_B>(a, b, n, ra, rb, f, lo, hi, c))
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (sa_step && sb_step && QAddAvx512()) return QAddRowAvx512(a, b, n, i8, ra, rb, f, lo, hi, c);
#endif
  if (sa_step && sb_step) KILN_QADD(1, 1);
  else if (sa_step) KILN_QADD(1, 0);
  else if (sb_step) KILN_QADD(0, 1);
  else KILN_QADD(0, 0);
#undef KILN_QADD
}

// QLinearAdd's f32 constants (QAddLoop's ra, rb and f), each product in a
// statement of its own (no contraction into a multiply-add).
struct QAddRatios {
  float ra = 0, rb = 0, f = 0;
};
KILN_NO_FP_CONTRACT QAddRatios MakeQAddRatios(float sa, float za, float sb, float zb, float sc, float zc) {
  QAddRatios r;
  r.ra = sa / sc;
  r.rb = sb / sc;
  const float pa = r.ra * za;
  const float pb = r.rb * zb;
  const float f0 = zc - pa;
  r.f = f0 - pb;
  return r;
}

Status RunQLinearAdd(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                     HostBackend& be) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[3];
  const Tensor& c = *out[0];
  if (!IsByte(a.dtype()) || b.dtype() != a.dtype() || c.dtype() != a.dtype())
    return InvalidArgument("QLinearAdd: A '%s', B '%s' and C must be the same 8-bit type, are %s, %s and %s",
                           NameOf(a), NameOf(b), DataTypeName(a.dtype()), DataTypeName(b.dtype()),
                           DataTypeName(c.dtype()));
  float s[3];
  int64_t z[3];
  const int sk[3] = {1, 4, 6};
  const char* names[3] = {"A_scale", "B_scale", "C_scale"};
  const char* znames[3] = {"A_zero_point", "B_zero_point", "C_zero_point"};
  for (int k = 0; k < 3; ++k) {
    KILN_ASSIGN_OR_RETURN(std::vector<float> sv, Scales(op, *in[static_cast<size_t>(sk[k])], names[k]));
    KILN_ASSIGN_OR_RETURN(IntVec zv, ZeroPoints(op, Opt(in, static_cast<size_t>(sk[k] + 1)), znames[k], a.dtype(), 1));
    if (sv.size() != 1 || zv.size() != 1)
      return InvalidArgument("QLinearAdd: %s and %s must be one value each (per tensor)", names[k], znames[k]);
    s[k] = sv[0];
    z[k] = zv[0];
  }
  int64_t lo = 0, hi = 0;
  QuantRange(c.dtype(), &lo, &hi);
  KILN_RETURN_IF_ERROR(quant::ActivationRange(op, s[2], z[2], &lo, &hi));
  const uint8_t* av = static_cast<const uint8_t*>(a.hostData());
  const uint8_t* bv = static_cast<const uint8_t*>(b.hostData());
  uint8_t* cv = static_cast<uint8_t*>(c.hostData());
  const bool i8 = a.dtype() == fb::DataType::I8;
  const QAddRatios k = MakeQAddRatios(s[0], static_cast<float>(z[0]), s[1], static_cast<float>(z[1]), s[2],
                                      static_cast<float>(z[2]));
  ForEachBroadcastRow<2>(be.pool(), c.shape(), {&a.shape(), &b.shape()}, [&](const BroadcastRow<2>& r) {
    QAddRow(av + r.in[0], r.stride[0], bv + r.in[1], r.stride[1], r.count, i8, k.ra, k.rb, k.f,
            static_cast<float>(lo), static_cast<float>(hi), cv + r.out);
  });
  return Status::Ok();
}

// ---- DynamicQuantizeLinear ----

Status RunDynamicQuantize(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                          HostBackend&) {
  const Tensor& x = *in[0];
  const float* xv = static_cast<const float*>(x.hostData());
  const int64_t count = x.elementCount();
  // The range always includes 0; NaNs are skipped.
  float mn = 0.f, mx = 0.f;
  for (int64_t i = 0; i < count; ++i) {
    if (xv[i] < mn) mn = xv[i];
    if (xv[i] > mx) mx = xv[i];
  }
  if (std::isinf(mn) || std::isinf(mx))
    return InvalidArgument("DynamicQuantizeLinear: x '%s' holds an infinity; its range has no finite scale", NameOf(x));
  const float scale = (mx == mn ? 1.f : mx - mn) / 255.f;
  const float zpf = std::min(255.f, std::max(0.f, 0.f - mn / scale));
  const int64_t zp = static_cast<int64_t>(std::nearbyint(zpf));
  uint8_t* y = static_cast<uint8_t*>(out[0]->hostData());
  for (int64_t i = 0; i < count; ++i) y[i] = static_cast<uint8_t>(Requantize(xv[i] / scale, zp, 0, 255));
  *static_cast<float*>(out[1]->hostData()) = scale;
  *static_cast<uint8_t*>(out[2]->hostData()) = static_cast<uint8_t>(zp);
  return Status::Ok();
}

// ---- integer products ----

}  // namespace

namespace {

// Centered's checks: t is 8-bit, its zero points one or `per` (returned).
StatusOr<IntVec> CenterZeroPoints(const GraphOp& op, const Tensor& t, const Tensor* z, const char* what, int64_t per) {
  if (t.dtype() != fb::DataType::I8 && t.dtype() != fb::DataType::U8)
    return InvalidArgument("%s: '%s' must be int8 or uint8, is %s", op.typeName(), NameOf(t), DataTypeName(t.dtype()));
  KILN_ASSIGN_OR_RETURN(IntVec zp, quant::ZeroPoints(op, z, what, t.dtype(), 1));
  if (zp.size() != 1 && static_cast<int64_t>(zp.size()) != per)
    return InvalidArgument("%s: %s '%s' has %zu values; it takes one (per tensor) or %lld", op.typeName(), what,
                           NameOf(*z), zp.size(), static_cast<long long>(per));
  return zp;
}

// v[i] = t[i] - its zero point, for every element (runs of `inner` share
// one, the whole tensor when there is one); returns the values' OR of
// (value - INT8_MIN) bits past the low 8 (0: every value fits int8).
template <typename Out>
uint32_t CenterInto(const Tensor& t, const IntVec& zp, int64_t per, int64_t inner, Out* v) {
  const int64_t count = t.elementCount();
  const bool one = zp.size() == 1;
  const std::vector<int32_t> z32(zp.begin(), zp.end());
  uint32_t outside = 0;
  auto center = [&](const auto* x) {
    if (!one && inner == 1) {  // element i's zero point is z32[i % per]: rows of per
      for (int64_t b = 0; b < count; b += per) {
        const int64_t n = std::min(per, count - b);
        for (int64_t j = 0; j < n; ++j) {
          const int32_t c = static_cast<int32_t>(x[b + j]) - z32[static_cast<size_t>(j)];
          outside |= static_cast<uint32_t>(c + 128) & ~0xFFu;
          v[b + j] = static_cast<Out>(c);
        }
      }
      return;
    }
    // Runs of `run` elements share a zero point, the next run the next one.
    const int64_t run = one ? count : inner;
    size_t zi = 0;
    for (int64_t b = 0; b < count; b += run) {
      const int32_t zv = z32[zi];
      if (!one && static_cast<int64_t>(++zi) == per) zi = 0;
      const int64_t e = std::min(count, b + run);
      for (int64_t i = b; i < e; ++i) {
        const int32_t c = static_cast<int32_t>(x[i]) - zv;
        outside |= static_cast<uint32_t>(c + 128) & ~0xFFu;
        v[i] = static_cast<Out>(c);
      }
    }
  };
  if (count <= 0 || (!one && inner <= 0)) return 0;
  if (t.dtype() == fb::DataType::I8) center(static_cast<const int8_t*>(t.hostData()));
  else center(static_cast<const uint8_t*>(t.hostData()));
  return outside;
}

}  // namespace

// Values of an 8-bit operand minus its zero point, as int32. The zero point
// is per tensor (one value) or, with `per` > 1 values, per index along
// (element / inner) % per.
StatusOr<std::vector<int32_t>> quant::Centered(const GraphOp& op, const Tensor& t, const Tensor* z, const char* what,
                                               int64_t per, int64_t inner) {
  KILN_ASSIGN_OR_RETURN(IntVec zp, CenterZeroPoints(op, t, z, what, per));
  std::vector<int32_t> v(static_cast<size_t>(t.elementCount()));
  CenterInto(t, zp, per, inner, v.data());
  return v;
}

// The same straight into int8, with no int32 copy of the weights between
// (int8 ResNet-50's session: 4 bytes a weight written and read back).
bool quant::CenteredInt8(const GraphOp& op, const Tensor& t, const Tensor* z, const char* what, int64_t per,
                         int64_t inner, std::vector<int8_t>* out) {
  StatusOr<IntVec> zp = CenterZeroPoints(op, t, z, what, per);
  if (!zp.ok()) return false;
  out->resize(static_cast<size_t>(t.elementCount()));
  return CenterInto(t, *zp, per, inner, out->data()) == 0;
}

namespace {

// The ranks of a matmul operand: [K] -> [1, K] (a), [K] -> [K, 1] (b).
IntVec MatShape(const IntVec& s, bool is_a) {
  IntVec r = s;
  if (r.size() == 1) {
    if (is_a) r.insert(r.begin(), 1);
    else r.push_back(1);
  }
  return r;
}

// C = A B over broadcast batches, exact sums (int64).
std::vector<int64_t> IntMatMul(const std::vector<int32_t>& a, const IntVec& as, const std::vector<int32_t>& b,
                               const IntVec& bs, int64_t* m_out, int64_t* n_out) {
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const size_t rank = std::max(as.size(), bs.size()) - 2;
  IntVec batch(rank, 1), sa(rank, 0), sb(rank, 0);
  int64_t step_a = m * k, step_b = k * n;
  for (size_t d = rank; d-- > 0;) {
    const int64_t da = d + as.size() >= rank + 2 ? as[d + as.size() - 2 - rank] : 1;
    const int64_t db = d + bs.size() >= rank + 2 ? bs[d + bs.size() - 2 - rank] : 1;
    batch[d] = std::max(da, db);
    sa[d] = da == 1 ? 0 : step_a;
    sb[d] = db == 1 ? 0 : step_b;
    step_a *= da;
    step_b *= db;
  }
  int64_t batches = 1;
  for (int64_t v : batch) batches *= v;
  std::vector<int64_t> c(static_cast<size_t>(batches * m * n), 0);
  IntVec idx(rank, 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < rank; ++d) oa += idx[d] * sa[d], ob += idx[d] * sb[d];
    int64_t* cp = c.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        const int64_t av = a[static_cast<size_t>(oa + i * k + p)];
        if (av == 0) continue;
        const int32_t* brow = b.data() + ob + p * n;
        for (int64_t j = 0; j < n; ++j) cp[i * n + j] += av * brow[j];
      }
    for (size_t d = rank; d-- > 0;)
      if (++idx[d] < batch[d]) break;
      else idx[d] = 0;
  }
  *m_out = m;
  *n_out = n;
  return c;
}

// Per-row zero point / scale of A: its rows are the second-to-last dim, so
// element i of A has row (i / K) % M.
Status RunMatMulInteger(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                        HostBackend&) {
  const IntVec as = MatShape(in[0]->shape(), true), bs = MatShape(in[1]->shape(), false);
  KILN_RETURN_IF_ERROR(CheckHostWork("MatMulInteger", static_cast<double>(out[0]->elementCount()) *
                                                           static_cast<double>(as.back())));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> a, Centered(op, *in[0], Opt(in, 2), "a_zero_point", as[as.size() - 2], as.back()));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> b, Centered(op, *in[1], Opt(in, 3), "b_zero_point", bs.back(), 1));
  int64_t m, n;
  std::vector<int64_t> c = IntMatMul(a, as, b, bs, &m, &n);
  for (size_t i = 0; i < c.size(); ++i) StoreInt(*out[0], static_cast<int64_t>(i), static_cast<int32_t>(c[i]));
  return Status::Ok();
}

// The multiplier of output column / channel j: s_a * s_b[j] / s_y (f32, as
// the reference), one a-scale per row i when per-row.
}  // namespace

Status quant::RunQLinearMatMulReference(const GraphOp& op, const std::vector<Tensor*>& in,
                                        const std::vector<Tensor*>& out, HostBackend&) {
  const IntVec as = MatShape(in[0]->shape(), true), bs = MatShape(in[3]->shape(), false);
  const int64_t rows = as[as.size() - 2], cols = bs.back();
  KILN_RETURN_IF_ERROR(CheckHostWork("QLinearMatMul", static_cast<double>(out[0]->elementCount()) *
                                                           static_cast<double>(as.back())));
  KILN_ASSIGN_OR_RETURN(std::vector<float> sa, Scales(op, *in[1], "a_scale"));
  KILN_ASSIGN_OR_RETURN(std::vector<float> sb, Scales(op, *in[4], "b_scale"));
  KILN_ASSIGN_OR_RETURN(std::vector<float> sy, Scales(op, *in[6], "y_scale"));
  if (sy.size() != 1) return InvalidArgument("QLinearMatMul: y_scale '%s' must be one value", NameOf(*in[6]));
  if (sa.size() != 1 && static_cast<int64_t>(sa.size()) != rows)
    return InvalidArgument("QLinearMatMul: a_scale '%s' has %zu values; it takes one or %lld (A's rows)",
                           NameOf(*in[1]), sa.size(), static_cast<long long>(rows));
  if (sb.size() != 1 && static_cast<int64_t>(sb.size()) != cols)
    return InvalidArgument("QLinearMatMul: b_scale '%s' has %zu values; it takes one or %lld (B's columns)",
                           NameOf(*in[4]), sb.size(), static_cast<long long>(cols));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> a, Centered(op, *in[0], in[2], "a_zero_point", rows, as.back()));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> b, Centered(op, *in[3], in[5], "b_zero_point", cols, 1));
  const Tensor& y = *out[0];
  KILN_ASSIGN_OR_RETURN(IntVec yzp, ZeroPoints(op, in[7], "y_zero_point", y.dtype(), 1));
  if (yzp.size() != 1) return InvalidArgument("QLinearMatMul: y_zero_point '%s' must be one value", NameOf(*in[7]));
  const Tensor* bias = Opt(in, 8);  // Kiln's int32 bias of B's columns (fuse_qdq's quantized Gemm)
  if (bias && (bias->dtype() != fb::DataType::I32 || bias->elementCount() != cols))
    return InvalidArgument("QLinearMatMul: bias '%s' must be int32 with %lld values, is %s %s", NameOf(*bias),
                           static_cast<long long>(cols), DataTypeName(bias->dtype()),
                           ShapeToString(bias->shape()).c_str());
  int64_t lo = 0, hi = 0;
  QuantRange(y.dtype(), &lo, &hi);
  int64_t m, n;
  std::vector<int64_t> c = IntMatMul(a, as, b, bs, &m, &n);
  for (size_t i = 0; i < c.size(); ++i) {
    const size_t r = static_cast<size_t>((static_cast<int64_t>(i) / n) % m), j = static_cast<size_t>(static_cast<int64_t>(i) % n);
    const float mult = sa[sa.size() == 1 ? 0 : r] * sb[sb.size() == 1 ? 0 : j] / sy[0];
    int64_t v = c[i];
    if (bias) v += static_cast<const int32_t*>(bias->hostData())[j];
    // The int32 sum as f32 times the f32 multiplier (onnxruntime's arithmetic).
    StoreInt(y, static_cast<int64_t>(i),
             Requantize(static_cast<double>(static_cast<float>(static_cast<int32_t>(v)) * mult), yzp[0], lo, hi));
  }
  return Status::Ok();
}

namespace {

// Direct N-d convolution of centered integers (zero padding, which is the
// zero point before centering), exact sums.
std::vector<int64_t> IntConv(const GraphOp& op, const std::vector<int32_t>& x, const IntVec& xs,
                             const std::vector<int32_t>& w, const IntVec& ws, const IntVec& ys) {
  const auto* p = op.params<fb::ConvParams>();
  const size_t nsp = xs.size() - 2;
  const IntVec kernel(ws.begin() + 2, ws.end()), xin(xs.begin() + 2, xs.end()), yout(ys.begin() + 2, ys.end());
  const IntVec strides = nn::IntsOr(p ? p->strides() : nullptr, nsp, 1);
  const IntVec dil = nn::IntsOr(p ? p->dilations() : nullptr, nsp, 1);
  const IntVec pads = nn::WindowPads(p ? p->auto_pad() : fb::AutoPad::NotSet, nn::IntsOr(p ? p->pads() : nullptr, 0, 0),
                                     xin, yout, kernel, strides, dil);
  const int64_t group = p ? p->group() : 1;
  const int64_t batch = xs[0], cin = xs[1], cout = ws[0], cg = ws[1], mg = cout / group;
  int64_t xsp = 1, ysp = 1, ksp = 1;
  for (size_t d = 0; d < nsp; ++d) xsp *= xin[d], ysp *= yout[d], ksp *= kernel[d];
  std::vector<int64_t> y(static_cast<size_t>(batch * cout * ysp), 0);
  IntVec oi(nsp), ki(nsp);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t m = 0; m < cout; ++m) {
      const int64_t g = m / mg;
      for (int64_t o = 0; o < ysp; ++o) {
        for (int64_t r = o, d = static_cast<int64_t>(nsp); d-- > 0;) oi[static_cast<size_t>(d)] = r % yout[static_cast<size_t>(d)], r /= yout[static_cast<size_t>(d)];
        int64_t acc = 0;
        for (int64_t kk = 0; kk < ksp; ++kk) {
          int64_t xoff = 0;
          bool inside = true;
          for (int64_t r = kk, d = static_cast<int64_t>(nsp); d-- > 0;) {
            const size_t u = static_cast<size_t>(d);
            const int64_t kd = r % kernel[u];
            r /= kernel[u];
            const int64_t pos = oi[u] * strides[u] - pads[u] + kd * dil[u];
            if (pos < 0 || pos >= xin[u]) inside = false;
            ki[u] = pos;
          }
          if (!inside) continue;
          for (size_t d = 0; d < nsp; ++d) xoff = xoff * xin[d] + ki[d];
          for (int64_t c = 0; c < cg; ++c) {
            const int64_t xc = g * cg + c;
            acc += static_cast<int64_t>(x[static_cast<size_t>((b * cin + xc) * xsp + xoff)]) *
                   w[static_cast<size_t>((m * cg + c) * ksp + kk)];
          }
        }
        y[static_cast<size_t>((b * cout + m) * ysp + o)] = acc;
      }
    }
  return y;
}

}  // namespace

Status quant::RunConvIntegerReference(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[1];
  KILN_RETURN_IF_ERROR(CheckHostWork("ConvInteger", static_cast<double>(out[0]->elementCount()) *
                                                         static_cast<double>(w.elementCount() / std::max<int64_t>(w.length(0), 1))));
  const Tensor* xz = Opt(in, 2);
  if (xz && xz->elementCount() != 1)
    return InvalidArgument("ConvInteger: x_zero_point '%s' must be one value, has %lld", NameOf(*xz),
                           static_cast<long long>(xz->elementCount()));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> xv, Centered(op, x, xz, "x_zero_point", 1, 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> wv,
                        Centered(op, w, Opt(in, 3), "w_zero_point", w.length(0), w.elementCount() / std::max<int64_t>(w.length(0), 1)));
  std::vector<int64_t> y = IntConv(op, xv, x.shape(), wv, w.shape(), out[0]->shape());
  for (size_t i = 0; i < y.size(); ++i) StoreInt(*out[0], static_cast<int64_t>(i), static_cast<int32_t>(y[i]));
  return Status::Ok();
}

Status quant::RunQLinearConvReference(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                                      HostBackend&) {
  const Tensor& x = *in[0];
  const Tensor& w = *in[3];
  const Tensor& y = *out[0];
  const int64_t cout = w.length(0), per_w = w.elementCount() / std::max<int64_t>(cout, 1);
  KILN_RETURN_IF_ERROR(CheckHostWork("QLinearConv", static_cast<double>(y.elementCount()) * static_cast<double>(per_w)));
  KILN_ASSIGN_OR_RETURN(std::vector<float> sx, Scales(op, *in[1], "x_scale"));
  KILN_ASSIGN_OR_RETURN(std::vector<float> sw, Scales(op, *in[4], "w_scale"));
  KILN_ASSIGN_OR_RETURN(std::vector<float> sy, Scales(op, *in[6], "y_scale"));
  if (sx.size() != 1) return InvalidArgument("QLinearConv: x_scale '%s' must be one value", NameOf(*in[1]));
  if (sy.size() != 1) return InvalidArgument("QLinearConv: y_scale '%s' must be one value", NameOf(*in[6]));
  if (sw.size() != 1 && static_cast<int64_t>(sw.size()) != cout)
    return InvalidArgument("QLinearConv: w_scale '%s' has %zu values; it takes one or %lld (output channels)",
                           NameOf(*in[4]), sw.size(), static_cast<long long>(cout));
  if (in[2] && in[2]->elementCount() != 1)
    return InvalidArgument("QLinearConv: x_zero_point '%s' must be one value", NameOf(*in[2]));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> xv, Centered(op, x, in[2], "x_zero_point", 1, 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int32_t> wv, Centered(op, w, in[5], "w_zero_point", cout, per_w));
  KILN_ASSIGN_OR_RETURN(IntVec yzp, ZeroPoints(op, in[7], "y_zero_point", y.dtype(), 1));
  if (yzp.size() != 1) return InvalidArgument("QLinearConv: y_zero_point '%s' must be one value", NameOf(*in[7]));
  const Tensor* bias = Opt(in, 8);
  if (bias && (bias->dtype() != fb::DataType::I32 || bias->elementCount() != cout))
    return InvalidArgument("QLinearConv: bias '%s' must be int32 with %lld values, is %s %s", NameOf(*bias),
                           static_cast<long long>(cout), DataTypeName(bias->dtype()), ShapeToString(bias->shape()).c_str());
  std::vector<int64_t> acc = IntConv(op, xv, x.shape(), wv, w.shape(), y.shape());
  int64_t lo = 0, hi = 0;
  QuantRange(y.dtype(), &lo, &hi);
  KILN_RETURN_IF_ERROR(quant::ActivationRange(op, sy[0], yzp[0], &lo, &hi));
  const int64_t ysp = y.elementCount() / std::max<int64_t>(y.length(0) * cout, 1);
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t m = (static_cast<int64_t>(i) / std::max<int64_t>(ysp, 1)) % cout;
    int64_t v = acc[i];
    if (bias) v += static_cast<const int32_t*>(bias->hostData())[m];
    const float mult = sx[0] * sw[sw.size() == 1 ? 0 : static_cast<size_t>(m)] / sy[0];
    // The int32 accumulator (wrapping as the reference's), as f32, times the
    // f32 multiplier in f32 (onnxruntime's arithmetic).
    StoreInt(y, static_cast<int64_t>(i),
             Requantize(static_cast<double>(static_cast<float>(static_cast<int32_t>(v)) * mult), yzp[0], lo, hi));
  }
  return Status::Ok();
}

KILN_HOST_FN_FACTORY(Quantize)
KILN_HOST_FN_FACTORY(Dequantize)
KILN_HOST_FN_FACTORY(DynamicQuantize)
KILN_HOST_FN_FACTORY(MatMulInteger)
KILN_HOST_FN_FACTORY(QLinearAdd)

}  // namespace kiln
