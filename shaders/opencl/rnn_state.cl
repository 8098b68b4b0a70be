// The states of RNN, GRU and LSTM (shaders/vulkan/rnn_state.comp): MODE 0
// loads initial_h / initial_c (or zeros) into the fp32 state buffer s,
// MODE 1 stores h (half h_part) and c into Y_h / Y_c.
#ifndef KILN_SPEC_3
#define KILN_SPEC_3 0
#endif
#define MODE KILN_SPEC_3

typedef struct {
  uint total, batch, hidden, dirs;
  uint flags, h_part;
} RnnStatePush;

__kernel void rnn_state(__global STORE_T* a, __global STORE_T* c, __global float* s, RnnStatePush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint j = i % p.hidden, db = i / p.hidden;
  const uint b = db % p.batch, d = db / p.batch;
  const uint o = ((p.flags & 1u) != 0u ? b * p.dirs + d : d * p.batch + b) * p.hidden + j;
  const bool first = (p.flags & (1u << 9)) != 0u, second = (p.flags & (1u << 10)) != 0u;
  if (MODE == 0) {
    s[i] = first ? LOAD(a, o) : 0.0f;
    s[2u * p.total + i] = second ? LOAD(c, o) : 0.0f;
  } else {
    if (first) STORE(a, o, s[p.h_part * p.total + i]);
    if (second) STORE(c, o, s[2u * p.total + i]);
  }
}
