// Shared by the quantized-op shaders (quantize, dq_range, qmatmul, qconv;
// backends/gpu/ops/gpu_quant.cpp): 8-bit loads, division and requantizing
// with the host kernels' arithmetic (host_fallback/ops/quant.cpp).
#ifndef KILN_QUANT_GLSL
#define KILN_QUANT_GLSL

// A byte as an integer of quantized type `type` (0 u8, 1 i8).
int LoadQ(uint v, uint type) { return type == 1u ? int(v << 24) >> 24 : int(v); }

// The range of quantized type `type` (0 u8, 1 i8).
int QLo(uint type) { return type == 1u ? -128 : 0; }
int QHi(uint type) { return type == 1u ? 127 : 255; }

// a / b in f32, correctly rounded as the host's: in the _f64 variant a
// double quotient rounded once more to float (exact for f32 operands),
// else DivRn's corrected quotient.
#ifdef KILN_F64
#define QDIV(a, b) float(double(a) / double(b))
#else
#define QDIV(a, b) DivRn(a, b)
#endif

// a b + c with one rounding to f32, as the host's fma: in the _f64 variant
// through doubles (the product of two floats is exact there, the sum
// rounded to double, then to float; CPU drivers such as lavapipe split a
// float fma into a multiply and an add), else the device's fma.
#ifdef KILN_F64
#define QFMA(a, b, c) float(double(a) * double(b) + double(c))
#else
#define QFMA(a, b, c) fma(a, b, c)
#endif

// round(q) half to even, plus zp, saturated to [lo, hi]; NaN gives zp.
int QuantizeValue(float q, int zp, int lo, int hi) {
  if (isnan(q)) return zp;
  const float r = roundEven(q) + float(zp);
  if (r < float(lo)) return lo;
  if (r > float(hi)) return hi;
  return int(r);
}

// An int32 sum as f32 times an f32 multiplier, in f32 (the host's and
// onnxruntime's arithmetic), rounded half to even, plus zp, saturated.
int Requantize(int acc, float mult, int zp, int lo, int hi) { return QuantizeValue(float(acc) * mult, zp, lo, hi); }

#endif
