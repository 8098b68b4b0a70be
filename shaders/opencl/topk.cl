// TopK along an axis, one work item a line (shaders/vulkan/topk.comp): the k
// largest (LARGEST) or smallest values in order, ties to the lower index,
// NaN above everything, and their indices as i64.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 1
#endif
#define LARGEST (KILN_SPEC_3 != 0)

typedef struct {
  uint lines, n, inner, k;
} TopKPush;

int TopKCompare(float a, float b) {
  const bool na = isnan(a), nb = isnan(b);
  if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  return a < b ? -1 : (a > b ? 1 : 0);
}

bool TopKBefore(float a, uint ia, float b, uint ib) {
  const int c = TopKCompare(a, b);
  if (c != 0) return LARGEST ? c > 0 : c < 0;
  return ia < ib;
}

__kernel void topk(__global const STORE_T* x, __global STORE_T* v, __global long* ind, TopKPush p) {
  const uint l = KILN_GLOBAL_INDEX;
  if (l >= p.lines) return;
  const uint o = l / p.inner, i = l - o * p.inner;
  const uint base = o * p.n * p.inner + i, obase = o * p.k * p.inner + i;
  float last = 0.0f;
  uint last_i = 0;
  for (uint j = 0; j < p.k; ++j) {
    bool found = false;
    float best = 0.0f;
    uint best_i = 0;
    for (uint t = 0; t < p.n; ++t) {
      const float val = LOAD(x, base + t * p.inner);
      if (j > 0 && !TopKBefore(last, last_i, val, t)) continue;
      if (!found || TopKBefore(val, t, best, best_i)) {
        found = true;
        best = val;
        best_i = t;
      }
    }
    const uint at = obase + j * p.inner;
    STORE(v, at, best);
    ind[at] = (long)best_i;
    last = best;
    last_i = best_i;
  }
}
