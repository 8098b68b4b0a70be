// BatchNormalization, inference form, on X [N, C, ...]: y = x * a + b with
// a = scale / sqrt(var + eps), b = B - mean * a (shaders/vulkan/batchnorm.comp).
typedef struct {
  uint total, c, plane;
  float eps;
} BatchNormPush;

__kernel void batchnorm(__global const STORE_T* x, __global const STORE_T* scale, __global const STORE_T* bias,
                        __global const STORE_T* mean, __global const STORE_T* var, __global STORE_T* y,
                        BatchNormPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint ch = (i / p.plane) % p.c;
  const float a = LOAD(scale, ch) / sqrt(LOAD(var, ch) + p.eps);
  const float b = LOAD(bias, ch) - LOAD(mean, ch) * a;
  STORE(y, i, LOAD(x, i) * a + b);
}
