// Resize from per-axis tables built on the host at resize with the host's
// arithmetic (shaders/vulkan/resize.comp, ResizeAxisTap): for output
// coordinate c of dim d, entry tab[d] + c is two uint4s, the element offsets
// (index * input stride) of up to 4 taps, then their weights (float bits).
// TAPS 1, nearest (any 2-, 4- or 8-byte dtype, WORDS units an element),
// reads x[sum_d off0]. TAPS 2 (linear) and 4 (cubic), f32 or fp16-stored
// f32 in 16-bit units, sum over the TAPS^nact combinations of taps of the
// `nact` interpolated dims (listed in `act`, 4 bits each; the other dims
// add off0) the product of the taps' weights times x.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 1
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 1
#endif
#define TAPS KILN_SPEC_3
#define WORDS KILN_SPEC_4

// A unit holding a float: f32 bits, or in 16-bit units f16 bits.
#ifdef KILN_UNIT16
#define LOAD_UNIT_FLOAT(p, i) vload_half((i), (__global const half*)(p))
#define STORE_UNIT_FLOAT(p, i, v) vstore_half((v), (i), (__global half*)(p))
#else
#define LOAD_UNIT_FLOAT(p, i) as_float((p)[i])
#define STORE_UNIT_FLOAT(p, i, v) ((p)[i] = as_uint(v))
#endif

typedef struct {
  uint n, rank, nact, act, act_mask;
  uint dims[KILN_MAX_RANK];
  uint tab[KILN_MAX_RANK];
} ResizePush;

__kernel void resize(__global const UNIT_T* x, __global const uint4* taps, __global UNIT_T* y, ResizePush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  uint e = i / WORDS, w = i - e * WORDS;
  uint c[KILN_MAX_RANK];
  uint base = 0u;
  for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if ((uint)d < p.rank) {
      uint q = e / p.dims[d];
      c[d] = e - q * p.dims[d];
      e = q;
      if ((p.act_mask & (1u << (uint)d)) == 0u) base += taps[2u * (p.tab[d] + c[d])].x;
    }
  }
  if (TAPS == 1) {
    y[i] = x[base * WORDS + w];
    return;
  }
  uint combos = 1u;
  for (uint j = 0u; j < p.nact; ++j) combos *= TAPS;
  float acc = 0.0f;
  for (uint combo = 0u; combo < combos; ++combo) {
    uint off = base, rest = combo;
    float weight = 1.0f;
    for (uint j = 0u; j < p.nact; ++j) {
      const uint d = (p.act >> (4u * j)) & 15u, k = rest % TAPS;
      rest /= TAPS;
      const uint entry = 2u * (p.tab[d] + c[d]);
      const uint4 o = taps[entry], wt = taps[entry + 1u];
      off += k == 0 ? o.x : k == 1 ? o.y : k == 2 ? o.z : o.w;
      weight *= as_float(k == 0 ? wt.x : k == 1 ? wt.y : k == 2 ? wt.z : wt.w);
    }
    if (weight != 0.0f) acc += weight * LOAD_UNIT_FLOAT(x, off);
  }
  STORE_UNIT_FLOAT(y, i, acc);
}
