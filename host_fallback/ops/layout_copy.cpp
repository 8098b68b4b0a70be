// Host kernels: layout ops that move elements without arithmetic, for any
// dtype (elements are copied by size): Reshape, Flatten, Squeeze, Unsqueeze
// (in place when the session shares the buffer), Transpose, Concat, Split,
// Gather, Tile, Expand, DepthToSpace, SpaceToDepth, Shape, Constant.
#include <algorithm>
#include <cstring>
#include <vector>

#include "host_backend.h"
#include "ops/layout_copy.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {

namespace {

template <typename T>
void CopyRowT(const uint8_t* src, uint8_t* dst, int64_t n, int64_t stride) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = s[i * stride];
}

// dst[0..n) = src[i * stride], elements of esize bytes.
void CopyRow(const uint8_t* src, uint8_t* dst, size_t esize, int64_t n, int64_t stride) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * esize);
    return;
  }
  switch (esize) {
    case 1: CopyRowT<uint8_t>(src, dst, n, stride); break;
    case 2: CopyRowT<uint16_t>(src, dst, n, stride); break;
    case 4: CopyRowT<uint32_t>(src, dst, n, stride); break;
    case 8: CopyRowT<uint64_t>(src, dst, n, stride); break;
    default:
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + static_cast<size_t>(i) * esize, src + static_cast<ptrdiff_t>(i * stride) * static_cast<ptrdiff_t>(esize), esize);
  }
}

}  // namespace

void StridedCopy(ThreadPool& pool, const uint8_t* src, uint8_t* dst, size_t esize, std::vector<int64_t> shape,
                 std::vector<int64_t> strides, int64_t offset) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  if (total == 0) return;
  // Drop unit dims and merge dims that are contiguous in the source too.
  std::vector<int64_t> sh, st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!sh.empty() && st.back() == strides[d] * shape[d]) {
      sh.back() *= shape[d];
      st.back() = strides[d];
    } else {
      sh.push_back(shape[d]);
      st.push_back(strides[d]);
    }
  }
  if (sh.empty()) {
    std::memcpy(dst, src + offset * static_cast<int64_t>(esize), esize);
    return;
  }
  const size_t rank = sh.size();
  const int64_t inner = sh.back(), istride = st.back();
  const int64_t rows = total / inner;
  pool.parallelFor(rows, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(rank, 0);
    int64_t rem = begin;
    for (size_t d = rank - 1; d-- > 0;) {
      idx[d] = rem % sh[d];
      rem /= sh[d];
    }
    int64_t off = offset;
    for (size_t d = 0; d + 1 < rank; ++d) off += idx[d] * st[d];
    for (int64_t r = begin; r < end; ++r) {
      CopyRow(src + off * static_cast<int64_t>(esize), dst + r * inner * static_cast<int64_t>(esize), esize, inner,
              istride);
      for (size_t d = rank - 1; d-- > 0;) {
        off += st[d];
        if (++idx[d] < sh[d]) break;
        off -= st[d] * sh[d];
        idx[d] = 0;
      }
    }
  }, std::max<int64_t>(1, 16384 / inner));
}

namespace {

const uint8_t* Src(const Tensor* t) { return static_cast<const uint8_t*>(t->hostData()); }
uint8_t* Dst(Tensor* t) { return static_cast<uint8_t*>(t->hostData()); }

// Reshape, Flatten, Squeeze, Unsqueeze: the bytes do not change.
Status RunReshape(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  if (in[0]->hostData() != out[0]->hostData() && out[0]->byteSize() > 0)
    std::memcpy(out[0]->hostData(), in[0]->hostData(), out[0]->byteSize());
  return Status::Ok();
}

// The session binds a Constant's output to the model data and never runs it.
Status RunConstant(const GraphOp&, const std::vector<Tensor*>&, const std::vector<Tensor*>&, HostBackend&) {
  return Status::Ok();
}

Status RunShape(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const fb::ShapeParams* p = op.params<fb::ShapeParams>();
  const int64_t rank = in[0]->dimensions();
  int64_t start = p ? p->start() : 0;
  if (start < 0) start += rank;
  start = std::max<int64_t>(0, std::min(start, rank));
  int64_t* y = out[0]->host<int64_t>();
  for (int64_t i = 0; i < out[0]->elementCount(); ++i) y[i] = in[0]->shape()[static_cast<size_t>(start + i)];
  return Status::Ok();
}

Status RunTranspose(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                    HostBackend& be) {
  const fb::TransposeParams* p = op.params<fb::TransposeParams>();
  const Tensor& x = *in[0];
  const size_t rank = x.shape().size();
  std::vector<int64_t> in_strides = ContiguousStrides(x.shape()), strides;
  for (size_t d = 0; d < rank; ++d) {
    size_t from = p && p->perm() && p->perm()->size() == rank ? static_cast<size_t>(p->perm()->Get(static_cast<flatbuffers::uoffset_t>(d)))
                                                              : rank - 1 - d;
    strides.push_back(in_strides[from]);
  }
  StridedCopy(be.pool(), Src(&x), Dst(out[0]), x.elementSize(), out[0]->shape(), strides, 0);
  return Status::Ok();
}

int ConcatAxis(const GraphOp& op, int rank) {
  const fb::AxisParams* p = op.params<fb::AxisParams>();
  int axis = p ? p->axis() : 0;
  return axis < 0 ? axis + rank : axis;
}

// Outer (dims before axis) and inner (dims after axis, times element size).
void OuterInner(const Tensor& t, int axis, int64_t* outer, int64_t* inner_bytes) {
  *outer = 1;
  *inner_bytes = static_cast<int64_t>(t.elementSize());
  for (int d = 0; d < t.dimensions(); ++d) {
    if (d < axis) *outer *= t.length(d);
    if (d > axis) *inner_bytes *= t.length(d);
  }
}

// The copies of Concat and Split as (dst, src, bytes) pieces of at most
// kPiece bytes, run on the pool's threads: at 2 threads a single-threaded
// copy reads half its input from the other core's cache and took 2-3x
// longer than at 1 thread (shufflenet's channel concats).
struct CopyPiece {
  uint8_t* dst;
  const uint8_t* src;
  size_t bytes;
};
constexpr size_t kPiece = 64 * 1024;

void AddCopy(std::vector<CopyPiece>& pieces, uint8_t* dst, const uint8_t* src, size_t bytes) {
  for (size_t at = 0; at < bytes; at += kPiece) pieces.push_back({dst + at, src + at, std::min(kPiece, bytes - at)});
}

void RunPieces(HostBackend& be, const std::vector<CopyPiece>& pieces) {
  be.pool().parallelFor(static_cast<int64_t>(pieces.size()), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) std::memcpy(pieces[static_cast<size_t>(i)].dst, pieces[static_cast<size_t>(i)].src, pieces[static_cast<size_t>(i)].bytes);
  }, 2);  // 128 KiB a thread at least
}

Status RunConcat(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  Tensor& y = *out[0];
  const int axis = ConcatAxis(op, y.dimensions());
  int64_t outer, inner;
  OuterInner(y, axis, &outer, &inner);
  const int64_t out_row = y.length(axis) * inner;
  std::vector<CopyPiece> pieces;
  int64_t at = 0;
  for (const Tensor* x : in) {
    const int64_t row = x->length(axis) * inner;
    for (int64_t o = 0; o < outer && row > 0; ++o)
      if (Dst(&y) + o * out_row + at != Src(x) + o * row)  // else written there already (a view: planMemory)
        AddCopy(pieces, Dst(&y) + o * out_row + at, Src(x) + o * row, static_cast<size_t>(row));
    at += row;
  }
  RunPieces(be, pieces);
  return Status::Ok();
}

Status RunSplit(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const Tensor& x = *in[0];
  const fb::SplitParams* p = op.params<fb::SplitParams>();
  int axis = p ? p->axis() : 0;
  if (axis < 0) axis += x.dimensions();
  int64_t outer, inner;
  OuterInner(x, axis, &outer, &inner);
  const int64_t in_row = x.length(axis) * inner;
  std::vector<CopyPiece> pieces;
  int64_t at = 0;
  for (Tensor* y : out) {
    const int64_t row = y->length(axis) * inner;
    for (int64_t o = 0; o < outer && row > 0; ++o)
      AddCopy(pieces, Dst(y) + o * row, Src(&x) + o * in_row + at, static_cast<size_t>(row));
    at += row;
  }
  RunPieces(be, pieces);
  return Status::Ok();
}

Status RunGather(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const Tensor& x = *in[0];
  const Tensor& ind = *in[1];
  const fb::AxisParams* p = op.params<fb::AxisParams>();
  int axis = p ? p->axis() : 0;
  if (axis < 0) axis += x.dimensions();
  const int64_t dim = x.length(axis);
  const int64_t n = ind.elementCount();
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t v = ind.dtype() == fb::DataType::I64 ? ind.host<int64_t>()[k] : ind.host<int32_t>()[k];
    if (v < -dim || v >= dim)
      return InvalidArgument("Gather: index %lld (at %lld) out of range for axis %d of size %lld",
                             static_cast<long long>(v), static_cast<long long>(k), axis, static_cast<long long>(dim));
    idx[static_cast<size_t>(k)] = v < 0 ? v + dim : v;
  }
  int64_t outer, inner;
  OuterInner(x, axis, &outer, &inner);
  const uint8_t* src = Src(&x);
  uint8_t* dst = Dst(out[0]);
  if (inner == 0) return Status::Ok();
  be.pool().parallelFor(outer * n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t o = r / n, k = r % n;
      std::memcpy(dst + r * inner, src + (o * dim + idx[static_cast<size_t>(k)]) * inner, static_cast<size_t>(inner));
    }
  }, std::max<int64_t>(1, 65536 / inner));
  return Status::Ok();
}

// Tile: the output [r0*d0, r1*d1, ...] is laid out as [r0, d0, r1, d1, ...],
// a view of the input with stride 0 on the repeat dims.
Status RunTile(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const Tensor& x = *in[0];
  std::vector<int64_t> in_strides = ContiguousStrides(x.shape()), shape, strides;
  for (int d = 0; d < x.dimensions(); ++d) {
    int64_t len = x.length(d);
    shape.push_back(len == 0 ? 0 : out[0]->length(d) / len);
    strides.push_back(0);
    shape.push_back(len);
    strides.push_back(in_strides[static_cast<size_t>(d)]);
  }
  StridedCopy(be.pool(), Src(&x), Dst(out[0]), x.elementSize(), shape, strides, 0);
  return Status::Ok();
}

Status RunExpand(const GraphOp&, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend& be) {
  const Tensor& x = *in[0];
  const std::vector<int64_t>& os = out[0]->shape();
  std::vector<int64_t> in_strides = ContiguousStrides(x.shape()), strides(os.size(), 0);
  const size_t lead = os.size() - x.shape().size();
  for (size_t d = 0; d < x.shape().size(); ++d) strides[lead + d] = x.shape()[d] == 1 ? 0 : in_strides[d];
  StridedCopy(be.pool(), Src(&x), Dst(out[0]), x.elementSize(), os, strides, 0);
  return Status::Ok();
}

Status RunSpaceDepth(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                     HostBackend& be) {
  const Tensor& x = *in[0];
  const fb::SpaceDepthParams* p = op.params<fb::SpaceDepthParams>();
  const int64_t b = p->blocksize();
  const int64_t n = x.length(0), c = x.length(1), h = x.length(2), w = x.length(3);
  std::vector<int64_t> shape, strides;
  if (op.type == fb::OpType::DepthToSpace) {
    // Output viewed as [n, c', h, i, w, j]: y[n, c', h*b+i, w*b+j].
    const int64_t cc = c / (b * b), hw = h * w;
    shape = {n, cc, h, b, w, b};
    if (p->mode() == fb::DepthToSpaceMode::CRD)  // channel c'*b*b + i*b + j
      strides = {c * hw, b * b * hw, w, b * hw, 1, hw};
    else  // DCR: channel (i*b + j)*c' + c'
      strides = {c * hw, hw, w, b * cc * hw, 1, cc * hw};
  } else {
    // Output viewed as [n, i, j, c, h', w']: y[n, (i*b+j)*c + c, h', w'] = x[n, c, h'*b+i, w'*b+j].
    shape = {n, b, b, c, h / b, w / b};
    strides = {c * h * w, w, 1, h * w, b * w, b};
  }
  StridedCopy(be.pool(), Src(&x), Dst(out[0]), x.elementSize(), shape, strides, 0);
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateHostReshape(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunReshape);
}
StatusOr<std::unique_ptr<Execution>> CreateHostConstant(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunConstant);
}
StatusOr<std::unique_ptr<Execution>> CreateHostShape(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunShape);
}
StatusOr<std::unique_ptr<Execution>> CreateHostTranspose(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunTranspose);
}
StatusOr<std::unique_ptr<Execution>> CreateHostConcat(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunConcat);
}
StatusOr<std::unique_ptr<Execution>> CreateHostSplit(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunSplit);
}
StatusOr<std::unique_ptr<Execution>> CreateHostGather(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunGather);
}
StatusOr<std::unique_ptr<Execution>> CreateHostTile(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunTile);
}
StatusOr<std::unique_ptr<Execution>> CreateHostExpand(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunExpand);
}
StatusOr<std::unique_ptr<Execution>> CreateHostSpaceDepth(const GraphOp& op, const Graph&, HostBackend* b) {
  return MakeHostKernel(b, op, &RunSpaceDepth);
}

}  // namespace kiln
