// Host kernels: MaxPool (with the optional Indices output), AveragePool,
// GlobalAveragePool, GlobalMaxPool, MaxUnpool. f32 (MaxPool also u8 and i8:
// the max of quantized values is the quantized max), any number of spatial
// axes. Pool work is split over batch x channels; each output value visits its
// window tap by tap.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "host_backend.h"
#include "ops/nn_common.h"
#include "simd_clones.h"
#include "vec_shuffle.h"

namespace kiln {
namespace {

using IntVec = std::vector<int64_t>;

int64_t Prod(const IntVec& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

// a > b ? a : b: a NaN `a` is skipped (vmaxps with b second).
template <typename T>
inline T MaxSkipNaN(T a, T b) {
  return a > b ? a : b;
}
// The value an empty window gives: -inf, or the integer type's lowest.
template <typename T>
constexpr T Lowest() {
  return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
}

// yr[a] = the max of v[2a], v[2a + 1], v[2a + 2] for a < ow (the 3-wide,
// stride-2 horizontal pass); may read v up to 2 ow + 34.
// Outputs a0 .. ow - 1, one at a time.
template <typename T>
inline void MaxOf3Stride2From(const T* __restrict v, int64_t a0, int64_t ow, T* __restrict yr) {
  for (int64_t a = a0; a < ow; ++a) yr[a] = MaxSkipNaN(v[2 * a + 2], MaxSkipNaN(v[2 * a + 1], v[2 * a]));
}
template <typename T>
inline void MaxOf3Stride2(const T* __restrict v, int64_t ow, T* __restrict yr) {
  MaxOf3Stride2From(v, 0, ow, yr);
}
// Floats by GCC's vector extensions (so that each SIMD clone of the caller
// builds its own: AVX-512, AVX2, baseline), 16 a step, 8 on rows of 8 to
// 15. A row's last step ends at the row's end, overlapping the one before
// (a max written twice is the same max), instead of a scalar tail: on
// squeezenet's 111-wide planes the compiler's loops ran 15 of every 111
// columns one at a time, and took the stride-2 taps one output at a time.
template <typename E, typename V, int N, int R>
__attribute__((always_inline)) inline void MaxRowsVecN(const E* const* rows, int64_t n, E* __restrict v) {
  const E* r[3] = {R > 0 ? rows[0] : nullptr, R > 1 ? rows[1] : nullptr, R > 2 ? rows[2] : nullptr};
  for (int64_t i = 0;; i += N) {
    if (i + N > n) i = n - N;
    V m = V{} + Lowest<E>();
    for (int k = 0; k < R; ++k) {
      V x;
      __builtin_memcpy(&x, r[k] + i, sizeof(V));
      m = x > m ? x : m;  // MaxSkipNaN, lane by lane
    }
    __builtin_memcpy(v + i, &m, sizeof(V));
    if (i + N >= n) break;
  }
}
// v[i] = the max of rows[0..nrows)[i] (Lowest where nrows is 0; NaN
// skipped) for i < n, n >= N; E float (V 16 or 8 lanes) or a byte (64, 32
// or 16 lanes).
template <typename E, typename V, int N>
__attribute__((always_inline)) inline void MaxRowsVec(const E* const* rows, int nrows, int64_t n,
                                                      E* __restrict v) {
  switch (nrows) {
    case 3: MaxRowsVecN<E, V, N, 3>(rows, n, v); break;
    case 2: MaxRowsVecN<E, V, N, 2>(rows, n, v); break;
    case 1: MaxRowsVecN<E, V, N, 1>(rows, n, v); break;
    default: MaxRowsVecN<E, V, N, 0>(rows, n, v); break;
  }
}
// The byte vectors of MaxRowsVec (int8 compares signed, uint8 unsigned).
template <typename E>
struct PoolBytes {
  typedef E V64 __attribute__((vector_size(64)));
  typedef E V32 __attribute__((vector_size(32)));
  typedef E V16 __attribute__((vector_size(16)));
};

// The even and the odd lanes of the 2N floats a then b (two-source
// shuffles: vpermt2ps under AVX-512).
template <typename V, int N>
__attribute__((always_inline)) inline void EvenOdd(V a, V b, V* even, V* odd) {
  if constexpr (N == 16) {
    *even = KILN_SHUFFLE16(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *odd = KILN_SHUFFLE16(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  } else {
    *even = KILN_SHUFFLE8(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
    *odd = KILN_SHUFFLE8(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
  }
}

// MaxOf3Stride2 on floats: the even, odd and next-even taps picked out of
// two loads each by constant two-source shuffles. Needs ow >= N.
template <typename V, int N>
__attribute__((always_inline)) inline void MaxOf3Stride2Vec(const float* __restrict v, int64_t ow,
                                                            float* __restrict yr) {
  for (int64_t a = 0;; a += N) {
    if (a + N > ow) a = ow - N;
    const float* p = v + 2 * a;
    V x0, x1, x2, x3, e, o, e2, unused;
    __builtin_memcpy(&x0, p, sizeof(V));
    __builtin_memcpy(&x1, p + N, sizeof(V));
    __builtin_memcpy(&x2, p + 2, sizeof(V));
    __builtin_memcpy(&x3, p + N + 2, sizeof(V));
    EvenOdd<V, N>(x0, x1, &e, &o);
    EvenOdd<V, N>(x2, x3, &e2, &unused);
    V m = o > e ? o : e;
    m = e2 > m ? e2 : m;
    __builtin_memcpy(yr + a, &m, sizeof(V));
    if (a + N >= ow) break;
  }
}
template <>
__attribute__((always_inline)) inline void MaxOf3Stride2<float>(const float* __restrict v, int64_t ow,
                                                                float* __restrict yr) {
  if (ow >= 16) {
    MaxOf3Stride2Vec<VecF16, 16>(v, ow, yr);
  } else if (ow >= 8) {
    MaxOf3Stride2Vec<VecF8, 8>(v, ow, yr);
  } else {
    MaxOf3Stride2From(v, 0, ow, yr);
  }
}

#if defined(__SSE2__)
// Bytes: the max of three shifted loads, then its even bytes, 16 outputs a
// step (int8 compared as uint8 with the sign bit flipped, which orders them
// alike). The compiler's loop gathered the stride-2 bytes one by one.
template <typename T>
inline void MaxOf3Stride2Bytes(const T* __restrict vt, int64_t ow, T* __restrict yt) {
  const uint8_t* v = reinterpret_cast<const uint8_t*>(vt);
  uint8_t* y = reinterpret_cast<uint8_t*>(yt);
  const __m128i flip = _mm_set1_epi8(std::is_signed<T>::value ? static_cast<char>(0x80) : 0);
  const __m128i even = _mm_set1_epi16(0x00ff);
  auto at = [&](int64_t i) { return _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)), flip); };
  if (ow < 16) return MaxOf3Stride2From(vt, 0, ow, yt);
  for (int64_t a = 0;; a += 16) {
    if (a + 16 > ow) a = ow - 16;  // the last step ends at the row's end
    const int64_t i = 2 * a;
    const __m128i m0 = _mm_max_epu8(_mm_max_epu8(at(i), at(i + 1)), at(i + 2));
    const __m128i m1 = _mm_max_epu8(_mm_max_epu8(at(i + 16), at(i + 17)), at(i + 18));
    const __m128i packed = _mm_packus_epi16(_mm_and_si128(m0, even), _mm_and_si128(m1, even));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + a), _mm_xor_si128(packed, flip));
    if (a + 16 >= ow) break;
  }
}
template <>
inline void MaxOf3Stride2<uint8_t>(const uint8_t* __restrict v, int64_t ow, uint8_t* __restrict yr) {
  MaxOf3Stride2Bytes(v, ow, yr);
}
template <>
inline void MaxOf3Stride2<int8_t>(const int8_t* __restrict v, int64_t ow, int8_t* __restrict yr) {
  MaxOf3Stride2Bytes(v, ow, yr);
}
#endif

// One plane of a 2-D MaxPool without Indices, row by row: for each output
// row, the max over the kernel's input rows is first taken column by column
// into `vbuf` (one contiguous pass over the rows at once), then each output
// column takes the max of its kw taps of vbuf: kh + kw reads an output
// instead of kh * kw strided ones. vbuf holds the padded row (input column
// c at vbuf[c + pl]) with -inf in the padding and past the input, so the
// horizontal pass has no bounds to check; it is wide enough for the last
// window (ceil_mode). A NaN input is skipped. T: float, uint8_t, int8_t
// (-inf is then the type's lowest value).
template <typename T>
KILN_SIMD_CLONES_TEMPLATE void MaxPoolPlane2D(const T* __restrict xp, int64_t ih, int64_t iw, T* __restrict yp,
                                              int64_t oh, int64_t ow, int64_t kh, int64_t kw, int64_t sy, int64_t sx,
                                              int64_t py, int64_t pl, int64_t dy, int64_t dx, T* __restrict vbufs,
                                              int64_t vstride) {
  constexpr T kLow = Lowest<T>();
  // Step s takes the vertical pass of row s into one buffer and the
  // horizontal pass of row s - 1 from the other: the horizontal pass's
  // loads straddle the vertical pass's stores, and right behind them they
  // waited for each store to leave the store buffer (no forwarding).
  for (int64_t step = 0; step <= oh; ++step) {
    if (step < oh) {
      const int64_t oy = step;
      T* __restrict v = vbufs + (oy & 1) * vstride + pl;
      // The first three rows inside the input in one pass into v; any
      // further ones (kernels taller than 3) one pass each.
      const T* rows[3];
      int nrows = 0;
      bool in_v = false;
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = oy * sy - py + ky * dy;
        if (iy < 0 || iy >= ih) continue;
        const T* __restrict xr = xp + iy * iw;
        if (nrows < 3) {
          rows[nrows++] = xr;
          continue;
        }
        if (!in_v) {
          for (int64_t i = 0; i < iw; ++i)
            v[i] = MaxSkipNaN(rows[2][i], MaxSkipNaN(rows[1][i], MaxSkipNaN(rows[0][i], kLow)));
          in_v = true;
        }
        for (int64_t i = 0; i < iw; ++i) v[i] = MaxSkipNaN(xr[i], v[i]);
      }
      if (in_v) {
      } else if (std::is_same<T, float>::value && iw >= 8) {
        const float* const* frows = reinterpret_cast<const float* const*>(rows);
        float* fv = reinterpret_cast<float*>(v);
        if (iw >= 16) MaxRowsVec<float, VecF16, 16>(frows, nrows, iw, fv);
        else MaxRowsVec<float, VecF8, 8>(frows, nrows, iw, fv);
      } else if (sizeof(T) == 1 && iw >= 16) {
        using E = typename std::conditional<std::is_signed<T>::value, int8_t, uint8_t>::type;
        const E* const* brows = reinterpret_cast<const E* const*>(rows);
        E* bv = reinterpret_cast<E*>(v);
        if (iw >= 64) MaxRowsVec<E, typename PoolBytes<E>::V64, 64>(brows, nrows, iw, bv);
        else if (iw >= 32) MaxRowsVec<E, typename PoolBytes<E>::V32, 32>(brows, nrows, iw, bv);
        else MaxRowsVec<E, typename PoolBytes<E>::V16, 16>(brows, nrows, iw, bv);
      } else if (nrows == 0) {
        for (int64_t i = 0; i < iw; ++i) v[i] = kLow;
      } else if (nrows == 1) {
        for (int64_t i = 0; i < iw; ++i) v[i] = MaxSkipNaN(rows[0][i], kLow);
      } else if (nrows == 2) {
        for (int64_t i = 0; i < iw; ++i) v[i] = MaxSkipNaN(rows[1][i], MaxSkipNaN(rows[0][i], kLow));
      } else {
        for (int64_t i = 0; i < iw; ++i)
          v[i] = MaxSkipNaN(rows[2][i], MaxSkipNaN(rows[1][i], MaxSkipNaN(rows[0][i], kLow)));
      }
    }
    if (step == 0) continue;
    const T* __restrict vbuf = vbufs + ((step - 1) & 1) * vstride;
    T* __restrict yr = yp + (step - 1) * ow;
    if (kw == 3 && sx == 2 && dx == 1) {
      MaxOf3Stride2(vbuf, ow, yr);
    } else if (kw == 2 && sx == 2 && dx == 1) {
      for (int64_t a = 0; a < ow; ++a) yr[a] = MaxSkipNaN(vbuf[2 * a + 1], vbuf[2 * a]);
    } else if (kw == 3 && sx == 1 && dx == 1) {
      for (int64_t a = 0; a < ow; ++a) yr[a] = MaxSkipNaN(vbuf[a + 2], MaxSkipNaN(vbuf[a + 1], vbuf[a]));
    } else {
      for (int64_t a = 0; a < ow; ++a) yr[a] = vbuf[a * sx];
      for (int64_t kx = 1; kx < kw; ++kx)
        for (int64_t a = 0; a < ow; ++a) yr[a] = MaxSkipNaN(vbuf[a * sx + kx * dx], yr[a]);
    }
  }
}

// The 3x3 stride-2 float MaxPool of most CNNs (squeezenet, ResNet,
// GoogLeNet) on planes of at least 8 + (pl + 1) / 2 output columns whose
// windows stay inside the input but for the pads (MaxPool3x3S2Suits). Each
// output row takes its window's three input rows where they lie (a row in
// the padding is replaced by one inside: the max is the same), and each N
// outputs (16, or 8 on rows under 16): the rows' max over columns s .. s +
// 2N - 1 (s = 2 a - pl) in two vectors, their even and odd lanes by two
// shuffles, and the next even ones (s + 2 on) as the even lanes moved down
// one with column s + 2N's max appended. The general path stores each
// row's column max and reloads it at offsets that straddle two stores,
// which waited for the stores to leave (squeezenet's 64 x 111 x 111, one
// thread: 0.090 -> 0.053 ms). Outputs whose window starts in the left pad
// are taken one by one. A NaN is skipped, as there.
bool MaxPool3x3S2Suits(int64_t iw, int64_t ow, int64_t pl) {
  const int64_t a0 = (pl + 1) / 2;
  return pl >= 0 && pl <= 2 && ow - a0 >= 8 && 2 * ow <= iw + pl;
}
template <typename V, int N>
__attribute__((always_inline)) inline void MaxPool3x3S2Row(const float* r0, const float* r1, const float* r2,
                                                           int64_t iw, int64_t a0, int64_t ow, int64_t pl,
                                                           float* __restrict yr) {
  constexpr float kLow = Lowest<float>();
  for (int64_t a = a0;; a += N) {
    if (a + N > ow) a = ow - N;  // the last step ends at the row's end
    const int64_t c = 2 * a - pl;
    V m0 = V{} + kLow, m1 = m0;
    for (const float* r : {r0, r1, r2}) {
      V x0, x1;
      __builtin_memcpy(&x0, r + c, sizeof(x0));
      __builtin_memcpy(&x1, r + c + N, sizeof(x1));
      m0 = x0 > m0 ? x0 : m0;
      m1 = x1 > m1 ? x1 : m1;
    }
    // Column c + 2N lies in the last output's window or past the input
    // (then column c + 2N - 1 stands in: in the window, the same max).
    const int64_t t = std::min(c + 2 * N, iw - 1);
    const V tail = V{} + MaxSkipNaN(r2[t], MaxSkipNaN(r1[t], MaxSkipNaN(r0[t], kLow)));
    V e, o, e2;
    EvenOdd<V, N>(m0, m1, &e, &o);
    if constexpr (N == 16) e2 = KILN_SHUFFLE16(e, tail, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    else e2 = KILN_SHUFFLE8(e, tail, 1, 2, 3, 4, 5, 6, 7, 8);
    V m = o > e ? o : e;
    m = e2 > m ? e2 : m;
    __builtin_memcpy(yr + a, &m, sizeof(m));
    if (a + N >= ow) break;
  }
}
// One plane (oh x ow outputs).
KILN_SIMD_CLONES void MaxPool3x3S2Plane(const float* __restrict xp, int64_t ih, int64_t iw, float* __restrict yp,
                                        int64_t oh, int64_t ow, int64_t pt, int64_t pl) {
  constexpr float kLow = Lowest<float>();
  const int64_t a0 = (pl + 1) / 2;
  for (int64_t oy = 0; oy < oh; ++oy) {
    const float* rows[3];
    int nrows = 0;
    for (int64_t ky = 0; ky < 3; ++ky) {
      const int64_t iy = oy * 2 - pt + ky;
      if (iy >= 0 && iy < ih) rows[nrows++] = xp + iy * iw;
    }
    float* __restrict yr = yp + oy * ow;
    if (nrows == 0) {
      for (int64_t a = 0; a < ow; ++a) yr[a] = kLow;
      continue;
    }
    for (int r = nrows; r < 3; ++r) rows[r] = rows[0];
    for (int64_t a = 0; a < a0; ++a) {  // windows that start in the left pad
      float m = kLow;
      for (int64_t c = std::max<int64_t>(0, 2 * a - pl); c < std::min(iw, 2 * a - pl + 3); ++c)
        m = MaxSkipNaN(rows[2][c], MaxSkipNaN(rows[1][c], MaxSkipNaN(rows[0][c], m)));
      yr[a] = m;
    }
    if (ow - a0 >= 16) MaxPool3x3S2Row<VecF16, 16>(rows[0], rows[1], rows[2], iw, a0, ow, pl, yr);
    else MaxPool3x3S2Row<VecF8, 8>(rows[0], rows[1], rows[2], iw, a0, ow, pl, yr);
  }
}

// The pool of X (T: f32, or u8 / i8 for MaxPool) into Y.
template <typename T>
Status Pool(const GraphOp& op, const fb::PoolParams* p, const Tensor& X, Tensor& Y, const std::vector<Tensor*>& out,
            HostBackend& be) {
  const bool is_max = op.type == fb::OpType::MaxPool;
  int64_t* indices = out.size() > 1 && out[1] ? out[1]->host<int64_t>() : nullptr;
  const size_t n = static_cast<size_t>(X.dimensions() - 2);
  const IntVec xin(X.shape().begin() + 2, X.shape().end());
  const IntVec yout(Y.shape().begin() + 2, Y.shape().end());
  const IntVec kernel = nn::IntsOr(p->kernel_shape(), n, 1);
  const IntVec strides = nn::IntsOr(p->strides(), n, 1);
  const IntVec dilations = nn::IntsOr(p->dilations(), n, 1);
  const IntVec pads =
      nn::WindowPads(p->auto_pad(), nn::IntsOr(p->pads(), 0, 0), xin, yout, kernel, strides, dilations);
  const bool include_pad = p->count_include_pad();
  const int64_t in_plane = Prod(xin), out_plane = Prod(yout), ksize = Prod(kernel);
  const int64_t planes = X.length(0) * X.length(1);

  // Tap offsets: taps[kk * n + j] = k_j * dilation_j for the kk-th kernel position.
  IntVec taps(static_cast<size_t>(ksize) * n);
  for (int64_t kk = 0; kk < ksize; ++kk)
    for (size_t j = n, rem = static_cast<size_t>(kk); j-- > 0;) {
      taps[static_cast<size_t>(kk) * n + j] = static_cast<int64_t>(rem % static_cast<size_t>(kernel[j])) * dilations[j];
      rem /= static_cast<size_t>(kernel[j]);
    }
  const T* x = static_cast<const T*>(X.hostData());
  T* y = static_cast<T*>(Y.hostData());

  if (is_max && !indices && n == 2) {
    // The padded row: every window's columns, -inf outside the input.
    const int64_t width = std::max(pads[1] + xin[1], (yout[1] - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1);
    if (std::is_same<T, float>::value && kernel[0] == 3 && kernel[1] == 3 && strides[0] == 2 && strides[1] == 2 &&
        dilations[0] == 1 && dilations[1] == 1 && MaxPool3x3S2Suits(xin[1], yout[1], pads[1])) {
      // Threads split the planes. Split by output rows, every plane, each
      // thread's half of a plane ended where the other's began, twice a
      // plane, and the cores got in each other's way there, most likely
      // through the lines the hardware prefetchers fetch past the end of a
      // half (a copy of 128 planes of 729 floats split by rows took 17.2 us
      // on 2 threads, by planes 13.1, one thread's half alone 14.0; halves
      // ending on cache lines did no better; Zen 5 VM, stop 51).
      // SqueezeNet's three pools at 2 threads 0.048 / 0.023 / 0.020 ->
      // 0.033 / 0.015 / 0.010 ms, the ops after them unchanged, the model
      // 1.60 -> 1.54 ms, and 2.46-2.51 -> 2.33-2.40 while a cache line took
      // 400 ns between the cores; ResNet-18's pool 0.054 -> 0.044.
      be.pool().parallelFor(planes, [&](int64_t begin, int64_t end) {
        for (int64_t pl = begin; pl < end; ++pl)
          MaxPool3x3S2Plane(reinterpret_cast<const float*>(x) + pl * in_plane, xin[0], xin[1],
                            reinterpret_cast<float*>(y) + pl * out_plane, yout[0], yout[1], pads[0], pads[1]);
      }, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, out_plane)));
      return Status::Ok();
    }
    be.pool().parallelFor(planes, [&](int64_t begin, int64_t end) {
      // Two padded rows (MaxPoolPlane2D alternates them), each with MaxOf3Stride2's reach.
      const int64_t vstride = width + 64;
      std::vector<T> vbufs(static_cast<size_t>(2 * vstride), Lowest<T>());
      for (int64_t pl = begin; pl < end; ++pl)
        MaxPoolPlane2D(x + pl * in_plane, xin[0], xin[1], y + pl * out_plane, yout[0], yout[1], kernel[0], kernel[1],
                       strides[0], strides[1], pads[0], pads[1], dilations[0], dilations[1], vbufs.data(), vstride);
    });
    return Status::Ok();
  }

  be.pool().parallelFor(planes, [&](int64_t begin, int64_t end) {
    IntVec oidx(n), start(n);
    for (int64_t pl = begin; pl < end; ++pl) {
      const T* xp = x + pl * in_plane;
      for (int64_t o = 0; o < out_plane; ++o) {
        for (size_t j = n, rem = static_cast<size_t>(o); j-- > 0;) {
          oidx[j] = static_cast<int64_t>(rem % static_cast<size_t>(yout[j]));
          rem /= static_cast<size_t>(yout[j]);
          start[j] = oidx[j] * strides[j] - pads[j];
        }
        T best = Lowest<T>();
        float sum = 0.f;
        int64_t best_at = 0, valid = 0, in_padded = 0;
        for (int64_t kk = 0; kk < ksize; ++kk) {
          const int64_t* tap = taps.data() + kk * static_cast<int64_t>(n);
          bool inside = true, inside_padded = true;
          int64_t off = 0;
          for (size_t j = 0; j < n; ++j) {
            int64_t pos = start[j] + tap[j];
            if (pos < 0 || pos >= xin[j]) inside = false;
            if (pos < -pads[j] || pos >= xin[j] + pads[j + n]) inside_padded = false;
            off = off * xin[j] + pos;
          }
          if (inside_padded) ++in_padded;
          if (!inside) continue;
          ++valid;
          const T v = xp[off];
          if (is_max) {
            if (valid == 1 || v > best) {  // the first maximum wins
              best = v;
              best_at = off;
            }
          } else {
            sum += v;
          }
        }
        const int64_t yi = pl * out_plane + o;
        if (is_max) {
          y[yi] = best;  // -inf when the window holds no input element
          if (indices) indices[yi] = pl * in_plane + best_at;
        } else {
          int64_t count = include_pad ? in_padded : valid;
          y[yi] = static_cast<T>(count > 0 ? sum / static_cast<float>(count) : 0.f);  // f32 only
        }
      }
    }
  });
  return Status::Ok();
}

Status RunPool(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const fb::PoolParams* p = op.params<fb::PoolParams>();
  if (!p) return InvalidArgument("%s: PoolParams are required", op.typeName());
  const Tensor& X = *in[0];
  Tensor& Y = *out[0];
  if (op.type == fb::OpType::MaxPool && X.dtype() == Y.dtype()) {
    if (X.dtype() == fb::DataType::U8) return Pool<uint8_t>(op, p, X, Y, out, be);
    if (X.dtype() == fb::DataType::I8) return Pool<int8_t>(op, p, X, Y, out, be);
  }
  KILN_RETURN_IF_ERROR(nn::NeedF32(op, in));
  return Pool<float>(op, p, X, Y, out, be);
}

// y[p] = the mean of plane p (n elements) for p in [0, planes). 32 float
// lanes sum blocks of 1024 elements (32 values a lane, so a lane's rounding
// stays near 32 ulp), and the blocks' sums add up in double: float adds a
// vector of 16 where the double lanes took two converts and two adds.
KILN_SIMD_CLONES
void PlaneMeans(const float* __restrict x, int64_t planes, int64_t n, float* __restrict y) {
  constexpr int64_t kLanes = 32, kBlock = 1024;
  if (n < 2 * kLanes && n >= 16) {
    // Short planes (7x7): one 16-float vector sum a plane, the tail as the
    // plane's last 16 floats with the lanes already counted zeroed, then
    // the vector's halves added down; planes are independent, so their
    // chains overlap. The lanes loop below left 17 of 49 to a serial tail.
    const int64_t full = n / 16 * 16, rem = n - full;
    VecI16 keep;  // -1: a lane of the tail not yet counted
    for (int j = 0; j < 16; ++j) keep[j] = j >= 16 - rem ? -1 : 0;
    for (int64_t pl = 0; pl < planes; ++pl) {
      const float* __restrict xp = x + pl * n;
      VecF16 acc, t;
      __builtin_memcpy(&acc, xp, sizeof(acc));
      for (int64_t i = 16; i < full; i += 16) {
        __builtin_memcpy(&t, xp + i, sizeof(t));
        acc += t;
      }
      if (rem) {
        __builtin_memcpy(&t, xp + n - 16, sizeof(t));
        acc += keep ? t : VecF16{};  // a select: an inf or NaN counted already stays out
      }
      acc += KILN_SHUFFLE16(acc, acc, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
      acc += KILN_SHUFFLE16(acc, acc, 4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15);
      acc += KILN_SHUFFLE16(acc, acc, 2, 3, 0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      acc += KILN_SHUFFLE16(acc, acc, 1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      y[pl] = acc[0] / static_cast<float>(n);
    }
    return;
  }
  for (int64_t pl = 0; pl < planes; ++pl) {
    const float* __restrict xp = x + pl * n;
    double s = 0;
    int64_t i = 0;
    while (i + kLanes <= n) {
      float lanes[kLanes] = {};
      const int64_t end = std::min(n, i + kBlock) / kLanes * kLanes;
      for (; i < end; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) lanes[j] += xp[i + j];
      for (int64_t w = kLanes / 2; w >= 1; w /= 2)
        for (int64_t j = 0; j < w; ++j) lanes[j] += lanes[j + w];
      s += lanes[0];
    }
    for (; i < n; ++i) s += xp[i];
    y[pl] = n ? static_cast<float>(s / static_cast<double>(n)) : 0.f;
  }
}

Status RunGlobalPool(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                     HostBackend& be) {
  KILN_RETURN_IF_ERROR(nn::NeedF32(op, in));
  const Tensor& X = *in[0];
  const bool is_max = op.type == fb::OpType::GlobalMaxPool;
  const int64_t planes = X.length(0) * X.length(1);
  const int64_t plane = planes ? X.elementCount() / planes : 0;
  const float* x = X.host<float>();
  float* y = out[0]->host<float>();
  if (!is_max) {
    be.pool().parallelFor(planes, [&](int64_t begin, int64_t end) {
      PlaneMeans(x + begin * plane, end - begin, plane, y + begin);
    }, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane)));
    return Status::Ok();
  }
  be.pool().parallelFor(planes, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const float* xp = x + pl * plane;
      if (is_max) {
        float m = plane ? xp[0] : -INFINITY;
        for (int64_t i = 1; i < plane; ++i) m = xp[i] > m ? xp[i] : m;
        y[pl] = m;
      } else {
        double s = 0;
        for (int64_t i = 0; i < plane; ++i) s += xp[i];
        y[pl] = plane ? static_cast<float>(s / static_cast<double>(plane)) : 0.f;
      }
    }
  });
  return Status::Ok();
}

// MaxUnpool: Y = 0, then Y.flat[I[i]] = X[i] for every i, in order (a later
// element wins where indices repeat, as in ONNX's reference). I holds flat
// indices into the whole output tensor, as MaxPool's Indices do. Every index
// is checked before anything is written. Serial: one pass over X, and
// repeated indices keep a deterministic result.
Status RunMaxUnpool(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                    HostBackend&) {
  const Tensor& X = *in[0];
  const Tensor& I = *in[1];
  Tensor& Y = *out[0];
  if (X.dtype() != fb::DataType::F32)
    return Unsupported("host MaxUnpool supports f32 only; input 0 is %s", DataTypeName(X.dtype()));
  if (I.dtype() != fb::DataType::I64)
    return Unsupported("host MaxUnpool needs i64 indices; input 1 is %s", DataTypeName(I.dtype()));
  const int64_t n = X.elementCount(), total = Y.elementCount();
  if (I.elementCount() != n)
    return InvalidArgument("MaxUnpool: %lld indices for %lld input values", static_cast<long long>(I.elementCount()),
                           static_cast<long long>(n));
  const float* x = X.host<float>();
  const int64_t* idx = I.host<int64_t>();
  float* y = Y.host<float>();
  // ONNX reads indices in the default-size output; when output_shape is
  // larger, each index is moved to the same coordinates of the real output.
  std::vector<int64_t> remapped;
  const auto* p = op.params<fb::MaxUnpoolParams>();
  const size_t rank = X.shape().size();
  if (p && !p->indices_in_output_shape() && rank >= 3) {
    std::vector<int64_t> def = X.shape();
    const size_t n_sp = rank - 2;
    auto at = [](const flatbuffers::Vector<int32_t>* v, size_t i, int64_t d) {
      return v && i < v->size() ? static_cast<int64_t>(v->Get(static_cast<flatbuffers::uoffset_t>(i))) : d;
    };
    for (size_t i = 0; i < n_sp; ++i)
      def[2 + i] = (X.shape()[2 + i] - 1) * at(p->strides(), i, 1) - at(p->pads(), i, 0) - at(p->pads(), i + n_sp, 0) +
                   at(p->kernel_shape(), i, 1);
    if (def != Y.shape()) {
      remapped.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        int64_t rest = idx[i], flat = 0, stride = 1;
        bool inside = rest >= 0;
        for (size_t d = rank; d-- > 0 && inside;) {
          int64_t c = rest % def[d];
          rest /= def[d];
          inside = c < Y.shape()[d];
          flat += c * stride;
          stride *= Y.shape()[d];
        }
        remapped[static_cast<size_t>(i)] = inside && rest == 0 ? flat : -1;  // -1: reported below
      }
      idx = remapped.data();
    }
  }
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= total)
      return InvalidArgument("MaxUnpool '%s': index %lld (input position %lld) is out of range for the output of "
                             "%lld elements",
                             op.name.c_str(), static_cast<long long>(idx[i]), static_cast<long long>(i),
                             static_cast<long long>(total));
  if (total > 0) std::memset(y, 0, static_cast<size_t>(total) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) y[idx[i]] = x[i];
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostPool(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunPool);
}
StatusOr<std::unique_ptr<Execution>> CreateHostGlobalPool(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunGlobalPool);
}

StatusOr<std::unique_ptr<Execution>> CreateHostMaxUnpool(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunMaxUnpool);
}

}  // namespace kiln
