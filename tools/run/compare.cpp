#include "compare.h"

#include <cmath>
#include <cstring>
#include <map>

#include "elements.h"

namespace kiln {
namespace {

double ElementAt(const Tensor& t, int64_t i) { return LoadDouble(t.hostData(), t.dtype(), i); }

RecordedTensor Record(const Tensor& t) {
  RecordedTensor r;
  r.name = t.name();
  r.dtype = t.dtype();
  r.shape = t.shape();
  if (t.hostData()) {
    r.values.resize(static_cast<size_t>(t.elementCount()));
    for (int64_t i = 0; i < t.elementCount(); ++i) r.values[static_cast<size_t>(i)] = ElementAt(t, i);
  }
  return r;
}

std::string ShapeString(const std::vector<int64_t>& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) o += (i ? "x" : "") + std::to_string(s[i]);
  return o.empty() ? "scalar" : o;
}

}  // namespace

StatusOr<std::vector<RecordedOp>> RecordRun(Session* s) {
  std::vector<RecordedOp> ops;
  TensorCallBack after = [&](const std::vector<Tensor*>& outputs, const OpInfo& info) {
    RecordedOp op;
    op.op = info;
    for (Tensor* t : outputs)
      if (t) op.outputs.push_back(Record(*t));
    ops.push_back(std::move(op));
    return true;
  };
  KILN_RETURN_IF_ERROR(s->runWithCallBack(nullptr, after));
  return ops;
}

double TensorError(const RecordedTensor& test, const RecordedTensor& ref, double* max_abs, int64_t* worst) {
  double diff = 0, scale = 0;
  *worst = ref.values.empty() ? -1 : 0;
  for (size_t i = 0; i < ref.values.size() && i < test.values.size(); ++i) {
    const double a = test.values[i], b = ref.values[i];
    double d;
    if (std::isnan(a) || std::isnan(b)) {
      d = std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
    } else if (std::isinf(a) || std::isinf(b)) {
      d = a == b ? 0 : INFINITY;
    } else {
      d = std::fabs(a - b);
      scale = std::max(scale, std::fabs(b));
    }
    if (d > diff) {
      diff = d;
      *worst = static_cast<int64_t>(i);
    }
  }
  *max_abs = diff;
  return diff / std::max(scale, 1e-6);
}

StatusOr<std::optional<Divergence>> FirstDivergence(const std::vector<RecordedOp>& test,
                                                    const std::vector<RecordedOp>& ref, double tolerance,
                                                    int* compared) {
  std::map<int, const RecordedOp*> by_index;
  for (const RecordedOp& r : ref) by_index[r.op.index] = &r;
  *compared = 0;
  for (const RecordedOp& t : test) {
    auto it = by_index.find(t.op.index);
    if (it == by_index.end())
      return Internal("op %d '%s' ran in one session only", t.op.index, t.op.name.c_str());
    const RecordedOp& r = *it->second;
    if (r.outputs.size() != t.outputs.size())
      return Internal("op %d '%s' has %zu outputs in one session and %zu in the other", t.op.index,
                      t.op.name.c_str(), t.outputs.size(), r.outputs.size());
    ++*compared;
    for (size_t k = 0; k < t.outputs.size(); ++k) {
      const RecordedTensor& a = t.outputs[k];
      const RecordedTensor& b = r.outputs[k];
      Divergence d;
      d.test_op = t;
      d.ref_backend = r.op.backend;
      d.tensor = a.name;
      d.ops_compared = *compared;
      if (a.shape != b.shape) {
        d.reason = "shape " + ShapeString(a.shape) + " vs " + ShapeString(b.shape);
        d.error = INFINITY;
        return std::optional<Divergence>(std::move(d));
      }
      if (a.dtype != b.dtype) {
        d.reason = StrFormat("dtype %s vs %s", DataTypeName(a.dtype), DataTypeName(b.dtype));
        d.error = INFINITY;
        return std::optional<Divergence>(std::move(d));
      }
      d.error = TensorError(a, b, &d.max_abs, &d.worst_index);
      if (!(d.error <= tolerance)) {
        if (d.worst_index >= 0) {
          d.test_value = a.values[static_cast<size_t>(d.worst_index)];
          d.ref_value = b.values[static_cast<size_t>(d.worst_index)];
        }
        return std::optional<Divergence>(std::move(d));
      }
    }
  }
  return std::optional<Divergence>();
}

}  // namespace kiln
