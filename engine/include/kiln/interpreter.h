// Interpreter: owns one loaded model and creates sessions over it (MNN's
// vocabulary: createFromFile / createFromBuffer, then sessions).
//
// Loading maps the file read-only (weights are used in place, never copied)
// and verifies it completely before returning: the FlatBuffers structure,
// then every index, size, params table and constant range. A malformed file
// gives a Status naming the file, the op or tensor, and the problem; it never
// crashes or reads out of bounds.
//
// Thread-safety: an Interpreter's const methods may be called from several
// threads; different Interpreters are fully independent.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <vector>

#include "kiln/types.h"
#include "kiln/session.h"
#include "kiln/status.h"

namespace kiln {

class Model;
class Graph;

// What createFromBuffer does with the caller's bytes.
enum class BufferOwnership {
  kCopy,   // copy them; the caller keeps its buffer
  kAdopt,  // take them: `release` (default std::free) is called when the
           // interpreter no longer needs them, also when loading fails
};

struct LoadOptions {
  // Directory where external weights files are looked up. Defaults to the
  // model file's directory; a buffer-loaded model with external weights
  // needs it set.
  std::string weights_dir;
  // Name used in error messages; defaults to the file path or "<buffer>".
  std::string display_name;
};

class Interpreter {
 public:
  static StatusOr<std::unique_ptr<Interpreter>> createFromFile(const std::string& path,
                                                               const LoadOptions& options = {});
  static StatusOr<std::unique_ptr<Interpreter>> createFromBuffer(
      const void* data, size_t size, BufferOwnership ownership = BufferOwnership::kCopy,
      const LoadOptions& options = {}, std::function<void(const void*)> release = nullptr);
  ~Interpreter();

  // The verified model; after releaseModel(), an empty net (no tensors, no
  // ops). The reference is valid until releaseModel() or the Interpreter dies.
  const fb::Net& net() const;
  // The model's name (file path or LoadOptions::display_name); kept after
  // releaseModel().
  const std::string& modelName() const;
  // The internal model (for tools and the engine).
  const Model& model() const { return *model_; }

  // ---- sessions (owned by the Interpreter; valid until releaseSession) ----
  // The contract on handles:
  //   * Every method here that takes a Session* checks it is a live session
  //     of this Interpreter: a released one, a null one or another
  //     Interpreter's gives an InvalidArgument status (getSession* give
  //     nullptr or an empty map). Calling Session's own methods through a
  //     released pointer is not detected: go through the Interpreter.
  //   * Tensor* from a session are valid until that session is released or
  //     the Interpreter is destroyed, which releases all its sessions.
  //   * Sessions keep the model bytes they read alive: releaseModel() does
  //     not invalidate them.
  // Places every op (see ScheduleConfig) and resizes with the model's input
  // shapes when they are all static.
  StatusOr<Session*> createSession(const ScheduleConfig& config);
  // One session over several configs, each covering the part of the graph
  // its `path` names (the first config that covers an op places it).
  StatusOr<Session*> createMultiPathSession(const std::vector<ScheduleConfig>& configs);
  Status releaseSession(Session* session);

  Tensor* getSessionInput(Session* session, const std::string& name = "");
  Tensor* getSessionOutput(Session* session, const std::string& name = "");
  std::map<std::string, Tensor*> getSessionInputAll(Session* session);
  std::map<std::string, Tensor*> getSessionOutputAll(Session* session);
  Status resizeTensor(Tensor* tensor, const std::vector<int64_t>& shape);
  Status resizeSession(Session* session);
  Status runSession(Session* session);
  Status runSessionWithCallBack(Session* session, const TensorCallBack& before, const TensorCallBack& after);

  // ---- weights written back (MNN's updateSessionToModel) ----
  // Writes the weights `session` changed (Session::setWeight) into the
  // Interpreter's model: the model becomes a new in-memory one with those
  // values inline, which net(), saveModel() and sessions created from now
  // on see. Existing sessions keep theirs (each has its own weights).
  // Nothing changed: nothing happens. After releaseModel(): an error
  // (there is no model to write into).
  Status updateSessionToModel(Session* session);
  // Writes the Interpreter's model (with what updateSessionToModel wrote)
  // to `path` as a self-contained .kiln: weights that lived in external
  // files are written inline. After releaseModel(): an error.
  Status saveModel(const std::string& path) const;
  // An ahead-of-time bundle (kiln-compile): the model, its inputs fixed at
  // `session`'s current shapes, and what the session's host ops computed at
  // creation and resize (packed GEMM panels, Winograd filters), each with
  // what it was made for. createFromFile loads a bundle like a model; a
  // host session of it takes those forms in place from the file's mapping
  // when they were made for this CPU's GEMM and the op's sizes, and packs
  // the rest as usual (Session::placement().bundle says how much served).
  // A GPU session's bundle also carries its driver state (Vulkan: the
  // pipeline cache; OpenCL: program binaries, read after the session's runs
  // so that kernels a driver compiles at first enqueue are in them, and
  // tuned work-group sizes) with the device and driver it was made on; a
  // session of that backend on the same device and driver starts from it,
  // any other compiles as usual and placement().bundle says why. Run the
  // session once before saving to catch the drivers' lazy compiles.
  // The session must be resized.
  Status saveBundle(Session* session, const std::string& path) const;
  // A host module of `session` (kiln-compile --emit-module; kiln/module.h):
  // writes STEM.kbundle (the weights: the session's bundle, stamped so that
  // the module runs on it only), STEM.h and STEM.cpp (generated C++: the
  // memory plan and one libkiln kernel call per op). Compiling STEM.cpp
  // into STEM.so is the caller's (kiln-compile does it). The session must be
  // resized and on the host alone; control flow, sequences and inputs that
  // decide shapes are refused.
  Status saveModule(Session* session, const std::string& stem) const;

  // Drops the Interpreter's hold on the model bytes: no new session can be
  // created; existing sessions keep what they use (the host reads weights in
  // place, so the bytes are freed when the last such session is released).
  // A model written by updateSessionToModel is dropped the same way;
  // sessions keep the weights they were given with setWeight.
  void releaseModel();
  // Releases resize-time caches of every session.
  void releaseCache();

 private:
  Interpreter(std::shared_ptr<Model> model, std::string weights_dir);
  bool owns(const Session* session) const;
  StatusOr<Session*> createSessionUnguarded(const std::vector<ScheduleConfig>& configs);
  Status writeBundle(const SessionImpl& impl, const std::string& path, uint64_t stamp) const;
  std::shared_ptr<Model> model_;
  std::shared_ptr<const Graph> graph_;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::string name_;
  std::string weights_dir_;  // where the model's external weights files are
};

}  // namespace kiln
