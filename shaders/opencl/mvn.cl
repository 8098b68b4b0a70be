// MeanVarianceNormalization, one work item a group of the elements that
// share their kept coordinates (shaders/vulkan/mvn.comp): y = (x - mean) /
// (sqrt(var) + 1e-9), the variance taken about the mean in fp32.
typedef struct {
  uint groups, count, rank, reduced;
  uint dims[KILN_MAX_RANK];
} MvnPush;

uint At(const MvnPush* p, uint g, uint r) {
  uint off = 0, stride = 1;
  for (uint d = p->rank; d-- > 0;) {
    uint c;
    if ((p->reduced & (1u << d)) != 0) {
      c = r % p->dims[d];
      r /= p->dims[d];
    } else {
      c = g % p->dims[d];
      g /= p->dims[d];
    }
    off += c * stride;
    stride *= p->dims[d];
  }
  return off;
}

__kernel void mvn(__global const STORE_T* x, __global STORE_T* y, MvnPush p) {
  const uint g = KILN_GLOBAL_INDEX;
  if (g >= p.groups) return;
  float sum = 0.0f;
  for (uint r = 0; r < p.count; ++r) sum += LOAD(x, At(&p, g, r));
  const float mean = sum / (float)p.count;
  float sq = 0.0f;
  for (uint r = 0; r < p.count; ++r) {
    const float d = LOAD(x, At(&p, g, r)) - mean;
    sq += d * d;
  }
  const float scale = 1.0f / (sqrt(sq / (float)p.count) + 1e-9f);
  for (uint r = 0; r < p.count; ++r) {
    const uint at = At(&p, g, r);
    STORE(y, at, (LOAD(x, at) - mean) * scale);
  }
}
