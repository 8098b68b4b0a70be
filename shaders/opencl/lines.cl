// One work item a line along an axis, X viewed as [outer, n, inner]
// (shaders/vulkan/lines.comp): MODE 0 Hardmax, 1 CumSum (flags: bit 0
// exclusive, bit 1 reverse), 2 LRN across the axis (channels).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define MODE KILN_SPEC_3

typedef struct {
  uint lines, n, inner, flags;
  float alpha, beta, bias;
  uint size;
} LinesPush;

__kernel void lines(__global const STORE_T* x, __global STORE_T* y, LinesPush p) {
  const uint l = KILN_GLOBAL_INDEX;
  if (l >= p.lines) return;
  const uint o = l / p.inner, i = l - o * p.inner;
  const uint base = o * p.n * p.inner + i;
  if (MODE == 0) {
    uint best = 0;
    float top = LOAD(x, base);
    for (uint j = 1; j < p.n; ++j) {
      const float v = LOAD(x, base + j * p.inner);
      if (v > top) {
        top = v;
        best = j;
      }
    }
    for (uint j = 0; j < p.n; ++j) STORE(y, base + j * p.inner, j == best ? 1.0f : 0.0f);
  } else if (MODE == 1) {
    const bool exclusive = (p.flags & 1u) != 0, reverse = (p.flags & 2u) != 0;
    float acc = 0.0f;
    for (uint jj = 0; jj < p.n; ++jj) {
      const uint at = base + (reverse ? p.n - 1 - jj : jj) * p.inner;
      const float v = LOAD(x, at);
      if (exclusive) {
        STORE(y, at, acc);
        acc += v;
      } else {
        acc += v;
        STORE(y, at, acc);
      }
    }
  } else {
    const int lo = (int)(p.size - 1) / 2, hi = (int)p.size - 1 - lo;
    for (int k = 0; k < (int)p.n; ++k) {
      float sq = 0.0f;
      for (int j = max(0, k - lo); j <= min((int)p.n - 1, k + hi); ++j) {
        const float v = LOAD(x, base + (uint)j * p.inner);
        sq += v * v;
      }
      const uint at = base + (uint)k * p.inner;
      STORE(y, at, LOAD(x, at) / pow(p.bias + p.alpha / (float)p.size * sq, p.beta));
    }
  }
}
