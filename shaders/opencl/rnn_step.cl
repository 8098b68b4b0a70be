// One time step of RNN, GRU or LSTM, one work item a unit (direction, batch
// entry, hidden unit); see shaders/vulkan/rnn_step.comp for the state buffer
// s, the gate layout and the modes (0: the step; 1: GRU's reset gate times
// h, before the step when not linear_before_reset).
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#ifndef KILN_SPEC_4
#define KILN_SPEC_4 0
#endif
#ifndef KILN_SPEC_5
#define KILN_SPEC_5 0
#endif
#define CELL KILN_SPEC_3    // 0 RNN, 1 GRU, 2 LSTM
#define LENS64 KILN_SPEC_4  // sequence_lens is i64 (else i32)
#define MODE KILN_SPEC_5

#if CELL == 2
#define RNN_GATES 4u
#define RNN_ACTS 3u
#elif CELL == 1
#define RNN_GATES 3u
#define RNN_ACTS 2u
#else
#define RNN_GATES 1u
#define RNN_ACTS 1u
#endif

// flags (RnnFlags in backends/gpu/ops/gpu_rnn.cpp)
#define RNN_BATCH_FIRST 1u
#define RNN_HAS_BIAS 2u
#define RNN_HAS_PEEPHOLES 4u
#define RNN_HAS_LENS 8u
#define RNN_LINEAR_BEFORE_RESET 16u
#define RNN_INPUT_FORGET 32u
#define RNN_HAS_Y 64u
#define RNN_REVERSE0 128u
#define RNN_HAS_CLIP 256u

typedef struct {
  uint step, seq, batch, hidden;
  uint dirs, flags;
  float clip;
  uint unused;
  uint act[6];
  float alpha[6], beta[6];
} RnnStepPush;

float RnnClipped(const RnnStepPush* p, float v) {
  return (p->flags & RNN_HAS_CLIP) != 0u ? fmin(p->clip, fmax(-p->clip, v)) : v;
}

// Gate function k of direction d (ONNX's order: f, g, h).
float RnnAct(const RnnStepPush* p, uint d, uint k, float v) {
  const uint a = d * RNN_ACTS + k;
  return UnaryFn(p->act[a], v, p->alpha[a], p->beta[a]);
}

// Batch entry b's sequence length, clamped into [0, seq].
uint RnnSeqLen(const RnnStepPush* p, __global const uint* lens, uint b) {
  if ((p->flags & RNN_HAS_LENS) == 0u) return p->seq;
#if LENS64
  const long v = ((__global const long*)lens)[b];
#else
  const long v = (long)((__global const int*)lens)[b];
#endif
  return v < 0 ? 0u : (v > (long)p->seq ? p->seq : (uint)v);
}

// Row `row` of direction d's recurrence: Rb[row] + h . R[row], h at s + h.
float RnnRecur(const RnnStepPush* p, __global const STORE_T* rw, __global const STORE_T* bias,
               __global const float* s, uint d, uint row, uint h) {
  const uint rows = RNN_GATES * p->hidden;
  float acc = (p->flags & RNN_HAS_BIAS) != 0u ? LOAD(bias, d * 2u * rows + rows + row) : 0.0f;
  const uint ro = (d * rows + row) * p->hidden;
  for (uint k = 0u; k < p->hidden; ++k) acc += s[h + k] * LOAD(rw, ro + k);
  return acc;
}

__kernel void rnn_step(__global const STORE_T* rw, __global const STORE_T* bias, __global const STORE_T* peep,
                       __global const uint* lens, __global const float* g, __global float* s, __global STORE_T* y,
                       RnnStepPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  const uint n = p.dirs * p.batch * p.hidden;
  if (i >= n) return;
  const uint H = p.hidden, j = i % H, db = i / H;
  const uint b = db % p.batch, d = db / p.batch;
  const uint rows = RNN_GATES * H;
  const uint hp = (p.step & 1u) * n, hn = n - hp, c_part = 2u * n, r_part = 3u * n;
  const uint h = hp + db * H;  // this (d, b)'s h before the step
  const uint len = RnnSeqLen(&p, lens, b);
  const bool reverse = d == 1u || (p.flags & RNN_REVERSE0) != 0u;
  const uint t = p.step < len ? (reverse ? len - 1u - p.step : p.step) : p.step;
  const uint go = ((d * p.seq + t) * p.batch + b) * rows;
  const uint yo =
      ((p.flags & RNN_BATCH_FIRST) != 0u ? (b * p.seq + t) * p.dirs + d : (t * p.dirs + d) * p.batch + b) * H + j;
  const bool has_y = (p.flags & RNN_HAS_Y) != 0u;
#if MODE == 1
  if (p.step < len)
    s[r_part + i] = RnnAct(&p, d, 0u, RnnClipped(&p, g[go + H + j] + RnnRecur(&p, rw, bias, s, d, H + j, h))) *
                    s[hp + i];
#else
  if (p.step >= len) {
    s[hn + i] = s[hp + i];
    if (has_y) STORE(y, yo, 0.0f);
    return;
  }
  float hnew;
#if CELL == 2
  const uint po = d * 3u * H + j;
  const bool peeps = (p.flags & RNN_HAS_PEEPHOLES) != 0u;
  float c = s[c_part + i];
  float ig = g[go + j] + RnnRecur(&p, rw, bias, s, d, j, h);
  float og = g[go + H + j] + RnnRecur(&p, rw, bias, s, d, H + j, h);
  float fg = g[go + 2u * H + j] + RnnRecur(&p, rw, bias, s, d, 2u * H + j, h);
  const float cg = g[go + 3u * H + j] + RnnRecur(&p, rw, bias, s, d, 3u * H + j, h);
  if (peeps) {
    ig += LOAD(peep, po) * c;
    fg += LOAD(peep, po + 2u * H) * c;
  }
  const float it = RnnAct(&p, d, 0u, RnnClipped(&p, ig));
  const float ft = (p.flags & RNN_INPUT_FORGET) != 0u ? 1.0f - it : RnnAct(&p, d, 0u, RnnClipped(&p, fg));
  const float ct = RnnAct(&p, d, 1u, RnnClipped(&p, cg));
  c = ft * c + it * ct;
  if (peeps) og += LOAD(peep, po + H) * c;
  hnew = RnnAct(&p, d, 0u, RnnClipped(&p, og)) * RnnAct(&p, d, 2u, c);
  s[c_part + i] = c;
#elif CELL == 1
  const float z = RnnAct(&p, d, 0u, RnnClipped(&p, g[go + j] + RnnRecur(&p, rw, bias, s, d, j, h)));
  const float r = RnnAct(&p, d, 0u, RnnClipped(&p, g[go + H + j] + RnnRecur(&p, rw, bias, s, d, H + j, h)));
  float hh;
  if ((p.flags & RNN_LINEAR_BEFORE_RESET) != 0u) {
    hh = RnnAct(&p, d, 1u, RnnClipped(&p, g[go + 2u * H + j] + r * RnnRecur(&p, rw, bias, s, d, 2u * H + j, h)));
  } else {  // (r * h) R_h^T + Rb_h, r * h from MODE 1
    hh = RnnAct(&p, d, 1u,
                RnnClipped(&p, g[go + 2u * H + j] + RnnRecur(&p, rw, bias, s, d, 2u * H + j, r_part + db * H)));
  }
  hnew = (1.0f - z) * hh + z * s[hp + i];
#else
  hnew = RnnAct(&p, d, 0u, RnnClipped(&p, g[go + j] + RnnRecur(&p, rw, bias, s, d, j, h)));
#endif
  s[hn + i] = hnew;
  if (has_y) STORE(y, yo, hnew);
#endif
}
