// What the GPU backends (Vulkan, OpenCL) share: the op layer.
//
// An op family is written once, against GpuBackend, as an Execution that
// *describes* its work at resize (GpuExecution::plan): a list of
// GpuDispatch, each a kernel by name, its buffer bindings in order, a block
// of push constants, specialization constants and a grid of work groups.
// Each GPU backend turns the same description into its API's objects:
//   - Vulkan: kernel <name> is SPIR-V compiled from shaders/vulkan/<name>.comp;
//     bindings are descriptor-set bindings 0..n-1, the push block is the
//     push-constant range, spec constant k is constant_id k (0-2: the
//     work-group size);
//   - OpenCL: kernel <name> is `__kernel void <name>(...)` in
//     shaders/opencl/<name>.cl; bindings are its first n arguments (global
//     pointers to each tensor's first element), the push block is the next
//     argument (a struct passed by value, laid out as the GLSL block), spec
//     constant k is the build option -DKILN_SPEC_<k>=<value>.
// So the two kernel sources of one family keep one interface, and adding a
// kernel to both backends is adding its two source files and one row of the
// one GPU op list (gpu_ops.inc), not a second copy of the planning code.
//
// Thread-safety: one session, one thread (see backend.h).
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend.h"
#include "memory_planner.h"

namespace kiln {

class GpuBackend;

// Device limits and capabilities the op layer looks at.
struct GpuCaps {
  bool storage_16bit = false;  // 16-bit loads/stores in kernels (fp16 storage, 16-bit moves)
  bool storage_8bit = false;   // 8-bit loads/stores (bool, u8 tensors)
  bool float64 = false;        // f64 arithmetic in kernels (shaderFloat64, cl_khr_fp64): DFT's sums
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_workgroup_size[3] = {};
  uint32_t max_workgroup_count[3] = {};
  uint64_t max_storage_buffer_range = 0;  // the largest tensor a kernel can bind
  uint64_t memory_bytes = 0;              // the device's memory (largest device-local heap)
  // Kernels for CPU drivers (lavapipe, PoCL): no shared-memory tiling, where
  // barriers cost more than the reuse saves.
  bool cpu_kernels = false;
  // conv_c4's and wino_gemm's register tile: blocks of four output channels
  // by output columns (tiles) an invocation. 1 x 4 on GPUs (registers are
  // per lane and scarce); on CPU drivers every load is a memory access of
  // its own (lavapipe: one scalar load a lane and component), and a larger
  // tile does more multiply-adds a load: 2 x 8 on lavapipe, 4 x 8 on PoCL
  // (ResNet18: lavapipe 328 -> 200 ms, PoCL 114 -> 69 ms; 4 x 8 on
  // lavapipe ran 179 ms but took twice as long to compile).
  uint32_t conv_tile_blocks = 1, conv_tile_cols = 4;
  // 1x1 convs whose output blocks are a multiple of it take this many
  // blocks instead (0: conv_tile_blocks): their loop is the input blocks
  // alone, which an 8 x 8 tile on lavapipe runs a quarter faster (ResNet50
  // 646 -> 498 ms) for one more pipeline to compile. 3x3 convs of stride 1
  // go through Winograd; for the rest the larger tile's compile time
  // (lavapipe compiles at the first dispatch) outweighs it.
  uint32_t conv_tile_blocks_pointwise = 0;
  // Output rows a work item of the depthwise conv's 16-wide form
  // (conv_dw_c4.cl's RB; OpenCL on CPU drivers, stride 1): each input row
  // is read once for the rows it feeds, and the item's index divisions
  // serve them all. 4 on PoCL (dw3x3 c576 14x14 0.057 -> 0.038 ms, c144
  // 56x56 0.158 -> 0.089); 1 elsewhere (Vulkan's form has no RB).
  uint32_t dw_rows_per_item = 1;
  // Depthwise convs on Vulkan's row reader (conv_dw_c4.comp, CPU drivers)
  // take 7 columns an invocation where the output rows are a multiple of 7
  // and not of 8, so no lane computes past a row: lavapipe dw3x3 c192
  // 28x28 0.487 -> 0.432 ms, c576 14x14 0.390 -> 0.349 (1 thread).
  bool dw_fit_cols = false;
  // Attention's form (gpu_attention.cpp): keys a block and query rows an
  // invocation. 16 keys (attention.cl's _k16 variant, float16 vectors) by
  // 2 rows on PoCL, where the 4-key form's loads of K's rows, the same for
  // every work item of a head, run as gathers across the items it
  // vectorizes (the transformer encoder's 4 attentions 2.44 -> 1.23 ms); 4
  // keys by 4 rows on lavapipe, by 1 row on GPUs. KILN_GPU_ATTN_ROWS=N to
  // compare.
  uint32_t attention_keys = 4, attention_rows = 1;
  // Output pixels a work item of the packed 2-D pools of dilation 1
  // (pool.cl's XB): 8 on PoCL, which divides lane by lane and so paid for
  // each pixel's window arithmetic (SqueezeNet's 3 MaxPools 0.71-0.79 ->
  // 0.35-0.38 ms, 2 threads), 1 elsewhere.
  uint32_t pool_row_outputs = 1;
  // Elements an invocation of the unary and binary kernels on large
  // tensors, where CPU drivers take 8 (0: 8 throughout): fewer work groups,
  // which cost a CPU driver far more than the elements. 32 on PoCL
  // (`kiln-kernelbench --kernels add`, 1M elements 0.78-1.12 -> 0.23-0.25
  // ms), 128 on lavapipe (11.3 -> 1.6-2.4 ms; EfficientNet-B0's SE Muls,
  // 512 elements an invocation there, 17-23 -> 10-14 ms). The element
  // loops do not unroll: unrolled, lavapipe's first compile of
  // EfficientNet-B0 took 2.2 s at 32 and 13 s at 128 (0.16 s at 8).
  uint32_t elementwise_items_large = 0;
  // The most texels a binding read as a texel buffer may hold (GpuBinding::
  // texel), or 0 where kernels read storage buffers only. Lavapipe (Mesa
  // 22.3) runs a storage-buffer load as a loop over the lanes, one scalar
  // load and two branches a lane and component; a texel fetch is one
  // gathered load for the lanes. On CPU drivers with RGBA32F, RGBA16F,
  // R32F and R16F uniform texel buffers.
  uint64_t texel_elements = 0;
  // 16 x 16 x 16 half x half + float matrix products in a subgroup of 32
  // (Vulkan: VK_NV_cooperative_matrix; gemm_coop.comp): fp16-stored
  // products of multiples of 16 take them. KILN_VULKAN_COOP=0 turns it off.
  bool coop_matrix_f16 = false;
  // Packed 4 x 8-bit integer dot products in kernels (Vulkan:
  // shaderIntegerDotProduct, VK_KHR_shader_integer_dot_product / 1.3): the
  // _dp variants of qconv_dot and qmatmul_dot. int8_dot_fast: the driver
  // reports the mixed-signedness packed form as accelerated (a dp4a-like
  // instruction). KILN_GPU_INT8DOT=0 turns it off.
  bool int8_dot = false, int8_dot_fast = false;
  // gemm's register block (rt x rt outputs an invocation, read straight
  // from memory), or 0 for the shared-memory tile (GPUs). 8 on CPU drivers:
  // lavapipe's 1024^3 product 783 -> 153 ms.
  uint32_t gemm_register_tile = 0;
  // With gemm_register_tile 8, where B runs along n: a block's 8 columns
  // read as vectors and A four k a vector load (gemm's VN). 0: off; 1: at
  // any offsets (OpenCL's vloadn; PoCL runs a work item on one lane); 4:
  // k, strides and offsets multiples of four (Vulkan's vec4 views and
  // RGBA texels). KILN_GPU_GEMM_VECTOR=0 turns it off.
  uint32_t gemm_vector_columns = 0;
};

// A device buffer owned by an execution (packed weights, scratch, tables):
// opaque handles of the backend's API.
struct GpuBuffer {
  uint64_t handle = 0;  // VkBuffer / cl_mem
  uint64_t memory = 0;  // VkDeviceMemory (Vulkan only)
  uint64_t bytes = 0;
};

// A compiled kernel with its work-group size; the backend's own type.
struct GpuKernel {
  virtual ~GpuKernel() = default;
  std::string name;
  uint32_t bindings = 0;
  uint32_t local_size[3] = {1, 1, 1};
};

// One binding of a dispatch: a session tensor or an execution's own buffer.
// `texel`: read as a texel buffer (GpuCaps::texel_elements) by the kernel's
// <name>_tx variant, of `texel` floats a texel: 4 (a packed pixel a texel)
// or 1; 0: a storage buffer.
struct GpuBinding {
  const Tensor* tensor = nullptr;
  const GpuBuffer* buffer = nullptr;
  bool write = false;
  uint8_t texel = 0;
};

// One unit of recorded work: a kernel dispatch, or (kernel == nullptr) a
// buffer copy of bindings[0] into bindings[1] (skipped when they alias).
struct GpuDispatch {
  const GpuKernel* kernel = nullptr;
  std::vector<GpuBinding> bindings;
  std::vector<uint8_t> push;
  uint32_t groups[3] = {1, 1, 1};
  uint64_t prepared = 0;  // the backend's per-dispatch object (VkDescriptorSet / cl_kernel)
  // A 1-D grid over independent items (add1D): the kernel's results do not
  // depend on the work-group size, so a backend may pick another one
  // (covering at least groups[0] * local[0] items along x).
  bool free_local = false;
};

constexpr uint32_t kMaxPushConstantBytes = 128;  // the minimum every Vulkan device guarantees

// One op on a GPU backend. Subclasses fill dispatches_ in plan().
class GpuExecution : public Execution {
 public:
  // The tensors of an op that may be held channel-packed (GpuLayout): bit k
  // of `inputs` / `outputs` is input / output k. `uniform`: those tensors
  // are all packed or all planar (a flat kernel over the packed storage);
  // else each one independently (a kernel that reads and writes either).
  struct PackRule {
    uint32_t inputs = 0, outputs = 0;
    bool uniform = false;
  };
  explicit GpuExecution(GpuBackend* b);
  // Asked at resize, before planning, with the shapes known. Default: none.
  virtual PackRule packRule(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) const {
    return {};
  }
  // After the layouts are chosen: the inputs (bit k: input k) the op's
  // dispatches will not bind, e.g. the weights of a conv that reads a copy
  // of its own. A constant no dispatch binds is not uploaded.
  virtual uint32_t unboundInputs(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) const {
    return 0;
  }
  Status onResize(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) override;
  Status onExecute(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) override;
  std::vector<GpuDispatch>& dispatches() { return dispatches_; }
  // The dtypes the model declares for the op's inputs (missing optional
  // inputs excluded), set by the backend at creation.
  void setDeclaredInputDtypes(std::vector<fb::DataType> in) { declared_in_ = std::move(in); }

 protected:
  // Kernels chosen at creation trust the model's declared dtypes, which for
  // an intermediate tensor can be a placeholder; onResize then checks them
  // against the real ones and fails (never computes on misread data). An
  // execution that picks its kernel from the bound tensors returns true.
  virtual bool resolvesDtypesAtResize() const { return false; }
  // Shape-dependent planning: call add*() for each unit of work.
  virtual Status plan(const std::vector<Tensor*>& inputs, const std::vector<Tensor*>& outputs) = 0;
  GpuBackend* gpu() const;
  bool packed(const Tensor* t) const;
  // GpuBinding::texel for a binding of `bytes` of storage read as texels of
  // `floats` floats (4: a packed pixel, 1: an element): `floats` where the
  // device reads texel buffers (GpuCaps::texel_elements) and the binding
  // holds no more texels than it takes, else 0 (a storage buffer).
  uint8_t texelsOf(uint64_t bytes, uint8_t floats) const;
  // A dispatch of kernel `name` with `spec` constants (ids 3, 4, ...; ids
  // 0-2 are the work-group size `local`), over `groups` work groups.
  template <typename Push>
  Status add(const char* name, std::vector<GpuBinding> bindings, const Push& push, const uint32_t groups[3],
             const uint32_t local[3], const std::vector<uint32_t>& spec = {}) {
    static_assert(sizeof(Push) <= kMaxPushConstantBytes, "push constants must fit in 128 bytes");
    static_assert(sizeof(Push) % 4 == 0, "push constants are 32-bit words");
    std::vector<uint8_t> bytes(sizeof(Push));
    std::memcpy(bytes.data(), &push, sizeof(Push));
    return addRaw(name, std::move(bindings), std::move(bytes), groups, local, spec);
  }
  Status addRaw(const char* name, std::vector<GpuBinding> bindings, std::vector<uint8_t> push,
                const uint32_t groups[3], const uint32_t local[3], const std::vector<uint32_t>& spec);
  // A 1-D dispatch over `n` items with 64-wide groups (y folded in when n
  // exceeds the group-count limit; kernels use KILN_GLOBAL_INDEX).
  template <typename Push>
  Status add1D(const char* name, std::vector<GpuBinding> bindings, const Push& push, uint64_t n,
               const std::vector<uint32_t>& spec = {}) {
    uint32_t groups[3], local[3] = {64, 1, 1};
    Groups1D(n, 64, groups);
    KILN_RETURN_IF_ERROR(add(name, std::move(bindings), push, groups, local, spec));
    dispatches_.back().free_local = true;
    return Status::Ok();
  }
  void addCopy(const Tensor* src, const Tensor* dst);
  static void Groups1D(uint64_t n, uint32_t local, uint32_t groups[3]);

  std::vector<GpuDispatch> dispatches_;
  std::vector<fb::DataType> declared_in_;
};

class GpuBackend : public Backend {
 public:
  // Memory planning, the same for every GPU backend: activations are blocks
  // of one planned pool (in storage bytes), weights are collected for a
  // buffer of their own that the backend uploads once (constants_).
  void onClearBuffer() override;
  Status onAcquireBuffer(Tensor* t, const Tensor* share_with) override;
  Status onReleaseBuffer(Tensor* t) override;
  StatusOr<bool> onAcquireConstant(Tensor* mirror, const Tensor& src) override;
  void onConstantChanged(const Tensor& src) override;

  // The op's execution from the one GPU op list (backends/gpu/gpu_ops.inc),
  // for Vulkan and OpenCL alike; Unsupported, naming the backend, for an op
  // the list lacks or excludes on this backend.
  StatusOr<std::unique_ptr<Execution>> onCreate(const GraphOp& op, const Graph& graph) override;
  virtual const GpuCaps& gpuCaps() const = 0;
  // Session limits default to the device's: a tensor must fit one binding.
  size_t maxBufferBytes() const override {
    return gpuCaps().max_storage_buffer_range ? gpuCaps().max_storage_buffer_range : PhysicalMemoryBytes();
  }
  size_t totalMemoryBytes() const override {
    return gpuCaps().memory_bytes ? gpuCaps().memory_bytes : PhysicalMemoryBytes();
  }
  // The kernel `name` for `bindings` buffers, work-group size `local` and
  // spec constants (ids 3...), created (compiled) on first use and kept.
  // texel_mask: bit k when binding k is read as a texel buffer (the
  // kernel's <name>_tx variant; only where GpuCaps::texel_elements).
  virtual StatusOr<const GpuKernel*> kernel(const char* name, uint32_t bindings, const uint32_t local[3],
                                            const std::vector<uint32_t>& spec, uint32_t texel_mask = 0) = 0;
  // A device buffer owned by the caller (freed with freeBuffer), with `data`
  // uploaded when given (bytes as they are: no fp16 conversion).
  virtual StatusOr<GpuBuffer> createBuffer(uint64_t bytes, const void* data = nullptr) = 0;
  virtual void freeBuffer(GpuBuffer* b) = 0;
  // Runs (or, inside a recorded run, lets the run submit) an execution's work.
  virtual Status submitExecution(GpuExecution* exec) = 0;

  // fp16 storage (Precision::kLow on a device with 16-bit storage): every
  // f32 tensor on this backend (activations, weights, inputs copied in) is
  // held as f16; kernels load it into fp32 arithmetic and store f16 (each
  // float kernel's _f16 variant, picked by kernel()), and copies to and from
  // the host convert. The tensors' dtype stays f32: only the device memory
  // is half size. Executions choose data-movement kernels by storageType(),
  // not dtype().
  bool halfStorage() const { return half_; }
  fb::DataType storageType(const Tensor& t) const { return storageType(t.dtype()); }
  fb::DataType storageType(fb::DataType d) const { return half_ && d == fb::DataType::F32 ? fb::DataType::F16 : d; }
  size_t storageBytes(const Tensor& t) const { return storageElements(t) * DataTypeSize(storageType(t)); }
  size_t storageElements(const Tensor& t) const;

  // Channel-packed activations (GpuLayout::kPacked), chosen per tensor by
  // onChooseLayouts from the executions' PackRules: a tensor [N, C, S...]
  // is stored as [N, ceil(C/4), S..., 4], channel c at block c/4, lane c%4,
  // lanes past C zero (every packed producer writes them so: a consumer's
  // vec4 arithmetic may read them).
  bool packed(const Tensor& t) const { return packed_.count(&t) != 0; }
  // The dims of the tensor's storage: its shape, or the packed dims above.
  std::vector<int64_t> storageShape(const Tensor& t) const;
  Status onChooseLayouts(const std::vector<StepView>& steps, const std::vector<const Tensor*>& app_tensors) override;
  // Device bytes of weights that executions keep in their own layout
  // (packed conv weights), reported with the constants.
  void addOwnWeightBytes(int64_t delta) { own_weight_bytes_ += delta; }

 protected:
  // A host tensor's bytes as this backend stores them (f32 -> f16 in fp16
  // mode; packed when `packed`), and back.
  void toStorage(const Tensor& host, uint8_t* device_bytes, bool packed = false) const;
  void fromStorage(const uint8_t* device_bytes, Tensor* host, bool packed = false) const;
  // After planning: binds every pool tensor at its offset in the pool
  // `handle` and fills report_.
  void bindPlanned(const MemoryPlanner::Plan& plan, uint64_t handle);

  bool half_ = false;
  // The backend packs the tensors onChooseLayouts allows (ScheduleConfig::
  // gpuLayout, resolved for the device by the backend).
  bool pack_layout_ = false;
  std::set<const Tensor*> packed_;
  MemoryPlanner planner_;
  std::map<const Tensor*, int> buffer_of_;
  // Model constants read by this backend's ops, in one buffer uploaded once
  // (at the first resize that sees them; offsets set by the upload). A
  // constant that no dispatch binds (unboundInputs) is left out of the
  // buffer (`resident` false) until a resize binds it; copies from it read
  // the model's bytes (copyHostConstant).
  struct Constant {
    Tensor* mirror;
    const Tensor* src;
    uint64_t offset;
    bool resident = false;
  };
  // Whether the upload includes `c` (marks it resident, or unbinds it).
  bool uploads(Constant& c);
  // A copy to the host from a constant mirror kept off the device: done
  // from the model's bytes (true), or not such a copy (false).
  bool copyHostConstant(const Tensor& src, Tensor* dst) const;
  // onChooseLayouts, last: unbound_constants_ from the executions'
  // unboundInputs.
  void findUnboundConstants(const std::vector<StepView>& steps);
  std::vector<Constant> constants_;
  std::set<const Tensor*> unbound_constants_;  // this resize's mirrors that no dispatch binds
  bool constants_dirty_ = false;
  int64_t own_weight_bytes_ = 0;
  MemoryReport report_;
};

// The push constants of the peak kernels (shaders/vulkan/peak.comp,
// shaders/opencl/peak.cl): MODE 0 runs `iters` rounds of 64 flops in each
// of `n` work items; MODE 1 copies n 16-byte vectors.
struct PeakPush {
  uint32_t n, iters;
  float x, y;
};
// True when the environment variable `name` is "0": a capability or path of
// the GPU backends switched off for diagnosis or A/B runs.
bool EnvIsZero(const char* name);
// KILN_GPU_CONV_TILE=BxC (1 to 8 each): conv_c4's and wino_gemm's register
// tile for A/B runs on a device (GpuCaps::conv_tile_blocks x
// conv_tile_cols); the devices call it after setting their own.
void ConvTileFromEnv(GpuCaps* caps);

// The measuring schedule both GPU backends' measurePeaks use, around their
// own `run(mode, push, &seconds)` (one dispatch of the peak kernel over
// push.n items, submitted and waited for): FMA rounds grown until one
// dispatch takes 20 ms, best of three; a copy of `copy_bytes`, best of five.
StatusOr<DevicePeaks> MeasurePeakSchedule(
    uint32_t fma_items, uint32_t copy_bytes,
    const std::function<Status(uint32_t mode, const PeakPush& push, double* seconds)>& run);

// The op factories of backends/gpu/ops, declared from the rows of gpu_ops.inc
// that name them.
#define KILN_GPU_OP(Op, Factory) \
  StatusOr<std::unique_ptr<Execution>> CreateGpu##Factory(const GraphOp&, const Graph&, GpuBackend*);
#define KILN_GPU_EXCLUDE(Backend, Op, Reason)
#include "gpu_ops.inc"
#undef KILN_GPU_EXCLUDE
#undef KILN_GPU_OP

}  // namespace kiln
