#version 450
#extension GL_GOOGLE_include_directive : enable
#include "common.glsl"
#include "unary_fn.glsl"

// One time step of RNN, GRU or LSTM (backends/gpu/ops/gpu_rnn.cpp; the host
// kernel host_fallback/ops/rnn.cpp is the reference), one invocation a unit
// i = (d * batch + b) * hidden + j: direction d, batch entry b, hidden unit j.
// The execution's fp32 state buffer s holds four parts of n = dirs * batch *
// hidden floats: h after even steps, h after odd steps (step `step` reads
// the part step % 2 and writes the other), c (LSTM; each unit reads and
// writes only its own), and GRU's reset gate times h.
// The gate inputs g (rnn_input.comp) are [dirs, seq, batch, gates * hidden]
// by time, gate rows in ONNX order: RNN i; GRU z, r, h; LSTM i, o, f, c.
//   MODE 0: the step: the gate rows' recurrence h R^T + Rb, the gates, the
//     new h into s and Y (c in place);
//   MODE 1 (GRU without linear_before_reset, before MODE 0): s's reset part
//     = r * h, which each unit's candidate reads whole.
// Batch entry b runs sequence_lens[b] steps (all with no sequence_lens):
// step k is time k forwards, len - 1 - k backwards; past its length a unit
// carries h over and writes 0 into Y at time `step`.
layout(constant_id = 3) const uint CELL = 0;    // 0 RNN, 1 GRU, 2 LSTM
layout(constant_id = 4) const uint LENS64 = 0;  // sequence_lens is i64 (else i32)
layout(constant_id = 5) const uint MODE = 0;

// flags (RnnFlags in gpu_rnn.cpp)
const uint kBatchFirst = 1u, kHasBias = 2u, kHasPeepholes = 4u, kHasLens = 8u, kLinearBeforeReset = 16u,
           kInputForget = 32u, kHasY = 64u, kReverse0 = 128u, kHasClip = 256u;

layout(std430, binding = 0) readonly buffer R { STORE_T rw[]; };      // [dirs, gates * hidden, hidden]
layout(std430, binding = 1) readonly buffer B { STORE_T bias[]; };    // [dirs, 2 * gates * hidden]
layout(std430, binding = 2) readonly buffer Peep { STORE_T peep[]; };  // [dirs, 3 * hidden]: i, o, f
layout(std430, binding = 3) readonly buffer Lens { uint lens[]; };    // [batch], i32 or i64
layout(std430, binding = 4) readonly buffer G { float g[]; };
layout(std430, binding = 5) buffer S { float s[]; };
layout(std430, binding = 6) writeonly buffer Y { STORE_T y[]; };
layout(push_constant) uniform P {
  uint step, seq, batch, hidden;
  uint dirs, flags;
  float clip;
  uint unused;
  uint act[6];
  float alpha[6], beta[6];
} p;

bool Flag(uint f) { return (p.flags & f) != 0u; }

float Clipped(float v) { return Flag(kHasClip) ? min(p.clip, max(-p.clip, v)) : v; }

// Gate function k of direction d (ONNX's order: f, g, h).
float Act(uint d, uint k, float v) {
  const uint a = d * (CELL == 2u ? 3u : CELL == 1u ? 2u : 1u) + k;
  return UnaryFn(p.act[a], v, p.alpha[a], p.beta[a]);
}

// Batch entry b's sequence length, clamped into [0, seq] (the host rejects
// others).
uint SeqLen(uint b) {
  if (!Flag(kHasLens)) return p.seq;
  const uint lo = lens[LENS64 != 0u ? 2u * b : b];
  const uint hi = LENS64 != 0u ? lens[2u * b + 1u] : (int(lo) < 0 ? 0xffffffffu : 0u);
  if (hi != 0u) return (hi & 0x80000000u) != 0u ? 0u : p.seq;
  return min(lo, p.seq);
}

// Row `row` of direction d's recurrence: Rb[row] + h . R[row], h at `h`.
float Recur(uint d, uint row, uint h) {
  const uint rows = (CELL == 2u ? 4u : CELL == 1u ? 3u : 1u) * p.hidden;
  float acc = Flag(kHasBias) ? float(bias[d * 2u * rows + rows + row]) : 0.0;
  const uint ro = (d * rows + row) * p.hidden;
  for (uint k = 0u; k < p.hidden; ++k) acc += s[h + k] * float(rw[ro + k]);
  return acc;
}

void main() {
  const uint i = KILN_GLOBAL_INDEX;
  const uint n = p.dirs * p.batch * p.hidden;
  if (i >= n) return;
  const uint H = p.hidden, j = i % H, db = i / H;
  const uint b = db % p.batch, d = db / p.batch;
  const uint rows = (CELL == 2u ? 4u : CELL == 1u ? 3u : 1u) * H;
  const uint hp = (p.step & 1u) * n, hn = n - hp, c_part = 2u * n, r_part = 3u * n;
  const uint h = hp + db * H;  // this (d, b)'s h before the step
  const uint len = SeqLen(b);
  const bool reverse = d == 1u || Flag(kReverse0);
  const uint t = p.step < len ? (reverse ? len - 1u - p.step : p.step) : p.step;
  const uint go = ((d * p.seq + t) * p.batch + b) * rows;
  const uint yo = (Flag(kBatchFirst) ? (b * p.seq + t) * p.dirs + d : (t * p.dirs + d) * p.batch + b) * H + j;
  if (MODE == 1u) {
    if (p.step < len) s[r_part + i] = Act(d, 0u, Clipped(g[go + H + j] + Recur(d, H + j, h))) * s[hp + i];
    return;
  }
  if (p.step >= len) {
    s[hn + i] = s[hp + i];
    if (Flag(kHasY)) y[yo] = STORE_T(0.0);
    return;
  }
  float hnew;
  if (CELL == 2u) {
    const uint po = d * 3u * H + j;
    const bool peeps = Flag(kHasPeepholes);
    float c = s[c_part + i];
    float ig = g[go + j] + Recur(d, j, h), og = g[go + H + j] + Recur(d, H + j, h);
    float fg = g[go + 2u * H + j] + Recur(d, 2u * H + j, h), cg = g[go + 3u * H + j] + Recur(d, 3u * H + j, h);
    if (peeps) {
      ig += float(peep[po]) * c;
      fg += float(peep[po + 2u * H]) * c;
    }
    const float it = Act(d, 0u, Clipped(ig));
    const float ft = Flag(kInputForget) ? 1.0 - it : Act(d, 0u, Clipped(fg));
    const float ct = Act(d, 1u, Clipped(cg));
    c = ft * c + it * ct;
    if (peeps) og += float(peep[po + H]) * c;
    hnew = Act(d, 0u, Clipped(og)) * Act(d, 2u, c);
    s[c_part + i] = c;
  } else if (CELL == 1u) {
    const float z = Act(d, 0u, Clipped(g[go + j] + Recur(d, j, h)));
    const float r = Act(d, 0u, Clipped(g[go + H + j] + Recur(d, H + j, h)));
    float hh;
    if (Flag(kLinearBeforeReset)) {
      hh = Act(d, 1u, Clipped(g[go + 2u * H + j] + r * Recur(d, 2u * H + j, h)));
    } else {  // (r * h) R_h^T + Rb_h, r * h from MODE 1
      hh = Act(d, 1u, Clipped(g[go + 2u * H + j] + Recur(d, 2u * H + j, r_part + db * H)));
    }
    hnew = (1.0 - z) * hh + z * s[hp + i];
  } else {
    hnew = Act(d, 0u, Clipped(g[go + j] + Recur(d, j, h)));
  }
  s[hn + i] = hnew;
  if (Flag(kHasY)) y[yo] = STORE_T(hnew);
}
