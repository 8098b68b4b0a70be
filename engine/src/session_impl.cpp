#include "session_impl.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "control_flow.h"
#include "host_backend.h"
#include "log.h"
#include "ops/op_defs.h"
#include "ops/shape_inference.h"

namespace kiln {

size_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return SIZE_MAX;
  size_t bytes;
  return __builtin_mul_overflow(static_cast<size_t>(pages), static_cast<size_t>(page), &bytes) ? SIZE_MAX : bytes;
}

bool MayRunInPlace(fb::OpType t) {
  const OpDef* def = FindOpDef(t);
  return def && def->in_place;
}

BackendFactory DefaultBackendFactory() {
  return [](ForwardType type, const ScheduleConfig& config) -> StatusOr<std::unique_ptr<Backend>> {
    switch (type) {
      case ForwardType::kHost: return CreateHostBackend(config);
      case ForwardType::kVulkan: return CreateVulkanBackend(config);
      case ForwardType::kOpenCL: return CreateOpenCLBackend(config);
      case ForwardType::kAuto: break;
    }
    return InvalidArgument("kAuto is not a backend");
  };
}

namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

SessionImpl::~SessionImpl() = default;

StatusOr<std::unique_ptr<SessionImpl>> SessionImpl::Create(std::shared_ptr<const Model> model,
                                                           std::shared_ptr<const Graph> graph,
                                                           const std::vector<ScheduleConfig>& configs,
                                                           const BackendFactory& factory) {
  if (configs.empty()) return InvalidArgument("createSession: no ScheduleConfig");
  std::unique_ptr<SessionImpl> s(new SessionImpl());
  s->model_ = std::move(model);
  s->graph_ = std::move(graph);
  const Graph& g = *s->graph_;
  s->tensors_.resize(g.tensors.size());
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    s->tensors_[i] = std::make_unique<Tensor>();
    s->tensors_[i]->setName(g.tensors[i].name);
    s->tensors_[i]->setDtype(g.tensors[i].dtype);
    if (g.tensors[i].is_optional)
      s->tensors_[i]->markOptional();
    else if (g.tensors[i].is_sequence)
      s->tensors_[i]->markSequence();
    s->graph_index_[s->tensors_[i].get()] = i;
  }
  for (const ScheduleConfig& c : configs) {
    s->keep_all_ = s->keep_all_ || c.keepAllTensors;
    s->profile_ = s->profile_ || c.profile;
  }
  s->configs_ = configs;
  s->factory_ = factory;
  KILN_RETURN_IF_ERROR(s->createControlFlow(), "%s", s->model_->name().c_str());
  KILN_RETURN_IF_ERROR(s->markResizeOps(), "%s", s->model_->name().c_str());
  const auto t0 = std::chrono::steady_clock::now();
  KILN_RETURN_IF_ERROR(s->schedule(configs, factory), "%s", s->model_->name().c_str());
  s->noteBundle();
  SessionPhases& ph = s->phases_;
  ph.schedule = MsSince(t0) - ph.backends - ph.pack - ph.pipelines;
  KILN_RETURN_IF_ERROR(s->buildSteps(), "%s", s->model_->name().c_str());
  return s;
}

std::vector<std::pair<int, Execution::Prepacked>> SessionImpl::prepacked() const {
  std::vector<std::pair<int, Execution::Prepacked>> all;
  std::vector<Execution::Prepacked> one;
  for (size_t i = 0; i < execs_.size(); ++i) {
    if (!execs_[i] || execs_[i]->backend() != host_) continue;
    one.clear();
    execs_[i]->prepacked(&one);
    for (auto& p : one) all.emplace_back(static_cast<int>(i), std::move(p));
  }
  return all;
}

Backend* SessionImpl::deviceBackend() const {
  for (const auto& b : backends_)
    if (b.get() != host_) return b.get();
  return nullptr;
}

void SessionImpl::addSetup(const Backend* b, double ms) {
  (b == static_cast<const Backend*>(host_) ? phases_.pack : phases_.pipelines) += ms;
}

std::string SessionImpl::where(int op) const {
  const GraphOp& o = graph_->ops[static_cast<size_t>(op)];
  return StrFormat("op %d '%s' (%s)", op, o.name.c_str(), o.typeName());
}

Status SessionImpl::createControlFlow() {
  const Graph& g = *graph_;
  control_.resize(g.ops.size());
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const fb::OpType t = g.ops[i].type;
    if (t != fb::OpType::If && t != fb::OpType::Loop && t != fb::OpType::Scan) continue;
    KILN_ASSIGN_OR_RETURN(control_[i], ControlFlow::Create(g.ops[i], model_, configs_, factory_), "%s",
                          where(static_cast<int>(i)).c_str());
  }
  return Status::Ok();
}

std::map<std::string, std::string> SessionImpl::devices() const {
  std::map<std::string, std::string> d;
  for (auto& b : backends_) d[b->name()] = b->deviceName();
  for (const auto& cf : control_)
    if (cf)
      for (auto& [name, dev] : cf->devices()) d.emplace(name, dev);
  return d;
}

std::string SessionImpl::describePlacement() const {
  std::string s = StrFormat("%zu ops", placement_.ops.size());
  const char* sep = ": ";
  for (const auto& [backend, n] : placement_.ops_per_backend) {
    s += StrFormat("%s%s %d", sep, backend.c_str(), n);
    sep = ", ";
  }
  return s;
}

// Ops whose outputs depend on their input's shape (and dtype), never on its
// values.
static bool ReadsOnlyShape(fb::OpType t) {
  return t == fb::OpType::Shape || t == fb::OpType::Size || t == fb::OpType::EyeLike;
}

// An op is computed at resize when its outputs feed a "value input" (the
// shape of Reshape, the starts of Slice, ...), directly or through other such
// ops. Shape reads only its input's shape, so the walk stops there. Ops that
// read only constants are computed at resize as well.
Status SessionImpl::markResizeOps() {
  const Graph& g = *graph_;
  resize_op_.assign(g.ops.size(), false);
  resize_value_.assign(g.tensors.size(), false);
  std::vector<int> work;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    for (size_t k = 0; k < g.ops[i].inputs.size(); ++k)
      if (isValueInput(i, k)) work.push_back(g.ops[i].inputs[k]);
    // Control flow whose outputs are known only once it ran: computed at
    // resize, and so is everything it reads.
    if (control_[i] && control_[i]->computedAtResize())
      for (int o : g.ops[i].outputs) work.push_back(o);
  }
  while (!work.empty()) {
    int t = work.back();
    work.pop_back();
    if (t < 0 || resize_value_[static_cast<size_t>(t)]) continue;
    const GraphTensor& gt = g.tensors[static_cast<size_t>(t)];
    if (gt.isConstant()) continue;
    resize_value_[static_cast<size_t>(t)] = true;
    if (gt.producer < 0) {
      if (gt.is_input) value_inputs_from_graph_.push_back(t);
      continue;
    }
    const GraphOp& p = g.ops[static_cast<size_t>(gt.producer)];
    resize_op_[static_cast<size_t>(gt.producer)] = true;
    for (int o : p.outputs) resize_value_[static_cast<size_t>(o)] = true;
    if (ReadsOnlyShape(p.type)) continue;
    for (int in : p.inputs) work.push_back(in);
  }
  // Shape, Size and EyeLike read only their input's shape, fixed at resize:
  // always computed then, also when their output is a graph output.
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (!ReadsOnlyShape(g.ops[i].type)) continue;
    resize_op_[i] = true;
    for (int o : g.ops[i].outputs) resize_value_[static_cast<size_t>(o)] = true;
  }
  // Constant subgraphs (every input a constant or a resize value), such as
  // the Cast that widens f16-stored weights, are computed once at resize too.
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const GraphOp& op = g.ops[i];
    if (resize_op_[i] || op.type == fb::OpType::Constant || op.type == fb::OpType::Custom || op.inputs.empty())
      continue;
    bool all_known = true;
    for (int in : op.inputs)
      if (in >= 0 && !g.tensors[static_cast<size_t>(in)].isConstant() && !resize_value_[static_cast<size_t>(in)])
        all_known = false;
    if (!all_known) continue;
    resize_op_[i] = true;
    for (int o : op.outputs) resize_value_[static_cast<size_t>(o)] = true;
  }
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (!control_[i]) continue;
    std::vector<bool> known;
    for (int in : g.ops[i].inputs)
      known.push_back(in >= 0 && (g.tensors[static_cast<size_t>(in)].isConstant() || resize_value_[static_cast<size_t>(in)]));
    control_[i]->setValueInputs(std::move(known));
  }
  return Status::Ok();
}

bool SessionImpl::isValueInput(size_t op, size_t k) const {
  const GraphOp& o = graph_->ops[op];
  if (!control_[op]) return (FindShapeDef(o.type).value_inputs >> k) & 1;
  const ControlFlow& cf = *control_[op];
  return cf.needsValue(k) || (cf.prefersValue(k) && o.inputs[k] >= 0 && isConfigurationValue(o.inputs[k]));
}

bool SessionImpl::isConfigurationValue(int t) const {
  const Graph& g = *graph_;
  std::vector<int> work{t};
  std::set<int> seen;
  while (!work.empty()) {
    const int x = work.back();
    work.pop_back();
    if (x < 0 || !seen.insert(x).second) continue;
    if (seen.size() > 256) return false;  // a long chain is not cheap configuration
    const GraphTensor& gt = g.tensors[static_cast<size_t>(x)];
    if (gt.isConstant()) continue;
    const fb::DataType d = gt.dtype;
    if (d == fb::DataType::F32 || d == fb::DataType::F16 || d == fb::DataType::F64 || d == fb::DataType::BF16)
      return false;
    if (gt.producer < 0) continue;
    const GraphOp& p = g.ops[static_cast<size_t>(gt.producer)];
    if (ReadsOnlyShape(p.type)) continue;
    for (int in : p.inputs) work.push_back(in);
  }
  return true;
}

void SessionImpl::seedFromBundle(Backend* backend) {
  const fb::Bundle* bundle = graph_->subgraph < 0 ? model_->net().bundle() : nullptr;
  if (!bundle || std::string(backend->name()) == "host") return;  // (host_ is not set yet when the host is made)
  const std::string made_for = bundle->backend() ? bundle->backend()->str() : "";
  if (made_for != backend->name()) {
    bundle_device_note_ = StrFormat("made for the %s backend: no %s state in it", made_for.c_str(), backend->name());
    return;
  }
  const std::string device = bundle->device() ? bundle->device()->str() : "";
  const std::string here = backend->cacheIdentity();
  if (!bundle->device_cache() || device.empty()) {
    bundle_device_note_ = StrFormat("no %s state in it", backend->name());
  } else if (device != here) {
    bundle_device_note_ = StrFormat("%s state not used: made for '%s', this is '%s'; compiling", backend->name(),
                                    device.c_str(), here.c_str());
  } else {
    auto took = backend->importCache(bundle->device_cache()->data(), bundle->device_cache()->size());
    bundle_device_note_ = took.ok() ? StrFormat("%s: %s taken from it", backend->name(), took->c_str())
                                    : StrFormat("%s state not used: %s", backend->name(), took.status().message().c_str());
  }
}

void SessionImpl::noteBundle() {
  std::string s = bundle_device_note_;
  if (!bundle_host_note_.empty()) s += (s.empty() ? "" : "; ") + bundle_host_note_;
  placement_.bundle = s;
}

Status SessionImpl::schedule(const std::vector<ScheduleConfig>& configs, const BackendFactory& factory) {
  const Graph& g = *graph_;
  int threads = 1;
  for (const ScheduleConfig& c : configs) {
    if (c.numThread < 1 || c.numThread > kMaxThreads)
      return InvalidArgument("numThread %d: must be 1 to %d", c.numThread, kMaxThreads);
    threads = std::max(threads, c.numThread);
  }

  // One backend object per forward type; the host is always there.
  std::map<ForwardType, Backend*> by_type;
  std::map<ForwardType, std::string> unavailable;  // why a backend could not be created
  auto get = [&](ForwardType t, std::string* why) -> Backend* {
    auto it = by_type.find(t);
    if (it != by_type.end()) {
      if (!it->second) *why = unavailable[t];
      return it->second;
    }
    // Device settings come from the first config that names this type (or
    // the first config).
    ScheduleConfig c = configs[0];
    for (const ScheduleConfig& k : configs)
      if (k.type == t) {
        c = k;
        break;
      }
    c.numThread = threads;
    const auto t0 = std::chrono::steady_clock::now();
    auto b = factory(t, c);
    phases_.backends += MsSince(t0);
    if (!b.ok()) {
      *why = unavailable[t] = b.status().message();
      by_type[t] = nullptr;
      return nullptr;
    }
    backends_.push_back(std::move(b).value());
    Backend* backend = backends_.back().get();
    seedFromBundle(backend);
    backend->setMemoryLimit(c.maxSessionBytes ? c.maxSessionBytes : backend->totalMemoryBytes());
    tensor_limit_[backend] = c.maxTensorBytes ? c.maxTensorBytes : backend->maxBufferBytes();
    by_type[t] = backend;
    return backend;
  };
  std::string why;
  host_ = static_cast<HostBackend*>(get(ForwardType::kHost, &why));
  if (!host_) return Internal("no host backend: %s", why.c_str());
  host_->setNoReuse(keep_all_);

  // Which config covers each op: the first whose path contains it.
  std::vector<int> op_config(g.ops.size(), -1);
  std::map<std::string, int> tensor_by_name;
  for (size_t i = 0; i < g.tensors.size(); ++i) tensor_by_name.emplace(g.tensors[i].name, static_cast<int>(i));
  for (size_t c = 0; c < configs.size(); ++c) {
    const auto& path = configs[c].path;
    std::vector<bool> in_path(g.ops.size(), path.outputs.empty());
    if (!path.outputs.empty()) {
      std::set<int> stop;
      for (const std::string& n : path.inputs) {
        auto it = tensor_by_name.find(n);
        if (it == tensor_by_name.end()) return NotFound("path input '%s' is not a tensor of the model", n.c_str());
        stop.insert(it->second);
      }
      std::vector<int> work;
      for (const std::string& n : path.outputs) {
        auto it = tensor_by_name.find(n);
        if (it == tensor_by_name.end()) return NotFound("path output '%s' is not a tensor of the model", n.c_str());
        work.push_back(it->second);
      }
      while (!work.empty()) {
        int t = work.back();
        work.pop_back();
        if (t < 0 || stop.count(t)) continue;
        int p = g.tensors[static_cast<size_t>(t)].producer;
        if (p < 0 || in_path[static_cast<size_t>(p)]) continue;
        in_path[static_cast<size_t>(p)] = true;
        for (int in : g.ops[static_cast<size_t>(p)].inputs) work.push_back(in);
      }
    }
    for (size_t i = 0; i < g.ops.size(); ++i)
      if (in_path[i] && op_config[i] < 0) op_config[i] = static_cast<int>(c);
  }

  op_backend_.assign(g.ops.size(), -1);
  execs_.resize(g.ops.size());
  placement_ = Placement();
  // An ahead-of-time bundle (kiln-compile): its prepacked forms go to the
  // host ops when they were packed for this CPU's GEMM (the ops then check
  // each was made for their sizes); a GPU backend took the bundle's driver
  // state when it was created (seedFromBundle).
  if (const fb::Bundle* bundle = graph_->subgraph < 0 ? model_->net().bundle() : nullptr)
    bundle_host_note_ = host_->setBundle(bundle);
  int fallbacks = 0;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const GraphOp& op = g.ops[i];
    OpPlacement pl{op.name, op.typeName(), "", "", ""};
    std::vector<ForwardType> order;
    bool touches_sequence = false;
    auto container = [&](int t) {
      return t >= 0 && (g.tensors[static_cast<size_t>(t)].is_sequence || g.tensors[static_cast<size_t>(t)].is_optional);
    };
    for (int t : op.inputs) touches_sequence = touches_sequence || container(t);
    for (int t : op.outputs) touches_sequence = touches_sequence || container(t);
    if (resize_op_[i] || op.type == fb::OpType::Constant || touches_sequence) {
      // Shape computations run on the host at resize; constants never run;
      // sequences live on the host.
      order = {ForwardType::kHost};
    } else if (op_config[i] < 0) {
      order = {configs[0].type, configs[0].backupType, ForwardType::kHost};
    } else {
      const ScheduleConfig& c = configs[static_cast<size_t>(op_config[i])];
      if (c.type == ForwardType::kAuto)
        order = {ForwardType::kVulkan, ForwardType::kOpenCL, ForwardType::kHost};
      else
        order = {c.type};
      order.push_back(c.backupType == ForwardType::kAuto ? ForwardType::kHost : c.backupType);
      order.push_back(ForwardType::kHost);
    }
    std::string reasons;
    std::set<Backend*> tried;
    if (control_[i]) {
      // Control flow is driven from the host; its subgraphs' ops run where
      // the configs say, and their fallbacks are this op's.
      order.clear();
      execs_[i] = control_[i]->makeExecution(host_);
      for (size_t k = 0; k < backends_.size(); ++k)
        if (backends_[k].get() == host_) op_backend_[i] = static_cast<int>(k);
      pl.backend = host_->name();
      pl.reason = control_[i]->fallbacks();
      pl.subgraphs = control_[i]->describe();
      if (!pl.reason.empty() && !resize_op_[i]) ++fallbacks;
    }
    for (ForwardType t : order) {
      std::string no;
      Backend* b = get(t, &no);
      if (!b) {
        reasons += (reasons.empty() ? "" : "; ") + std::string(ForwardTypeName(t)) + ": " + no;
        continue;
      }
      if (!tried.insert(b).second) continue;  // listed twice (type, backup, host)
      const auto t0 = std::chrono::steady_clock::now();
      auto exec = b->onCreate(op, g);
      addSetup(b, MsSince(t0));
      if (!exec.ok()) {
        if (exec.status().code() != StatusCode::kUnsupported)
          return exec.status().WithContext(where(static_cast<int>(i)) + " on " + b->name());
        reasons += (reasons.empty() ? "" : "; ") + std::string(b->name()) + ": " + exec.status().message();
        continue;
      }
      execs_[i] = std::move(exec).value();
      for (size_t k = 0; k < backends_.size(); ++k)
        if (backends_[k].get() == b) op_backend_[i] = static_cast<int>(k);
      pl.backend = b->name();
      if (!reasons.empty() && !resize_op_[i]) {
        pl.reason = reasons;
        ++fallbacks;
      }
      break;
    }
    const ForwardType wanted = op_config[i] < 0 ? configs[0].type : configs[static_cast<size_t>(op_config[i])].type;
    if (touches_sequence && wanted != ForwardType::kHost && pl.reason.empty())
      pl.reason = "ONNX sequences and optionals live on the host";
    if (op_backend_[i] < 0)
      return Unsupported("%s: no backend can run it (%s)", where(static_cast<int>(i)).c_str(), reasons.c_str());
    placement_.ops_per_backend[pl.backend]++;
    placement_.ops.push_back(std::move(pl));
  }

  // Homes: an op's outputs live on its backend; graph inputs on the backend
  // of their first consumer; constants on the host.
  home_.assign(g.tensors.size(), host_);
  for (size_t i = 0; i < g.ops.size(); ++i)
    for (int o : g.ops[i].outputs) home_[static_cast<size_t>(o)] = backends_[static_cast<size_t>(op_backend_[i])].get();
  for (int t : g.inputs) {
    const auto& cons = g.tensors[static_cast<size_t>(t)].consumers;
    for (int c : cons)
      if (!resize_op_[static_cast<size_t>(c)]) {
        home_[static_cast<size_t>(t)] = backends_[static_cast<size_t>(op_backend_[static_cast<size_t>(c)])].get();
        break;
      }
  }
  for (int t : value_inputs_from_graph_) {
    home_[static_cast<size_t>(t)] = host_;
    Tensor* tensor = tensors_[static_cast<size_t>(t)].get();
    shape_input_memory_[tensor];  // registered; memory comes with a shape
    const GraphTensor& gt = g.tensors[static_cast<size_t>(t)];
    if (gt.has_shape && std::all_of(gt.dims.begin(), gt.dims.end(), [](int64_t d) { return d >= 0; }))
      bindShapeInput(tensor, gt.dims);
  }
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (resize_op_[i]) continue;
    for (int in : g.ops[i].inputs)
      if (in >= 0 && home_[static_cast<size_t>(in)] != backends_[static_cast<size_t>(op_backend_[i])].get() &&
          !g.tensors[static_cast<size_t>(in)].isConstant() && !resize_value_[static_cast<size_t>(in)])
        ++placement_.switches;
  }
  if (fallbacks > 0) KILN_LOG("%s", placement_.toString().c_str());
  return Status::Ok();
}

void SessionImpl::bindShapeInput(Tensor* t, const std::vector<int64_t>& shape) {
  std::vector<uint8_t>& mem = shape_input_memory_[t];
  t->setShape(shape);
  mem.resize(std::max<size_t>(t->byteSize(), 8));
  t->bind(nullptr, mem.data());
}

Tensor* SessionImpl::mirror(int tensor, Backend* b, bool* created) {
  auto key = std::make_pair(tensor, b);
  auto it = mirrors_.find(key);
  *created = it == mirrors_.end();
  if (!*created) return it->second.get();
  auto m = std::make_unique<Tensor>();
  m->setName(graph_->tensors[static_cast<size_t>(tensor)].name + "@" + b->name());
  m->setDtype(graph_->tensors[static_cast<size_t>(tensor)].dtype);
  Tensor* raw = m.get();
  mirrors_.emplace(key, std::move(m));
  mirror_backend_[raw] = b;
  return raw;
}

Status SessionImpl::buildSteps() {
  const Graph& g = *graph_;
  steps_.clear();
  static_copies_.clear();
  mirror_is_static_.clear();
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (resize_op_[i] || g.ops[i].type == fb::OpType::Constant) continue;
    Backend* b = backends_[static_cast<size_t>(op_backend_[i])].get();
    Step step;
    step.op = static_cast<int>(i);
    step.backend = b;
    step.exec = execs_[i].get();
    for (size_t k = 0; k < g.ops[i].inputs.size(); ++k) {
      const int in = g.ops[i].inputs[k];
      if (in < 0) {
        step.inputs.push_back(nullptr);
        continue;
      }
      Tensor* t = tensors_[static_cast<size_t>(in)].get();
      // Value inputs (Reshape's shape, Slice's starts) are read on the host
      // at onResize by every backend: no mirror.
      const bool value_input = isValueInput(i, k);
      if (home_[static_cast<size_t>(in)] != b && !value_input) {
        bool created;
        Tensor* m = mirror(in, b, &created);
        if (created) {
          if (g.tensors[static_cast<size_t>(in)].isConstant() || resize_value_[static_cast<size_t>(in)]) {
            static_copies_.push_back({t, m});
            mirror_is_static_[m] = true;
          } else {
            Step copy;
            copy.backend = b;
            copy.inputs = {t};
            copy.outputs = {m};
            steps_.push_back(copy);
          }
        }
        t = m;
      }
      step.inputs.push_back(t);
    }
    for (int o : g.ops[i].outputs) step.outputs.push_back(tensors_[static_cast<size_t>(o)].get());
    steps_.push_back(std::move(step));
  }
  return Status::Ok();
}

}  // namespace kiln
