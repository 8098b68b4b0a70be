#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "reduce_rows.glsl"

// ReduceSum / Mean / Max / Min / Prod / L1 / L2 / SumSquare / LogSum /
// LogSumExp (and GlobalAverage/MaxPool) over
// any set of axes. Result o reads the row x[kept(o) + reduced(r)], r < count,
// where kept() and reduced() decompose an index over the merged kept and
// reduced dims (innermost last) and sum index * stride (BroadcastOffset).
//
// STAGE 0 reduces whole rows into y. A long row with few results is split
// over two dispatches: STAGE 1 reduces chunk c (`chunk` elements) of row o
// into y[o * chunks + c] (a scratch buffer; mapped, not finished), STAGE 2
// reduces those partials as rows of `chunks` contiguous values (combined,
// not mapped again) and finishes. Max/Min propagate NaN, as the host does.
layout(constant_id = 4) const uint OP = 0;  // GpuReduceOp in backends/gpu/ops/gpu_reduce.cpp
layout(constant_id = 5) const uint STAGE = 0;
const uint kSum = 0, kMean = 1, kMax = 2, kMin = 3, kProd = 4, kL2 = 5, kL1 = 6, kSumSquare = 7, kLogSum = 8,
           kLogSumExp = 9;

// KILN_TEXEL (reduce_tx, GpuBinding::texel): X is a uniform texel buffer
// of one float a texel, where the device reads those faster (lavapipe: a
// storage-buffer load runs lane by lane).
#ifdef KILN_TEXEL
layout(binding = 0) uniform samplerBuffer x_texels;
#define LOAD_X(i) texelFetch(x_texels, int(i)).x
#else
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
#define LOAD_X(i) float(x[i])
#endif
layout(std430, binding = 1) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint outputs, count;  // results, elements per row
  uint chunks, chunk;   // chunks per row, elements per chunk (1 and count unless STAGE 1)
  uint krank, rrank;
  float divisor;        // Mean: elements per row of the whole reduction
  uint kdims[KILN_MAX_RANK], kstrides[KILN_MAX_RANK];
  uint rdims[KILN_MAX_RANK], rstrides[KILN_MAX_RANK];
} p;

shared float partial[KILN_ROW_GROUP_MAX];

float Identity() {
  if (OP == kMax) return -KILN_INF;
  if (OP == kMin) return KILN_INF;
  return OP == kProd ? 1.0 : 0.0;
}

float Combine(float a, float b) {
  if (OP == kMax) return b > a || isnan(b) ? b : a;
  if (OP == kMin) return b < a || isnan(b) ? b : a;
  return OP == kProd ? a * b : a + b;
}

// The element's contribution; STAGE 2 combines partials, already mapped.
float Map(float v) {
  if (STAGE == 2) return v;
  if (OP == kL2 || OP == kSumSquare) return v * v;
  if (OP == kL1) return abs(v);
  return OP == kLogSumExp ? exp(v) : v;
}

float Finish(float acc) {
  if (STAGE == 1) return acc;
  if (OP == kMean) return p.divisor == 0.0 ? KILN_NAN : acc / p.divisor;
  if (OP == kLogSum || OP == kLogSumExp) return log(acc);
  return OP == kL2 ? sqrt(acc) : acc;
}

void main() {
  const uint g = RowIndex();
  if (g >= p.outputs * p.chunks) return;  // uniform in a ROW_GROUP group
  const uint o = g / p.chunks, c = g - o * p.chunks;
  uint kdims[KILN_MAX_RANK] = p.kdims, kstrides[KILN_MAX_RANK] = p.kstrides;
  uint rdims[KILN_MAX_RANK] = p.rdims, rstrides[KILN_MAX_RANK] = p.rstrides;
  const uint base = BroadcastOffset(o, p.krank, kdims, kstrides);
  const uint end = min(p.count, (c + 1u) * p.chunk);
  float acc = Identity();
  if (p.rrank == 1u) {
    for (uint r = c * p.chunk + RowLane(); r < end; r += RowStep())
      acc = Combine(acc, Map(LOAD_X(base + r * rstrides[0])));
  } else {
    for (uint r = c * p.chunk + RowLane(); r < end; r += RowStep())
      acc = Combine(acc, Map(LOAD_X(base + BroadcastOffset(r, p.rrank, rdims, rstrides))));
  }
  if (ROW_GROUP) {
    const uint lane = gl_LocalInvocationID.x;
    partial[lane] = acc;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
      if (lane < s) partial[lane] = Combine(partial[lane], partial[lane + s]);
      barrier();
    }
    if (lane != 0u) return;
    acc = partial[0];
  }
  y[g] = STORE_T(Finish(acc));
}
