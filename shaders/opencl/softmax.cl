// Softmax / LogSoftmax along one axis of X viewed as [outer, n, inner]
// (shaders/vulkan/softmax.comp): row o is x[(o / inner) * n * inner + o %
// inner + i * inner], i < n. One pass keeps a running maximum m and the sum
// s of exp(x - m), rescaling s when m grows (partial (m, s) pairs of a work
// group merge the same way); a second pass writes exp(x - m) / s, or x - m -
// log(s). A row of -inf gives NaN, as on the host.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define ROW_GROUP (KILN_SPEC_3 != 0)
#define LOG (KILN_SPEC_4 != 0)

typedef struct {
  uint rows, n, inner;
} SoftmaxPush;

// (m, s) += (m2, s2); an empty part (s == 0) adds nothing, which also keeps
// exp(-inf - -inf) out.
void Merge(float* m, float* s, float m2, float s2) {
  const float mx = fmax(*m, m2);
  *s = (*s == 0.0f ? 0.0f : *s * exp(*m - mx)) + (s2 == 0.0f ? 0.0f : s2 * exp(m2 - mx));
  *m = mx;
}

__kernel void softmax(__global const STORE_T* x, __global STORE_T* y, SoftmaxPush p) {
  __local float part_m[KILN_SPEC_0];
  __local float part_s[KILN_SPEC_0];
  const uint o = ROW_INDEX;
  if (o >= p.rows) return;  // uniform in a ROW_GROUP group
  const uint outer = o / p.inner, base = outer * p.n * p.inner + (o - outer * p.inner);
  float m = -INFINITY, s = 0.0f;
  for (uint i = ROW_LANE; i < p.n; i += ROW_STEP) {
    const float v = LOAD(x, base + i * p.inner);
    if (v > m) {
      s = s * exp(m - v) + 1.0f;
      m = v;
    } else if (v != -INFINITY) {
      s += exp(v - m);
    }
  }
  if (ROW_GROUP) {
    const uint lane = (uint)get_local_id(0);
    part_m[lane] = m;
    part_s[lane] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = (uint)get_local_size(0) / 2u; h > 0u; h >>= 1) {
      if (lane < h) {
        float mm = part_m[lane], ss = part_s[lane];
        Merge(&mm, &ss, part_m[lane + h], part_s[lane + h]);
        part_m[lane] = mm;
        part_s[lane] = ss;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = part_m[0];
    s = part_s[0];
  }
  const float scale = LOG ? log(s) : 1.0f / s;
  for (uint i = ROW_LANE; i < p.n; i += ROW_STEP) {
    const uint at = base + i * p.inner;
    const float d = LOAD(x, at) - m;
    STORE(y, at, LOG ? d - scale : exp(d) * scale);
  }
}
