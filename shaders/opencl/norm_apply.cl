// Applies row statistics (norm_stats.cl) to X viewed as [rows, len], one
// element per item (shaders/vulkan/norm_apply.comp):
//   LayerNormalization: y = (x - mean) * inv * scale[j] + bias[j], j the
//     element's place in its row; scale and bias broadcast to the normalized
//     shape (dims, and their strides as for BroadcastOffset);
//   InstanceNormalization (INSTANCE): channel c = row % channels,
//     a = scale[c] * inv, y = x * a + (bias[c] - mean * a).
// Without a bias (HAS_BIAS false) scale is bound in its place and unread.
// ROW_LEN: the row length as a constant where scale and bias hold a whole
// row each (no run-time divisions; see the Vulkan shader).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 1
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#define INSTANCE (KILN_SPEC_3 != 0)
#define HAS_BIAS (KILN_SPEC_4 != 0)
#define ROW_LEN ((uint)KILN_SPEC_5)

typedef struct {
  uint total, len, channels, rank;
  uint dims[KILN_MAX_RANK];
  uint s_scale[KILN_MAX_RANK];
  uint s_bias[KILN_MAX_RANK];
} NormApplyPush;

__kernel void norm_apply(__global const STORE_T* x, __global const STORE_T* mean, __global const STORE_T* inv,
                         __global const STORE_T* scale, __global const STORE_T* bias, __global STORE_T* y,
                         NormApplyPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  if (ROW_LEN != 0u) {
    const uint r = i / ROW_LEN, j = i - r * ROW_LEN;
    const float b = HAS_BIAS ? LOAD(bias, j) : 0.0f;
    STORE(y, i, (LOAD(x, i) - LOAD(mean, r)) * LOAD(inv, r) * LOAD(scale, j) + b);
    return;
  }
  const uint row = i / p.len;
  const float v = LOAD(x, i), m = LOAD(mean, row), s = LOAD(inv, row);
  if (INSTANCE) {
    const uint c = row % p.channels;
    const float a = LOAD(scale, c) * s;
    STORE(y, i, v * a + ((HAS_BIAS ? LOAD(bias, c) : 0.0f) - m * a));
  } else {
    const uint j = i - row * p.len;
    const float b = HAS_BIAS ? LOAD(bias, BroadcastOffset(j, p.rank, p.dims, p.s_bias)) : 0.0f;
    STORE(y, i, (v - m) * s * LOAD(scale, BroadcastOffset(j, p.rank, p.dims, p.s_scale)) + b);
  }
}
