// Reading and writing single elements of any dtype, and dispatching a
// template over a tensor's element type: the one place that maps
// fb::DataType to a C++ type. Used where an op is generic over its element
// type (the host kernels, the value inputs of shape functions, Cast).
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "half.h"
#include "kiln/format.h"

namespace kiln {

// f16 and bf16 as stored (their bits); ElementType<F16> is Half.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// Calls f(T{}) with T the C++ type of `t`'s elements (bool and u8 as
// uint8_t, f16 as Half, bf16 as BFloat16); returns f's result.
template <typename F>
auto VisitDataType(fb::DataType t, F&& f) {
  switch (t) {
    case fb::DataType::F32: return f(float{});
    case fb::DataType::F16: return f(Half{});
    case fb::DataType::BF16: return f(BFloat16{});
    case fb::DataType::I32: return f(int32_t{});
    case fb::DataType::I64: return f(int64_t{});
    case fb::DataType::I8: return f(int8_t{});
    case fb::DataType::U8: return f(uint8_t{});
    case fb::DataType::BOOL: return f(uint8_t{});
    case fb::DataType::F64: return f(double{});
    case fb::DataType::U16: return f(uint16_t{});
    case fb::DataType::U32: return f(uint32_t{});
    case fb::DataType::U64: return f(uint64_t{});
    case fb::DataType::I16: return f(int16_t{});
  }
  return f(float{});
}

// The arithmetic types: every dtype but f16, bf16 and bool.
inline bool IsArithmetic(fb::DataType t) {
  return t != fb::DataType::F16 && t != fb::DataType::BF16 && t != fb::DataType::BOOL;
}
inline bool IsFloating(fb::DataType t) {
  return t == fb::DataType::F32 || t == fb::DataType::F64 || t == fb::DataType::F16 || t == fb::DataType::BF16;
}
inline bool IsSignedInteger(fb::DataType t) {
  return t == fb::DataType::I8 || t == fb::DataType::I16 || t == fb::DataType::I32 || t == fb::DataType::I64;
}
inline bool IsUnsignedInteger(fb::DataType t) {
  return t == fb::DataType::U8 || t == fb::DataType::U16 || t == fb::DataType::U32 || t == fb::DataType::U64;
}

inline double ToDouble(float v) { return v; }
inline double ToDouble(double v) { return v; }
inline double ToDouble(Half v) { return HalfToFloat(v.bits); }
inline double ToDouble(BFloat16 v) { return Bf16ToFloat(v.bits); }
template <typename T>
inline std::enable_if_t<std::is_integral<T>::value, double> ToDouble(T v) {
  return static_cast<double>(v);
}

// Element i of `data` (of type t) as a double (i64 and u64 beyond 2^53 are
// rounded; see LoadInt64 for exact integers).
inline double LoadDouble(const void* data, fb::DataType t, int64_t i) {
  if (t == fb::DataType::BOOL) return static_cast<const uint8_t*>(data)[i] != 0;
  return VisitDataType(t, [&](auto tag) { return ToDouble(static_cast<const decltype(tag)*>(data)[i]); });
}

// Element i as an int64 (exact for every integer type but u64 above
// INT64_MAX, which saturates; floats truncate toward 0, saturating).
inline int64_t LoadInt64(const void* data, fb::DataType t, int64_t i) {
  switch (t) {
    case fb::DataType::I64: return static_cast<const int64_t*>(data)[i];
    case fb::DataType::U64: {
      uint64_t v = static_cast<const uint64_t*>(data)[i];
      return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
    }
    default: break;
  }
  double d = LoadDouble(data, t, i);
  if (d != d) return 0;
  if (d <= -9.2233720368547758e18) return INT64_MIN;
  if (d >= 9.2233720368547758e18) return INT64_MAX;
  return static_cast<int64_t>(d);
}

// v converted to T: floats round to the nearest (f16 and bf16 to nearest
// even), integers saturate (NaN is 0). StoreDouble writes bool as v != 0.
template <typename T>
inline T FromDouble(double v) {
  if constexpr (std::is_same<T, Half>::value) {
    return Half{FloatToHalf(static_cast<float>(v))};
  } else if constexpr (std::is_same<T, BFloat16>::value) {
    return BFloat16{FloatToBf16(static_cast<float>(v))};
  } else if constexpr (std::is_floating_point<T>::value) {
    return static_cast<T>(v);
  } else {
    if (v != v) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

inline void StoreDouble(void* data, fb::DataType t, int64_t i, double v) {
  if (t == fb::DataType::BOOL) {
    static_cast<uint8_t*>(data)[i] = v != 0;
    return;
  }
  VisitDataType(t, [&](auto tag) {
    using T = decltype(tag);
    static_cast<T*>(data)[i] = FromDouble<T>(v);
    return 0;
  });
}

// -1, 0 or 1 as a <, =, > b in a total order: NaN above everything (and
// equal to NaN), so that sorts and groupings over hostile data stay strict
// weak orders.
inline int TotalCompare(double a, double b) {
  const bool na = a != a, nb = b != b;
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  return a < b ? -1 : (a > b ? 1 : 0);
}

// a + b and a * b that wrap around for integers (two's complement, as
// ONNX's integer arithmetic; signed overflow is undefined in C++).
// (Computed on unsigned int at least: u16 * u16 promoted to int overflows.)
template <typename T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
template <typename T>
inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = WrapType<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = WrapType<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

}  // namespace kiln
