// Shape functions: sampling (GridSample, RoiAlign), signal processing (DFT,
// STFT, the window generators) and the recurrent ops (RNN, GRU, LSTM).
#include <algorithm>
#include <cmath>

#include "checked_math.h"
#include "elements.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

Status InferShapeGridSample(ShapeContext& c) {
  const auto& x = c.inShape(0);
  const auto& g = c.inShape(1);
  if (x.size() != 4 || g.size() != 4 || g[3] != 2 || g[0] != x[0])
    return InvalidArgument("GridSample: input %s must be [N, C, H, W] and grid %s [N, H_out, W_out, 2]",
                           ShapeToString(x).c_str(), ShapeToString(g).c_str());
  if (c.inType(1) != c.inType(0)) return InvalidArgument("GridSample: grid and input have different types");
  c.setOutput(0, {x[0], x[1], g[1], g[2]}, c.inType(0));
  return Status::Ok();
}

Status InferShapeRoiAlign(ShapeContext& c) {
  const auto& x = c.inShape(0);
  const auto& rois = c.inShape(1);
  const auto& idx = c.inShape(2);
  if (x.size() != 4 || rois.size() != 2 || rois[1] != 4 || idx.size() != 1 || idx[0] != rois[0])
    return InvalidArgument("RoiAlign: X %s must be [N, C, H, W], rois %s [R, 4] and batch_indices %s [R]",
                           ShapeToString(x).c_str(), ShapeToString(rois).c_str(), ShapeToString(idx).c_str());
  auto* p = c.params<fb::RoiAlignParams>();
  const int64_t oh = p ? p->output_height() : 1, ow = p ? p->output_width() : 1;
  if (oh < 1 || ow < 1) return InvalidArgument("RoiAlign: output size %lldx%lld", static_cast<long long>(oh), static_cast<long long>(ow));
  c.setOutput(0, {rois[0], x[1], oh, ow}, c.inType(0));
  return Status::Ok();
}

namespace {

// A scalar value input (DFT's dft_length, STFT's frame_step...) or `dflt`.
StatusOr<int64_t> ScalarValue(const ShapeContext& c, int k, int64_t dflt) {
  if (!c.hasInput(k)) return dflt;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, c.inInts(k), "%s input %d", c.op().typeName(), k);
  if (v.size() != 1) return InvalidArgument("%s: input %d must be a scalar", c.op().typeName(), k);
  return v[0];
}

}  // namespace

// DFT: input [..., n, 1 or 2] along `axis` -> [..., dft_length (or
// dft_length / 2 + 1 when onesided), 2].
Status InferShapeDft(ShapeContext& c) {
  std::vector<int64_t> s = c.inShape(0);
  if (s.size() < 2 || (s.back() != 1 && s.back() != 2))
    return InvalidArgument("DFT: input %s must end in a dim of 1 (real) or 2 (complex)", ShapeToString(s).c_str());
  auto* p = c.params<fb::DftParams>();
  // The axis counts every dim, the last (re/im) included, which it may not be.
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 1, static_cast<int>(s.size())), "DFT");
  if (axis == static_cast<int>(s.size()) - 1) return InvalidArgument("DFT: axis %d is the re/im dim", p ? p->axis() : 1);
  KILN_ASSIGN_OR_RETURN(int64_t n, ScalarValue(c, 1, s[static_cast<size_t>(axis)]));
  if (n < 1) return InvalidArgument("DFT: dft_length %lld", static_cast<long long>(n));
  const int64_t len = s[static_cast<size_t>(axis)];
  s[static_cast<size_t>(axis)] = p && p->onesided() ? n / 2 + 1 : n;
  s.back() = 2;
  // Each output bin sums min(len, n) terms.
  KILN_RETURN_IF_ERROR(CheckHostWork("DFT", static_cast<double>(ShapeElementCount(s)) * static_cast<double>(std::min(len, n))));
  c.setOutput(0, std::move(s), c.inType(0));
  return Status::Ok();
}

// STFT(signal [B, L, 1|2], frame_step, window?, frame_length?) -> [B, frames,
// bins, 2].
Status InferShapeStft(ShapeContext& c) {
  const auto& s = c.inShape(0);
  if (s.size() != 3 || (s[2] != 1 && s[2] != 2))
    return InvalidArgument("STFT: signal %s must be [batch, length, 1 or 2]", ShapeToString(s).c_str());
  KILN_ASSIGN_OR_RETURN(int64_t step, ScalarValue(c, 1, 0));
  int64_t len = c.hasInput(2) ? c.input(2).elementCount() : 0;
  KILN_ASSIGN_OR_RETURN(len, ScalarValue(c, 3, len));
  if (step < 1 || len < 1 || len > s[1])
    return InvalidArgument("STFT: frame_step %lld and frame_length %lld do not fit a signal of %lld",
                           static_cast<long long>(step), static_cast<long long>(len), static_cast<long long>(s[1]));
  auto* p = c.params<fb::DftParams>();
  const int64_t frames = (s[1] - len) / step + 1;
  KILN_RETURN_IF_ERROR(CheckHostWork("STFT", static_cast<double>(s[0]) * static_cast<double>(frames) *
                                                 static_cast<double>(len) * static_cast<double>(len)));
  c.setOutput(0, {s[0], frames, p && p->onesided() ? len / 2 + 1 : len, 2}, c.inType(0));
  return Status::Ok();
}

Status InferShapeWindow(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(int64_t n, ScalarValue(c, 0, 0));
  if (n < 0) return InvalidArgument("%s: size %lld", c.op().typeName(), static_cast<long long>(n));
  auto* p = c.params<fb::WindowParams>();
  c.setOutput(0, {n}, p ? p->dtype() : fb::DataType::F32);
  return Status::Ok();
}

// MelWeightMatrix(num_mel_bins, dft_length, ...) -> [dft_length / 2 + 1,
// num_mel_bins].
Status InferShapeMelWeightMatrix(ShapeContext& c) {
  KILN_ASSIGN_OR_RETURN(int64_t bins, ScalarValue(c, 0, 0));
  KILN_ASSIGN_OR_RETURN(int64_t dft, ScalarValue(c, 1, 0));
  if (bins < 1 || dft < 1)
    return InvalidArgument("MelWeightMatrix: num_mel_bins %lld and dft_length %lld must be positive",
                           static_cast<long long>(bins), static_cast<long long>(dft));
  auto* p = c.params<fb::WindowParams>();
  c.setOutput(0, {dft / 2 + 1, bins}, p ? p->dtype() : fb::DataType::F32);
  return Status::Ok();
}

// RNN, GRU, LSTM: X [seq, batch, input] (or batch first) -> Y [seq, dirs,
// batch, hidden] (batch first: [batch, seq, dirs, hidden]), Y_h (and Y_c)
// [dirs, batch, hidden] (batch first: [batch, dirs, hidden]).
Status InferShapeRnn(ShapeContext& c) {
  const auto& x = c.inShape(0);
  auto* p = c.params<fb::RnnParams>();
  const int64_t dirs = p->direction() == fb::RnnDirection::Bidirectional ? 2 : 1, hidden = p->hidden_size();
  const int64_t gates = c.op().type == fb::OpType::LSTM ? 4 : c.op().type == fb::OpType::GRU ? 3 : 1;
  if (x.size() != 3) return InvalidArgument("%s: X %s must be 3-D", c.op().typeName(), ShapeToString(x).c_str());
  const bool bf = p->batch_first();
  const int64_t seq = bf ? x[1] : x[0], batch = bf ? x[0] : x[1];
  const std::vector<int64_t> w = {dirs, gates * hidden, x[2]}, r = {dirs, gates * hidden, hidden};
  if (hidden < 1 || c.inShape(1) != w || c.inShape(2) != r)
    return InvalidArgument("%s: W %s and R %s must be %s and %s for hidden_size %lld", c.op().typeName(),
                           ShapeToString(c.inShape(1)).c_str(), ShapeToString(c.inShape(2)).c_str(),
                           ShapeToString(w).c_str(), ShapeToString(r).c_str(), static_cast<long long>(hidden));
  if (c.hasInput(3) && c.inShape(3) != std::vector<int64_t>{dirs, 2 * gates * hidden})
    return InvalidArgument("%s: B %s must be [%lld, %lld]", c.op().typeName(), ShapeToString(c.inShape(3)).c_str(),
                           static_cast<long long>(dirs), static_cast<long long>(2 * gates * hidden));
  if (c.hasInput(4) && c.inShape(4) != std::vector<int64_t>{batch})
    return InvalidArgument("%s: sequence_lens %s must be [%lld]", c.op().typeName(), ShapeToString(c.inShape(4)).c_str(),
                           static_cast<long long>(batch));
  const std::vector<int64_t> state = bf ? std::vector<int64_t>{batch, dirs, hidden} : std::vector<int64_t>{dirs, batch, hidden};
  for (int k = 5; k <= 6 && k < c.numInputs(); ++k)
    if (c.hasInput(k) && c.inShape(k) != state)
      return InvalidArgument("%s: initial state (input %d) %s must be %s", c.op().typeName(), k,
                             ShapeToString(c.inShape(k)).c_str(), ShapeToString(state).c_str());
  if (c.hasInput(7) && c.inShape(7) != std::vector<int64_t>{dirs, 3 * hidden})
    return InvalidArgument("LSTM: P %s must be [%lld, %lld]", ShapeToString(c.inShape(7)).c_str(),
                           static_cast<long long>(dirs), static_cast<long long>(3 * hidden));
  c.setOutput(0, bf ? std::vector<int64_t>{batch, seq, dirs, hidden} : std::vector<int64_t>{seq, dirs, batch, hidden},
              c.inType(0));
  for (int k = 1; k < c.numOutputs(); ++k) c.setOutput(k, state, c.inType(0));
  return Status::Ok();
}

}  // namespace kiln
