// TFLite UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM -> one
// Kiln LSTM (ONNX's semantics): the gate weights regrouped from TFLite's
// order (input, forget, cell, output) into ONNX's (i, o, f, c), the biases
// into Wb with a zero Rb, the peepholes into P, the state tensors into
// initial_h / initial_c (zeros when they are TFLite variables: the state of
// a fresh interpreter; a stream carries it with Session::bindState), and
// the output reshaped to TFLite's [batch, time, units] (or time-major).
// Projection, layer normalization, CIFG, cell clipping and auxiliary
// inputs have no ONNX form: such ops are reported unsupported.
#include "tflite_importer.h"

namespace kiln::tflite_import {

namespace {

// Input indices of one direction's tensors (TFLite's operator layout).
struct LstmInputs {
  int in_w[4], rec_w[4], peep[3], bias[4], proj_w, proj_b, h0, c0;
};

constexpr LstmInputs kUni = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11}, {12, 13, 14, 15}, 16, 17, 18, 19};
constexpr LstmInputs kBiFw = {{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11}, {12, 13, 14, 15}, 16, 17, 35, 36};
constexpr LstmInputs kBiBw = {{18, 19, 20, 21}, {22, 23, 24, 25}, {26, 27, 28}, {29, 30, 31, 32}, 33, 34, 37, 38};
// ONNX gate k (i, o, f, c) is TFLite gate kOnnxToTfl[k] (i, f, c, o).
constexpr int kOnnxToTfl[4] = {0, 3, 1, 2};
// ONNX peephole k (i, o, f) is TFLite peephole kPeepToTfl[k] (i, f, o).
constexpr int kPeepToTfl[3] = {0, 2, 1};

void Append(std::vector<uint8_t>* bytes, const ConstData& d) { bytes->insert(bytes->end(), d.bytes.begin(), d.bytes.end()); }

}  // namespace

Status TfliteImporter::SequenceLstm(const tfl::Operator& op, bool bidirectional) {
  const char* type = bidirectional ? "BIDIRECTIONAL_SEQUENCE_LSTM" : "UNIDIRECTIONAL_SEQUENCE_LSTM";
  const std::vector<LstmInputs> dirs = bidirectional ? std::vector<LstmInputs>{kBiFw, kBiBw} : std::vector<LstmInputs>{kUni};
  const int8_t act = op.options.Byte(tfl::opt::kLstmActivation, tfl::kActTanh);
  const bool time_major = op.options.Bool(bidirectional ? tfl::opt::kBiTimeMajor : tfl::opt::kUniTimeMajor, bidirectional);
  const bool merge = !bidirectional || op.options.Bool(tfl::opt::kBiMergeOutputs, false);
  if (op.options.Float(tfl::opt::kLstmCellClip, 0.f) > 0.f) return Keep(op, type, "cell_clip (ONNX clips gate inputs)");
  if (act != tfl::kActTanh && act != tfl::kActRelu) return Keep(op, type, "fused activation " + std::to_string(act));
  if (bidirectional && In(op, 39) >= 0) return Keep(op, type, "auxiliary input");
  if (!bidirectional)
    for (int k = 20; k < 24; ++k)
      if (In(op, static_cast<size_t>(k)) >= 0) return Keep(op, type, "layer normalization");
  const int x_in = In(op, 0);
  if (Rank(x_in) != 3) return InvalidArgument("%s: input is rank %d, needs 3", type, Rank(x_in));
  const Ints xs = Shape(x_in);
  const int64_t batch = time_major ? xs[1] : xs[0], n_input = xs[2];

  std::vector<uint8_t> w, r, b, p;
  int64_t hidden = -1;
  bool peepholes = false;
  std::vector<uint8_t> h0, c0;
  for (const LstmInputs& d : dirs) {
    if (In(op, static_cast<size_t>(d.in_w[0])) < 0) return Keep(op, type, "CIFG (no input gate)");
    if (In(op, static_cast<size_t>(d.proj_w)) >= 0) return Keep(op, type, "projection");
    ConstData gates_w[4], gates_r[4], gates_b[4];
    for (int g = 0; g < 4; ++g) {
      KILN_ASSIGN_OR_RETURN(gates_w[g], ConstF32(In(op, static_cast<size_t>(d.in_w[g]))), "%s input weights", type);
      KILN_ASSIGN_OR_RETURN(gates_r[g], ConstF32(In(op, static_cast<size_t>(d.rec_w[g]))), "%s recurrent weights", type);
      KILN_ASSIGN_OR_RETURN(gates_b[g], ConstF32(In(op, static_cast<size_t>(d.bias[g]))), "%s bias", type);
      if (hidden < 0) hidden = gates_w[g].shape.empty() ? -1 : gates_w[g].shape[0];
      if (gates_w[g].shape != Ints{hidden, n_input} || gates_r[g].shape != Ints{hidden, hidden} ||
          gates_b[g].shape != Ints{hidden})
        return InvalidArgument("%s: gate %d weights %s / %s / %s for %lld units and %lld inputs", type, g,
                               ShapeToString(gates_w[g].shape).c_str(), ShapeToString(gates_r[g].shape).c_str(),
                               ShapeToString(gates_b[g].shape).c_str(), (long long)hidden, (long long)n_input);
    }
    for (int k = 0; k < 4; ++k) Append(&w, gates_w[kOnnxToTfl[k]]);
    for (int k = 0; k < 4; ++k) Append(&r, gates_r[kOnnxToTfl[k]]);
    for (int k = 0; k < 4; ++k) Append(&b, gates_b[kOnnxToTfl[k]]);
    b.resize(b.size() + static_cast<size_t>(4 * hidden) * sizeof(float), 0);  // Rb
    const bool has_peep = In(op, static_cast<size_t>(d.peep[0])) >= 0;
    if (has_peep != peepholes && &d != &dirs[0]) return Keep(op, type, "peepholes in one direction only");
    peepholes = has_peep;
    if (has_peep) {
      for (int k = 0; k < 3; ++k) {
        KILN_ASSIGN_OR_RETURN(ConstData pk, ConstF32(In(op, static_cast<size_t>(d.peep[kPeepToTfl[k]]))), "peephole");
        if (pk.shape != Ints{hidden}) return InvalidArgument("%s: peephole of shape %s", type, ShapeToString(pk.shape).c_str());
        Append(&p, pk);
      }
    }
    for (auto [idx, out] : {std::pair<int, std::vector<uint8_t>*>{d.h0, &h0}, {d.c0, &c0}}) {
      const size_t bytes = static_cast<size_t>(batch * hidden) * sizeof(float);
      const int s = In(op, static_cast<size_t>(idx));
      if (s >= 0 && IsConst(s)) {
        KILN_ASSIGN_OR_RETURN(ConstData sd, ConstF32(s), "state");
        if (sd.bytes.size() != bytes) return InvalidArgument("%s: state of shape %s", type, ShapeToString(sd.shape).c_str());
        Append(out, sd);
      } else {
        out->resize(out->size() + bytes, 0);  // a TFLite variable: zeros in a fresh interpreter
      }
    }
  }
  const int64_t nd = static_cast<int64_t>(dirs.size());
  auto f32 = [&](const std::string& suffix, const Ints& shape, const std::vector<uint8_t>& bytes) {
    ConstData d;
    d.type = tfl::kFloat32;
    d.shape = shape;
    d.bytes = bytes;
    return AddConst(name_ + suffix, d);
  };
  KILN_ASSIGN_OR_RETURN(int x, Act(x_in));
  KILN_ASSIGN_OR_RETURN(int wt, f32("/W", {nd, 4 * hidden, n_input}, w));
  KILN_ASSIGN_OR_RETURN(int rt, f32("/R", {nd, 4 * hidden, hidden}, r));
  KILN_ASSIGN_OR_RETURN(int bt, f32("/B", {nd, 8 * hidden}, b));
  const Ints state = time_major ? Ints{nd, batch, hidden} : Ints{batch, nd, hidden};
  // batch_first (ONNX layout 1) states are [batch, dirs, hidden]: rows per batch item.
  std::vector<uint8_t> h0k = h0, c0k = c0;
  if (!time_major && nd == 2) {
    const size_t row = static_cast<size_t>(hidden) * sizeof(float);
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t di = 0; di < nd; ++di) {
        std::memcpy(&h0k[static_cast<size_t>(bi * nd + di) * row], &h0[static_cast<size_t>(di * batch + bi) * row], row);
        std::memcpy(&c0k[static_cast<size_t>(bi * nd + di) * row], &c0[static_cast<size_t>(di * batch + bi) * row], row);
      }
  }
  KILN_ASSIGN_OR_RETURN(int ht, f32("/h0", state, h0k));
  KILN_ASSIGN_OR_RETURN(int ct, f32("/c0", state, c0k));
  std::vector<int> ins = {x, wt, rt, bt, -1, ht, ct};
  if (peepholes) {
    KILN_ASSIGN_OR_RETURN(int pt, f32("/P", {nd, 3 * hidden}, p));
    ins.push_back(pt);
  }
  fb::RnnParamsT rp;
  rp.direction = bidirectional ? fb::RnnDirection::Bidirectional : fb::RnnDirection::Forward;
  rp.hidden_size = static_cast<int32_t>(hidden);
  rp.batch_first = !time_major;
  if (act == tfl::kActRelu)
    for (int64_t d = 0; d < nd; ++d)
      for (OpType a : {OpType::Sigmoid, OpType::Relu, OpType::Relu}) {
        rp.activations.push_back(a);
        rp.activation_alpha.push_back(0.f);
        rp.activation_beta.push_back(0.f);
      }
  const int y = Op(OpType::LSTM, ins, name_ + "/lstm", U(std::move(rp)));
  // Y: [T, D, B, H] time-major, [B, T, D, H] batch-major.
  const int64_t steps = time_major ? xs[0] : xs[1];
  if (merge) {
    int merged = y;
    if (time_major && nd == 2) {
      fb::TransposeParamsT tp;
      tp.perm = {0, 2, 1, 3};
      merged = Op(OpType::Transpose, {y}, name_ + "/dirs_last", U(tp));
    }
    const Ints out_shape = time_major ? Ints{steps, batch, nd * hidden} : Ints{batch, steps, nd * hidden};
    const int out = Op(OpType::Reshape, {merged, IntsConst(name_ + "/shape", out_shape)}, T(op.outputs[0]).name);
    kiln_[static_cast<size_t>(op.outputs[0])] = out;
    return Status::Ok();
  }
  if (op.outputs.size() < 2) return InvalidArgument("%s without merge_outputs needs two outputs", type);
  for (int64_t d = 0; d < 2; ++d) {
    fb::AxisParamsT ap;
    ap.axis = time_major ? 1 : 2;
    const int idx = b_.addConstant(Unique(name_ + "/dir" + std::to_string(d)), {}, std::vector<int64_t>{d});
    kiln_[static_cast<size_t>(op.outputs[static_cast<size_t>(d)])] =
        Op(OpType::Gather, {y, idx}, T(op.outputs[static_cast<size_t>(d)]).name, U(ap));
  }
  return Status::Ok();
}

}  // namespace kiln::tflite_import
