#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// The input projection of RNN, GRU and LSTM (backends/gpu/ops/gpu_rnn.cpp):
// for every direction d, time t, batch entry b and gate row r,
//   g[((d * seq + t) * batch + b) * rows + r] = X[t, b] . W[d, r] + Wb[d, r],
// X [seq, batch, input] (or [batch, seq, input], flags bit 0), W
// [dirs, rows, input], B [dirs, 2 * rows] (Wb, then Rb; flags bit 1: present).
// g is the execution's fp32 scratch, read by rnn_step.comp.
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer W { STORE_T w[]; };
layout(std430, binding = 2) readonly buffer B { STORE_T bias[]; };
layout(std430, binding = 3) writeonly buffer G { float g[]; };
layout(push_constant) uniform P {
  uint total, seq, batch, inputs;
  uint rows, flags;
} p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint r = i % p.rows, tb = i / p.rows;
  const uint b = tb % p.batch, dt = tb / p.batch;
  const uint t = dt % p.seq, d = dt / p.seq;
  const uint xo = ((p.flags & 1u) != 0u ? b * p.seq + t : t * p.batch + b) * p.inputs;
  const uint wo = (d * p.rows + r) * p.inputs;
  float acc = (p.flags & 2u) != 0u ? float(bias[d * 2u * p.rows + r]) : 0.0;
  for (uint k = 0u; k < p.inputs; ++k) acc += float(x[xo + k]) * float(w[wo + k]);
  g[i] = acc;
}
