// The host backend: runs ops on the CPU from one pre-planned pool per session
// (see MemoryPlanner). Every other backend's reference and fallback, and the
// place where shape subgraphs are computed at resize.
//
// Kernels register in host_fallback/ops/<family>.inc, one line an op:
//   KILN_HOST_OP(OpType, Factory)
// declares `StatusOr<std::unique_ptr<Execution>> CreateHost<Factory>(const
// GraphOp&, const Graph&, HostBackend*)`. A family factory may serve several
// op types (it switches on op.type).
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "backend.h"
#include "kiln/session.h"
#include "memory_planner.h"
#include "thread_pool.h"

namespace kiln {

class HostBackend final : public Backend {
 public:
  // precision kLow stores the weights that kernels pack at resize (Conv's
  // GEMM and Winograd panels) as fp16, half the bytes; arithmetic stays fp32.
  explicit HostBackend(int threads, Precision precision = Precision::kNormal);
  ~HostBackend() override;

  const char* name() const override { return "host"; }
  std::string deviceName() const override;
  StatusOr<std::unique_ptr<Execution>> onCreate(const GraphOp& op, const Graph& graph) override;

  void onClearBuffer() override;
  Status onAcquireBuffer(Tensor* t, const Tensor* share_with) override;
  Status onReleaseBuffer(Tensor* t) override;
  bool supportsViews() const override { return true; }
  Status onAcquireView(Tensor* t, const Tensor* parent, size_t byte_offset) override;
  Status onAllocateBuffer() override;
  MemoryReport memoryReport() const override { return report_; }
  Status onCopyBuffer(const Tensor& src, Tensor* dst) override;
  StatusOr<DevicePeaks> measurePeaks() override;  // peaks.cpp

  ThreadPool& pool() { return pool_; }
  bool halfWeights() const { return precision_ == Precision::kLow; }
  // Kernels report the bytes of the weights they keep (packed, transformed),
  // shown as the backend's constant bytes (kiln-bench "weights").
  void countWeightBytes(size_t bytes) { report_.constant_bytes += bytes; }
  void uncountWeightBytes(size_t bytes) { report_.constant_bytes -= std::min(bytes, report_.constant_bytes); }
  void setNoReuse(bool no_reuse) { planner_.setNoReuse(no_reuse); }
  // The pool onAllocateBuffer made (null before); a host module's arena
  // offsets are taken against it.
  const uint8_t* poolBase() const { return memory_; }

  // Ahead-of-time bundles: the prepacked forms this session's ops take back
  // (null: none), when they were packed for this CPU's GEMM; else none are
  // taken and the result says why ("" when taken). bundled() gives op `op`'s
  // form `key` or null; the op then says whether it could use it (made for
  // these sizes), and the counts say how much of the bundle served.
  std::string setBundle(const fb::Bundle* bundle);
  const fb::PrepackedBlob* bundled(int op, const std::string& key) const;
  void noteBundled(int op, const std::string& key, bool used) {
    (used ? bundle_used_ : bundle_stale_).insert({op, key});
    (used ? bundle_stale_ : bundle_used_).erase({op, key});
  }
  // Op `op`'s weights changed (Session::setWeight): its stored forms are stale.
  void forgetBundled(int op) {
    for (auto it = bundle_index_.begin(); it != bundle_index_.end();)
      it = it->first.first == op ? bundle_index_.erase(it) : std::next(it);
    for (auto* set : {&bundle_used_, &bundle_stale_})
      for (auto it = set->begin(); it != set->end();) it = it->first == op ? set->erase(it) : std::next(it);
  }
  size_t bundleUsed() const { return bundle_used_.size(); }
  size_t bundleStale() const { return bundle_stale_.size(); }
  size_t bundleBlobs() const { return bundle_index_.size(); }

 private:
  std::map<std::pair<int, std::string>, const fb::PrepackedBlob*> bundle_index_;
  std::set<std::pair<int, std::string>> bundle_used_, bundle_stale_;  // forms taken / made for other sizes
  ThreadPool pool_;
  Precision precision_;
  MemoryPlanner planner_;
  std::map<Tensor*, int> buffer_of_;
  std::map<const Tensor*, int> id_of_;
  std::map<const Tensor*, size_t> view_offset_;  // views: bytes into their parent's buffer
  uint8_t* memory_ = nullptr;
  MemoryReport report_;
};

// Zeroed host memory for a pool of `bytes` (64-byte aligned; 2 MiB huge
// pages from 2 MiB on, touched so that a first run takes no page faults);
// std::free releases it. Null when the memory is not there.
uint8_t* AllocateHostPool(size_t bytes);

// True when `type` has a host kernel.
bool HostSupports(fb::OpType type);

// Function-style kernels: most host ops need no state beyond the op.
using HostKernelFn = Status (*)(const GraphOp& op, const std::vector<Tensor*>& inputs,
                                const std::vector<Tensor*>& outputs, HostBackend& backend);

class HostFnExecution final : public Execution {
 public:
  HostFnExecution(HostBackend* b, const GraphOp& op, HostKernelFn fn) : Execution(b), op_(op), fn_(fn) {}
  Status onExecute(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    return fn_(op_, in, out, *static_cast<HostBackend*>(backend()));
  }

 private:
  const GraphOp& op_;
  HostKernelFn fn_;
};

inline StatusOr<std::unique_ptr<Execution>> MakeHostKernel(HostBackend* b, const GraphOp& op, HostKernelFn fn) {
  return std::unique_ptr<Execution>(new HostFnExecution(b, op, fn));
}

// Defines CreateHost<Name> for the function-style kernel Run<Name>.
#define KILN_HOST_FN_FACTORY(Name)                                                                            \
  StatusOr<std::unique_ptr<Execution>> CreateHost##Name(const GraphOp& op, const Graph&, HostBackend* b) { \
    return MakeHostKernel(b, op, &Run##Name);                                                               \
  }

}  // namespace kiln
