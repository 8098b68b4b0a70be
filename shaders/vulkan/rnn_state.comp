#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"

// The states of RNN, GRU and LSTM (backends/gpu/ops/gpu_rnn.cpp), one
// invocation a unit i = (d * batch + b) * hidden + j of the execution's fp32
// state buffer s ([h, h, c, reset * h], n = dirs * batch * hidden each; see
// rnn_step.comp):
//   MODE 0: h (first half) and c from initial_h (binding 0) and initial_c
//     (binding 1), zeros for a missing one;
//   MODE 1: Y_h (binding 0) from h in half h_part, Y_c (binding 1) from c.
// The tensors are [dirs, batch, hidden] ([batch, dirs, hidden] batch first).
// flags: bit 0 batch first, bit 9 binding 0 present, bit 10 binding 1.
layout(constant_id = 3) const uint MODE = 0;

layout(std430, binding = 0) buffer A { STORE_T a[]; };
layout(std430, binding = 1) buffer C { STORE_T c[]; };
layout(std430, binding = 2) buffer S { float s[]; };
layout(push_constant) uniform P {
  uint total, batch, hidden, dirs;
  uint flags, h_part;
} p;

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint j = i % p.hidden, db = i / p.hidden;
  const uint b = db % p.batch, d = db / p.batch;
  const uint o = ((p.flags & 1u) != 0u ? b * p.dirs + d : d * p.batch + b) * p.hidden + j;
  const bool first = (p.flags & (1u << 9)) != 0u, second = (p.flags & (1u << 10)) != 0u;
  if (MODE == 0u) {
    s[i] = first ? float(a[o]) : 0.0;
    s[2u * p.total + i] = second ? float(c[o]) : 0.0;
  } else {
    if (first) a[o] = STORE_T(s[p.h_part * p.total + i]);
    if (second) c[o] = STORE_T(s[2u * p.total + i]);
  }
}
