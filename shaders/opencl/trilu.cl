// Trilu in UNIT_T units (shaders/vulkan/trilu.comp): element e of a stack of
// [rows, cols] matrices is kept when its column minus its row is >= k
// (UPPER) or <= k (lower), else zeroed. y may be x (in place).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 1
#endif
#define UPPER (KILN_SPEC_3 != 0)

typedef struct {
  uint n, units, rows, cols;
  int k;
} TriluPush;

__kernel void trilu(__global const UNIT_T* x, __global UNIT_T* y, TriluPush p) {
  uint i = KILN_GLOBAL_INDEX;
  if (i >= p.n) return;
  const uint e = i / p.units;
  const int col = (int)(e % p.cols), row = (int)((e / p.cols) % p.rows);
  const bool keep = UPPER ? col - row >= p.k : col - row <= p.k;
  y[i] = keep ? x[i] : (UNIT_T)0;
}
