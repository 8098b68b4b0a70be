// The AVX-512 forms of vec_math.h's row kernels, with intrinsics where the
// compiler-vectorized loops (KILN_SIMD_CLONES) leave time on the table:
// Softmax over short rows (attention scores, 128 wide) spent more in loop
// set-up, tails and reductions than in e^x. Built with -mavx512f -mfma on
// x86-64 only; called only when the CPU has them (vec_math.cpp decides).
#include "vec_math.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#include <cmath>

namespace kiln::vec_detail {
namespace {

// vmaxps, vminps, vrndscaleps and vscalefps through their merge-masked forms
// with a full mask: GCC 12's plain forms pass an "undefined" source that
// -Wmaybe-uninitialized reports once inlined here.
inline __m512 Max(__m512 a, __m512 b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
inline __m512 Min(__m512 a, __m512 b) { return _mm512_mask_min_ps(a, 0xFFFF, a, b); }
inline __m512 RoundNearest(__m512 a) {
  return _mm512_mask_roundscale_ps(a, 0xFFFF, a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
inline __m512 Scalef(__m512 a, __m512 b) { return _mm512_mask_scalef_ps(a, 0xFFFF, a, b); }

// e^(n ln2 + r) for |r| <= ln2 / 2: Cephes' degree-6 polynomial of
// vec_math.cpp's ExpFull, with 2^n applied by vscalefps, which rounds once
// into the subnormals, to 0 or to inf as the exact result would.
inline __m512 ExpReduced(__m512 r, __m512 n) {
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
  return Scalef(p, n);
}

// The split of x (or, with kNeg, of -x) into n ln2 + r, Cephes' two-part
// ln2; -x's without negating x: r = -(n ln2 + x) by negated multiply-adds.
template <bool kNeg>
inline __m512 ExpOf(__m512 x) {
  const __m512 n = RoundNearest(_mm512_mul_ps(x, _mm512_set1_ps(kNeg ? -1.44269504088896341f : 1.44269504088896341f)));
  __m512 r = kNeg ? _mm512_fnmsub_ps(n, _mm512_set1_ps(0.693359375f), x)
                  : _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  return ExpReduced(r, n);
}

// e^x on 16 lanes. x is clamped first so that r stays finite (e^-inf
// would be -inf - -inf); max(c, x) returns x when x is NaN, so NaN stays.
inline __m512 Exp16(__m512 x) {
  x = Max(_mm512_set1_ps(-104.5f), x);
  x = Min(_mm512_set1_ps(89.f), x);
  return ExpOf<false>(x);
}

// Horizontal maximum and sum through a store (not _mm512_reduce_*: GCC 12's
// header warns inside them); once a row.
inline float MaxLanes(__m512 v) {
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  float m = l[0];
  for (int i = 1; i < 16; ++i) m = l[i] > m ? l[i] : m;
  return m;
}
inline float SumLanes(__m512 v) {
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  float s = 0.f;
  for (float f : l) s += f;
  return s;
}

// The row kernel of SoftmaxRowsF32 (vec_math.h). Whole vectors, then one
// masked vector for the tail. The maximum may or may not keep a NaN (vmaxps
// returns its second operand when either is NaN); either way e^(x - max)
// carries it into the sum, so a row with a NaN comes out all NaN, as from
// the generic kernel.
void SoftmaxRows(const float* x, float* y, int64_t rows, int64_t n, bool log) {
  const int64_t whole = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - whole)) - 1u);
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    __m512 m0 = ninf, m1 = ninf;
    int64_t k = 0;
    for (; k + 32 <= whole; k += 32) {
      m0 = Max(m0, _mm512_loadu_ps(xr + k));
      m1 = Max(m1, _mm512_loadu_ps(xr + k + 16));
    }
    if (k < whole) m0 = Max(m0, _mm512_loadu_ps(xr + k));
    if (tail) m1 = Max(m1, _mm512_mask_loadu_ps(ninf, tail, xr + whole));
    const float mx = MaxLanes(Max(m0, m1));
    const __m512 vm = _mm512_set1_ps(mx);
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    for (k = 0; k + 32 <= whole; k += 32) {
      const __m512 e0 = Exp16(_mm512_sub_ps(_mm512_loadu_ps(xr + k), vm));
      const __m512 e1 = Exp16(_mm512_sub_ps(_mm512_loadu_ps(xr + k + 16), vm));
      if (!log) {
        _mm512_storeu_ps(yr + k, e0);
        _mm512_storeu_ps(yr + k + 16, e1);
      }
      s0 = _mm512_add_ps(s0, e0);
      s1 = _mm512_add_ps(s1, e1);
    }
    if (k < whole) {
      const __m512 e0 = Exp16(_mm512_sub_ps(_mm512_loadu_ps(xr + k), vm));
      if (!log) _mm512_storeu_ps(yr + k, e0);
      s0 = _mm512_add_ps(s0, e0);
    }
    if (tail) {
      const __m512 e1 = Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, xr + whole), vm));
      if (!log) _mm512_mask_storeu_ps(yr + whole, tail, e1);
      s1 = _mm512_mask_add_ps(s1, tail, s1, e1);
    }
    const float sum = SumLanes(_mm512_add_ps(s0, s1));
    if (log) {
      // (x - max) - log(sum), as the generic kernel.
      const __m512 ls = _mm512_set1_ps(std::log(sum));
      for (k = 0; k < whole; k += 16)
        _mm512_storeu_ps(yr + k, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + k), vm), ls));
      if (tail)
        _mm512_mask_storeu_ps(yr + whole, tail,
                              _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, xr + whole), vm), ls));
    } else {
      const __m512 inv = _mm512_set1_ps(1.f / sum);
      for (k = 0; k < whole; k += 16) _mm512_storeu_ps(yr + k, _mm512_mul_ps(_mm512_loadu_ps(yr + k), inv));
      if (tail)
        _mm512_mask_storeu_ps(yr + whole, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, yr + whole), inv));
    }
  }
}

// y = s / (1 + e^-x) with s = x (Silu) or 1 (Sigmoid): vscalefps and
// vrndscaleps do in one instruction each what the generic loop does in
// three or four, which made Silu a fifth of EfficientNet-B0. e^-x is
// Exp16's reduction and polynomial on -x without negating x (ExpOf<true>),
// with one clamp of x to [-88, 104.5] where Exp16 of -x took three (a
// tenth of the gate's instructions). -x <= 88 as in the generic kernel
// (e^-x stays finite, so Silu(-inf) is -inf there and here); a NaN passes
// through the clamp (vmaxps / vminps return x when x is NaN), the
// polynomial and the division.
template <bool kSilu>
inline __m512 Gate16(__m512 x) {
  const __m512 xc = Min(_mm512_set1_ps(104.5f), Max(_mm512_set1_ps(-88.f), x));
  const __m512 d = _mm512_add_ps(ExpOf<true>(xc), _mm512_set1_ps(1.f));
  return _mm512_div_ps(kSilu ? x : _mm512_set1_ps(1.f), d);
}

template <bool kSilu>
void Gate(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = Gate16<kSilu>(_mm512_loadu_ps(x + i)), b = Gate16<kSilu>(_mm512_loadu_ps(x + i + 16));
    _mm512_storeu_ps(y + i, a);
    _mm512_storeu_ps(y + i + 16, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(y + i, m, Gate16<kSilu>(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

}  // namespace

SoftmaxRowsFn SoftmaxRowsAvx512() { return &SoftmaxRows; }
GateFn SigmoidAvx512() { return &Gate<false>; }
GateFn SiluAvx512() { return &Gate<true>; }

}  // namespace kiln::vec_detail

#else

namespace kiln::vec_detail {
SoftmaxRowsFn SoftmaxRowsAvx512() { return nullptr; }
GateFn SigmoidAvx512() { return nullptr; }
GateFn SiluAvx512() { return nullptr; }
}  // namespace kiln::vec_detail

#endif
