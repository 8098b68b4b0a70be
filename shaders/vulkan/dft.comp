#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// DFT and STFT, one invocation an output bin (re, im), with the host
// kernel's sum (host_fallback/ops/signal.cpp, Dft1): y[k] = sum over t <
// count of x[t] w[t] e^(-+2 pi i k t / len), scaled by 1 / len when inverse.
// Output bin e is (o, k, i) over [outers, bins, inner]; its sequence starts
// at x element (o / frames) * hi + (o % frames) * lo + i * comp and steps by
// `step` (in x's elements; comp 1 for real and 2 for complex input). DFT:
// frames 1, lo 0; STFT: o is (batch, frame), lo the frame step. FLAGS bit 0:
// inverse; bit 1: a window in w.
//
// The twiddles come from a table the host computed in double: entry j is
// cos and sin of 2 pi j / len, each as a float and the float remainder. The
// <stem>_f64 variant (KILN_F64, devices with shaderFloat64) sums in double,
// as the host does, so that bins whose true value is 0 come out near 0;
// the plain one sums in float with the rounded twiddles.
#ifdef KILN_F64
#define ACC_T double
#else
#define ACC_T float
#endif
layout(constant_id = 3) const uint FLAGS = 0;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer W { STORE_T w[]; };
layout(std430, binding = 2) readonly buffer T { vec4 twiddle[]; };  // cos hi, cos lo, sin hi, sin lo
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint n, bins, inner, frames, hi, lo, step, count, len, comp;
} p;

void main() {
  const uint e = KILN_GLOBAL_INDEX;
  if (e >= p.n) return;
  const uint t0 = e / p.inner, i = e - t0 * p.inner;
  const uint o = t0 / p.bins, k = t0 - o * p.bins;
  const uint f = o / p.frames;
  uint at = f * p.hi + (o - f * p.frames) * p.lo + i * p.comp;
  const ACC_T sign = (FLAGS & 1u) != 0u ? ACC_T(1.0) : ACC_T(-1.0);
  const uint kn = k % p.len;
  ACC_T re = ACC_T(0.0), im = ACC_T(0.0);
  uint phase = 0u;  // (k t) mod len, kept below len
  for (uint t = 0u; t < p.count; ++t, at += p.step) {
    const float wt = (FLAGS & 2u) != 0u ? float(w[t]) : 1.0;
    const ACC_T xr = ACC_T(wt * float(x[at])), xi = p.comp == 2u ? ACC_T(wt * float(x[at + 1u])) : ACC_T(0.0);
    const vec4 tw = twiddle[phase];
    const ACC_T c = ACC_T(tw.x) + ACC_T(tw.y), s = sign * (ACC_T(tw.z) + ACC_T(tw.w));
    re += xr * c - xi * s;
    im += xr * s + xi * c;
    phase += kn;
    if (phase >= p.len) phase -= p.len;
  }
  if ((FLAGS & 1u) != 0u) {
    re /= ACC_T(p.len);
    im /= ACC_T(p.len);
  }
  y[2u * e] = STORE_T(float(re));
  y[2u * e + 1u] = STORE_T(float(im));
}
