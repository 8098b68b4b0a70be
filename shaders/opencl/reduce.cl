// ReduceSum / Mean / Max / Min / Prod / L1 / L2 / SumSquare / LogSum /
// LogSumExp (and GlobalAverage/MaxPool) over
// any set of axes (shaders/vulkan/reduce.comp). Result o reads the row
// x[kept(o) + reduced(r)], r < count, where kept() and reduced() decompose an
// index over the merged kept and reduced dims (innermost last) and sum index
// * stride (BroadcastOffset).
//
// STAGE 0 reduces whole rows into y. A long row with few results is split
// over two dispatches: STAGE 1 reduces chunk c (`chunk` elements) of row o
// into y[o * chunks + c] (a scratch buffer; mapped, not finished), STAGE 2
// reduces those partials as rows of `chunks` contiguous values (combined,
// not mapped again) and finishes. Max/Min propagate NaN, as the host does.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#define ROW_GROUP (KILN_SPEC_3 != 0)
#define OP KILN_SPEC_4  // the op layer's reduce codes (gpu_reduce.cpp)
#define STAGE KILN_SPEC_5
#define kSum 0
#define kMean 1
#define kMax 2
#define kMin 3
#define kProd 4
#define kL2 5
#define kL1 6
#define kSumSquare 7
#define kLogSum 8
#define kLogSumExp 9

typedef struct {
  uint outputs, count;  // results, elements per row
  uint chunks, chunk;   // chunks per row, elements per chunk (1 and count unless STAGE 1)
  uint krank, rrank;
  float divisor;        // Mean: elements per row of the whole reduction
  uint kdims[KILN_MAX_RANK], kstrides[KILN_MAX_RANK];
  uint rdims[KILN_MAX_RANK], rstrides[KILN_MAX_RANK];
} ReducePush;

float Identity(void) {
  if (OP == kMax) return -INFINITY;
  if (OP == kMin) return INFINITY;
  return OP == kProd ? 1.0f : 0.0f;
}

float Combine(float a, float b) {
  if (OP == kMax) return b > a || isnan(b) ? b : a;
  if (OP == kMin) return b < a || isnan(b) ? b : a;
  return OP == kProd ? a * b : a + b;
}

// The element's contribution; STAGE 2 combines partials, already mapped.
float Map(float v) {
  if (STAGE == 2) return v;
  switch (OP) {
    case kL2:
    case kSumSquare: return v * v;
    case kL1: return fabs(v);
    case kLogSumExp: return exp(v);
    default: return v;
  }
}

float Finish(float acc, float divisor) {
  if (STAGE == 1) return acc;
  if (OP == kMean) return divisor == 0.0f ? NAN : acc / divisor;
  switch (OP) {
    case kLogSum:
    case kLogSumExp: return log(acc);
    case kL2: return sqrt(acc);
    default: return acc;
  }
}

__kernel void reduce(__global const STORE_T* x, __global STORE_T* y, ReducePush p) {
  __local float partial[KILN_SPEC_0];
  const uint g = ROW_INDEX;
  if (g >= p.outputs * p.chunks) return;  // uniform in a ROW_GROUP group
  const uint o = g / p.chunks, c = g - o * p.chunks;
  const uint base = BroadcastOffset(o, p.krank, p.kdims, p.kstrides);
  const uint end = min(p.count, (c + 1u) * p.chunk);
  float acc = Identity();
  if (p.rrank == 1u) {
    for (uint r = c * p.chunk + ROW_LANE; r < end; r += ROW_STEP)
      acc = Combine(acc, Map(LOAD(x, base + r * p.rstrides[0])));
  } else {
    for (uint r = c * p.chunk + ROW_LANE; r < end; r += ROW_STEP)
      acc = Combine(acc, Map(LOAD(x, base + BroadcastOffset(r, p.rrank, p.rdims, p.rstrides))));
  }
  if (ROW_GROUP) {
    const uint lane = (uint)get_local_id(0);
    partial[lane] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = (uint)get_local_size(0) / 2u; s > 0u; s >>= 1) {
      if (lane < s) partial[lane] = Combine(partial[lane], partial[lane + s]);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane != 0u) return;
    acc = partial[0];
  }
  STORE(y, g, Finish(acc, p.divisor));
}
