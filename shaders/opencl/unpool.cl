// MaxUnpool in three dispatches (STAGE), Y viewed as 32-bit words
// (shaders/vulkan/unpool.comp):
//   0: Y = 0;
//   1: for each input i whose i64 index j is valid, Y[j] = max(Y[j], i + 1)
//      (atomic_max: where indices repeat the last input wins, as in the host
//      kernel's serial loop, whatever the order items run in);
//   2: Y[j] = claim ? x[claim - 1] : 0.
// With REMAP, j is a flat index into the default-size output (def dims)
// and moves to the same coordinates of the real output (out dims); an
// index outside the output (an error on the host) is skipped.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#define STAGE KILN_SPEC_3
#define REMAP (KILN_SPEC_4 != 0)

typedef struct {
  uint n, total, rank;
  uint def_dims[KILN_MAX_RANK];
  uint out_dims[KILN_MAX_RANK];
} UnpoolPush;

// The flat output index of input i, or total when it is invalid.
uint Target(__global const uint* ind, uint i, const UnpoolPush* p) {
  uint lo = ind[2 * i], hi = ind[2 * i + 1];
  if (hi != 0u) return p->total;
  if (!REMAP) return lo < p->total ? lo : p->total;
  uint rest = lo, at = 0u, stride = 1u;
  bool inside = true;
  for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if ((uint)d < p->rank) {
      uint q = rest / p->def_dims[d], c = rest - q * p->def_dims[d];
      rest = q;
      inside = inside && c < p->out_dims[d];
      at += c * stride;
      stride *= p->out_dims[d];
    }
  }
  return inside && rest == 0u ? at : p->total;
}

__kernel void unpool(__global const uint* x, __global const uint* ind, __global uint* y, UnpoolPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (STAGE == 1) {
    if (i >= p.n) return;
    uint j = Target(ind, i, &p);
    if (j < p.total) atomic_max(&y[j], i + 1u);
    return;
  }
  if (i >= p.total) return;
  if (STAGE == 0) {
    y[i] = 0u;
  } else {
    uint claim = y[i];
    y[i] = claim == 0u || claim > p.n ? 0u : x[claim - 1u];  // a claim beyond n: never in a run, but stages can run alone (tuning)
  }
}
