// Shape functions and results of the ops whose output shapes depend on their
// input values (see ops/data_dependent.h), and of Einsum and Det.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "elements.h"
#include "ops/data_dependent.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

std::vector<int64_t> NonZeroFlat(const Tensor& x) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < x.elementCount(); ++i)
    if (LoadDouble(x.hostData(), x.dtype(), i) != 0) r.push_back(i);
  return r;
}

std::vector<int64_t> CompressSelection(const Tensor& condition, int64_t axis_len) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < condition.elementCount() && i < axis_len; ++i)
    if (LoadDouble(condition.hostData(), condition.dtype(), i) != 0) r.push_back(i);
  return r;
}

StatusOr<UniqueResult> ComputeUnique(const GraphOp& op, const Tensor& x) {
  auto* p = op.params<fb::UniqueParams>();
  UniqueResult u;
  int64_t outer = 1, inner = 1;
  if (p && p->has_axis()) {
    KILN_ASSIGN_OR_RETURN(u.axis, NormalizeAxis(p->axis(), x.dimensions()), "Unique");
    for (int d = 0; d < u.axis; ++d) outer *= x.shape()[static_cast<size_t>(d)];
    u.items = x.shape()[static_cast<size_t>(u.axis)];
    for (size_t d = static_cast<size_t>(u.axis) + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  } else {
    u.items = x.elementCount();
  }
  // Item k as a vector of doubles (a slice: outer x inner elements).
  auto item = [&](int64_t k) {
    std::vector<double> v;
    v.reserve(static_cast<size_t>(outer * inner));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) v.push_back(LoadDouble(x.hostData(), x.dtype(), (o * u.items + k) * inner + i));
    return v;
  };
  std::vector<std::vector<double>> items;
  for (int64_t k = 0; k < u.items; ++k) items.push_back(item(k));
  std::vector<int64_t> order(static_cast<size_t>(u.items));
  std::iota(order.begin(), order.end(), 0);
  // Items compared element by element in TotalCompare's order (NaN last,
  // NaNs equal), so that hostile values keep the sort well defined.
  auto cmp = [&](int64_t a, int64_t b) {
    const std::vector<double>& u = items[static_cast<size_t>(a)];
    const std::vector<double>& v = items[static_cast<size_t>(b)];
    for (size_t k = 0; k < u.size(); ++k)
      if (int c = TotalCompare(u[k], v[k])) return c;
    return 0;
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  // Groups of equal items in sorted order; each group's first occurrence is
  // its smallest index (the sort is stable).
  std::vector<int64_t> group(static_cast<size_t>(u.items));
  std::vector<int64_t> first_sorted, counts_sorted;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || cmp(order[i], order[i - 1]) != 0) {
      first_sorted.push_back(order[i]);
      counts_sorted.push_back(0);
    }
    group[static_cast<size_t>(order[i])] = static_cast<int64_t>(first_sorted.size()) - 1;
    ++counts_sorted.back();
  }
  const bool sorted = !p || p->sorted();
  std::vector<int64_t> rank(first_sorted.size());  // sorted group -> output position
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(first_sorted.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(),
              [&](int64_t a, int64_t b) { return first_sorted[static_cast<size_t>(a)] < first_sorted[static_cast<size_t>(b)]; });
    for (size_t pos = 0; pos < by_first.size(); ++pos) rank[static_cast<size_t>(by_first[pos])] = static_cast<int64_t>(pos);
  }
  u.first.assign(first_sorted.size(), 0);
  u.counts.assign(first_sorted.size(), 0);
  for (size_t g = 0; g < first_sorted.size(); ++g) {
    u.first[static_cast<size_t>(rank[g])] = first_sorted[g];
    u.counts[static_cast<size_t>(rank[g])] = counts_sorted[g];
  }
  for (int64_t k = 0; k < u.items; ++k) u.inverse.push_back(rank[static_cast<size_t>(group[static_cast<size_t>(k)])]);
  return u;
}

namespace {

float IoU(const float* a, const float* b, bool center) {
  float ay1, ax1, ay2, ax2, by1, bx1, by2, bx2;
  if (center) {
    ax1 = a[0] - a[2] / 2, ax2 = a[0] + a[2] / 2, ay1 = a[1] - a[3] / 2, ay2 = a[1] + a[3] / 2;
    bx1 = b[0] - b[2] / 2, bx2 = b[0] + b[2] / 2, by1 = b[1] - b[3] / 2, by2 = b[1] + b[3] / 2;
  } else {
    ay1 = std::min(a[0], a[2]), ay2 = std::max(a[0], a[2]), ax1 = std::min(a[1], a[3]), ax2 = std::max(a[1], a[3]);
    by1 = std::min(b[0], b[2]), by2 = std::max(b[0], b[2]), bx1 = std::min(b[1], b[3]), bx2 = std::max(b[1], b[3]);
  }
  const float iw = std::max(0.f, std::min(ax2, bx2) - std::max(ax1, bx1));
  const float ih = std::max(0.f, std::min(ay2, by2) - std::max(ay1, by1));
  const float inter = iw * ih, uni = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter;
  return uni > 0 ? inter / uni : 0.f;
}

}  // namespace

StatusOr<std::vector<std::array<int64_t, 3>>> ComputeNms(const GraphOp& op, const std::vector<Tensor*>& in) {
  const Tensor& boxes = *in[0];
  const Tensor& scores = *in[1];
  if (boxes.dtype() != fb::DataType::F32 || scores.dtype() != fb::DataType::F32)
    return Unsupported("NonMaxSuppression takes f32 boxes and scores");
  if (boxes.dimensions() != 3 || boxes.shape()[2] != 4 || scores.dimensions() != 3 ||
      scores.shape()[0] != boxes.shape()[0] || scores.shape()[2] != boxes.shape()[1])
    return InvalidArgument("NonMaxSuppression: boxes %s must be [B, N, 4] and scores %s [B, C, N]",
                           ShapeToString(boxes.shape()).c_str(), ShapeToString(scores.shape()).c_str());
  if (in.size() > 2 && in[2] && IsFloating(in[2]->dtype()))
    return InvalidArgument("NonMaxSuppression: max_output_boxes_per_class must be an integer, is %s",
                           DataTypeName(in[2]->dtype()));
  auto scalar = [&](size_t k, double dflt) {
    return k < in.size() && in[k] && in[k]->elementCount() > 0 ? LoadDouble(in[k]->hostData(), in[k]->dtype(), 0) : dflt;
  };
  const double max_per_class = scalar(2, 0);
  const float iou_threshold = static_cast<float>(scalar(3, 0));
  const bool has_score_threshold = in.size() > 4 && in[4] && in[4]->elementCount() > 0;
  const float score_threshold = static_cast<float>(scalar(4, 0));
  auto* p = op.params<fb::NmsParams>();
  const bool center = p && p->center_point_box();
  const int64_t nb = boxes.shape()[0], nbox = boxes.shape()[1], nc = scores.shape()[1];
  const int64_t limit =
      !(max_per_class > 0) ? 0 : static_cast<int64_t>(std::min<double>(max_per_class, static_cast<double>(nbox)));
  std::vector<std::array<int64_t, 3>> out;
  std::vector<int64_t> cand, kept;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t c = 0; c < nc; ++c) {
      const float* s = scores.host<float>() + (b * nc + c) * nbox;
      const float* bx = boxes.host<float>() + b * nbox * 4;
      cand.clear();
      for (int64_t i = 0; i < nbox; ++i)  // a NaN score is never selected
        if (s[i] == s[i] && (!has_score_threshold || s[i] > score_threshold)) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      kept.clear();
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= limit) break;
        bool keep = true;
        for (int64_t k : kept)
          if (IoU(bx + i * 4, bx + k * 4, center) > iou_threshold) {
            keep = false;
            break;
          }
        if (keep) {
          kept.push_back(i);
          out.push_back({b, c, i});
        }
      }
    }
  return out;
}

StatusOr<EinsumSpec> ParseEinsum(const GraphOp& op, const std::vector<const std::vector<int64_t>*>& shapes) {
  auto* p = op.params<fb::EinsumParams>();
  std::string eq;
  for (char ch : p->equation()->str())
    if (ch != ' ') eq += ch;
  EinsumSpec spec;
  spec.size.assign(128, -1);
  const size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    spec.inputs.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (spec.inputs.size() != shapes.size())
    return InvalidArgument("Einsum '%s': %zu operands in the equation, %zu inputs", eq.c_str(), spec.inputs.size(),
                           shapes.size());
  // Ellipsis dims become the letters 'A', 'B', ... aligned from the right.
  int ell_rank = 0;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const size_t dots = spec.inputs[k].find("...");
    if (dots != std::string::npos)
      ell_rank = std::max(ell_rank, static_cast<int>(shapes[k]->size()) - static_cast<int>(spec.inputs[k].size() - 3));
  }
  for (size_t k = 0; k < shapes.size(); ++k) {
    std::string& s = spec.inputs[k];
    const size_t dots = s.find("...");
    const int rank = static_cast<int>(shapes[k]->size());
    const int named = static_cast<int>(s.size()) - (dots == std::string::npos ? 0 : 3);
    if (dots == std::string::npos ? named != rank : named > rank)
      return InvalidArgument("Einsum '%s': operand %zu has rank %d, its subscripts '%s' do not match", eq.c_str(), k,
                             rank, s.c_str());
    if (dots != std::string::npos) {
      const int e = rank - named;
      std::string letters;
      for (int i = 0; i < e; ++i) letters += static_cast<char>('A' + (ell_rank - e) + i);
      s = s.substr(0, dots) + letters + s.substr(dots + 3);
    }
    for (char ch : s)
      if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z'))
        return InvalidArgument("Einsum '%s': bad subscript '%c'", eq.c_str(), ch);
  }
  std::string ell;
  for (int i = 0; i < ell_rank; ++i) ell += static_cast<char>('A' + i);
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    const size_t dots = rhs.find("...");
    spec.output = dots == std::string::npos ? rhs : rhs.substr(0, dots) + ell + rhs.substr(dots + 3);
  } else {  // implicit: the ellipsis, then the letters used once, alphabetically
    std::vector<int> count(128, 0);
    for (const std::string& s : spec.inputs)
      for (char ch : s) ++count[static_cast<size_t>(ch)];
    spec.output = ell;
    for (char ch = 'a'; ch <= 'z'; ++ch)
      if (count[static_cast<size_t>(ch)] == 1) spec.output += ch;
  }
  for (size_t k = 0; k < shapes.size(); ++k)
    for (size_t d = 0; d < spec.inputs[k].size(); ++d) {
      const char ch = spec.inputs[k][d];
      int64_t& sz = spec.size[static_cast<size_t>(ch)];
      const int64_t n = (*shapes[k])[d];
      if (sz < 0 || sz == 1) sz = n;
      else if (n != sz && n != 1)
        return InvalidArgument("Einsum '%s': subscript '%c' is %lld in one operand and %lld in another", eq.c_str(), ch,
                               static_cast<long long>(sz), static_cast<long long>(n));
    }
  double work = 1;
  std::vector<bool> seen(128, false);
  for (char ch : spec.output) {
    if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z'))
      return InvalidArgument("Einsum '%s': bad output subscript '%c'", eq.c_str(), ch);
    if (seen[static_cast<size_t>(ch)]) return InvalidArgument("Einsum '%s': output subscript '%c' twice", eq.c_str(), ch);
    seen[static_cast<size_t>(ch)] = true;
    if (spec.size[static_cast<size_t>(ch)] < 0)
      return InvalidArgument("Einsum '%s': output subscript '%c' is in no operand", eq.c_str(), ch);
  }
  for (size_t ch = 0; ch < spec.size.size(); ++ch)
    if (spec.size[ch] >= 0) work *= static_cast<double>(spec.size[ch]) * static_cast<double>(shapes.size());
  KILN_RETURN_IF_ERROR(CheckHostWork("Einsum", work));
  return spec;
}

// ---- shape functions ----

Status InferShapeNonZero(ShapeContext& c) {
  if (!c.input(0).hostData()) return InvalidArgument("NonZero: the input's values are not known at resize");
  const int64_t n = static_cast<int64_t>(NonZeroFlat(c.input(0)).size());
  c.setOutput(0, {static_cast<int64_t>(c.inRank(0)), n}, fb::DataType::I64);
  return Status::Ok();
}

Status InferShapeCompress(ShapeContext& c) {
  auto* p = c.params<fb::CompressParams>();
  std::vector<int64_t> out;
  int axis = -1;
  if (p && p->has_axis()) {
    KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(p->axis(), c.inRank(0)), "Compress");
    out = c.inShape(0);
  } else {
    out = {c.input(0).elementCount()};
    axis = 0;
  }
  if (c.inRank(1) != 1) return InvalidArgument("Compress: condition must be 1-D, is %s", ShapeToString(c.inShape(1)).c_str());
  if (!c.input(1).hostData()) return InvalidArgument("Compress: the condition's values are not known at resize");
  out[static_cast<size_t>(axis)] =
      static_cast<int64_t>(CompressSelection(c.input(1), out[static_cast<size_t>(axis)]).size());
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

Status InferShapeUnique(ShapeContext& c) {
  if (!c.input(0).hostData()) return InvalidArgument("Unique: the input's values are not known at resize");
  KILN_ASSIGN_OR_RETURN(UniqueResult u, ComputeUnique(c.op(), c.input(0)));
  const int64_t n = static_cast<int64_t>(u.first.size());
  std::vector<int64_t> y = {n};
  if (u.axis >= 0) {
    y = c.inShape(0);
    y[static_cast<size_t>(u.axis)] = n;
  }
  c.setOutput(0, y, c.inType(0));
  if (c.numOutputs() > 1) c.setOutput(1, {n}, fb::DataType::I64);
  if (c.numOutputs() > 2) c.setOutput(2, {u.items}, fb::DataType::I64);
  if (c.numOutputs() > 3) c.setOutput(3, {n}, fb::DataType::I64);
  return Status::Ok();
}

Status InferShapeNonMaxSuppression(ShapeContext& c) {
  for (int k = 0; k < c.numInputs(); ++k)
    if (c.hasInput(k) && !c.input(k).hostData())
      return InvalidArgument("NonMaxSuppression: input %d's values are not known at resize", k);
  std::vector<Tensor*> in;
  for (int k = 0; k < c.numInputs(); ++k) in.push_back(c.hasInput(k) ? const_cast<Tensor*>(&c.input(k)) : nullptr);
  KILN_ASSIGN_OR_RETURN(auto sel, ComputeNms(c.op(), in));
  c.setOutput(0, {static_cast<int64_t>(sel.size()), 3}, fb::DataType::I64);
  return Status::Ok();
}

Status InferShapeDet(ShapeContext& c) {
  const auto& s = c.inShape(0);
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    return InvalidArgument("Det: input must be [..., M, M], is %s", ShapeToString(s).c_str());
  const double m = static_cast<double>(s.back());
  KILN_RETURN_IF_ERROR(CheckHostWork("Det", static_cast<double>(c.input(0).elementCount()) * m));
  c.setOutput(0, std::vector<int64_t>(s.begin(), s.end() - 2), c.inType(0));
  return Status::Ok();
}

Status InferShapeEinsum(ShapeContext& c) {
  std::vector<const std::vector<int64_t>*> shapes;
  for (int k = 0; k < c.numInputs(); ++k) {
    if (c.inType(k) != c.inType(0)) return InvalidArgument("Einsum: inputs of different types");
    shapes.push_back(&c.inShape(k));
  }
  KILN_ASSIGN_OR_RETURN(EinsumSpec spec, ParseEinsum(c.op(), shapes));
  std::vector<int64_t> out;
  for (char ch : spec.output) out.push_back(spec.size[static_cast<size_t>(ch)]);
  c.setOutput(0, std::move(out), c.inType(0));
  return Status::Ok();
}

}  // namespace kiln
