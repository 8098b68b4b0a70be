// RNN, GRU and LSTM on a GPU backend against the host kernel
// (host_fallback/ops/rnn.cpp): a bidirectional LSTM with sequence_lens (one
// entry of length 0, one shorter than the sequence), peepholes, bias and
// initial states; GRU with and without linear_before_reset (forward batch
// first, reverse with sequence_lens); a bidirectional RNN with listed
// activations and clip. Shapes are small: the suite runs on PoCL too.
#include "support/backend_compare.h"

namespace kiln::test {
namespace {

// The GPU backend under test: Vulkan, or KILN_TEST_GPU=opencl.
const ForwardType kGpu = TestGpu();
constexpr float kTol = 1e-4f;

struct RnnCase {
  fb::OpType type;
  int64_t seq, batch, input, hidden;
  fb::RnnDirection direction = fb::RnnDirection::Forward;
  bool batch_first = false;
  std::vector<int32_t> lens;  // empty: none
  bool peepholes = false;
};

// X, h0 (and c0) fed at run time, sequence_lens too (the kernels read it on
// the device); W, R, B (and P) constants; every output.
OpTest MakeRnn(const RnnCase& c, const fb::RnnParamsT& p) {
  const int64_t dirs = c.direction == fb::RnnDirection::Bidirectional ? 2 : 1;
  const int64_t gates = c.type == fb::OpType::LSTM ? 4 : c.type == fb::OpType::GRU ? 3 : 1;
  const std::vector<int64_t> x = c.batch_first ? std::vector<int64_t>{c.batch, c.seq, c.input}
                                               : std::vector<int64_t>{c.seq, c.batch, c.input};
  const std::vector<int64_t> state = c.batch_first ? std::vector<int64_t>{c.batch, dirs, c.hidden}
                                                   : std::vector<int64_t>{dirs, c.batch, c.hidden};
  const std::vector<int64_t> w = {dirs, gates * c.hidden, c.input}, r = {dirs, gates * c.hidden, c.hidden},
                             b = {dirs, 2 * gates * c.hidden};
  OpTest op(c.type);
  op.input("x", x, Random(Numel(x), -1, 1, 21))
      .constant("w", w, Random(Numel(w), -0.6f, 0.6f, 22))
      .constant("r", r, Random(Numel(r), -0.6f, 0.6f, 23))
      .constant("b", b, Random(Numel(b), -0.5f, 0.5f, 24));
  if (c.lens.empty())
    op.missing();
  else
    op.input("lens", {c.batch}, fb::DataType::I32, c.lens.data(), c.lens.size() * sizeof(int32_t));
  op.input("h0", state, Random(Numel(state), -1, 1, 25));
  if (c.type == fb::OpType::LSTM) {
    op.input("c0", state, Random(Numel(state), -1, 1, 26));
    const std::vector<int64_t> peep = {dirs, 3 * c.hidden};
    if (c.peepholes) op.constant("p", peep, Random(Numel(peep), -1, 1, 27));
  }
  op.params(p).outputs(c.type == fb::OpType::LSTM ? 3 : 2);
  return op;
}

fb::RnnParamsT Params(const RnnCase& c) {
  fb::RnnParamsT p;
  p.direction = c.direction;
  p.hidden_size = static_cast<int32_t>(c.hidden);
  p.batch_first = c.batch_first;
  return p;
}

TEST(GpuRnn, LstmBidirectionalSequenceLens) {
  KILN_REQUIRE_BACKEND(kGpu);
  RnnCase c{fb::OpType::LSTM, 4, 3, 5, 3, fb::RnnDirection::Bidirectional, false, {4, 0, 2}, true};
  ExpectSameAsHost(MakeRnn(c, Params(c)), kGpu, kTol, "LSTM bidirectional, sequence_lens, peepholes");
  // Batch first, input_forget and clip, without peepholes.
  c = RnnCase{fb::OpType::LSTM, 3, 2, 4, 5, fb::RnnDirection::Reverse, true, {1, 3}};
  fb::RnnParamsT p = Params(c);
  p.input_forget = true;
  p.clip = 0.5f;
  ExpectSameAsHost(MakeRnn(c, p), kGpu, kTol, "LSTM reverse, batch first, input_forget, clip");
}

TEST(GpuRnn, GruLinearBeforeReset) {
  KILN_REQUIRE_BACKEND(kGpu);
  RnnCase c{fb::OpType::GRU, 3, 2, 4, 5, fb::RnnDirection::Forward, true, {}};
  fb::RnnParamsT p = Params(c);
  p.linear_before_reset = true;
  ExpectSameAsHost(MakeRnn(c, p), kGpu, kTol, "GRU linear_before_reset, batch first");
  c = RnnCase{fb::OpType::GRU, 4, 3, 2, 4, fb::RnnDirection::Bidirectional, false, {2, 4, 3}};
  ExpectSameAsHost(MakeRnn(c, Params(c)), kGpu, kTol, "GRU bidirectional, sequence_lens");
}

TEST(GpuRnn, RnnActivations) {
  KILN_REQUIRE_BACKEND(kGpu);
  RnnCase c{fb::OpType::RNN, 3, 2, 3, 4, fb::RnnDirection::Bidirectional, false, {}};
  fb::RnnParamsT p = Params(c);
  p.activations = {fb::OpType::LeakyRelu, fb::OpType::HardSigmoid};
  p.activation_alpha = {0.2f, 0.3f};
  p.activation_beta = {0.f, 0.4f};
  p.clip = 0.8f;
  ExpectSameAsHost(MakeRnn(c, p), kGpu, kTol, "RNN bidirectional, LeakyRelu and HardSigmoid, clip");
}

}  // namespace
}  // namespace kiln::test
