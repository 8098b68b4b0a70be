// SessionImpl: resize (shape inference, resize-time values, memory plan) and
// run.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "checked_math.h"
#include "control_flow.h"
#include "host_backend.h"
#include "ops/op_cost.h"
#include "ops/shape_inference.h"
#include "session_impl.h"

namespace kiln {

Tensor* SessionImpl::input(const std::string& name) {
  for (int t : graph_->inputs)
    if (name.empty() || graph_->tensors[static_cast<size_t>(t)].name == name) return tensors_[static_cast<size_t>(t)].get();
  return nullptr;
}

Tensor* SessionImpl::output(const std::string& name) {
  for (int t : graph_->outputs)
    if (name.empty() || graph_->tensors[static_cast<size_t>(t)].name == name) return tensors_[static_cast<size_t>(t)].get();
  return nullptr;
}

std::map<std::string, Tensor*> SessionImpl::inputs() {
  std::map<std::string, Tensor*> m;
  for (int t : graph_->inputs) m[graph_->tensors[static_cast<size_t>(t)].name] = tensors_[static_cast<size_t>(t)].get();
  return m;
}

std::map<std::string, Tensor*> SessionImpl::outputs() {
  std::map<std::string, Tensor*> m;
  for (int t : graph_->outputs) m[graph_->tensors[static_cast<size_t>(t)].name] = tensors_[static_cast<size_t>(t)].get();
  return m;
}

Status SessionImpl::resizeTensor(Tensor* input, const std::vector<int64_t>& shape) {
  for (int t : graph_->inputs) {
    if (tensors_[static_cast<size_t>(t)].get() != input) continue;
    const GraphTensor& gt = graph_->tensors[static_cast<size_t>(t)];
    if (gt.has_shape && gt.dims.size() != shape.size())
      return InvalidArgument("input '%s' has rank %zu; cannot resize to %s", gt.name.c_str(), gt.dims.size(),
                             ShapeToString(shape).c_str());
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < 0) return InvalidArgument("input '%s': dim %zu is %lld", gt.name.c_str(), d, (long long)shape[d]);
      if (gt.has_shape && gt.dims[d] >= 0 && gt.dims[d] != shape[d])
        return InvalidArgument("input '%s': dim %zu is fixed at %lld in the model, cannot be %lld", gt.name.c_str(), d,
                               (long long)gt.dims[d], (long long)shape[d]);
    }
    if (resized_ && input->shape() == shape) return Status::Ok();  // nothing changes
    requested_shapes_[input] = shape;
    if (isShapeInput(input)) bindShapeInput(input, shape);
    resized_ = false;
    return Status::Ok();
  }
  return InvalidArgument("resizeTensor: the tensor is not an input of this session");
}

Status SessionImpl::inferShapes() {
  const Graph& g = *graph_;
  resize_scratch_.clear();
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const GraphTensor& gt = g.tensors[i];
    Tensor* t = tensors_[i].get();
    if (gt.isConstant()) {
      t->setShape(gt.dims);
      t->bind(nullptr, const_cast<uint8_t*>(gt.constant.data));  // read-only: model memory
    } else if (isShapeInput(t)) {
      if (!t->hostData())
        return InvalidArgument("input '%s' decides a shape: call resizeTensor and write its values before resize",
                               gt.name.c_str());
      auto& seen = shape_input_seen_[t];
      seen.assign(t->host<uint8_t>(), t->host<uint8_t>() + t->byteSize());
    } else if (gt.is_input) {
      auto it = requested_shapes_.find(t);
      if (it != requested_shapes_.end()) {
        t->setShape(it->second);
      } else {
        if (!gt.has_shape) return InvalidArgument("input '%s' has no shape; call resizeTensor", gt.name.c_str());
        for (size_t d = 0; d < gt.dims.size(); ++d)
          if (gt.dims[d] < 0)
            return InvalidArgument("input '%s': dim %zu ('%s') is symbolic; call resizeTensor with a shape",
                                   gt.name.c_str(), d, gt.symbols[d].c_str());
        t->setShape(gt.dims);
      }
      KILN_RETURN_IF_ERROR(checkTensorSize(*t, tensorLimit(home_[i]), "input"));
    }
  }
  std::vector<Tensor*> ins, outs;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const GraphOp& op = g.ops[i];
    if (op.type == fb::OpType::Constant) continue;
    ins.clear();
    outs.clear();
    for (int in : op.inputs) ins.push_back(in < 0 ? nullptr : tensors_[static_cast<size_t>(in)].get());
    for (int o : op.outputs) outs.push_back(tensors_[static_cast<size_t>(o)].get());
    ShapeDef def = FindShapeDef(op.type);
    if (control_[i]) {
      for (size_t k = 0; k < outs.size(); ++k) outs[k]->setDtype(g.tensors[static_cast<size_t>(op.outputs[k])].dtype);
      KILN_RETURN_IF_ERROR(control_[i]->inferShapes(ins, outs), "%s", where(static_cast<int>(i)).c_str());
    } else {
      if (!def.fn) return Unsupported("%s: no shape function for %s", where(static_cast<int>(i)).c_str(), op.typeName());
      ShapeContext ctx(op, ins, outs);
      KILN_RETURN_IF_ERROR(def.fn(ctx), "%s", where(static_cast<int>(i)).c_str());
    }
    for (size_t k = 0; k < outs.size(); ++k)
      KILN_RETURN_IF_ERROR(checkTensorSize(*outs[k], tensorLimit(home_[static_cast<size_t>(op.outputs[k])]), "output"),
                      "%s", where(static_cast<int>(i)).c_str());
    if (!outs.empty())
      KILN_RETURN_IF_ERROR(checkParameterWork(op, ins, outs, tensorLimit(home_[static_cast<size_t>(op.outputs[0])])),
                      "%s", where(static_cast<int>(i)).c_str());
    if (resize_op_[i]) {
      // Compute now, on the host, into session memory that lives until the next resize.
      for (Tensor* o : outs) {
        resize_scratch_.emplace_back(o, std::vector<uint8_t>(std::max<size_t>(o->byteSize(), 8)));
        o->bind(nullptr, resize_scratch_.back().second.data());
      }
      KILN_RETURN_IF_ERROR(execs_[i]->onResize(ins, outs), "%s", where(static_cast<int>(i)).c_str());
      KILN_RETURN_IF_ERROR(execs_[i]->onExecute(ins, outs), "%s at resize", where(static_cast<int>(i)).c_str());
    }
  }
  for (auto& [key, m] : mirrors_) {
    Tensor* src = tensors_[static_cast<size_t>(key.first)].get();
    m->setShape(src->shape());
    m->setDtype(src->dtype());
  }
  return Status::Ok();
}

size_t SessionImpl::tensorLimit(const Backend* b) const {
  auto it = tensor_limit_.find(b);
  return it == tensor_limit_.end() ? PhysicalMemoryBytes() : it->second;
}

Status SessionImpl::checkTensorSize(const Tensor& t, size_t limit, const char* role) const {
  for (int64_t d : t.shape())
    if (d < 0) return Internal("%s '%s': negative dim %lld", role, t.name().c_str(), (long long)d);
  size_t bytes = 0;
  if (!CheckedShapeBytes(t.shape(), t.elementSize(), &bytes))
    return InvalidArgument("%s '%s' %s exceeds the tensor limit (%zu bytes): its size overflows", role,
                           t.name().c_str(), ShapeToString(t.shape()).c_str(), limit);
  if (bytes > limit)
    return InvalidArgument("%s '%s' %s exceeds the tensor limit (%zu bytes): it needs %zu", role, t.name().c_str(),
                           ShapeToString(t.shape()).c_str(), limit, bytes);
  // An empty tensor's other dims still size the loops and tables of the
  // kernels that walk it ([1,3,100663301,0]): bounded as if they held data.
  if (bytes == 0) {
    std::vector<int64_t> nonzero;
    for (int64_t d : t.shape())
      if (d != 0) nonzero.push_back(d);
    if (!CheckedShapeBytes(nonzero, t.elementSize(), &bytes) || bytes > limit)
      return InvalidArgument("%s '%s' %s exceeds the tensor limit (%zu bytes) in its non-empty dims", role,
                             t.name().c_str(), ShapeToString(t.shape()).c_str(), limit);
  }
  return Status::Ok();
}

// Ops whose work is set by parameters rather than by their tensors' sizes:
// a windowed op reads its input as if padded (pads of 65536 on a 7x7 input)
// and walks its kernel window at every output (kernel_shape or dilations of
// 10^6). Each is bounded by the tensor limit as if it were a tensor: the
// padded input, the window, and the work, which is the im2col matrix a
// convolution would build (its outputs' pixels times the taps of its
// weights, f32) or a pool's outputs times its window's taps.
Status SessionImpl::checkParameterWork(const GraphOp& op, const std::vector<Tensor*>& ins,
                                       const std::vector<Tensor*>& outs, size_t limit) const {
  if (!op.op || ins.empty() || !ins[0] || outs.empty() || !outs[0]) return Status::Ok();
  const flatbuffers::Vector<int32_t>* kernel = nullptr;
  const flatbuffers::Vector<int32_t>* pads = nullptr;
  const flatbuffers::Vector<int32_t>* dilations = nullptr;
  // The convolutions and where their weights are (QLinearConv: input 3).
  const bool conv = op.type == fb::OpType::Conv || op.type == fb::OpType::ConvTranspose ||
                    op.type == fb::OpType::ConvInteger || op.type == fb::OpType::QLinearConv;
  const size_t weights = op.type == fb::OpType::QLinearConv ? 3 : 1;
  if (const fb::ConvParams* p = op.params<fb::ConvParams>()) {
    kernel = p->kernel_shape(), pads = p->pads(), dilations = p->dilations();
  } else if (const fb::PoolParams* p = op.params<fb::PoolParams>()) {
    kernel = p->kernel_shape(), pads = p->pads(), dilations = p->dilations();
  } else if (!conv) {
    return Status::Ok();
  }
  const std::vector<int64_t>& x = ins[0]->shape();
  const size_t spatial = x.size() > 2 ? x.size() - 2 : 0;
  std::vector<int64_t> padded = x, window;
  for (size_t d = 0; d < spatial; ++d) {
    if (pads && pads->size() == 2 * spatial)
      padded[2 + d] = SatAdd(SatAdd(x[2 + d], std::max(0, pads->Get(static_cast<flatbuffers::uoffset_t>(d)))),
                             std::max(0, pads->Get(static_cast<flatbuffers::uoffset_t>(d + spatial))));
    int64_t k = kernel && kernel->size() == spatial ? kernel->Get(static_cast<flatbuffers::uoffset_t>(d)) : 1;
    int64_t dil = dilations && dilations->size() == spatial ? dilations->Get(static_cast<flatbuffers::uoffset_t>(d)) : 1;
    window.push_back(SatAdd(SatMul(std::max<int64_t>(k, 1) - 1, std::max<int64_t>(dil, 1)), 1));
  }
  size_t bytes = 0;
  if (!CheckedShapeBytes(padded, ins[0]->elementSize(), &bytes) || bytes > limit)
    return InvalidArgument("input '%s' %s padded to %s exceeds the tensor limit (%zu bytes)", ins[0]->name().c_str(),
                           ShapeToString(x).c_str(), ShapeToString(padded).c_str(), limit);
  if (!CheckedShapeBytes(window, sizeof(float), &bytes) || bytes > limit)
    return InvalidArgument("kernel window %s (kernel_shape and dilations) exceeds the tensor limit (%zu bytes)",
                           ShapeToString(window).c_str(), limit);
  // The work: pixels walked (a convolution's outputs, a transposed one's
  // inputs; a pool's outputs) times the taps each one takes.
  std::vector<int64_t> work;
  const std::vector<int64_t>& walked = op.type == fb::OpType::ConvTranspose ? x : outs[0]->shape();
  if (conv) {
    if (ins.size() <= weights || !ins[weights]) return Status::Ok();
    const std::vector<int64_t>& w = ins[weights]->shape();  // [M, C/group, k...] (transposed: [C, M/group, k...])
    for (size_t d = 2; d < walked.size(); ++d) work.push_back(walked[d]);
    for (size_t d = 1; d < w.size(); ++d) work.push_back(w[d]);
  } else {
    work = outs[0]->shape();
    for (size_t d = 0; d < spatial; ++d) work.push_back(kernel && kernel->size() == spatial ? kernel->Get(d) : 1);
  }
  if (!CheckedShapeBytes(work, sizeof(float), &bytes) || bytes > limit)
    return InvalidArgument("its work %s (pixels times kernel taps) exceeds the tensor limit (%zu bytes)",
                           ShapeToString(work).c_str(), limit);
  return Status::Ok();
}

bool SessionImpl::releasable(const Tensor* t) const {
  auto it = graph_index_.find(t);
  if (it != graph_index_.end()) {
    const GraphTensor& gt = graph_->tensors[it->second];
    return !gt.is_input && !gt.is_output && !gt.isConstant() && !resize_value_[it->second];
  }
  // A mirror: dynamic ones die with their last reader; static ones live on.
  return !mirror_is_static_.count(t);
}

Backend* SessionImpl::backendOf(const Tensor* t) const {
  auto it = graph_index_.find(t);
  if (it != graph_index_.end()) return home_[it->second];
  auto m = mirror_backend_.find(t);
  return m == mirror_backend_.end() ? nullptr : m->second;
}

// Concats whose inputs can be written in place (Backend::onAcquireView):
// axis such that every input is one contiguous block of the output (the
// dims before the axis all 1), on a backend that takes views, every input
// an intermediate of that backend made by an earlier step, of the output's
// dtype, read once by the Concat, not an input of another such Concat nor
// such a Concat's output, and a whole number of 64-byte lines (each view
// starts where a buffer of its own would: kernels may assume that).
SessionImpl::ConcatViews SessionImpl::planConcatViews() const {
  ConcatViews v;
  static const bool on = !(std::getenv("KILN_CONCAT_VIEWS") && std::getenv("KILN_CONCAT_VIEWS")[0] == '0');
  if (keep_all_ || !on) return v;
  const Graph& g = *graph_;
  std::set<const Tensor*> produced;
  for (const Step& st : steps_) {
    if (st.op >= 0 && st.exec && g.ops[static_cast<size_t>(st.op)].type == fb::OpType::Concat &&
        st.backend->supportsViews() && st.outputs.size() == 1 && st.outputs[0] && releasable(st.outputs[0]) &&
        !v.parents.count(st.outputs[0])) {
      Tensor* out = st.outputs[0];
      const fb::AxisParams* p = g.ops[static_cast<size_t>(st.op)].params<fb::AxisParams>();
      int axis = p ? p->axis() : 0;
      if (axis < 0) axis += out->dimensions();
      bool ok = axis >= 0 && axis < out->dimensions() && out->byteSize() > 0;
      for (int d = 0; ok && d < axis; ++d) ok = out->length(d) == 1;
      size_t bytes = 0;
      for (size_t i = 0; ok && i < st.inputs.size(); ++i) {
        const Tensor* x = st.inputs[i];
        ok = x && produced.count(x) && releasable(x) && backendOf(x) == st.backend && x->dtype() == out->dtype() &&
             x->byteSize() % 64 == 0 && !v.of.count(x) && !v.parents.count(x) &&
             std::count(st.inputs.begin(), st.inputs.end(), x) == 1;
        if (ok) bytes += x->byteSize();
      }
      if (ok && bytes == out->byteSize()) {
        size_t at = 0;
        for (Tensor* x : st.inputs) {
          v.of[x] = {out, at};
          at += x->byteSize();
        }
        v.parents.insert(out);
      }
    }
    for (Tensor* t : st.outputs)
      if (t) produced.insert(t);
  }
  return v;
}

bool SessionImpl::viewsReadBefore(const ConcatViews& views, const Tensor* t, size_t s,
                                  const std::map<const Tensor*, size_t>& last_use) {
  if (!views.parents.count(t)) return true;
  for (const auto& [x, where] : views.of)
    if (where.first == t) {
      auto it = last_use.find(x);
      if (it != last_use.end() && it->second >= s) return false;
    }
  return true;
}

Status SessionImpl::planMemory() {
  const Graph& g = *graph_;
  std::map<const Tensor*, size_t> last_use;
  for (size_t s = 0; s < steps_.size(); ++s)
    for (Tensor* t : steps_[s].inputs)
      if (t) last_use[t] = s;
  {
    std::vector<StepView> views;
    views.reserve(steps_.size());
    for (const Step& st : steps_) views.push_back({st.backend, st.exec, &st.inputs, &st.outputs});
    std::vector<const Tensor*> app;
    for (int t : g.inputs) app.push_back(tensors_[static_cast<size_t>(t)].get());
    for (int t : g.outputs) app.push_back(tensors_[static_cast<size_t>(t)].get());
    for (auto& b : backends_) KILN_RETURN_IF_ERROR(b->onChooseLayouts(views, app), "%s layouts", b->name());
  }
  for (auto& b : backends_) b->onClearBuffer();

  for (int t : g.inputs)
    if (!isShapeInput(tensors_[static_cast<size_t>(t)].get()))
      KILN_RETURN_IF_ERROR(home_[static_cast<size_t>(t)]->onAcquireBuffer(tensors_[static_cast<size_t>(t)].get(), nullptr));
  std::vector<std::pair<Tensor*, Tensor*>> copies;  // static copies the backends did not take as constants
  for (auto& [src, m] : static_copies_) {
    const auto it = graph_index_.find(src);
    const bool constant = it != graph_index_.end() && graph_->tensors[it->second].isConstant();
    bool taken = false;
    if (constant) {
      KILN_ASSIGN_OR_RETURN(taken, backendOf(m)->onAcquireConstant(m, *src));
    }
    if (taken) continue;
    KILN_RETURN_IF_ERROR(backendOf(m)->onAcquireBuffer(m, nullptr));
    copies.emplace_back(src, m);
  }

  const ConcatViews views = planConcatViews();
  std::set<const Tensor*> parents_acquired;
  for (size_t s = 0; s < steps_.size(); ++s) {
    Step& st = steps_[s];
    for (size_t k = 0; k < st.outputs.size(); ++k) {
      Tensor* out = st.outputs[k];
      if (parents_acquired.count(out)) continue;  // a Concat's output, acquired with its first input
      auto view = views.of.find(out);
      if (view != views.of.end()) {
        Tensor* parent = view->second.first;
        if (parents_acquired.insert(parent).second) KILN_RETURN_IF_ERROR(st.backend->onAcquireBuffer(parent, nullptr));
        KILN_RETURN_IF_ERROR(st.backend->onAcquireView(out, parent, view->second.second));
        continue;
      }
      const Tensor* share = nullptr;
      // Never in place over a view (the parent would see the new values),
      // nor over a parent while a view is still to be read.
      if (st.op >= 0 && k == 0 && !keep_all_ && MayRunInPlace(g.ops[static_cast<size_t>(st.op)].type) &&
          !st.inputs.empty() && st.inputs[0] && releasable(st.inputs[0]) && last_use[st.inputs[0]] == s &&
          st.inputs[0]->byteSize() == out->byteSize() && st.inputs[0]->dtype() == out->dtype() &&
          backendOf(st.inputs[0]) == st.backend && !views.of.count(st.inputs[0]) &&
          viewsReadBefore(views, st.inputs[0], s, last_use)) {
        bool read_twice = false;  // x + x: in0 is also another input
        for (size_t j = 1; j < st.inputs.size(); ++j) read_twice |= st.inputs[j] == st.inputs[0];
        if (!read_twice) share = st.inputs[0];
      }
      KILN_RETURN_IF_ERROR(st.backend->onAcquireBuffer(out, share));
    }
    if (st.exec) {
      const auto t0 = std::chrono::steady_clock::now();
      KILN_RETURN_IF_ERROR(st.exec->onResize(st.inputs, st.outputs), "%s", where(st.op).c_str());
      addSetup(st.backend, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::vector<const Tensor*> released;
    for (Tensor* in : st.inputs) {
      if (!in || last_use[in] != s || !releasable(in)) continue;
      if (std::find(released.begin(), released.end(), in) != released.end()) continue;
      released.push_back(in);
      KILN_RETURN_IF_ERROR(backendOf(in)->onReleaseBuffer(in));
    }
  }
  for (auto& b : backends_) {
    const auto t0 = std::chrono::steady_clock::now();
    KILN_RETURN_IF_ERROR(b->onPrepareKernels(), "%s kernels", b->name());
    addSetup(b.get(), std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  for (auto& b : backends_) KILN_RETURN_IF_ERROR(b->onAllocateBuffer(), "%s pool", b->name());
  auto t0 = std::chrono::steady_clock::now();
  for (auto& [src, m] : copies) {
    Backend* b = backendOf(m);
    KILN_RETURN_IF_ERROR(b->onCopyBuffer(*src, m), "upload of '%s'", src->name().c_str());
  }
  phases_.upload += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t0 = std::chrono::steady_clock::now();
  // Each backend's maximal runs of consecutive steps, for recording.
  for (auto& b : backends_) {
    std::vector<std::vector<Execution*>> runs;
    bool open = false;
    for (const Step& st : steps_) {
      if (st.exec && st.backend == b.get()) {
        if (!open) runs.emplace_back();
        runs.back().push_back(st.exec);
        open = true;
      } else {
        open = false;
      }
    }
    KILN_RETURN_IF_ERROR(b->onRecord(runs), "%s: recording", b->name());
  }
  phases_.record += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

void SessionImpl::releaseCache() {
  // Read at run time: graph outputs, and inputs of run steps in positions
  // that are not value inputs (kernels take value inputs at onResize).
  std::set<const Tensor*> needed;
  for (int t : graph_->outputs) needed.insert(tensors_[static_cast<size_t>(t)].get());
  for (const Step& st : steps_) {
    uint32_t mask = st.op >= 0 ? FindShapeDef(graph_->ops[static_cast<size_t>(st.op)].type).value_inputs : 0;
    for (size_t k = 0; k < st.inputs.size(); ++k)
      if (!((mask >> k) & 1)) needed.insert(st.inputs[k]);
  }
  std::vector<std::pair<Tensor*, std::vector<uint8_t>>> kept;
  for (auto& entry : resize_scratch_) {
    if (needed.count(entry.first)) {
      kept.push_back(std::move(entry));
    } else {
      entry.first->bind(nullptr, nullptr);
    }
  }
  resize_scratch_ = std::move(kept);
}

namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Status SessionImpl::resize() {
  // Every resize adds to the phases (kiln/session.h: SessionPhases).
  const SessionPhases before = phases_;
  auto t0 = std::chrono::steady_clock::now();
  KILN_RETURN_IF_ERROR(inferShapes(), "%s", model_->name().c_str());
  phases_.shapes += MsSince(t0);
  t0 = std::chrono::steady_clock::now();
  KILN_RETURN_IF_ERROR(planMemory(), "%s", model_->name().c_str());
  phases_.plan += MsSince(t0) - (phases_.pack - before.pack) - (phases_.pipelines - before.pipelines) -
                  (phases_.upload - before.upload) - (phases_.record - before.record);
  if (host_->bundleBlobs() > 0) {
    bundle_host_note_ = StrFormat("%zu of its %zu prepacked forms used", host_->bundleUsed(), host_->bundleBlobs());
    if (host_->bundleStale())
      bundle_host_note_ += StrFormat(", %zu made for other sizes (packed again)", host_->bundleStale());
  }
  noteBundle();
  resized_ = true;
  return Status::Ok();
}

OpInfo SessionImpl::opInfo(int op) const {
  const GraphOp& o = graph_->ops[static_cast<size_t>(op)];
  return OpInfo{op, o.name, o.typeName(), backends_[static_cast<size_t>(op_backend_[static_cast<size_t>(op)])]->name()};
}

static Status CopyBetween(const Tensor& src, Tensor* dst, Backend* fallback) {
  if (dst->backend()) return dst->backend()->onCopyBuffer(src, dst);
  if (src.backend()) return src.backend()->onCopyBuffer(src, dst);
  return fallback->onCopyBuffer(src, dst);
}

// Callbacks read tensors on the host: device tensors are copied for them.
static bool CallBack(const TensorCallBack& cb, const std::vector<Tensor*>& tensors, const OpInfo& info) {
  std::vector<std::unique_ptr<Tensor>> copies;
  std::vector<Tensor*> view;
  for (Tensor* t : tensors) {
    if (!t || t->onHost()) {
      view.push_back(t);
      continue;
    }
    auto c = Tensor::createHostTensorFromDevice(*t, true);
    if (!c.ok()) return false;
    (*c)->setName(t->name());
    view.push_back(c->get());
    copies.push_back(std::move(c).value());
  }
  return cb(view, info);
}

Status SessionImpl::runStep(const Step& s, const TensorCallBack* before, const TensorCallBack* after) {
  if (s.op < 0) return CopyBetween(*s.inputs[0], s.outputs[0], host_);
  OpInfo info;
  if (before || after) info = opInfo(s.op);
  if (before && *before && !CallBack(*before, s.inputs, info))
    return Status(StatusCode::kAborted, StrFormat("stopped by the before-callback at %s", where(s.op).c_str()));
  KILN_RETURN_IF_ERROR(s.exec->onExecute(s.inputs, s.outputs), "%s", where(s.op).c_str());
  if (after && *after) {
    KILN_RETURN_IF_ERROR(s.backend->onWaitFinish());
    if (!CallBack(*after, s.outputs, info))
      return Status(StatusCode::kAborted, StrFormat("stopped by the after-callback at %s", where(s.op).c_str()));
  }
  return Status::Ok();
}

Status SessionImpl::resizeKeepingInputs() {
  std::vector<std::pair<Tensor*, std::unique_ptr<Tensor>>> saved;
  for (int t : graph_->inputs) {
    Tensor* in = tensors_[static_cast<size_t>(t)].get();
    if (isShapeInput(in)) continue;
    KILN_ASSIGN_OR_RETURN(auto copy, Tensor::createHostTensorFromDevice(*in, true));
    saved.emplace_back(in, std::move(copy));
  }
  KILN_RETURN_IF_ERROR(resize());
  for (auto& [in, copy] : saved) KILN_RETURN_IF_ERROR(in->copyFromHostTensor(*copy));
  return Status::Ok();
}

// Adaptive host threading. A second thread pays on big ops; on small
// models its hand-offs can cost more than it saves, and how much depends on
// the moment: on the 2-core Zen 5 VMs a cache line's round trip between the
// cores is 85-93 ns, or about 380 ns for minutes at a time, and then
// MobileNetV3-Small ran 0.94 ms on one thread, 1.04 on two, and most of
// SqueezeNet's steps under 50 us took longer on two threads than on one. So
// a session times its runs' host steps in three forms: all on one thread,
// all on all threads, and the steps whose one-thread time is under 50 us
// on one thread with the rest on all; it runs the form with the lowest
// estimate: the median of its last three runs (the least of fewer). After
// a first run that is not timed (cold caches, first touches), each form
// takes one turn; then every 8th run takes another form for the first 64
// runs, every 32nd after, so that no estimate goes stale and a benchmark's
// median is untouched (three turns each put a third of a 10-run median's
// runs on the slower forms; an estimate taken from a cold first run once
// kept a whole process on one thread; smoothed estimates took hundreds of
// runs to undo a wrong first choice). A form is the whole run's choice,
// judged on whole runs: chosen step by step on each step's own time, a
// step on one thread left its output in one core's cache and made the next
// step's second thread slower, so steps drifted to one thread (MobileNetV2
// at two threads 3.1 -> 4.0 ms). Four chunks a thread, so that a free
// thread takes a slow one's, never won (slow state: SqueezeNet 2.9-3.1 ms
// against 2.2-2.3). Only the number of chunks changes: a step's bits are
// the same on one thread as on all (the plans made at resize stay).
// KILN_HOST_ADAPTIVE_THREADS=0 keeps all threads, and so does profiling
// (ScheduleConfig::profile) and a run with callbacks.
namespace {
constexpr int kForms = 3;
constexpr int kKeepRuns = 3;  // the runs a form's estimate is the median of
constexpr int64_t kTryEarly = 8, kYoungRuns = 64, kTryEvery = 32;
constexpr double kSmallStepMs = 0.05;
constexpr double kFarBehind = 1.3;
bool AdaptiveThreadsOn() {
  static const bool on = [] {
    const char* e = std::getenv("KILN_HOST_ADAPTIVE_THREADS");
    return !(e && e[0] == '0');
  }();
  return on;
}
}  // namespace

int SessionImpl::threadsForRun() const {
  if (adaptive_runs_ == 0) return 1;  // the untimed first run
  // One turn each first: all, one, mixed (the mixed form needs a
  // one-thread run's step times).
  static constexpr int kTurns[kForms] = {1, 0, 2};
  if (adaptive_runs_ <= kForms) return kTurns[adaptive_runs_ - 1];
  int best = 0;
  for (int f = 1; f < kForms; ++f)
    if (thread_est_[f] < thread_est_[best]) best = f;
  // Another form every 8th run while the estimates are young, then every
  // 32nd; a form more than kFarBehind times the best's estimate (one thread
  // against two on a big model: 1.8x) only every 4th of its turns (the
  // first at run 56), for each of its runs moves a benchmark's median up a
  // place (bench/compare's rounds of 22 runs took the one-thread form at
  // run 8).
  const int64_t every = adaptive_runs_ < kYoungRuns ? kTryEarly : kTryEvery;
  if (adaptive_runs_ % every != 0) return best;
  const int64_t turn = adaptive_runs_ / every;
  const int other = (best + 1 + static_cast<int>(turn % (kForms - 1))) % kForms;
  if (thread_est_[other] > kFarBehind * thread_est_[best] && (turn / (kForms - 1) + 1) % 4 != 0) return best;
  return other;
}

void SessionImpl::noteRunThreads(int form, double ms) {
  if (adaptive_runs_ == 1) return;  // the first run (counted before it ran)
  // The form's last three runs; its estimate their median, or the least
  // of fewer (a delay only adds): a form that stops being the fastest
  // loses to the others within two runs.
  double* w = thread_last_[form];
  w[thread_seen_[form]++ % kKeepRuns] = ms;
  const int n = std::min(thread_seen_[form], kKeepRuns);
  thread_est_[form] = n < kKeepRuns ? std::min(w[0], n > 1 ? w[1] : w[0])
                            : std::max(std::min(w[0], w[1]), std::min(std::max(w[0], w[1]), w[2]));
}

Status SessionImpl::run(const TensorCallBack* before, const TensorCallBack* after) {
  bool shape_values_changed = false;
  for (auto& [t, seen] : shape_input_seen_)
    if (t->isContainer() || t->byteSize() != seen.size() || !std::equal(seen.begin(), seen.end(), t->host<uint8_t>()))
      shape_values_changed = true;  // a sequence input: its elements are not compared, planned again
  // New shape-input values: plan again, keeping what the app already wrote
  // into the other inputs (their shapes did not change).
  if (resized_ && shape_values_changed) KILN_RETURN_IF_ERROR(resizeKeepingInputs());
  if (!resized_) KILN_RETURN_IF_ERROR(resize());
  const bool op_by_op = (before && *before) || (after && *after);
  for (auto& b : backends_) b->onExecuteBegin(op_by_op);
  Status status;
  std::vector<double> wall(profile_ ? steps_.size() : 0);
  ThreadPool* pool = host_ ? &host_->pool() : nullptr;
  // Not while profiling: a profile shows each step on the threads asked for.
  const bool adapt = pool && AdaptiveThreadsOn() && !op_by_op && !profile_ && pool->threads() > 1;
  const int form = adapt ? threadsForRun() : 1;
  if (adapt) {
    ++adaptive_runs_;
    if (step_one_ms_.size() != steps_.size()) step_one_ms_.assign(steps_.size(), 0.0);
  }
  double host_ms = 0.0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    const bool host_timed = profile_ && (steps_[i].backend == host_ || steps_[i].op < 0);
    // Profiling: GPU work submitted earlier must not be counted as this
    // host step's (or copy's) time.
    if (host_timed)
      for (auto& b : backends_) (void)b->onWaitFinish();
    const bool adapted = adapt && steps_[i].backend == host_ && steps_[i].op >= 0;
    // Form 2: a step with a one-thread time under kSmallStepMs (or none yet) on one thread.
    const bool one = form == 0 || (form == 2 && step_one_ms_[i] < kSmallStepMs);
    if (adapted) pool->setActive(one ? 1 : pool->threads());
    auto t0 = std::chrono::steady_clock::now();
    status = runStep(steps_[i], before, after);
    if (adapted) {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      host_ms += ms;
      if (form == 0) step_one_ms_[i] = step_one_ms_[i] > 0.0 ? 0.5 * (step_one_ms_[i] + ms) : ms;
      pool->setActive(pool->threads());
    }
    if (!status.ok()) break;
    if (profile_) {
      // Host work is done when the step returns; a GPU step only submitted.
      if (host_timed) (void)steps_[i].backend->onWaitFinish();
      wall[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  if (adapt && status.ok()) noteRunThreads(form, host_ms);
  for (auto& b : backends_) {
    Status end = b->onExecuteEnd();
    if (status.ok()) status = end;
    Status wait = b->onWaitFinish();
    if (status.ok()) status = wait;
  }
  if (status.ok() && !state_.empty()) status = carryState();
  if (status.ok() && profile_) {
    profile_result_.clear();
    for (size_t i = 0; i < steps_.size(); ++i) {
      const Step& s = steps_[i];
      OpProfile p;
      if (s.op < 0) {
        p.name = s.outputs[0]->name();
        p.type = "Copy";
        p.backend = s.backend->name();
        p.bytes = 2.0 * static_cast<double>(s.outputs[0]->byteSize());
      } else {
        const GraphOp& o = graph_->ops[static_cast<size_t>(s.op)];
        p.name = o.name;
        p.type = o.typeName();
        p.backend = s.backend->name();
        const OpCost cost = EstimateOpCost(o, s.inputs, s.outputs);
        p.flops = cost.flops;
        p.bytes = cost.bytes;
      }
      p.ms = wall[i];
      if (s.exec && s.backend->opTime(s.exec, &p.ms)) p.device_timer = true;
      profile_result_.push_back(std::move(p));
    }
  }
  return status.WithContext(status.ok() ? "" : model_->name());
}

Status SessionImpl::bindState(const std::string& output, const std::string& input) {
  Tensor* out = this->output(output);
  Tensor* in = this->input(input);
  if (output.empty() || !out) return NotFound("bindState: '%s' is not an output of the model", output.c_str());
  if (input.empty() || !in) return NotFound("bindState: '%s' is not an input of the model", input.c_str());
  if (out->dtype() != in->dtype())
    return InvalidArgument("bindState: output '%s' is %s, input '%s' is %s", output.c_str(),
                           DataTypeName(out->dtype()), input.c_str(), DataTypeName(in->dtype()));
  if (isShapeInput(in))
    return InvalidArgument("bindState: input '%s' decides shapes at resize; a state must not", input.c_str());
  for (auto& [o, i] : state_)
    if (i == in) return InvalidArgument("bindState: input '%s' is already bound to '%s'", input.c_str(), o->name().c_str());
  state_.emplace_back(out, in);
  return Status::Ok();
}

Status SessionImpl::resetState() {
  if (!resized_) KILN_RETURN_IF_ERROR(resize());
  for (auto& [out, in] : state_) {
    auto zeros = Tensor::create(in->shape(), in->dtype());
    std::memset(zeros->hostData(), 0, zeros->byteSize());
    KILN_RETURN_IF_ERROR(in->copyFromHostTensor(*zeros), "resetState '%s'", in->name().c_str());
  }
  return Status::Ok();
}

// After a run: each bound output into its input. Same backend: the
// backend's own copy (no trip through the host where it has one).
Status SessionImpl::carryState() {
  for (auto& [out, in] : state_) {
    if (out->shape() != in->shape())
      return InvalidArgument("state: output '%s' is %s but input '%s' is %s", out->name().c_str(),
                             ShapeToString(out->shape()).c_str(), in->name().c_str(),
                             ShapeToString(in->shape()).c_str());
    if (out->onHost() && in->onHost()) {
      if (out->byteSize()) std::memmove(in->hostData(), out->hostData(), out->byteSize());
      continue;
    }
    if (out->backend() && out->backend() == in->backend()) {
      Status s = out->backend()->onCopyWithin(*out, in);
      if (s.ok()) continue;
      if (s.code() != StatusCode::kUnsupported) return s;
    }
    KILN_ASSIGN_OR_RETURN(auto staged, Tensor::createHostTensorFromDevice(*out, true));
    KILN_RETURN_IF_ERROR(in->copyFromHostTensor(*staged), "state '%s'", in->name().c_str());
  }
  return Status::Ok();
}

std::vector<MemoryUse> SessionImpl::memory() const {
  std::vector<MemoryUse> out;
  for (auto& b : backends_) {
    MemoryReport r = b->memoryReport();
    out.push_back({b->name(), r.planned_bytes, r.lower_bound_bytes, r.tensor_bytes, r.constant_bytes,
                   r.packed_tensors});
  }
  return out;
}

}  // namespace kiln
