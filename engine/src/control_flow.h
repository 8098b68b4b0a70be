// ControlFlow: how a session runs If, Loop and Scan. Each subgraph gets a
// child session (SessionImpl) created with the parent's schedule configs, so
// a body's ops go to the same backends as the rest of the model and are
// planned (and, on a GPU, recorded) once, at the child's resize; running an
// iteration runs the child.
//
// The op itself sits on the host: its inputs and outputs are host tensors,
// copied in and out of the child's inputs and outputs. Captured values
// (schema/kiln.fbs: a subgraph's trailing inputs) are fed once a run,
// loop-carried values once an iteration.
//
// What the parent must know at resize, and when:
//   * an input whose values decide a subgraph's shapes (a child shape input)
//     is a value input of the op: the parent computes it at resize;
//   * If's condition and Loop's trip count and first condition are value
//     inputs when they are "configuration" (computed from integers only,
//     such as a sample rate or a shape), so an If folds away at resize; a
//     condition computed from float data is read at run time, and then both
//     branches must give the same output shapes;
//   * a Loop whose iterations can end on a condition computed in the body
//     and that has scan outputs has shapes known only after it ran: the
//     whole op is computed at resize (its inputs become resize values).
//
// Thread-safety: owned by one session.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph.h"
#include "kiln/session.h"
#include "kiln/tensor.h"
#include "model.h"
#include "session_impl.h"

namespace kiln {

// The most iterations one Loop may run (a hostile or broken trip count must
// fail, not hang): ScheduleConfig has no field for it yet, so it is this
// constant, overridable per session with KILN_MAX_LOOP_ITERATIONS.
constexpr int64_t kDefaultMaxLoopIterations = int64_t{1} << 20;

class ControlFlow {
 public:
  // Children get the parent's configs (without paths, which name the
  // parent's tensors) and backend factory.
  static StatusOr<std::unique_ptr<ControlFlow>> Create(const GraphOp& op, std::shared_ptr<const Model> model,
                                                       const std::vector<ScheduleConfig>& configs,
                                                       const BackendFactory& factory);
  ~ControlFlow();

  // Input k's values are needed at resize (a subgraph's shapes depend on them).
  bool needsValue(size_t k) const;
  // Input k is a condition or trip count: a value input when the parent can
  // compute it cheaply (SessionImpl decides).
  bool prefersValue(size_t k) const;
  // The op's outputs are only known after it ran: it is computed at resize.
  bool computedAtResize() const { return at_resize_; }
  // Which inputs the parent computes at resize (after it decided).
  void setValueInputs(std::vector<bool> v) { value_in_ = std::move(v); }

  // At the parent's resize: the outputs' shapes and dtypes, from the
  // children resized with the inputs' shapes (and values, where known).
  Status inferShapes(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs);
  Status execute(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs);
  // "body: 5 ops: vulkan 5" (the placement printout).
  std::string describe() const;
  // The subgraphs' sessions' devices (Session::devices).
  std::map<std::string, std::string> devices() const;
  // Why subgraph ops left the configured backend ("" when none did).
  std::string fallbacks() const;

  // The Execution the parent schedules on its host backend.
  std::unique_ptr<Execution> makeExecution(Backend* host);

 private:
  ControlFlow() = default;
  Status inferIf(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out);
  Status inferLoop(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out);
  Status inferScan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out);
  Status runIf(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out);
  Status runLoop(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out);
  Status runScan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out);
  // One scan (the opset-9 form); the batched form runs it per batch item.
  Status inferScanOne(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out);
  Status runScanOne(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out);
  StatusOr<std::vector<std::unique_ptr<Tensor>>> batchItem(const std::vector<Tensor*>& in, int64_t b) const;
  // Loop's iteration count from M and the first condition (values known).
  StatusOr<int64_t> tripLimit(const std::vector<Tensor*>& in) const;

  const GraphOp* op_ = nullptr;
  std::string where_;  // "If 'name'"
  std::vector<std::shared_ptr<const Graph>> graphs_;
  std::vector<std::unique_ptr<SessionImpl>> children_;  // If: then, else; Loop, Scan: body
  int num_carried_ = 0;   // Loop: N; Scan: N state values
  int num_scan_in_ = 0;   // Scan: M
  int num_scan_out_ = 0;  // K
  int num_captures_ = 0;
  int first_capture_ = 0;  // op input index of the first capture
  bool cond_static_ = false;  // Loop: the body's condition is its input (or constant)
  bool cond_constant_false_ = false;
  bool at_resize_ = false;
  int64_t max_iterations_ = kDefaultMaxLoopIterations;
  // The most bytes a Loop's scan output may grow to while it runs
  // (ScheduleConfig::maxTensorBytes, else the host's memory): a loop
  // computed at resize learns its outputs' size only as it goes.
  size_t max_bytes_ = 0;
  std::vector<bool> value_in_;
  int chosen_ = -1;      // If: the branch chosen at resize, -1 = decided at run
  int64_t trips_ = -1;   // Loop: iterations planned at resize (-1: until the condition ends it)
  int64_t scan_len_ = 0;  // Scan: iterations
  // Computed at resize (at_resize_): the outputs, copied out by execute().
  std::vector<std::unique_ptr<Tensor>> results_;
};

}  // namespace kiln
