// If, Loop and Scan through child sessions (see control_flow.h).
#include "control_flow.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend.h"
#include "elements.h"
#include "ops/shape_inference.h"

namespace kiln {

namespace {

// Follows tensor t of g back through Identity ops.
int ThroughIdentity(const Graph& g, int t) {
  for (size_t guard = 0; guard <= g.ops.size() && t >= 0; ++guard) {
    const int p = g.tensors[static_cast<size_t>(t)].producer;
    if (p < 0 || g.ops[static_cast<size_t>(p)].type != fb::OpType::Identity) return t;
    t = g.ops[static_cast<size_t>(p)].inputs[0];
  }
  return t;
}

bool Truthy(const Tensor& t) {
  return t.elementCount() > 0 && LoadDouble(t.hostData(), t.dtype(), 0) != 0;
}

// Feeds a child session: shapes first (resizing it when one changed), the
// values that decide its shapes before that resize, then, with
// `write_values`, every other value. A null value is already in place (a
// capture fed at the first iteration, a carried value copied on the device).
Status Feed(SessionImpl& child, const std::vector<const Tensor*>& values, bool write_values) {
  if (values.size() != child.numInputs())
    return Internal("subgraph takes %zu inputs, given %zu", child.numInputs(), values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    if (!values[k]) continue;
    Tensor* in = child.inputAt(k);
    const Tensor& v = *values[k];
    if (in->dtype() != v.dtype())
      return InvalidArgument("subgraph input %zu '%s' is declared %s, given %s", k, in->name().c_str(),
                             DataTypeName(in->dtype()), DataTypeName(v.dtype()));
    KILN_RETURN_IF_ERROR(child.resizeTensor(in, v.shape()), "subgraph input %zu", k);
    if (child.inputDecidesShape(k)) {
      if (v.isContainer()) {
        KILN_RETURN_IF_ERROR(in->copyFromHostTensor(v), "subgraph input %zu", k);
        continue;
      }
      if (!v.hostData() && v.byteSize()) return Internal("subgraph input %zu decides shapes but has no value", k);
      if (v.byteSize()) std::memcpy(in->hostData(), v.hostData(), v.byteSize());
    }
  }
  if (!child.resized()) KILN_RETURN_IF_ERROR(child.resize());
  if (!write_values) return Status::Ok();
  for (size_t k = 0; k < values.size(); ++k)
    if (values[k] && !child.inputDecidesShape(k)) KILN_RETURN_IF_ERROR(child.inputAt(k)->copyFromHostTensor(*values[k]));
  return Status::Ok();
}

// After an iteration: output `out` becomes input `in` of the next one on
// the device, when both live on the same device backend with one shape and
// the input does not decide shapes (no trip through the host). False: the
// caller goes through the host.
StatusOr<bool> CarryOnDevice(SessionImpl& child, const Tensor* out, size_t k) {
  Tensor* in = child.inputAt(k);
  if (!out->backend() || out->backend() != in->backend() || out->shape() != in->shape() || child.inputDecidesShape(k))
    return false;
  Status s = out->backend()->onCopyWithin(*out, in);
  if (s.code() == StatusCode::kUnsupported) return false;
  KILN_RETURN_IF_ERROR(s);
  return true;
}

// Slice `i` of `whole` along `axis` <-> a contiguous slice buffer.
void CopySlice(const Tensor& whole, int axis, int64_t i, uint8_t* slice, bool into_whole) {
  const auto& s = whole.shape();
  int64_t outer = 1, inner = static_cast<int64_t>(whole.elementSize());
  for (int d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t len = s[static_cast<size_t>(axis)];
  auto* base = static_cast<uint8_t*>(whole.hostData());
  for (int64_t o = 0; o < outer; ++o) {
    uint8_t* w = base + (o * len + i) * inner;
    uint8_t* p = slice + o * inner;
    if (into_whole)
      std::memcpy(w, p, static_cast<size_t>(inner));
    else
      std::memcpy(p, w, static_cast<size_t>(inner));
  }
}

std::vector<int64_t> WithoutAxis(std::vector<int64_t> s, int axis) {
  s.erase(s.begin() + axis);
  return s;
}

class ControlFlowExecution : public Execution {
 public:
  ControlFlowExecution(Backend* host, ControlFlow* cf) : Execution(host), cf_(cf) {}
  Status onExecute(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) override {
    return cf_->execute(inputs, outputs);
  }

 private:
  ControlFlow* cf_;
};

}  // namespace

ControlFlow::~ControlFlow() = default;

std::unique_ptr<Execution> ControlFlow::makeExecution(Backend* host) {
  return std::make_unique<ControlFlowExecution>(host, this);
}

StatusOr<std::unique_ptr<ControlFlow>> ControlFlow::Create(const GraphOp& op, std::shared_ptr<const Model> model,
                                                           const std::vector<ScheduleConfig>& configs,
                                                           const BackendFactory& factory) {
  std::unique_ptr<ControlFlow> cf(new ControlFlow());
  cf->op_ = &op;
  cf->where_ = StrFormat("%s '%s'", op.typeName(), op.name.c_str());
  cf->max_bytes_ = PhysicalMemoryBytes();
  for (const ScheduleConfig& c : configs)
    if (c.maxTensorBytes) cf->max_bytes_ = std::min(cf->max_bytes_, c.maxTensorBytes);
  if (const char* env = std::getenv("KILN_MAX_LOOP_ITERATIONS")) {
    const long long v = std::atoll(env);
    if (v > 0) cf->max_iterations_ = v;
  }
  std::vector<int> subs;
  const int nin = static_cast<int>(op.inputs.size()), nout = static_cast<int>(op.outputs.size());
  if (auto* p = op.params<fb::IfParams>()) {
    subs = {p->then_branch(), p->else_branch()};
    cf->first_capture_ = 1;
    cf->num_captures_ = nin - 1;
  } else if (auto* p = op.params<fb::LoopParams>()) {
    subs = {p->body()};
    cf->num_captures_ = p->num_captures();
    cf->num_carried_ = nin - 2 - cf->num_captures_;
    cf->num_scan_out_ = nout - cf->num_carried_;
    cf->first_capture_ = 2 + cf->num_carried_;
  } else if (auto* p = op.params<fb::ScanParams>()) {
    subs = {p->body()};
    cf->num_captures_ = p->num_captures();
    cf->num_scan_in_ = p->num_scan_inputs();
    cf->num_carried_ = nin - cf->num_scan_in_ - cf->num_captures_;
    cf->num_scan_out_ = nout - cf->num_carried_;
    cf->first_capture_ = cf->num_carried_ + cf->num_scan_in_;
  } else {
    return Internal("%s has no control-flow params", cf->where_.c_str());
  }
  std::vector<ScheduleConfig> child_configs = configs;
  for (ScheduleConfig& c : child_configs) c.path = ScheduleConfig::Path();
  for (size_t s = 0; s < subs.size(); ++s) {
    auto g = std::make_shared<const Graph>(Graph::BuildSubgraph(*model, subs[s]));
    KILN_ASSIGN_OR_RETURN(auto child, SessionImpl::Create(model, g, child_configs, factory), "%s subgraph %d",
                          cf->where_.c_str(), subs[s]);
    cf->graphs_.push_back(std::move(g));
    cf->children_.push_back(std::move(child));
  }
  if (op.type == fb::OpType::Loop) {
    // The body's condition output: its condition input passed through (or a
    // constant) means the trip count alone decides the iterations.
    const Graph& g = *cf->graphs_[0];
    const int t = ThroughIdentity(g, g.outputs[0]);
    if (t == g.inputs[1]) {
      cf->cond_static_ = true;
    } else if (g.tensors[static_cast<size_t>(t)].isConstant()) {
      const GraphTensor& gt = g.tensors[static_cast<size_t>(t)];
      cf->cond_static_ = true;
      cf->cond_constant_false_ = gt.constant.size > 0 && gt.constant.data[0] == 0;
    }
    cf->at_resize_ = !cf->cond_static_;
  }
  return cf;
}

bool ControlFlow::needsValue(size_t k) const {
  if (at_resize_) return true;
  switch (op_->type) {
    case fb::OpType::If:
      return k >= 1 && (children_[0]->inputDecidesShape(k - 1) || children_[1]->inputDecidesShape(k - 1));
    case fb::OpType::Loop:
      if (k < 2) return num_scan_out_ > 0;  // the trip count decides the scan outputs' length
      return children_[0]->inputDecidesShape(k);
    default: return children_[0]->inputDecidesShape(k);
  }
}

bool ControlFlow::prefersValue(size_t k) const {
  return (op_->type == fb::OpType::If && k == 0) || (op_->type == fb::OpType::Loop && k < 2);
}

std::string ControlFlow::describe() const {
  std::string s;
  const char* role[] = {"then", "else"};
  for (size_t i = 0; i < children_.size(); ++i)
    s += (i ? "; " : "") + std::string(op_->type == fb::OpType::If ? role[i] : "body") + ": " +
         children_[i]->describePlacement();
  return s;
}

std::map<std::string, std::string> ControlFlow::devices() const {
  std::map<std::string, std::string> d;
  for (const auto& c : children_)
    for (auto& [name, dev] : c->devices()) d.emplace(name, dev);
  return d;
}

std::string ControlFlow::fallbacks() const {
  std::string s;
  for (const auto& c : children_)
    for (const OpPlacement& p : c->placement().ops)
      if (!p.reason.empty()) s += (s.empty() ? "subgraph " : "; ") + p.type + ": " + p.reason;
  return s;
}

Status ControlFlow::inferShapes(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  switch (op_->type) {
    case fb::OpType::If: return inferIf(in, out);
    case fb::OpType::Loop: return inferLoop(in, out);
    default: return inferScan(in, out);
  }
}

Status ControlFlow::execute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  switch (op_->type) {
    case fb::OpType::If: return runIf(in, out);
    case fb::OpType::Loop: return runLoop(in, out);
    default: return runScan(in, out);
  }
}

// ---- If ----

Status ControlFlow::inferIf(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  std::vector<const Tensor*> caps(in.begin() + 1, in.end());
  const bool known = !value_in_.empty() && value_in_[0] && in[0]->hostData();
  chosen_ = known ? (Truthy(*in[0]) ? 0 : 1) : -1;
  const char* names[] = {"then_branch", "else_branch"};
  for (int b = 0; b < 2; ++b) {
    if (chosen_ >= 0 && b != chosen_) continue;
    KILN_RETURN_IF_ERROR(Feed(*children_[static_cast<size_t>(b)], caps, false), "%s %s", where_.c_str(), names[b]);
    SessionImpl& child = *children_[static_cast<size_t>(b)];
    for (size_t j = 0; j < out.size(); ++j) {
      const Tensor* o = child.outputAt(j);
      if (o->dtype() != out[j]->dtype())
        return InvalidArgument("%s: %s output %zu '%s' is %s, the op declares %s", where_.c_str(), names[b], j,
                               o->name().c_str(), DataTypeName(o->dtype()), DataTypeName(out[j]->dtype()));
      if (b == 1 && chosen_ < 0 && o->shape() != out[j]->shape())
        return InvalidArgument(
            "%s: output %zu is %s from then_branch and %s from else_branch; the condition is computed at run "
            "time from float data, so both branches must give the same shapes",
            where_.c_str(), j, ShapeToString(out[j]->shape()).c_str(), ShapeToString(o->shape()).c_str());
      out[j]->setShape(o->shape());
    }
  }
  return Status::Ok();
}

Status ControlFlow::runIf(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  const int b = chosen_ >= 0 ? chosen_ : (Truthy(*in[0]) ? 0 : 1);
  SessionImpl& child = *children_[static_cast<size_t>(b)];
  std::vector<const Tensor*> caps(in.begin() + 1, in.end());
  KILN_RETURN_IF_ERROR(Feed(child, caps, true), "%s", where_.c_str());
  KILN_RETURN_IF_ERROR(child.run(nullptr, nullptr), "%s", where_.c_str());
  for (size_t j = 0; j < out.size(); ++j) {
    const Tensor* o = child.outputAt(j);
    if (o->shape() != out[j]->shape())
      return InvalidArgument("%s: output %zu is %s at run time, %s was planned at resize", where_.c_str(), j,
                             ShapeToString(o->shape()).c_str(), ShapeToString(out[j]->shape()).c_str());
    KILN_RETURN_IF_ERROR(o->copyToHostTensor(out[j]), "%s output %zu", where_.c_str(), j);
  }
  return Status::Ok();
}

// ---- Loop ----

StatusOr<int64_t> ControlFlow::tripLimit(const std::vector<Tensor*>& in) const {
  const bool has_m = in.size() > 0 && in[0];
  int64_t trips = max_iterations_;
  if (has_m) {
    if (in[0]->elementCount() != 1) return InvalidArgument("%s: trip count M has %lld elements", where_.c_str(),
                                                          static_cast<long long>(in[0]->elementCount()));
    const double m = LoadDouble(in[0]->hostData(), in[0]->dtype(), 0);
    if (m < 0) return InvalidArgument("%s: trip count M is %lld (negative)", where_.c_str(), static_cast<long long>(m));
    // Above the limit: an error when M alone decides the iterations; with a
    // condition computed in the body (torch exports `for` with `break` as
    // M = INT64_MAX), only when the iterations actually reach the limit.
    if (m > static_cast<double>(max_iterations_)) {
      if (cond_static_)
        return InvalidArgument("%s: trip count M is %.0f, above the limit of %lld iterations (KILN_MAX_LOOP_ITERATIONS)",
                               where_.c_str(), m, static_cast<long long>(max_iterations_));
    } else {
      trips = static_cast<int64_t>(m);
    }
  }
  const bool has_cond = in.size() > 1 && in[1];
  if (has_cond && !Truthy(*in[1])) return int64_t{0};
  if (!has_m && cond_static_ && !cond_constant_false_)
    return InvalidArgument("%s has no trip count and a condition the body never changes: it would run forever",
                           where_.c_str());
  if (cond_constant_false_) trips = std::min<int64_t>(trips, 1);
  return trips;
}

Status ControlFlow::inferLoop(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  if (at_resize_) {
    // Iterations end on a condition computed in the body: run it now (every
    // input is known at resize) and plan the outputs it gave.
    KILN_RETURN_IF_ERROR(runLoop(in, {}));
    for (size_t j = 0; j < out.size(); ++j) {
      if (results_[j]->dtype() != out[j]->dtype())
        return InvalidArgument("%s: output %zu is %s, the op declares %s", where_.c_str(), j,
                               DataTypeName(results_[j]->dtype()), DataTypeName(out[j]->dtype()));
      out[j]->setShape(results_[j]->shape());
    }
    return Status::Ok();
  }
  SessionImpl& body = *children_[0];
  int64_t iter0 = 0;
  uint8_t cond0 = 1;
  auto iter = Tensor::wrap({}, fb::DataType::I64, &iter0);
  auto cond = Tensor::wrap({}, fb::DataType::BOOL, &cond0);
  std::vector<const Tensor*> values{iter.get(), cond.get()};
  for (size_t k = 2; k < in.size(); ++k) values.push_back(in[k]);
  KILN_RETURN_IF_ERROR(Feed(body, values, false), "%s body", where_.c_str());
  for (int j = 0; j < num_carried_; ++j) {
    const Tensor* o = body.outputAt(1 + static_cast<size_t>(j));
    const Tensor* v = in[2 + static_cast<size_t>(j)];
    if (o->dtype() != v->dtype() || o->shape() != v->shape())
      return InvalidArgument(
          "%s: loop-carried value %d '%s' enters as %s %s and leaves an iteration as %s %s; a Loop with a trip "
          "count is planned at resize, so its carried values must keep their shape",
          where_.c_str(), j, o->name().c_str(), DataTypeName(v->dtype()), ShapeToString(v->shape()).c_str(),
          DataTypeName(o->dtype()), ShapeToString(o->shape()).c_str());
    out[static_cast<size_t>(j)]->setShape(v->shape());
  }
  trips_ = -1;
  if (num_scan_out_ > 0) {
    KILN_ASSIGN_OR_RETURN(trips_, tripLimit(in));
  }
  for (int k = 0; k < num_scan_out_; ++k) {
    const Tensor* o = body.outputAt(1 + static_cast<size_t>(num_carried_ + k));
    Tensor* r = out[static_cast<size_t>(num_carried_ + k)];
    if (o->dtype() != r->dtype())
      return InvalidArgument("%s: scan output %d is %s, the op declares %s", where_.c_str(), k,
                             DataTypeName(o->dtype()), DataTypeName(r->dtype()));
    std::vector<int64_t> shape{trips_};
    shape.insert(shape.end(), o->shape().begin(), o->shape().end());
    r->setShape(shape);
  }
  return Status::Ok();
}

Status ControlFlow::runLoop(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  if (at_resize_ && !out.empty()) {  // computed at resize: hand out the results
    for (size_t j = 0; j < out.size(); ++j) KILN_RETURN_IF_ERROR(out[j]->copyFromHostTensor(*results_[j]));
    return Status::Ok();
  }
  SessionImpl& body = *children_[0];
  KILN_ASSIGN_OR_RETURN(int64_t limit, tripLimit(in));
  const bool has_m = in[0] != nullptr;
  std::vector<std::unique_ptr<Tensor>> carried;
  for (int j = 0; j < num_carried_; ++j) {
    KILN_ASSIGN_OR_RETURN(auto v, Tensor::createHostTensorFromDevice(*in[2 + static_cast<size_t>(j)]));
    carried.push_back(std::move(v));
  }
  std::vector<std::vector<uint8_t>> scans(static_cast<size_t>(num_scan_out_));
  std::vector<std::vector<int64_t>> scan_shapes(static_cast<size_t>(num_scan_out_));
  std::vector<fb::DataType> scan_types(static_cast<size_t>(num_scan_out_));
  for (int k = 0; k < num_scan_out_; ++k) scan_types[static_cast<size_t>(k)] = body.outputAt(1 + static_cast<size_t>(num_carried_ + k))->dtype();
  int64_t i = 0;
  uint8_t cond = 1;
  // Carried values the last iteration left in the body's inputs on the
  // device; captures after the first iteration are in place too.
  std::vector<bool> on_device(static_cast<size_t>(num_carried_), false);
  for (; i < limit && cond; ++i) {
    auto iter = Tensor::wrap({}, fb::DataType::I64, &i);
    auto c = Tensor::wrap({}, fb::DataType::BOOL, &cond);
    std::vector<const Tensor*> values{iter.get(), c.get()};
    for (size_t j = 0; j < carried.size(); ++j) values.push_back(on_device[j] ? nullptr : carried[j].get());
    for (size_t k = static_cast<size_t>(first_capture_); k < in.size(); ++k) values.push_back(i == 0 ? in[k] : nullptr);
    KILN_RETURN_IF_ERROR(Feed(body, values, true), "%s iteration %lld", where_.c_str(), static_cast<long long>(i));
    KILN_RETURN_IF_ERROR(body.run(nullptr, nullptr), "%s iteration %lld", where_.c_str(), static_cast<long long>(i));
    {
      const Tensor* o = body.outputAt(0);
      if (o->elementCount() != 1)
        return InvalidArgument("%s: the body's condition has %lld elements", where_.c_str(),
                               static_cast<long long>(o->elementCount()));
      auto h = Tensor::create(o->shape(), o->dtype());
      KILN_RETURN_IF_ERROR(o->copyToHostTensor(h.get()));
      cond = Truthy(*h) ? 1 : 0;
    }
    const bool last = !(i + 1 < limit && cond);
    for (int j = 0; j < num_carried_; ++j) {
      const Tensor* o = body.outputAt(1 + static_cast<size_t>(j));
      auto& v = carried[static_cast<size_t>(j)];
      if (o->shape() != v->shape()) {
        if (!at_resize_)
          return InvalidArgument("%s: loop-carried value %d changes shape from %s to %s at iteration %lld",
                                 where_.c_str(), j, ShapeToString(v->shape()).c_str(),
                                 ShapeToString(o->shape()).c_str(), static_cast<long long>(i));
        v = Tensor::create(o->shape(), o->dtype());
      }
      // Only while shapes stay put: a body that is resized (a loop computed
      // at resize, whose values may grow) is planned again, device memory too.
      bool moved = false;
      if (!last && !at_resize_) {
        KILN_ASSIGN_OR_RETURN(moved, CarryOnDevice(body, o, 2 + static_cast<size_t>(j)));
      }
      on_device[static_cast<size_t>(j)] = moved;
      if (!moved) KILN_RETURN_IF_ERROR(o->copyToHostTensor(v.get()));
    }
    for (int k = 0; k < num_scan_out_; ++k) {
      const Tensor* o = body.outputAt(1 + static_cast<size_t>(num_carried_ + k));
      auto& shape = scan_shapes[static_cast<size_t>(k)];
      if (i == 0) shape = o->shape();
      if (o->shape() != shape)
        return InvalidArgument("%s: scan output %d is %s at iteration 0 and %s at iteration %lld", where_.c_str(), k,
                               ShapeToString(shape).c_str(), ShapeToString(o->shape()).c_str(),
                               static_cast<long long>(i));
      auto h = Tensor::create(o->shape(), o->dtype());
      KILN_RETURN_IF_ERROR(o->copyToHostTensor(h.get()));
      auto& bytes = scans[static_cast<size_t>(k)];
      if (bytes.size() + h->byteSize() > max_bytes_)
        return InvalidArgument("%s: scan output %d grows past the tensor limit (%zu bytes) at iteration %lld",
                               where_.c_str(), k, max_bytes_, static_cast<long long>(i));
      const auto* p = static_cast<const uint8_t*>(h->hostData());
      bytes.insert(bytes.end(), p, p + h->byteSize());
    }
  }
  const bool m_reached = has_m && static_cast<double>(limit) == LoadDouble(in[0]->hostData(), in[0]->dtype(), 0);
  if (cond && i >= limit && !m_reached)
    return InvalidArgument("%s ran %lld iterations without its condition ending it (the limit; "
                           "KILN_MAX_LOOP_ITERATIONS raises it)",
                           where_.c_str(), static_cast<long long>(i));
  results_.clear();
  for (auto& v : carried) results_.push_back(std::move(v));
  for (int k = 0; k < num_scan_out_; ++k) {
    std::vector<int64_t> shape{i};
    const auto& elem = scan_shapes[static_cast<size_t>(k)];
    if (i == 0) {  // never ran: the body's planned shape
      const auto& s = body.outputAt(1 + static_cast<size_t>(num_carried_ + k))->shape();
      shape.insert(shape.end(), s.begin(), s.end());
    } else {
      shape.insert(shape.end(), elem.begin(), elem.end());
    }
    auto t = Tensor::create(shape, scan_types[static_cast<size_t>(k)]);
    auto& bytes = scans[static_cast<size_t>(k)];
    if (!bytes.empty()) std::memcpy(t->hostData(), bytes.data(), bytes.size());
    results_.push_back(std::move(t));
  }
  if (out.empty()) return Status::Ok();  // at resize: inferLoop reads results_
  for (size_t j = 0; j < out.size(); ++j) {
    if (results_[j]->shape() != out[j]->shape())
      return InvalidArgument("%s: output %zu is %s at run time, %s was planned at resize", where_.c_str(), j,
                             ShapeToString(results_[j]->shape()).c_str(), ShapeToString(out[j]->shape()).c_str());
    KILN_RETURN_IF_ERROR(out[j]->copyFromHostTensor(*results_[j]));
  }
  return Status::Ok();
}

// ---- Scan ----

namespace {

int ScanAxis(const flatbuffers::Vector<int32_t>* axes, int k, int rank) {
  int a = axes && k < static_cast<int>(axes->size()) ? axes->Get(static_cast<flatbuffers::uoffset_t>(k)) : 0;
  return a < 0 ? a + rank : a;
}

bool Reversed(const flatbuffers::Vector<int32_t>* dirs, int k) {
  return dirs && k < static_cast<int>(dirs->size()) && dirs->Get(static_cast<flatbuffers::uoffset_t>(k)) == 1;
}

}  // namespace

// Opset 8's batched Scan: item b of every state and scan input (axis 0),
// as host tensors; captures as they are.
StatusOr<std::vector<std::unique_ptr<Tensor>>> ControlFlow::batchItem(const std::vector<Tensor*>& in, int64_t b) const {
  std::vector<std::unique_ptr<Tensor>> items;
  for (int j = 0; j < num_carried_ + num_scan_in_; ++j) {
    const Tensor& x = *in[static_cast<size_t>(j)];
    if (x.dimensions() < 1 || x.shape()[0] != in[0]->shape()[0])
      return InvalidArgument("%s: input %d %s has no batch axis of %lld", where_.c_str(), j,
                             ShapeToString(x.shape()).c_str(), static_cast<long long>(in[0]->shape()[0]));
    auto t = Tensor::create(WithoutAxis(x.shape(), 0), x.dtype());
    if (x.hostData() && b < x.shape()[0]) CopySlice(x, 0, b, t->host<uint8_t>(), false);
    items.push_back(std::move(t));
  }
  return items;
}

Status ControlFlow::inferScan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  if (!op_->params<fb::ScanParams>()->batched()) return inferScanOne(in, out);
  if (in.empty() || in[0]->dimensions() < 1) return InvalidArgument("%s: inputs need a batch axis", where_.c_str());
  KILN_ASSIGN_OR_RETURN(auto item, batchItem(in, 0));
  std::vector<Tensor*> in_b, out_b;
  for (auto& t : item) in_b.push_back(t.get());
  for (size_t k = static_cast<size_t>(first_capture_); k < in.size(); ++k) in_b.push_back(in[k]);
  std::vector<std::unique_ptr<Tensor>> outs;
  for (Tensor* o : out) {
    outs.push_back(Tensor::create({}, o->dtype()));
    out_b.push_back(outs.back().get());
  }
  KILN_RETURN_IF_ERROR(inferScanOne(in_b, out_b));
  for (size_t k = 0; k < out.size(); ++k) {
    std::vector<int64_t> shape{in[0]->shape()[0]};
    shape.insert(shape.end(), out_b[k]->shape().begin(), out_b[k]->shape().end());
    out[k]->setShape(shape);
  }
  return Status::Ok();
}

Status ControlFlow::runScan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  if (!op_->params<fb::ScanParams>()->batched()) return runScanOne(in, out);
  const int64_t batch = in[0]->shape()[0];
  for (int64_t b = 0; b < batch; ++b) {
    KILN_ASSIGN_OR_RETURN(auto item, batchItem(in, b));
    std::vector<Tensor*> in_b, out_b;
    for (auto& t : item) in_b.push_back(t.get());
    for (size_t k = static_cast<size_t>(first_capture_); k < in.size(); ++k) in_b.push_back(in[k]);
    std::vector<std::unique_ptr<Tensor>> outs;
    for (Tensor* o : out) {
      outs.push_back(Tensor::create(WithoutAxis(o->shape(), 0), o->dtype()));
      out_b.push_back(outs.back().get());
    }
    KILN_RETURN_IF_ERROR(inferScanOne(in_b, out_b), "%s batch item %lld", where_.c_str(), static_cast<long long>(b));
    KILN_RETURN_IF_ERROR(runScanOne(in_b, out_b), "%s batch item %lld", where_.c_str(), static_cast<long long>(b));
    for (size_t k = 0; k < out.size(); ++k) CopySlice(*out[k], 0, b, outs[k]->host<uint8_t>(), true);
  }
  return Status::Ok();
}

Status ControlFlow::inferScanOne(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  auto* p = op_->params<fb::ScanParams>();
  SessionImpl& body = *children_[0];
  std::vector<std::unique_ptr<Tensor>> slices;
  std::vector<const Tensor*> values;
  for (int j = 0; j < num_carried_; ++j) values.push_back(in[static_cast<size_t>(j)]);
  scan_len_ = -1;
  for (int m = 0; m < num_scan_in_; ++m) {
    const Tensor& x = *in[static_cast<size_t>(num_carried_ + m)];
    const int axis = ScanAxis(p->input_axes(), m, x.dimensions());
    if (axis < 0 || axis >= x.dimensions())
      return InvalidArgument("%s: scan input %d has rank %d, no axis %d", where_.c_str(), m, x.dimensions(), axis);
    const int64_t len = x.shape()[static_cast<size_t>(axis)];
    if (scan_len_ >= 0 && len != scan_len_)
      return InvalidArgument("%s: scan input %d has %lld steps, scan input 0 has %lld", where_.c_str(), m,
                             static_cast<long long>(len), static_cast<long long>(scan_len_));
    scan_len_ = len;
    auto s = Tensor::create(WithoutAxis(x.shape(), axis), x.dtype());
    if (x.hostData() && len > 0) CopySlice(x, axis, Reversed(p->input_directions(), m) ? len - 1 : 0, s->host<uint8_t>(), false);
    values.push_back(s.get());
    slices.push_back(std::move(s));
  }
  for (size_t k = static_cast<size_t>(first_capture_); k < in.size(); ++k) values.push_back(in[k]);
  KILN_RETURN_IF_ERROR(Feed(body, values, false), "%s body", where_.c_str());
  for (int j = 0; j < num_carried_; ++j) {
    const Tensor* o = body.outputAt(static_cast<size_t>(j));
    const Tensor* v = in[static_cast<size_t>(j)];
    if (o->dtype() != v->dtype() || o->shape() != v->shape())
      return InvalidArgument("%s: state value %d enters as %s %s and leaves a step as %s %s", where_.c_str(), j,
                             DataTypeName(v->dtype()), ShapeToString(v->shape()).c_str(), DataTypeName(o->dtype()),
                             ShapeToString(o->shape()).c_str());
    out[static_cast<size_t>(j)]->setShape(v->shape());
  }
  for (int k = 0; k < num_scan_out_; ++k) {
    const Tensor* o = body.outputAt(static_cast<size_t>(num_carried_ + k));
    Tensor* r = out[static_cast<size_t>(num_carried_ + k)];
    if (o->dtype() != r->dtype())
      return InvalidArgument("%s: scan output %d is %s, the op declares %s", where_.c_str(), k,
                             DataTypeName(o->dtype()), DataTypeName(r->dtype()));
    const int rank = o->dimensions() + 1;
    const int axis = ScanAxis(p->output_axes(), k, rank);
    if (axis < 0 || axis >= rank)
      return InvalidArgument("%s: scan output %d has rank %d, no axis %d", where_.c_str(), k, rank, axis);
    std::vector<int64_t> shape = o->shape();
    shape.insert(shape.begin() + axis, scan_len_);
    r->setShape(shape);
  }
  return Status::Ok();
}

Status ControlFlow::runScanOne(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) {
  auto* p = op_->params<fb::ScanParams>();
  SessionImpl& body = *children_[0];
  std::vector<std::unique_ptr<Tensor>> state, slices;
  for (int j = 0; j < num_carried_; ++j) {
    KILN_ASSIGN_OR_RETURN(auto v, Tensor::createHostTensorFromDevice(*in[static_cast<size_t>(j)]));
    state.push_back(std::move(v));
  }
  for (int m = 0; m < num_scan_in_; ++m) {
    const Tensor& x = *in[static_cast<size_t>(num_carried_ + m)];
    slices.push_back(Tensor::create(WithoutAxis(x.shape(), ScanAxis(p->input_axes(), m, x.dimensions())), x.dtype()));
  }
  std::vector<std::unique_ptr<Tensor>> step_out;
  for (int k = 0; k < num_scan_out_; ++k) {
    const Tensor* o = body.outputAt(static_cast<size_t>(num_carried_ + k));
    step_out.push_back(Tensor::create(o->shape(), o->dtype()));
  }
  std::vector<bool> on_device(static_cast<size_t>(num_carried_), false);
  for (int64_t t = 0; t < scan_len_; ++t) {
    std::vector<const Tensor*> values;
    for (size_t j = 0; j < state.size(); ++j) values.push_back(on_device[j] ? nullptr : state[j].get());
    for (int m = 0; m < num_scan_in_; ++m) {
      const Tensor& x = *in[static_cast<size_t>(num_carried_ + m)];
      const int64_t at = Reversed(p->input_directions(), m) ? scan_len_ - 1 - t : t;
      CopySlice(x, ScanAxis(p->input_axes(), m, x.dimensions()), at, slices[static_cast<size_t>(m)]->host<uint8_t>(),
                false);
      values.push_back(slices[static_cast<size_t>(m)].get());
    }
    for (size_t k = static_cast<size_t>(first_capture_); k < in.size(); ++k) values.push_back(t == 0 ? in[k] : nullptr);
    KILN_RETURN_IF_ERROR(Feed(body, values, true), "%s step %lld", where_.c_str(), static_cast<long long>(t));
    KILN_RETURN_IF_ERROR(body.run(nullptr, nullptr), "%s step %lld", where_.c_str(), static_cast<long long>(t));
    for (int j = 0; j < num_carried_; ++j) {
      const Tensor* o = body.outputAt(static_cast<size_t>(j));
      if (o->shape() != state[static_cast<size_t>(j)]->shape())
        return InvalidArgument("%s: state value %d changes shape to %s at step %lld", where_.c_str(), j,
                               ShapeToString(o->shape()).c_str(), static_cast<long long>(t));
      bool moved = false;
      if (t + 1 < scan_len_) {
        KILN_ASSIGN_OR_RETURN(moved, CarryOnDevice(body, o, static_cast<size_t>(j)));
      }
      on_device[static_cast<size_t>(j)] = moved;
      if (!moved) KILN_RETURN_IF_ERROR(o->copyToHostTensor(state[static_cast<size_t>(j)].get()));
    }
    for (int k = 0; k < num_scan_out_; ++k) {
      const Tensor* o = body.outputAt(static_cast<size_t>(num_carried_ + k));
      Tensor& h = *step_out[static_cast<size_t>(k)];
      if (o->shape() != h.shape())
        return InvalidArgument("%s: scan output %d changes shape to %s at step %lld", where_.c_str(), k,
                               ShapeToString(o->shape()).c_str(), static_cast<long long>(t));
      KILN_RETURN_IF_ERROR(o->copyToHostTensor(&h));
      Tensor& r = *out[static_cast<size_t>(num_carried_ + k)];
      const int64_t at = Reversed(p->output_directions(), k) ? scan_len_ - 1 - t : t;
      CopySlice(r, ScanAxis(p->output_axes(), k, r.dimensions()), at, h.host<uint8_t>(), true);
    }
  }
  for (int j = 0; j < num_carried_; ++j) KILN_RETURN_IF_ERROR(out[static_cast<size_t>(j)]->copyFromHostTensor(*state[static_cast<size_t>(j)]));
  return Status::Ok();
}

}  // namespace kiln
