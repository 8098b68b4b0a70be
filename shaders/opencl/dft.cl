// DFT and STFT, one work item an output bin (re, im) (shaders/vulkan/dft.comp):
// bin e is (o, k, i) over [outers, bins, inner]; its sequence starts at x
// element (o / frames) * hi + (o % frames) * lo + i * comp and steps by
// `step`. FLAGS bit 0: inverse (scaled by 1 / len); bit 1: a window in w.
// Twiddles come from the host's double-precision table (cos hi, cos lo,
// sin hi, sin lo); KILN_F64 (the dft_f64 variant, devices with cl_khr_fp64)
// sums in double as the host does.
#ifdef KILN_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define ACC_T double
#else
#define ACC_T float
#endif
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define FLAGS KILN_SPEC_3

typedef struct {
  uint n, bins, inner, frames, hi, lo, step, count, len, comp;
} DftPush;

__kernel void dft(__global const STORE_T* x, __global const STORE_T* w, __global const float4* twiddle,
                  __global STORE_T* y, DftPush p) {
  const uint e = KILN_GLOBAL_INDEX;
  if (e >= p.n) return;
  const uint t0 = e / p.inner, i = e - t0 * p.inner;
  const uint o = t0 / p.bins, k = t0 - o * p.bins;
  const uint f = o / p.frames;
  uint at = f * p.hi + (o - f * p.frames) * p.lo + i * p.comp;
  const ACC_T sign = (FLAGS & 1) != 0 ? (ACC_T)1 : (ACC_T)-1;
  const uint kn = k % p.len;
  ACC_T re = 0, im = 0;
  uint phase = 0;  // (k t) mod len, kept below len
  for (uint t = 0; t < p.count; ++t, at += p.step) {
    const float wt = (FLAGS & 2) != 0 ? LOAD(w, t) : 1.0f;
    const ACC_T xr = (ACC_T)(wt * LOAD(x, at)), xi = p.comp == 2 ? (ACC_T)(wt * LOAD(x, at + 1)) : (ACC_T)0;
    const float4 tw = twiddle[phase];
    const ACC_T c = (ACC_T)tw.x + (ACC_T)tw.y, s = sign * ((ACC_T)tw.z + (ACC_T)tw.w);
    re += xr * c - xi * s;
    im += xr * s + xi * c;
    phase += kn;
    if (phase >= p.len) phase -= p.len;
  }
  if ((FLAGS & 1) != 0) {
    re /= (ACC_T)p.len;
    im /= (ACC_T)p.len;
  }
  STORE(y, 2 * e, (float)re);
  STORE(y, 2 * e + 1, (float)im);
}
