// Resize from per-axis tables built on the host at resize with the host
// kernel's arithmetic (shaders/vulkan/resize.comp,
// backends/gpu/ops/gpu_layout_index.cpp): for output coordinate c of dim d,
// taps[tab[d] + c] = (off0, off1, w0, w1), the element offsets (index *
// input stride) of the two neighbours and their weights (float bits).
// Nearest (any 2-, 4- or 8-byte dtype, WORDS units an element) reads
// x[sum_d off0]. Linear (f32, or fp16-stored f32 in 16-bit units) sums, over
// the 2^nact corners of the `nact` interpolated dims (listed in `act`, 4
// bits each; the other dims add off0), the product of the corners' weights
// times x.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 1
#endif
#define LINEAR (KILN_SPEC_3 != 0)
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
      if ((p.act_mask & (1u << (uint)d)) == 0u) base += taps[p.tab[d] + c[d]].x;
    }
  }
  if (!LINEAR) {
    y[i] = x[base * WORDS + w];
    return;
  }
  float acc = 0.0f;
  for (uint corner = 0u; corner < (1u << p.nact); ++corner) {
    uint off = base;
    float weight = 1.0f;
    for (uint j = 0u; j < p.nact; ++j) {
      uint d = (p.act >> (4u * j)) & 15u;
      uint4 t = taps[p.tab[d] + c[d]];
      bool hi = ((corner >> j) & 1u) != 0u;
      off += hi ? t.y : t.x;
      weight *= as_float(hi ? t.w : t.z);
    }
    if (weight != 0.0f) acc += weight * LOAD_UNIT_FLOAT(x, off);
  }
  STORE_UNIT_FLOAT(y, i, acc);
}
