#include "kiln/interpreter.h"

#include <cstdio>
#include <cstdlib>

#include <algorithm>

#include "alloc_guard.h"
#include "graph.h"
#include "gemm.h"
#include "kiln/net_builder.h"
#include "mapped_file.h"
#include "model.h"
#include "session_impl.h"

namespace kiln {

Interpreter::Interpreter(std::shared_ptr<Model> model, std::string weights_dir)
    : model_(std::move(model)),
      graph_(std::make_shared<Graph>(Graph::Build(*model_))),
      name_(model_->name()),
      weights_dir_(std::move(weights_dir)) {}
Interpreter::~Interpreter() = default;

namespace {

// The net an Interpreter shows after releaseModel(): no tensors, no ops.
const fb::Net& EmptyNet() {
  static const std::vector<uint8_t> bytes = [] {
    flatbuffers::FlatBufferBuilder b;
    b.Finish(fb::CreateNet(b));
    return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  }();
  return *flatbuffers::GetRoot<fb::Net>(bytes.data());
}

}  // namespace

Status NotOurs(const char* call) {
  return InvalidArgument("%s: the session is not a live session of this Interpreter (released, null, or created by "
                         "another Interpreter)", call);
}

const fb::Net& Interpreter::net() const { return model_ ? model_->net() : EmptyNet(); }
const std::string& Interpreter::modelName() const { return name_; }

bool Interpreter::owns(const Session* session) const {
  if (!session) return false;
  for (const auto& s : sessions_)
    if (s.get() == session) return true;
  return false;
}

StatusOr<Session*> Interpreter::createSession(const ScheduleConfig& config) {
  return createMultiPathSession({config});
}

StatusOr<Session*> Interpreter::createMultiPathSession(const std::vector<ScheduleConfig>& configs) {
  return GuardAlloc("createSession", [&] { return createSessionUnguarded(configs); });
}

StatusOr<Session*> Interpreter::createSessionUnguarded(const std::vector<ScheduleConfig>& configs) {
  if (!model_) return InvalidArgument("createSession after releaseModel()");
  KILN_ASSIGN_OR_RETURN(auto impl, SessionImpl::Create(model_, graph_, configs));
  std::unique_ptr<Session> session(new Session(std::move(impl)));
  // Resize now when every input shape is known; otherwise the app calls
  // resizeTensor + resizeSession first.
  bool static_inputs = true;
  for (int t : graph_->inputs) {
    const GraphTensor& gt = graph_->tensors[static_cast<size_t>(t)];
    static_inputs = static_inputs && gt.has_shape &&
                    std::all_of(gt.dims.begin(), gt.dims.end(), [](int64_t d) { return d >= 0; });
  }
  // Shape inputs must be written by the app before the first resize.
  if (static_inputs && !session->impl_->hasShapeInputs()) KILN_RETURN_IF_ERROR(session->resize());
  sessions_.push_back(std::move(session));
  return sessions_.back().get();
}

Status Interpreter::releaseSession(Session* session) {
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
    if (it->get() == session) {
      sessions_.erase(it);
      return Status::Ok();
    }
  return NotOurs("releaseSession");
}

Tensor* Interpreter::getSessionInput(Session* s, const std::string& name) {
  return owns(s) ? s->getInput(name) : nullptr;
}
Tensor* Interpreter::getSessionOutput(Session* s, const std::string& name) {
  return owns(s) ? s->getOutput(name) : nullptr;
}
std::map<std::string, Tensor*> Interpreter::getSessionInputAll(Session* s) {
  return owns(s) ? s->getInputAll() : std::map<std::string, Tensor*>{};
}
std::map<std::string, Tensor*> Interpreter::getSessionOutputAll(Session* s) {
  return owns(s) ? s->getOutputAll() : std::map<std::string, Tensor*>{};
}

Status Interpreter::resizeTensor(Tensor* tensor, const std::vector<int64_t>& shape) {
  for (auto& s : sessions_)
    for (auto& [name, t] : s->getInputAll())
      if (t == tensor) return s->resizeTensor(tensor, shape);
  return InvalidArgument("resizeTensor: not an input tensor of a session of this interpreter");
}

Status Interpreter::resizeSession(Session* s) { return owns(s) ? s->resize() : NotOurs("resizeSession"); }
Status Interpreter::runSession(Session* s) { return owns(s) ? s->run() : NotOurs("runSession"); }
Status Interpreter::runSessionWithCallBack(Session* s, const TensorCallBack& before, const TensorCallBack& after) {
  return owns(s) ? s->runWithCallBack(before, after) : NotOurs("runSessionWithCallBack");
}

namespace {

// The model's net re-serialized, with `values` (net tensor -> new bytes)
// inline, and every external weight inline too when `inline_external`.
StatusOr<std::vector<uint8_t>> WriteNet(const Model& model, const std::map<int, ConstantView>& values,
                                        bool inline_external) {
  std::unique_ptr<fb::NetT> net(model.net().UnPack());
  auto put = [](fb::TensorT& t, ConstantView v) {
    t.data.assign(v.data, v.data + v.size);
    t.external.reset();
    t.is_constant = true;
  };
  for (size_t i = 0; i < net->tensors.size(); ++i) {
    fb::TensorT& t = *net->tensors[i];
    auto v = values.find(static_cast<int>(i));
    if (v != values.end()) put(t, v->second);
    else if (inline_external && t.external) put(t, model.constant(static_cast<int>(i)));
  }
  for (size_t s = 0; inline_external && s < net->subgraphs.size(); ++s)
    for (size_t i = 0; i < net->subgraphs[s]->tensors.size(); ++i)
      if (net->subgraphs[s]->tensors[i]->external)
        put(*net->subgraphs[s]->tensors[i], model.constant(static_cast<int>(s), static_cast<int>(i)));
  NetBuilder b(net->name);
  b.net() = std::move(*net);
  return b.finish();
}

}  // namespace

Status Interpreter::updateSessionToModel(Session* session) {
  if (!owns(session)) return NotOurs("updateSessionToModel");
  if (!model_) return InvalidArgument("updateSessionToModel after releaseModel(): there is no model to write into");
  const auto& changed = session->impl_->changedWeights();
  if (changed.empty()) return Status::Ok();
  return GuardAlloc("updateSessionToModel", [&]() -> Status {
    std::map<int, ConstantView> values;
    for (const auto& [t, bytes] : changed) values[t] = ConstantView{bytes->data(), bytes->size()};
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, WriteNet(*model_, values, false), "updateSessionToModel");
    KILN_ASSIGN_OR_RETURN(auto region, ByteRegion::Copy(bytes.data(), bytes.size()), "updateSessionToModel");
    KILN_ASSIGN_OR_RETURN(auto model, Model::Load(std::move(region), name_, weights_dir_), "updateSessionToModel");
    auto graph = std::make_shared<Graph>(Graph::Build(*model));
    model_ = std::move(model);
    graph_ = std::move(graph);
    return Status::Ok();
  });
}


Status Interpreter::saveBundle(Session* session, const std::string& path) const {
  if (!owns(session)) return NotOurs("saveBundle");
  if (!model_) return InvalidArgument("saveBundle after releaseModel(): there is no model to write");
  return writeBundle(*session->impl_, path, 0);
}

Status Interpreter::writeBundle(const SessionImpl& impl, const std::string& path, uint64_t stamp) const {
  if (!impl.resized()) return InvalidArgument("saveBundle: resize the session first (its shapes decide the packing)");
  return GuardAlloc("saveBundle", [&]() -> Status {
    // The model with every weight inline (as saveModel), ...
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> base, WriteNet(*model_, {}, true), "saveBundle");
    std::unique_ptr<fb::NetT> net(flatbuffers::GetSizePrefixedRoot<fb::Net>(base.data())->UnPack());
    for (int t : net->inputs) {  // ... the session's shapes, so that a session of the bundle resizes at creation
      const Tensor* in = impl.tensorAt(t);
      if (!in) continue;
      auto& dims = net->tensors[static_cast<size_t>(t)]->shape;
      dims.clear();
      for (int64_t d : in->shape()) {
        auto dim = std::make_unique<fb::DimT>();
        dim->size = d;
        dims.push_back(std::move(dim));
      }
    }
    auto bundle = std::make_unique<fb::BundleT>();
    bundle->backend = "host";
    if (Backend* device = impl.deviceBackend()) {  // a GPU session: its driver state, for this device only
      KILN_ASSIGN_OR_RETURN(bundle->device_cache, device->exportCache(), "saveBundle");
      bundle->backend = device->name();
      bundle->device = device->cacheIdentity();
    }
    bundle->isa = GemmIsaName(GemmBestIsa());
    bundle->threads = impl.threads();
    bundle->stamp = stamp;
    for (auto& [op, p] : impl.prepacked()) {
      auto blob = std::make_unique<fb::PrepackedBlobT>();
      blob->op = op;
      blob->key = p.key;
      blob->meta = p.meta;
      const uint8_t* b = static_cast<const uint8_t*>(p.data);
      blob->data.assign(b, b + p.bytes);
      bundle->blobs.push_back(std::move(blob));
    }
    net->bundle = std::move(bundle);
    NetBuilder b(net->name);
    b.net() = std::move(*net);
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, b.finish(), "saveBundle");
    return WriteFileAtomically(path, bytes.data(), bytes.size(), "saveBundle");
  });
}

Status Interpreter::saveModel(const std::string& path) const {
  if (!model_) return InvalidArgument("saveModel after releaseModel(): there is no model to write");
  return GuardAlloc("saveModel", [&]() -> Status {
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, WriteNet(*model_, {}, true), "saveModel");
    return WriteFileAtomically(path, bytes.data(), bytes.size(), "saveModel");
  });
}

void Interpreter::releaseModel() {
  model_.reset();
  graph_.reset();
}

void Interpreter::releaseCache() {
  for (auto& s : sessions_) s->releaseCache();
}

StatusOr<std::unique_ptr<Interpreter>> Interpreter::createFromFile(const std::string& path,
                                                                   const LoadOptions& options) {
  std::string name = options.display_name.empty() ? path : options.display_name;
  std::string dir = options.weights_dir;
  if (dir.empty()) {
    size_t slash = path.rfind('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  }
  auto bytes = ByteRegion::MapFile(path);
  if (!bytes.ok()) return bytes.status();
  KILN_ASSIGN_OR_RETURN(auto model, Model::Load(std::move(bytes).value(), name, dir));
  if (model->net().bundle()) model->bytes().populate();  // its packed weights are read in place
  return std::unique_ptr<Interpreter>(new Interpreter(std::shared_ptr<Model>(std::move(model)), dir));
}

StatusOr<std::unique_ptr<Interpreter>> Interpreter::createFromBuffer(const void* data, size_t size,
                                                                     BufferOwnership ownership,
                                                                     const LoadOptions& options,
                                                                     std::function<void(const void*)> release) {
  std::string name = options.display_name.empty() ? "<buffer>" : options.display_name;
  std::shared_ptr<ByteRegion> region;
  if (ownership == BufferOwnership::kAdopt) {
    if (!release) release = [](const void* p) { std::free(const_cast<void*>(p)); };
    region = ByteRegion::Adopt(data, size, std::move(release));
    // Constant data must sit 64-byte aligned in memory; copy when it cannot.
    if (reinterpret_cast<uintptr_t>(data) % kDataAlignment != 0) {
      KILN_ASSIGN_OR_RETURN(region, ByteRegion::Copy(data, size), "%s", name.c_str());
    }
  } else {
    if (!data && size) return InvalidArgument("%s: null data with size %zu", name.c_str(), size);
    KILN_ASSIGN_OR_RETURN(region, ByteRegion::Copy(data, size), "%s", name.c_str());
  }
  KILN_ASSIGN_OR_RETURN(auto model, Model::Load(std::move(region), name, options.weights_dir));
  return std::unique_ptr<Interpreter>(new Interpreter(std::shared_ptr<Model>(std::move(model)), options.weights_dir));
}

}  // namespace kiln
