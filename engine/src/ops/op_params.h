// Op semantics: how an op's params and value inputs are read (Slice's
// starts, Pad's pads, Resize's scales, Reduce's axes, a window's pads),
// shared by the shape functions (engine/src/ops/shape_*.cpp), the host
// kernels (host_fallback/ops) and the GPU op layer (backends/gpu/ops), so
// that all read them the same way, with the same errors. One axis
// normalization for all of them: NormalizeAxis.
//
// Values come through a ValueSource: in a shape function from
// ShapeContext::inInts/inFloats, in a kernel (at onResize, when value inputs
// are bound) from the input tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// A FlatBuffers vector of any integer type as int64 (empty when absent).
template <typename T>
std::vector<int64_t> ToI64(const flatbuffers::Vector<T>* v) {
  std::vector<int64_t> r;
  if (v)
    for (auto x : *v) r.push_back(static_cast<int64_t>(x));
  return r;
}

struct ValueSource {
  std::function<bool(int)> has;  // optional input k is given
  std::function<StatusOr<std::vector<int64_t>>(int)> ints;
  std::function<StatusOr<std::vector<float>>(int)> floats;
};

// A ValueSource over kernel inputs (nullptr for absent optional inputs).
ValueSource TensorValues(const std::vector<Tensor*>& inputs);
// A ValueSource over a shape function's inputs (in shape_layout.cpp).
class ShapeContext;
ValueSource ShapeValues(const ShapeContext& c);

// The values of an integer (or bool) tensor on the host.
StatusOr<std::vector<int64_t>> TensorInts(const Tensor& t);
StatusOr<std::vector<float>> TensorFloats(const Tensor& t);

// Normalizes `axis` into [0, rank), or fails naming the op's `what`.
StatusOr<int> NormalizeAxis(int64_t axis, int rank, const char* what = "axis");

// ---- Slice ----
struct SliceDim {
  int64_t start = 0;  // first input index
  int64_t step = 1;
  int64_t count = 0;  // output size
};
// One entry per input dim (identity for dims not sliced).
StatusOr<std::vector<SliceDim>> ResolveSlice(const GraphOp& op, const std::vector<int64_t>& shape,
                                             const ValueSource& v);

// ---- Pad ----
// [begin_0..begin_{r-1}, end_0..end_{r-1}], possibly negative.
StatusOr<std::vector<int64_t>> ResolvePads(const GraphOp& op, const std::vector<int64_t>& shape, const ValueSource& v);

// ---- Resize ----
struct ResizeSpec {
  std::vector<int64_t> out_shape;
  std::vector<float> scales;  // per dim, used by the coordinate transform
};
StatusOr<ResizeSpec> ResolveResize(const GraphOp& op, const std::vector<int64_t>& shape, const ValueSource& v);

// ---- Reduce* ----
struct ReduceSpec {
  bool noop = false;         // noop_with_empty_axes and no axes: output = input
  std::vector<bool> reduce;  // per input dim
  bool keepdims = true;
  std::vector<int64_t> out_shape;
};
StatusOr<ReduceSpec> ResolveReduce(const GraphOp& op, const std::vector<int64_t>& shape, const ValueSource& v);

// ---- Split ----
// Sizes along the axis, one per output.
StatusOr<std::vector<int64_t>> ResolveSplit(const GraphOp& op, const std::vector<int64_t>& shape, int num_outputs,
                                            const ValueSource& v, int* axis);

// ---- Resize ----
// Output coordinate x (along an axis of in_len -> out_len, at `scale`) in
// input coordinates, and the nearest input index; every backend uses these
// so that its taps match the host's.
float ResizeToInput(fb::CoordinateTransform t, float x, float scale, int64_t in_len, int64_t out_len);
int64_t ResizeNearest(fb::NearestMode m, float x);

// The input elements output coordinate o reads along one axis of in_len,
// x = ResizeToInput(o) (or o on an axis that is not resized): 1 tap for
// nearest, 2 for linear, 4 for cubic (Keys' weights with cubic_coeff_a,
// clamped at the edges, or renormalized with exclude_outside). `moves`:
// the tap is not just element o.
struct ResizeTap {
  int count = 1;
  int64_t index[4] = {0, 0, 0, 0};
  float weight[4] = {1, 0, 0, 0};
  bool moves = false;
};
ResizeTap ResizeAxisTap(const fb::ResizeParams* p, float x, int64_t o, int64_t in_len);

// Keys' cubic convolution weight at distance s with coefficient a (ONNX's):
// Resize's cubic taps (cubic_coeff_a) and GridSample's bicubic (a = -0.75,
// also in shaders/vulkan/grid_sample.comp and shaders/opencl/grid_sample.cl).
float CubicWeight(float s, float a);

// Row-major strides of `shape`, in elements.
std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape);

// The most multiply-adds one host op may take where its work grows faster
// than its tensors (Einsum's summed letters, Det, DFT, STFT, RoiAlign's
// sampling grid): beyond it the op is refused with its work named, so that
// a hostile model cannot pin a CPU for hours within the memory limits.
constexpr double kMaxHostOpWork = 4294967296.0;  // 2^32
Status CheckHostWork(const char* op, double work);

// `shape` as [outer, n, inner] around `axis` (n its length).
void AroundAxis(const std::vector<int64_t>& shape, int axis, int64_t* outer, int64_t* n, int64_t* inner);

namespace nn {

// Padding of a sliding window (Conv, pools) whose output sizes `out` are
// already known, as [begins..., ends...]: explicit `pads` (empty = 0) for
// NotSet, 0 for Valid, the ONNX split for SAME_UPPER (the odd element at the
// end) and SAME_LOWER (at the beginning).
std::vector<int64_t> WindowPads(fb::AutoPad auto_pad, const std::vector<int64_t>& pads,
                                const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                                const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                const std::vector<int64_t>& dilations);

// The list as int64, or n copies of dflt when it is absent or empty.
std::vector<int64_t> IntsOr(const flatbuffers::Vector<int32_t>* v, size_t n, int64_t dflt);

}  // namespace nn

}  // namespace kiln
