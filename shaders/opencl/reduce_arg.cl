// ArgMax / ArgMin along one axis of X viewed as [outer, n, inner]
// (shaders/vulkan/reduce_arg.comp): result o reads x[(o / inner) * n * inner
// + o % inner + i * inner], i < n. Ties go to the smaller index, or the
// larger with SELECT_LAST; a NaN never wins unless it is the row's first
// element, which then stays (the host's scan). The int64 result is written
// as two 32-bit words, low first, as the Vulkan kernel does.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 1
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#define ROW_GROUP (KILN_SPEC_3 != 0)
#define IS_MAX (KILN_SPEC_4 != 0)
#define SELECT_LAST (KILN_SPEC_5 != 0)
#define kNone 0xffffffffu  // no candidate yet

typedef struct {
  uint outputs, n, inner;
} ArgPush;

// Whether candidate (v, i) beats (bv, bi).
bool Better(float v, uint i, float bv, uint bi) {
  if (i == kNone) return false;
  if (bi == kNone) return true;
  if (v == bv) return SELECT_LAST ? i > bi : i < bi;
  return IS_MAX ? v > bv : v < bv;
}

__kernel void reduce_arg(__global const STORE_T* x, __global uint* y, ArgPush p) {
  __local float best_v[KILN_SPEC_0];
  __local uint best_i[KILN_SPEC_0];
  const uint o = ROW_INDEX;
  if (o >= p.outputs) return;  // uniform in a ROW_GROUP group
  const uint outer = o / p.inner, base = outer * p.n * p.inner + (o - outer * p.inner);
  float bv = 0.0f;
  uint bi = kNone;
  for (uint i = ROW_LANE; i < p.n; i += ROW_STEP) {
    const float v = LOAD(x, base + i * p.inner);
    if (!isnan(v) && Better(v, i, bv, bi)) {
      bv = v;
      bi = i;
    }
  }
  if (ROW_GROUP) {
    const uint lane = (uint)get_local_id(0);
    best_v[lane] = bv;
    best_i[lane] = bi;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = (uint)get_local_size(0) / 2u; s > 0u; s >>= 1) {
      if (lane < s && Better(best_v[lane + s], best_i[lane + s], best_v[lane], best_i[lane])) {
        best_v[lane] = best_v[lane + s];
        best_i[lane] = best_i[lane + s];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane != 0u) return;
    bi = best_i[0];
  }
  y[2u * o] = bi == kNone || isnan(LOAD(x, base)) ? 0u : bi;
  y[2u * o + 1u] = 0u;
}
