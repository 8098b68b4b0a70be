// SessionImpl: scheduling, shape inference, memory planning and execution
// of one session. See kiln/session.h for the contract and backend.h for the
// order in which backends are driven.
//
// Three kinds of tensor memory:
//   * constants: read in place from the model (zero-copy, read-only);
//   * resize values: outputs of the ops that compute shapes (Shape, and what
//     feeds Reshape's shape, Slice's starts, ...), run on the host at resize
//     into session-owned memory, and constant during run();
//   * planned: everything else, in each backend's pool.
// A tensor read by an op on another backend gets a mirror on that backend:
// copied once at resize for constants and resize values, or by a copy step
// before the op for planned tensors.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "graph.h"
#include "kiln/session.h"
#include "model.h"

namespace kiln {

class HostBackend;
class ControlFlow;

// Ops whose output may take over input 0's memory when input 0 dies there
// (op_defs.inc's InPlace column). Their kernels must tolerate out == in0.
bool MayRunInPlace(fb::OpType type);

// Creates the backend for a forward type (tests substitute their own).
// Every Interpreter call taking a Session* checks that it is a live session
// of that Interpreter first (interpreter.cpp, module_writer.cpp): a released
// session, another Interpreter's or a null one gives this error (or nullptr
// / an empty map), never a use of freed memory.
Status NotOurs(const char* call);

// A host session as a host module bakes it (kiln-compile --emit-module):
// the steps in run order and where each tensor they read or write lives.
struct ModulePlan {
  enum class Where { kArena, kWeights, kValue, kInput, kOutput };
  struct TensorRef {
    Where where = Where::kArena;
    int graph_tensor = -1;
    fb::DataType dtype = fb::DataType::F32;
    std::vector<int64_t> shape;
    uint64_t at = 0;             // arena / weights byte offset; input / output index
    std::vector<uint8_t> value;  // kValue: the bytes computed at resize
  };
  struct StepRef {
    int op = -1;
    std::vector<int> inputs, outputs;  // indices into tensors; -1: an absent optional
  };
  std::vector<TensorRef> tensors;
  std::vector<StepRef> steps;
  // Graph outputs no step writes (a constant, a value, an input, or an
  // output listed twice): (output index, tensor) copied after the steps.
  std::vector<std::pair<int, int>> output_copies;
  size_t arena_bytes = 0;
  int threads = 1;
  Precision precision = Precision::kNormal;
};

using BackendFactory =
    std::function<StatusOr<std::unique_ptr<Backend>>(ForwardType type, const ScheduleConfig& config)>;
BackendFactory DefaultBackendFactory();

class SessionImpl {
 public:
  static StatusOr<std::unique_ptr<SessionImpl>> Create(std::shared_ptr<const Model> model,
                                                       std::shared_ptr<const Graph> graph,
                                                       const std::vector<ScheduleConfig>& configs,
                                                       const BackendFactory& factory = DefaultBackendFactory());
  ~SessionImpl();

  Tensor* input(const std::string& name);
  Tensor* output(const std::string& name);
  std::map<std::string, Tensor*> inputs();
  std::map<std::string, Tensor*> outputs();
  Status resizeTensor(Tensor* input, const std::vector<int64_t>& shape);
  Status resize();
  // resize(), keeping the values the app wrote into the inputs.
  Status resizeKeepingInputs();
  Status run(const TensorCallBack* before, const TensorCallBack* after);
  const Placement& placement() const { return placement_; }
  const std::vector<OpProfile>& profile() const { return profile_result_; }
  std::vector<MemoryUse> memory() const;
  // Every backend's device, the subgraphs' sessions' included.
  std::map<std::string, std::string> devices() const;
  SessionPhases phases() const { return phases_; }
  // Every host op's prepacked forms, by op index (an ahead-of-time bundle's content).
  std::vector<std::pair<int, Execution::Prepacked>> prepacked() const;
  // The session's GPU backend (the first that is not the host), or null.
  Backend* deviceBackend() const;
  // Frees the resize-time values that run() never reads (those only
  // consumed as shapes at resize); the rest stay.
  void releaseCache();
  Status bindState(const std::string& output, const std::string& input);
  Status resetState();
  // Weights (constants of the session's graph): their current value, a new
  // one for this session (the ops reading it are created again, and the
  // next run resizes), and the ones set so far, by graph tensor.
  StatusOr<std::unique_ptr<Tensor>> weight(const std::string& name) const;
  Status setWeight(const std::string& name, const Tensor& value);
  const std::map<int, std::shared_ptr<ByteRegion>>& changedWeights() const { return weights_; }
  bool isResizeOp(int op) const { return resize_op_[static_cast<size_t>(op)]; }
  bool hasShapeInputs() const { return !shape_input_memory_.empty(); }

  // Graph inputs and outputs by position (control flow feeds its children
  // this way: subgraph names need not be unique).
  size_t numInputs() const { return graph_->inputs.size(); }
  size_t numOutputs() const { return graph_->outputs.size(); }
  Tensor* inputAt(size_t k) const { return tensors_[static_cast<size_t>(graph_->inputs[k])].get(); }
  Tensor* outputAt(size_t k) const { return tensors_[static_cast<size_t>(graph_->outputs[k])].get(); }
  // Graph input k's values decide shapes: they must be written before resize.
  bool inputDecidesShape(size_t k) const { return isShapeInput(inputAt(k)); }
  const Graph& graph() const { return *graph_; }
  // The session's tensor for graph tensor t (null when out of range).
  const Tensor* tensorAt(int t) const {
    return t >= 0 && static_cast<size_t>(t) < tensors_.size() ? tensors_[static_cast<size_t>(t)].get() : nullptr;
  }
  int threads() const { return configs_.empty() ? 1 : configs_[0].numThread; }
  Precision precision() const { return configs_.empty() ? Precision::kNormal : configs_[0].precision; }
  bool resized() const { return resized_; }
  // The plan a host module bakes (module_writer.cpp): a resized session on
  // the host alone, without control flow, containers or shape inputs.
  StatusOr<ModulePlan> modulePlan() const;
  // "12 ops: vulkan 11, host 1".
  std::string describePlacement() const;

 private:
  struct Step {
    int op = -1;               // -1: a copy step
    Backend* backend = nullptr;
    Execution* exec = nullptr;
    std::vector<Tensor*> inputs, outputs;
  };

  SessionImpl() = default;
  Status schedule(const std::vector<ScheduleConfig>& configs, const BackendFactory& factory);
  Status createControlFlow();
  Status markResizeOps();
  // Input k of op `op` is computed at resize (its row's value inputs; for
  // control flow, what the subgraphs need).
  bool isValueInput(size_t op, size_t k) const;
  // Tensor t is computed from integers only (no float data on the way):
  // cheap "configuration" such as a sample rate or a shape.
  bool isConfigurationValue(int t) const;
  Status buildSteps();
  Tensor* mirror(int tensor, Backend* b, bool* created);
  Status inferShapes();
  Status planMemory();
  struct ConcatViews {
    std::map<const Tensor*, std::pair<Tensor*, size_t>> of;  // a Concat's input: its output, byte offset
    std::set<const Tensor*> parents;                         // those Concats' outputs
  };
  ConcatViews planConcatViews() const;
  // True unless t is such a Concat's output with a view read at step s or
  // later (then t may not be overwritten in place at s).
  static bool viewsReadBefore(const ConcatViews& views, const Tensor* t, size_t s,
                              const std::map<const Tensor*, size_t>& last_use);
  bool releasable(const Tensor* t) const;
  Status runStep(const Step& s, const TensorCallBack* before, const TensorCallBack* after);
  OpInfo opInfo(int op) const;
  std::string where(int op) const;
  // Resize's limits: a tensor's size (computed without overflow) against its
  // backend's tensor limit, and the parameter-driven work of windowed ops.
  Status checkTensorSize(const Tensor& t, size_t limit, const char* role) const;
  size_t tensorLimit(const Backend* b) const;
  Status checkParameterWork(const GraphOp& op, const std::vector<Tensor*>& ins, const std::vector<Tensor*>& outs,
                            size_t limit) const;

  // The constant named `name` of the graph, or -1.
  int weightIndex(const std::string& name) const;

  std::shared_ptr<const Model> model_;
  std::shared_ptr<const Graph> graph_;
  // setWeight: the session's own copy of the graph (its constants pointing at
  // the new values), the values, and the graph it replaced, which the
  // executions created before still point into (same ops and tensors).
  std::shared_ptr<Graph> own_graph_;
  std::map<int, std::shared_ptr<ByteRegion>> weights_;
  std::vector<std::shared_ptr<const Graph>> replaced_graphs_;
  std::vector<ScheduleConfig> configs_;
  BackendFactory factory_;
  std::vector<std::unique_ptr<ControlFlow>> control_;  // per op: If, Loop, Scan; else null
  std::vector<std::unique_ptr<Backend>> backends_;
  HostBackend* host_ = nullptr;
  bool keep_all_ = false;
  bool profile_ = false;
  std::vector<OpProfile> profile_result_;

  std::vector<std::unique_ptr<Tensor>> tensors_;  // home tensor of each graph tensor
  std::map<const Backend*, size_t> tensor_limit_;  // ScheduleConfig::maxTensorBytes, else the device's largest buffer
  std::vector<Backend*> home_;                    // backend of each home tensor (host for constants)
  std::map<std::pair<int, Backend*>, std::unique_ptr<Tensor>> mirrors_;
  std::vector<std::pair<Tensor*, Tensor*>> static_copies_;  // (src, mirror) done at resize
  // Lookups for planning, so resize stays linear in the graph size.
  std::unordered_map<const Tensor*, size_t> graph_index_;     // home tensor -> graph tensor
  std::unordered_map<const Tensor*, Backend*> mirror_backend_;
  std::unordered_map<const Tensor*, bool> mirror_is_static_;
  Backend* backendOf(const Tensor* t) const;
  std::vector<int> op_backend_;                   // index into backends_
  std::vector<std::unique_ptr<Execution>> execs_;
  std::vector<bool> resize_op_;
  std::vector<bool> resize_value_;                // tensor computed at resize
  // Shape inputs: graph inputs whose values decide shapes (Reshape's shape
  // fed by the app). They live in session memory from resizeTensor on, so
  // the app can write them before resize; run() resizes again when their
  // values changed since the last resize.
  std::vector<int> value_inputs_from_graph_;
  std::map<const Tensor*, std::vector<uint8_t>> shape_input_memory_, shape_input_seen_;
  bool isShapeInput(const Tensor* t) const { return shape_input_memory_.count(t) > 0; }
  void bindShapeInput(Tensor* t, const std::vector<int64_t>& shape);
  std::vector<Step> steps_;
  // Adaptive host threading (run): the smoothed time of a run's host steps
  // on one thread and on all of the host pool's, how often each was seen,
  // and the choice between them for the next run.
  // Forms: 0 one thread, 1 all, 2 the steps whose one-thread time is small
  // on one thread and the others on all.
  double thread_est_[3] = {0.0, 0.0, 0.0};
  double thread_last_[3][3] = {};  // each form's last three timed runs (a ring)
  int thread_seen_[3] = {0, 0, 0};
  std::vector<double> step_one_ms_;  // each step's smoothed time in form 0 (ms; 0: not yet seen)
  int64_t adaptive_runs_ = 0;
  int threadsForRun() const;
  void noteRunThreads(int form, double ms);
  // bindState: (output, input) pairs, copied after each run.
  std::vector<std::pair<Tensor*, Tensor*>> state_;
  Status carryState();
  std::vector<std::pair<Tensor*, std::vector<uint8_t>>> resize_scratch_;
  std::map<Tensor*, std::vector<int64_t>> requested_shapes_;
  Placement placement_;
  // An ahead-of-time bundle's use, for Placement::bundle: the GPU backend's
  // driver state and the host ops' packed forms.
  std::string bundle_device_note_, bundle_host_note_;
  void seedFromBundle(Backend* backend);
  void noteBundle();
  bool resized_ = false;
  SessionPhases phases_;
  // An execution's set-up time (ms), into pack (host) or pipelines (GPU).
  void addSetup(const Backend* b, double ms);
};

}  // namespace kiln
