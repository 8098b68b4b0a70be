// Host kernels: RNN, GRU and LSTM (ONNX semantics: gate orders i-o-f-c for
// LSTM and z-r-h for GRU, peepholes, clip, coupled input-forget gate,
// linear_before_reset, sequence_lens, both layouts, forward, reverse and
// bidirectional). f32, one time step after the other; the gate inputs of all
// steps (X * W^T + Wb) are computed up front.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "host_backend.h"
#include "ops/op_params.h"

namespace kiln {
namespace {

struct Act {
  fb::OpType type;
  float alpha, beta;
  float operator()(float v) const {
    switch (type) {
      case fb::OpType::Sigmoid: return 1.f / (1.f + std::exp(-v));
      case fb::OpType::Tanh: return std::tanh(v);
      case fb::OpType::Relu: return v > 0 ? v : 0.f;
      case fb::OpType::LeakyRelu: return v >= 0 ? v : alpha * v;
      case fb::OpType::HardSigmoid: return std::min(1.f, std::max(0.f, alpha * v + beta));
      case fb::OpType::Elu: return v >= 0 ? v : alpha * (std::exp(v) - 1.f);
      case fb::OpType::Softsign: return v / (1.f + std::fabs(v));
      case fb::OpType::Softplus: return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
      case fb::OpType::ThresholdedRelu: return v > alpha ? v : 0.f;
      default: return v;
    }
  }
};

bool SupportedAct(fb::OpType t) {
  switch (t) {
    case fb::OpType::Sigmoid: case fb::OpType::Tanh: case fb::OpType::Relu: case fb::OpType::LeakyRelu:
    case fb::OpType::HardSigmoid: case fb::OpType::Elu: case fb::OpType::Softsign: case fb::OpType::Softplus:
    case fb::OpType::ThresholdedRelu: return true;
    default: return false;
  }
}

Status RunRnn(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  for (size_t k = 0; k < in.size(); ++k)  // all f32 but sequence_lens (input 4)
    if (in[k] && k != 4 && in[k]->dtype() != fb::DataType::F32)
      return Unsupported("host %s supports f32, not %s", op.typeName(), DataTypeName(in[k]->dtype()));
  auto* p = op.params<fb::RnnParams>();
  const bool lstm = op.type == fb::OpType::LSTM, gru = op.type == fb::OpType::GRU;
  const int G = lstm ? 4 : gru ? 3 : 1, per_dir = lstm ? 3 : gru ? 2 : 1;
  const int dirs = p->direction() == fb::RnnDirection::Bidirectional ? 2 : 1;
  const int64_t H = p->hidden_size();
  const bool bf = p->batch_first();
  const Tensor& X = *in[0];
  const int64_t seq = bf ? X.shape()[1] : X.shape()[0], batch = bf ? X.shape()[0] : X.shape()[1], I = X.shape()[2];
  // The gate functions, per direction.
  std::vector<Act> acts;
  const size_t nact = p->activations() ? p->activations()->size() : 0;
  if (nact != 0 && nact != static_cast<size_t>(per_dir * dirs) && nact != static_cast<size_t>(per_dir))
    return InvalidArgument("%s: %zu activations for %d directions", op.typeName(), nact, dirs);
  for (int k = 0; k < per_dir * dirs; ++k) {
    Act a{fb::OpType::Tanh, 0, 0};
    if (nact) {
      const size_t j = static_cast<size_t>(k) % nact;
      a.type = static_cast<fb::OpType>(p->activations()->Get(static_cast<flatbuffers::uoffset_t>(j)));
      if (p->activation_alpha() && j < p->activation_alpha()->size()) a.alpha = p->activation_alpha()->Get(static_cast<flatbuffers::uoffset_t>(j));
      if (p->activation_beta() && j < p->activation_beta()->size()) a.beta = p->activation_beta()->Get(static_cast<flatbuffers::uoffset_t>(j));
      if (!SupportedAct(a.type)) return Unsupported("%s: activation %s", op.typeName(), fb::EnumNameOpType(a.type));
    } else if (lstm || gru) {
      a.type = k % per_dir == 0 ? fb::OpType::Sigmoid : fb::OpType::Tanh;
    }
    acts.push_back(a);
  }
  const float clip = p->clip();
  auto clipped = [clip](float v) { return std::isfinite(clip) ? std::min(clip, std::max(-clip, v)) : v; };
  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (in.size() > 4 && in[4]) {
    KILN_ASSIGN_OR_RETURN(lens, TensorInts(*in[4]), "%s sequence_lens", op.typeName());
    for (int64_t l : lens)
      if (l < 0 || l > seq)
        return InvalidArgument("%s: a sequence length of %lld for %lld steps", op.typeName(), static_cast<long long>(l),
                               static_cast<long long>(seq));
  }
  const float* W = in[1]->host<float>();
  const float* R = in[2]->host<float>();
  const float* B = in.size() > 3 && in[3] ? in[3]->host<float>() : nullptr;
  const float* H0 = in.size() > 5 && in[5] ? in[5]->host<float>() : nullptr;
  const float* C0 = lstm && in.size() > 6 && in[6] ? in[6]->host<float>() : nullptr;
  const float* P = lstm && in.size() > 7 && in[7] ? in[7]->host<float>() : nullptr;
  float* Y = out.size() > 0 && out[0] ? out[0]->host<float>() : nullptr;
  float* Yh = out.size() > 1 && out[1] ? out[1]->host<float>() : nullptr;
  float* Yc = out.size() > 2 && out[2] ? out[2]->host<float>() : nullptr;
  if (Y) std::memset(Y, 0, out[0]->byteSize());
  auto x_at = [&](int64_t t, int64_t b) { return X.host<float>() + (bf ? b * seq + t : t * batch + b) * I; };
  auto y_at = [&](int64_t t, int d, int64_t b) { return Y + (bf ? ((b * seq + t) * dirs + d) : ((t * dirs + d) * batch + b)) * H; };
  auto state_at = [&](float* s, int d, int64_t b) { return s + (bf ? b * dirs + d : d * batch + b) * H; };
  auto state_in = [&](const float* s, int d, int64_t b) { return s + (bf ? b * dirs + d : d * batch + b) * H; };
  std::vector<float> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)), g(static_cast<size_t>(G * H)), rh(static_cast<size_t>(G * H)),
      hr(static_cast<size_t>(H));
  for (int d = 0; d < dirs; ++d) {
    const float* Wd = W + static_cast<int64_t>(d) * G * H * I;
    const float* Rd = R + static_cast<int64_t>(d) * G * H * H;
    const float* Wb = B ? B + static_cast<int64_t>(d) * 2 * G * H : nullptr;
    const float* Rb = B ? Wb + G * H : nullptr;
    const float* Pd = P ? P + static_cast<int64_t>(d) * 3 * H : nullptr;
    const Act* a = &acts[static_cast<size_t>(d * per_dir)];
    const bool reverse = p->direction() == fb::RnnDirection::Reverse || d == 1;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t j = 0; j < H; ++j) {
        h[static_cast<size_t>(j)] = H0 ? state_in(H0, d, b)[j] : 0.f;
        c[static_cast<size_t>(j)] = C0 ? state_in(C0, d, b)[j] : 0.f;
      }
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        const float* xt = x_at(t, b);
        for (int64_t r = 0; r < G * H; ++r) {  // X W^T + Wb, and H R^T + Rb
          float acc = Wb ? Wb[r] : 0.f;
          for (int64_t k = 0; k < I; ++k) acc += xt[k] * Wd[r * I + k];
          g[static_cast<size_t>(r)] = acc;
          float racc = Rb ? Rb[r] : 0.f;
          const bool gru_h = gru && r >= 2 * H && !p->linear_before_reset();
          if (!gru_h)
            for (int64_t k = 0; k < H; ++k) racc += h[static_cast<size_t>(k)] * Rd[r * H + k];
          rh[static_cast<size_t>(r)] = racc;
        }
        if (lstm) {
          for (int64_t j = 0; j < H; ++j) {
            const size_t u = static_cast<size_t>(j);
            float ig = g[u] + rh[u], og = g[u + H] + rh[u + H], fg = g[u + 2 * H] + rh[u + 2 * H],
                  cg = g[u + 3 * H] + rh[u + 3 * H];
            if (Pd) ig += Pd[j] * c[u], fg += Pd[2 * H + j] * c[u];
            const float i_t = a[0](clipped(ig));
            const float f_t = p->input_forget() ? 1.f - i_t : a[0](clipped(fg));
            const float c_t = a[1](clipped(cg));
            c[u] = f_t * c[u] + i_t * c_t;
            if (Pd) og += Pd[H + j] * c[u];
            const float o_t = a[0](clipped(og));
            hr[u] = o_t * a[2](c[u]);
          }
          h = hr;
        } else if (gru) {
          for (int64_t j = 0; j < H; ++j) {
            const size_t u = static_cast<size_t>(j);
            const float z = a[0](clipped(g[u] + rh[u]));
            const float r = a[0](clipped(g[u + H] + rh[u + H]));
            float hh;
            if (p->linear_before_reset()) {
              hh = a[1](clipped(g[u + 2 * H] + r * rh[u + 2 * H]));
            } else {  // (r . H) R_h^T + Rb_h
              float acc = Rb ? Rb[2 * H + j] : 0.f;
              for (int64_t k = 0; k < H; ++k) {
                const float rk = a[0](clipped(g[static_cast<size_t>(H + k)] + rh[static_cast<size_t>(H + k)]));
                acc += rk * h[static_cast<size_t>(k)] * Rd[(2 * H + j) * H + k];
              }
              hh = a[1](clipped(g[u + 2 * H] + acc));
            }
            hr[u] = (1.f - z) * hh + z * h[u];
          }
          h = hr;
        } else {
          for (int64_t j = 0; j < H; ++j) h[static_cast<size_t>(j)] = a[0](clipped(g[static_cast<size_t>(j)] + rh[static_cast<size_t>(j)]));
        }
        if (Y) std::memcpy(y_at(t, d, b), h.data(), static_cast<size_t>(H) * 4);
      }
      if (Yh) std::memcpy(state_at(Yh, d, b), h.data(), static_cast<size_t>(H) * 4);
      if (Yc) std::memcpy(state_at(Yc, d, b), c.data(), static_cast<size_t>(H) * 4);
    }
  }
  return Status::Ok();
}

}  // namespace

KILN_HOST_FN_FACTORY(Rnn)

}  // namespace kiln
