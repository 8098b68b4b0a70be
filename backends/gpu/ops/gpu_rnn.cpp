// RNN, GRU and LSTM on GPU (f32), with the host kernel's semantics
// (host_fallback/ops/rnn.cpp): gate orders i-o-f-c (LSTM) and z-r-h (GRU),
// peepholes, clip, the coupled input-forget gate, linear_before_reset,
// sequence_lens (i32 or i64, read by the kernels), both layouts, forward,
// reverse and bidirectional, any of Y, Y_h and Y_c. One execution a node,
// planned at resize as a chain of dispatches (the backends order each one
// after the previous, whose results it reads):
//   1. rnn_input.comp: the input projection of every step, X W^T + Wb, one
//      invocation a (direction, time, batch, gate row), into a scratch
//      buffer of the execution;
//   2. rnn_state.comp MODE 0: the initial states (initial_h, initial_c or
//      zeros) into the execution's state buffer;
//   3. per time step: rnn_step.comp, one invocation a (direction, batch,
//      hidden unit), its gate rows' recurrence H R^T + Rb and the gate
//      functions, h read from one half of a ping-pong pair and written to the
//      other (c updated in place: a unit only reads its own); GRU without
//      linear_before_reset first runs rnn_step.comp MODE 1, the reset gate
//      times h of every unit, which each unit's candidate reads whole;
//   4. rnn_state.comp MODE 1: the final states into Y_h and Y_c.
// A batch entry past its sequence length carries its state over and writes
// zeros into Y, so the final state is the one at its own length.
// The gate functions are UnaryFn codes (unary_fn.glsl, common.cl) with one
// alpha and beta each; an activation UnaryFn lacks keeps the op on the host.
#include <cmath>

#include "ops/op_params.h"
#include "gpu_reduce.h"

namespace kiln {
namespace {

constexpr int kMaxActs = 6;  // 3 a direction (LSTM), 2 directions

// The state buffer: [h even steps | h odd steps | c | GRU reset * h], each
// dirs * batch * hidden floats (see rnn_step.comp).
constexpr uint64_t kStateParts = 4;

// rnn_step.comp's and rnn_state.comp's flags.
enum RnnFlags : uint32_t {
  kBatchFirst = 1u << 0,    // ONNX layout 1
  kHasBias = 1u << 1,       // B
  kHasPeepholes = 1u << 2,  // LSTM's P
  kHasLens = 1u << 3,       // sequence_lens
  kLinearBeforeReset = 1u << 4,
  kInputForget = 1u << 5,
  kHasY = 1u << 6,
  kReverse0 = 1u << 7,  // direction 0 runs backwards (direction reverse)
  kHasClip = 1u << 8,
  kHasFirst = 1u << 9,   // rnn_state: the first tensor (initial_h / Y_h) is bound
  kHasSecond = 1u << 10  // rnn_state: the second (initial_c / Y_c) is bound
};

// The cell kinds, rnn_step.comp's CELL constant.
enum RnnCell : uint32_t { kCellRnn = 0, kCellGru = 1, kCellLstm = 2 };

struct InputPush {
  uint32_t total, seq, batch, inputs;
  uint32_t rows, flags;  // rows: gates * hidden
};

struct StepPush {
  uint32_t step, seq, batch, hidden;
  uint32_t dirs, flags;
  float clip;
  uint32_t unused;
  uint32_t act[kMaxActs];
  float alpha[kMaxActs], beta[kMaxActs];
};

struct StatePush {
  uint32_t total, batch, hidden, dirs;
  uint32_t flags, h_part;  // h_part: the half of the ping-pong pair holding h
};

bool GpuActivation(fb::OpType t) {  // the ones host rnn.cpp takes, all UnaryFn codes
  switch (t) {
    case fb::OpType::Sigmoid: case fb::OpType::Tanh: case fb::OpType::Relu: case fb::OpType::LeakyRelu:
    case fb::OpType::HardSigmoid: case fb::OpType::Elu: case fb::OpType::Softsign: case fb::OpType::Softplus:
    case fb::OpType::ThresholdedRelu: return true;
    default: return false;
  }
}

class RnnExecution final : public GpuExecution {
 public:
  RnnExecution(GpuBackend* b, const GraphOp& op, const StepPush& acts) : GpuExecution(b), op_(op), acts_(acts) {}
  ~RnnExecution() override {
    gpu()->freeBuffer(&gates_);
    gpu()->freeBuffer(&state_);
  }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const fb::RnnParams* p = op_.params<fb::RnnParams>();
    const bool lstm = op_.type == fb::OpType::LSTM, gru = op_.type == fb::OpType::GRU;
    const uint32_t cell = lstm ? kCellLstm : gru ? kCellGru : kCellRnn;
    const Tensor& x = *in[0];
    KILN_RETURN_IF_ERROR(RequireF32Input(x, op_.typeName()));
    auto input = [&](size_t k) -> const Tensor* { return k < in.size() ? in[k] : nullptr; };
    auto output = [&](size_t k) -> const Tensor* { return k < out.size() ? out[k] : nullptr; };
    const Tensor *bias = input(3), *lens = input(4), *h0 = input(5), *c0 = lstm ? input(6) : nullptr,
                 *peep = lstm ? input(7) : nullptr;
    const Tensor *y = output(0), *yh = output(1), *yc = lstm ? output(2) : nullptr;
    for (const Tensor* t : std::initializer_list<const Tensor*>{in[1], in[2], bias, h0, c0, peep, y, yh, yc})
      if (t) KILN_RETURN_IF_ERROR(Require32Bit(*t));
    KILN_RETURN_IF_ERROR(Require32Bit(x));
    if (lens && lens->dtype() != fb::DataType::I32 && lens->dtype() != fb::DataType::I64)
      return Unsupported("%s: sequence_lens is %s; the GPU kernel takes i32 or i64", op_.typeName(),
                         DataTypeName(lens->dtype()));

    const bool bf = p->batch_first();
    const uint64_t dirs = p->direction() == fb::RnnDirection::Bidirectional ? 2 : 1;
    const uint64_t seq = static_cast<uint64_t>(bf ? x.length(1) : x.length(0));
    const uint64_t batch = static_cast<uint64_t>(bf ? x.length(0) : x.length(1));
    const uint64_t hidden = static_cast<uint64_t>(p->hidden_size()), gates = lstm ? 4 : gru ? 3 : 1;
    const uint64_t units = dirs * batch * hidden;  // one state vector entry each
    const uint64_t projections = dirs * seq * batch * gates * hidden;
    if (units == 0) return Status::Ok();  // no batch: empty outputs
    if (projections > INT32_MAX || units * kStateParts > INT32_MAX)
      return Unsupported("%s: %llu gate inputs; GPU kernels index with 32 bits", op_.typeName(),
                         static_cast<unsigned long long>(projections));

    // Scratch: the projections and the states, fp32 in every storage mode.
    KILN_RETURN_IF_ERROR(ReserveBuffer(gpu(), &gates_, std::max<uint64_t>(projections, 1) * sizeof(float)));
    KILN_RETURN_IF_ERROR(ReserveBuffer(gpu(), &state_, std::max<uint64_t>(units * kStateParts, 1) * sizeof(float)));

    uint32_t flags = (bf ? kBatchFirst : 0u) | (bias ? kHasBias : 0u) | (peep ? kHasPeepholes : 0u) |
                     (lens ? kHasLens : 0u) | (p->linear_before_reset() ? kLinearBeforeReset : 0u) |
                     (p->input_forget() ? kInputForget : 0u) | (y ? kHasY : 0u) |
                     (p->direction() == fb::RnnDirection::Reverse ? kReverse0 : 0u) |
                     (std::isfinite(p->clip()) ? kHasClip : 0u);
    // Missing optional tensors are stood in for by a binding the kernel
    // leaves alone (its flag is off), as every binding must name a buffer.
    const GpuBinding scratch_gates{nullptr, &gates_, false}, scratch_state{nullptr, &state_, false};
    auto or_gates = [&](const Tensor* t) { return t ? GpuBinding{t} : scratch_gates; };

    // 1. X W^T + Wb for every step.
    if (projections > 0) {
      InputPush ip{static_cast<uint32_t>(projections), static_cast<uint32_t>(seq), static_cast<uint32_t>(batch),
                   static_cast<uint32_t>(x.length(2)), static_cast<uint32_t>(gates * hidden), flags};
      KILN_RETURN_IF_ERROR(add1D("rnn_input", {{in[0]}, {in[1]}, or_gates(bias), {nullptr, &gates_, true}}, ip,
                                 projections));
    }

    // 2. The initial states.
    StatePush sp{static_cast<uint32_t>(units), static_cast<uint32_t>(batch), static_cast<uint32_t>(hidden),
                 static_cast<uint32_t>(dirs), flags | (h0 ? kHasFirst : 0u) | (c0 ? kHasSecond : 0u), 0};
    KILN_RETURN_IF_ERROR(
        add1D("rnn_state", {or_gates(h0), or_gates(c0), {nullptr, &state_, true}}, sp, units, {0u}));

    // 3. The steps.
    StepPush step = acts_;
    step.seq = static_cast<uint32_t>(seq);
    step.batch = static_cast<uint32_t>(batch);
    step.hidden = static_cast<uint32_t>(hidden);
    step.dirs = static_cast<uint32_t>(dirs);
    step.flags = flags;
    step.clip = std::isfinite(p->clip()) ? p->clip() : 0.f;
    const uint32_t lens64 = lens && lens->dtype() == fb::DataType::I64 ? 1u : 0u;
    const GpuBinding y_binding = y ? GpuBinding{y, nullptr, true} : scratch_gates;
    for (uint64_t s = 0; s < seq; ++s) {
      step.step = static_cast<uint32_t>(s);
      std::vector<GpuBinding> bindings = {{in[2]}, or_gates(bias), or_gates(peep), or_gates(lens),
                                          scratch_gates, {nullptr, &state_, true}, y_binding};
      if (gru && !p->linear_before_reset())  // the reset gate times h, for every unit
        KILN_RETURN_IF_ERROR(add1D("rnn_step", bindings, step, units, {cell, lens64, 1u}));
      KILN_RETURN_IF_ERROR(add1D("rnn_step", bindings, step, units, {cell, lens64, 0u}));
    }

    // 4. The final states: h in the half the last step wrote.
    if (yh || yc) {
      sp.flags = flags | (yh ? kHasFirst : 0u) | (yc ? kHasSecond : 0u);
      sp.h_part = static_cast<uint32_t>(seq % 2);
      KILN_RETURN_IF_ERROR(add1D("rnn_state",
                                 {yh ? GpuBinding{yh, nullptr, true} : scratch_state,
                                  yc ? GpuBinding{yc, nullptr, true} : scratch_state, scratch_state},
                                 sp, units, {1u}));
    }
    return Status::Ok();
  }

  const GraphOp& op_;
  StepPush acts_;  // the gate functions (act, alpha, beta), per direction
  GpuBuffer gates_, state_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuRnn(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  // f32 but sequence_lens (input 4), an integer tensor.
  for (size_t k = 0; k < op.inputs.size(); ++k) {
    if (op.inputs[k] < 0) continue;
    const fb::DataType d = graph.tensors[static_cast<size_t>(op.inputs[k])].dtype;
    const bool ok = k == 4 ? d == fb::DataType::I32 || d == fb::DataType::I64 : d == fb::DataType::F32;
    if (!ok) return Unsupported("%s input %zu is %s; the GPU kernel takes f32 (sequence_lens i32 or i64)",
                                op.typeName(), k, fb::EnumNameDataType(d));
  }
  for (int t : op.outputs)
    if (t >= 0 && graph.tensors[static_cast<size_t>(t)].dtype != fb::DataType::F32)
      return Unsupported("%s output is %s; the GPU kernel takes f32", op.typeName(),
                         fb::EnumNameDataType(graph.tensors[static_cast<size_t>(t)].dtype));
  const fb::RnnParams* p = op.params<fb::RnnParams>();
  if (!p) return InvalidArgument("%s without params", op.typeName());
  // The gate functions as the host kernel picks them: the listed ones
  // (one direction's list serving both), else ONNX's defaults.
  const bool lstm = op.type == fb::OpType::LSTM, gru = op.type == fb::OpType::GRU;
  const int per_dir = lstm ? 3 : gru ? 2 : 1, dirs = p->direction() == fb::RnnDirection::Bidirectional ? 2 : 1;
  const size_t nact = p->activations() ? p->activations()->size() : 0;
  if (nact != 0 && nact != static_cast<size_t>(per_dir * dirs) && nact != static_cast<size_t>(per_dir))
    return Unsupported("%s: %zu activations for %d directions", op.typeName(), nact, dirs);
  StepPush acts{};
  for (int k = 0; k < per_dir * dirs; ++k) {
    fb::OpType type = lstm || gru ? (k % per_dir == 0 ? fb::OpType::Sigmoid : fb::OpType::Tanh) : fb::OpType::Tanh;
    float alpha = 0.f, beta = 0.f;
    if (nact) {
      const auto j = static_cast<flatbuffers::uoffset_t>(static_cast<size_t>(k) % nact);
      type = static_cast<fb::OpType>(p->activations()->Get(j));
      if (p->activation_alpha() && j < p->activation_alpha()->size()) alpha = p->activation_alpha()->Get(j);
      if (p->activation_beta() && j < p->activation_beta()->size()) beta = p->activation_beta()->Get(j);
    }
    if (!GpuActivation(type)) return Unsupported("%s: activation %s", op.typeName(), fb::EnumNameOpType(type));
    acts.act[k] = UnaryCode(type);
    acts.alpha[k] = alpha;
    acts.beta[k] = beta;
  }
  return Make(std::make_unique<RnnExecution>(b, op, acts));
}

}  // namespace kiln
