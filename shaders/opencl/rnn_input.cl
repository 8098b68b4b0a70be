// The input projection of RNN, GRU and LSTM, X W^T + Wb for every direction,
// time, batch entry and gate row, into the fp32 scratch g
// (shaders/vulkan/rnn_input.comp).
typedef struct {
  uint total, seq, batch, inputs;
  uint rows, flags;
} RnnInputPush;

__kernel void rnn_input(__global const STORE_T* x, __global const STORE_T* w, __global const STORE_T* bias,
                        __global float* g, RnnInputPush p) {
  const uint i = KILN_GLOBAL_INDEX;
  if (i >= p.total) return;
  const uint r = i % p.rows, tb = i / p.rows;
  const uint b = tb % p.batch, dt = tb / p.batch;
  const uint t = dt % p.seq, d = dt / p.seq;
  const uint xo = ((p.flags & 1u) != 0u ? b * p.seq + t : t * p.batch + b) * p.inputs;
  const uint wo = (d * p.rows + r) * p.inputs;
  float acc = (p.flags & 2u) != 0u ? LOAD(bias, d * 2u * p.rows + r) : 0.0f;
  for (uint k = 0u; k < p.inputs; ++k) acc += LOAD(x, xo + k) * LOAD(w, wo + k);
  g[i] = acc;
}
