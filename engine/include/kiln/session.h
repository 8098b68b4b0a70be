// Session: one planned, runnable instance of a model on a set of backends.
//
// Created by Interpreter::createSession(ScheduleConfig). At creation every op
// is placed on the first backend of the config that can run it (the host is
// always the last resort); at resize shapes are inferred, every buffer is
// planned into one pool per backend, and the work is prepared so that run()
// only executes. Anything that falls back to another backend is printed once
// and queryable through placement().
//
// Thread-safety: a session is used by one thread at a time; sessions of one
// Interpreter must not run concurrently. Different Interpreters are
// independent.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

enum class ForwardType { kHost, kVulkan, kOpenCL, kAuto };
enum class Precision { kNormal, kHigh, kLow };
// Work-group sizes chosen by measurement at resize (OpenCL): kFast tries a
// few sizes, kFull more; results are kept in ScheduleConfig::cacheFile.
enum class Tuning { kNone, kFast, kFull };

// How a GPU backend lays out the activations between its convolution-family
// ops. kPlanar: NCHW, as the model's tensors are. kPacked: channel-packed
// (NC4HW4: channels in blocks of four, each pixel's block one 16-byte vec4,
// zero-filled past the last channel) wherever a tensor's producer and every
// consumer are packed-aware ops on that backend; other tensors stay NCHW, and
// what the app reads (outputs, callbacks) is always NCHW. kAuto: the
// backend's choice (Vulkan and OpenCL: packed, measured faster on lavapipe
// and PoCL too).
enum class GpuLayout { kAuto, kPlanar, kPacked };

const char* ForwardTypeName(ForwardType type);
// The inverses of the names tools take: "host", "vulkan", "opencl", "auto";
// "normal", "high", "low". False for any other name.
bool ParseForwardType(const std::string& name, ForwardType* type);
bool ParsePrecision(const std::string& name, Precision* precision);
// "auto", "planar", "packed".
bool ParseGpuLayout(const std::string& name, GpuLayout* layout);

// The most host threads a session takes (ScheduleConfig::numThread).
constexpr int kMaxThreads = 1024;

struct ScheduleConfig {
  ForwardType type = ForwardType::kHost;        // preferred backend (kAuto: Vulkan, OpenCL, host)
  ForwardType backupType = ForwardType::kHost;  // for ops (or a whole backend) the first cannot take
  int numThread = 1;                            // host threads, 1 to kMaxThreads (fewer if the system refuses more)
  Precision precision = Precision::kNormal;     // kLow: fp16 storage where supported
  // Multi-path sessions: the part of the graph this config covers, by
  // tensor names (empty: the whole graph).
  struct Path {
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
  } path;
  // Debug: no memory reuse, so callbacks can read every intermediate tensor
  // after the run.
  bool keepAllTensors = false;
  // GPU backends: which device (index in the driver's list; -1 picks the
  // fastest kind: discrete, integrated, virtual, then CPU drivers).
  int deviceIndex = -1;
  // GPU backends: a file that keeps compiled pipelines / program binaries
  // between processes (read at session creation, written when the session
  // is released if it learned something new). Empty: no file.
  std::string cacheFile;
  // Per-op device timing (Vulkan timestamp queries, OpenCL events), read
  // through Session::profile() after a run.
  bool profile = false;
  // OpenCL: tune the work-group size of each size-independent kernel (1-D
  // grids) at resize by timing candidates, and keep the winners in cacheFile
  // so that the next session starts tuned. Costs resize time, never run time.
  Tuning tuning = Tuning::kNone;
  // GPU backends: the activation layout of convolution chains (see GpuLayout).
  GpuLayout gpuLayout = GpuLayout::kAuto;
  // Limits on what a resize may plan, in bytes; 0 takes what the device can
  // allocate (the host: its physical memory; Vulkan and OpenCL: the device's
  // largest buffer and its memory size). A tensor past maxTensorBytes fails
  // resize naming the op and the shape ("op 7 'Resize_3' (Resize): output
  // [1,3,4294967296,8] exceeds the tensor limit (...)"), and so does an op
  // whose work grows with parameters rather than tensors (the padded input
  // of a Conv or pool with pads 65536). A backend's pool plus its constants
  // past maxSessionBytes fails resize before anything is allocated.
  size_t maxTensorBytes = 0;
  size_t maxSessionBytes = 0;
};

struct OpInfo {
  int index = 0;
  std::string name;
  std::string type;     // "Conv"
  std::string backend;  // "host"
};

// Called before/after each op with its inputs (before) or outputs (after),
// readable on the host. Returning false stops the run (runSession returns
// an kAborted status naming the op).
using TensorCallBack = std::function<bool(const std::vector<Tensor*>& tensors, const OpInfo& op)>;

struct OpPlacement {
  std::string name, type, backend;
  std::string reason;  // why it is not on the preferred backend ("" if it is)
  // Control flow: where its subgraphs' ops run ("then: 9 ops: vulkan 9; else: ...").
  std::string subgraphs;
};

struct Placement {
  std::vector<OpPlacement> ops;
  std::map<std::string, int> ops_per_backend;
  int switches = 0;  // edges between ops on different backends (each a copy)
  // An ahead-of-time bundle's use ("" for a plain model): how many of its
  // prepacked forms the ops took, or why it was not used at all.
  std::string bundle;
  std::string toString() const;
};

// One step of the last run (ScheduleConfig::profile): an op, or a copy
// between backends (type "Copy").
struct OpProfile {
  std::string name, type, backend;
  double ms = 0;
  bool device_timer = false;  // GPU timestamps; else host wall clock around the step
  // The step's work: flops (multiply-add = 2) for convolutions, matrix
  // products and elementwise math, else 0; bytes = least memory traffic
  // (inputs read once, outputs written once).
  double flops = 0, bytes = 0;
};

struct MemoryUse {
  std::string backend;
  size_t planned_bytes = 0;      // one pool
  size_t lower_bound_bytes = 0;  // largest sum of live tensors at any op
  size_t tensor_bytes = 0;       // sum of all intermediate tensors
  size_t constant_bytes = 0;     // weights a backend keeps apart from the pool (GPU buffers, host packed panels)
  size_t packed_tensors = 0;     // GPU: activations held channel-packed (GpuLayout)
};

// Where a session spent its set-up time, in milliseconds, summed over its
// creation and every resize since (kiln-bench prints them). Creation:
// backends, schedule and the executions' onCreate; each resize: shapes,
// plan and the executions' onResize, upload and record. pack and pipelines split the executions'
// set-up by backend: the host's (weights packed into GEMM panels, Winograd
// filters transformed) and the GPUs' (pipelines and kernels created,
// weights repacked, descriptor sets).
struct SessionPhases {
  double backends = 0;   // backends created (devices, queues, thread pool)
  double schedule = 0;   // ops placed, without the executions' set-up
  double shapes = 0;     // shape inference and the values computed at resize
  double plan = 0;       // memory planned and allocated, without what follows
  double pack = 0;       // host executions set up (onCreate + onResize)
  double pipelines = 0;  // GPU executions set up (onCreate + onResize)
  double upload = 0;     // constants copied to the devices at resize
  double record = 0;     // GPU command buffers recorded
};

class SessionImpl;

class Session {
 public:
  ~Session();
  Tensor* getInput(const std::string& name = "");  // "" = the first input; nullptr if none
  Tensor* getOutput(const std::string& name = "");
  std::map<std::string, Tensor*> getInputAll();
  std::map<std::string, Tensor*> getOutputAll();
  // Sets a new shape for an input; takes effect at resize().
  Status resizeTensor(Tensor* input, const std::vector<int64_t>& shape);
  Status resize();
  Status run();
  Status runWithCallBack(const TensorCallBack& before, const TensorCallBack& after);
  const Placement& placement() const;
  std::vector<MemoryUse> memory() const;
  // Per-step times of the last run when a config had `profile` set (else
  // empty). GPU ops are timed by device timestamps where the device has
  // them; host ops and copies by the wall clock.
  const std::vector<OpProfile>& profile() const;
  // Each backend of the session and its device ("vulkan" -> "llvmpipe (...)").
  std::map<std::string, std::string> devices() const;
  // The set-up time so far, by phase (see SessionPhases).
  SessionPhases phases() const;
  // Drops resize-only caches (shape computation scratch).
  void releaseCache();

  // Streaming state (a recurrent model called every 32 ms): after each
  // run, output `output` becomes input `input` for the next run, on the
  // input's backend, without the app reading or writing it. Both must have
  // the same dtype, and the same shape at each run. The input starts as
  // whatever the app wrote into it, or zeros after resetState().
  Status bindState(const std::string& output, const std::string& input);
  // Zeros every bound input (a new stream).
  Status resetState();

  // Weights: the constants of the model's graph, by name (kiln-inspect
  // lists them). getWeight gives a host copy of the current value (the
  // model's, or the last setWeight's). setWeight replaces it for this
  // session only, on every backend that holds it, repacked forms included
  // (the ops reading it are set up again from the new value); the value
  // must have the weight's dtype and shape and may live on any backend.
  // Interpreter::updateSessionToModel writes the changed ones into the
  // model. Constants inside control-flow subgraphs are not reachable here.
  StatusOr<std::unique_ptr<Tensor>> getWeight(const std::string& name) const;
  Status setWeight(const std::string& name, const Tensor& value);

 private:
  friend class Interpreter;
  explicit Session(std::unique_ptr<SessionImpl> impl);
  std::unique_ptr<SessionImpl> impl_;
};

}  // namespace kiln
