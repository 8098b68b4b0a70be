// Layout ops that only move elements, on GPU: Transpose, Concat, Split,
// Slice (negative steps too), Tile, Expand, DepthToSpace, SpaceToDepth.
//
// Each op is a *view* of its input (MNN's "geometry" idea): for every dim
// of the output, the input stride to step by (step * stride for Slice,
// negative for negative steps; 0 for Expand's broadcast dims), a base
// offset, and for Tile the input dim at which a coordinate wraps. DepthToSpace
// and SpaceToDepth are 6-D transposes (the host's views, layout_copy.cpp).
// Concat is one dispatch per input, writing a block of each output row;
// Split one dispatch per output, reading a block of each input row.
//
// A view is turned into the units a shader moves (32-bit words; an 8-byte
// element is an innermost dim of 2 words; bytes for 1- and 2-byte dtypes,
// with 8-bit storage), collapsed (unit dims dropped, a dim merged into its
// outer neighbour when contiguous across both) and run by the strided copy
// (shaders/vulkan/copy_strided.glsl). A view that turns out to be the whole
// tensor in order is a vkCmdCopyBuffer. Views of more than 6 dims after
// collapsing, and tensors over 2^31 units, are Unsupported at resize.
#include <cstring>
#include <functional>

#include "ops/op_params.h"
#include "ops/shape_inference.h"
#include "gpu_layout.h"

namespace kiln {

StatusOr<MoveUnits> UnitsFor(fb::DataType dtype, const GpuCaps& caps, const char* word_shader,
                             const char* byte_shader) {
  const size_t size = DataTypeSize(dtype);
  if (size > 0 && size % 4 == 0) return MoveUnits{word_shader, static_cast<uint32_t>(size / 4)};
  if (size == 2 && caps.storage_16bit) return MoveUnits{std::string(word_shader) + "_u16", 1};
  if (size == 0 || !byte_shader)
    return Unsupported("%s elements; the GPU kernel moves 32-bit words", fb::EnumNameDataType(dtype));
  if (!caps.storage_8bit)
    return Unsupported("%s elements need 8-bit storage (storageBuffer8BitAccess), which the device lacks",
                       fb::EnumNameDataType(dtype));
  return MoveUnits{byte_shader, static_cast<uint32_t>(size)};
}

Status Require8BitStorage(const GpuCaps& caps, const GraphOp& op) {
  if (!caps.storage_8bit)
    return Unsupported("GPU %s stores bool bytes, which needs 8-bit storage (storageBuffer8BitAccess)",
                       op.typeName());
  return Status::Ok();
}

Status RequireUnits32(const Tensor& t, uint32_t units_per_element) {
  if (static_cast<uint64_t>(t.elementCount()) * units_per_element > INT32_MAX)
    return Unsupported("'%s' has %lld elements; GPU layout kernels index with 32 bits", t.name().c_str(),
                       (long long)t.elementCount());
  return Status::Ok();
}

namespace {

constexpr int kMaxRank = 6;  // KILN_MAX_RANK of common.glsl

// One dispatch of the strided copy, in elements: dst item i (row-major over
// `dims`) = src[base + sum_d c_d * strides[d]] (c_d mod mods[d] for Tile).
// With dst_block > 0 (Concat), item i goes to
// dst[dst_base + (i / dst_block) * dst_row + i % dst_block].
struct Piece {
  const Tensor* src = nullptr;
  const Tensor* dst = nullptr;
  std::vector<int64_t> dims, strides, mods;  // mods empty: no wrapping
  int64_t base = 0;
  int64_t dst_base = 0, dst_block = 0, dst_row = 0;
};

// Outer (product of dims before axis) and inner (after it) of a shape.
void OuterInner(const std::vector<int64_t>& shape, int axis, int64_t* outer, int64_t* inner) {
  *outer = *inner = 1;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < axis) *outer *= shape[static_cast<size_t>(d)];
    if (d > axis) *inner *= shape[static_cast<size_t>(d)];
  }
}

Piece Whole(const Tensor* src, const Tensor* dst, std::vector<int64_t> dims, std::vector<int64_t> strides,
            int64_t base = 0) {
  Piece p;
  p.src = src;
  p.dst = dst;
  p.dims = std::move(dims);
  p.strides = std::move(strides);
  p.base = base;
  return p;
}

// The pieces of each op, in elements (the host kernels' views). `shape`
// gives a tensor's stored dims (channel-packed Concat: the same pieces over
// [N, C/4, S..., 4]).
StatusOr<std::vector<Piece>> Pieces(const GraphOp& op, const std::vector<Tensor*>& in,
                                    const std::vector<Tensor*>& out,
                                    const std::function<std::vector<int64_t>(const Tensor&)>& shape) {
  const Tensor* x = in[0];
  const std::vector<int64_t>& xs = x->shape();
  const std::vector<int64_t> xst = ContiguousStrides(xs);
  const std::vector<int64_t>& ys = out[0]->shape();
  const size_t rank = xs.size();
  std::vector<Piece> pieces;
  switch (op.type) {
    case fb::OpType::Transpose: {
      const fb::TransposeParams* p = op.params<fb::TransposeParams>();
      std::vector<int64_t> strides;
      for (size_t d = 0; d < rank; ++d) {
        const bool given = p && p->perm() && p->perm()->size() == rank;
        strides.push_back(xst[given ? static_cast<size_t>(p->perm()->Get(static_cast<flatbuffers::uoffset_t>(d)))
                                    : rank - 1 - d]);
      }
      pieces.push_back(Whole(x, out[0], ys, strides));
      break;
    }
    case fb::OpType::Slice: {
      KILN_ASSIGN_OR_RETURN(std::vector<SliceDim> dims, ResolveSlice(op, xs, TensorValues(in)));
      Piece p = Whole(x, out[0], {}, {});
      for (size_t d = 0; d < rank; ++d) {
        p.dims.push_back(dims[d].count);
        p.strides.push_back(dims[d].step * xst[d]);
        p.base += dims[d].start * xst[d];
      }
      if (p.dims != ys) return Internal("Slice: resolved %s, inferred %s", ShapeToString(p.dims).c_str(),
                                        ShapeToString(ys).c_str());
      pieces.push_back(std::move(p));
      break;
    }
    case fb::OpType::Expand: {
      std::vector<int64_t> strides(ys.size(), 0);
      const size_t lead = ys.size() - rank;
      for (size_t d = 0; d < rank; ++d) strides[lead + d] = xs[d] == 1 ? 0 : xst[d];
      pieces.push_back(Whole(x, out[0], ys, strides));
      break;
    }
    case fb::OpType::Tile: {
      Piece p = Whole(x, out[0], ys, xst);
      p.mods = xs;
      pieces.push_back(std::move(p));
      break;
    }
    case fb::OpType::DepthToSpace:
    case fb::OpType::SpaceToDepth: {
      const fb::SpaceDepthParams* p = op.params<fb::SpaceDepthParams>();
      const int64_t b = p->blocksize(), n = xs[0], c = xs[1], h = xs[2], w = xs[3], hw = h * w;
      if (op.type == fb::OpType::DepthToSpace) {
        // Output viewed as [n, c', h, i, w, j]: y[n, c', h*b+i, w*b+j].
        const int64_t cc = c / (b * b);
        if (p->mode() == fb::DepthToSpaceMode::CRD)  // channel c'*b*b + i*b + j
          pieces.push_back(Whole(x, out[0], {n, cc, h, b, w, b}, {c * hw, b * b * hw, w, b * hw, 1, hw}));
        else  // DCR: channel (i*b + j)*c' + c'
          pieces.push_back(Whole(x, out[0], {n, cc, h, b, w, b}, {c * hw, hw, w, b * cc * hw, 1, cc * hw}));
      } else {
        // Output viewed as [n, i, j, c, h', w']: y[n, (i*b+j)*c + c, h', w'] = x[n, c, h'*b+i, w'*b+j].
        pieces.push_back(Whole(x, out[0], {n, b, b, c, h / b, w / b}, {c * hw, w, 1, hw, b * w, b}));
      }
      break;
    }
    case fb::OpType::Split: {
      const fb::SplitParams* p = op.params<fb::SplitParams>();
      KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 0, static_cast<int>(rank)), "Split");
      int64_t outer, inner;
      OuterInner(xs, axis, &outer, &inner);
      const int64_t in_row = xs[static_cast<size_t>(axis)] * inner;
      int64_t at = 0;
      for (const Tensor* y : out) {
        const int64_t row = y->shape()[static_cast<size_t>(axis)] * inner;
        pieces.push_back(Whole(x, y, {outer, row}, {in_row, 1}, at));
        at += row;
      }
      break;
    }
    case fb::OpType::Concat: {
      const fb::AxisParams* p = op.params<fb::AxisParams>();
      KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 0, static_cast<int>(ys.size())), "Concat");
      const std::vector<int64_t> stored = shape(*out[0]);
      int64_t outer, inner;
      OuterInner(stored, axis, &outer, &inner);
      const int64_t out_row = stored[static_cast<size_t>(axis)] * inner;
      int64_t at = 0;
      for (const Tensor* t : in) {
        const int64_t row = shape(*t)[static_cast<size_t>(axis)] * inner;
        Piece piece = Whole(t, out[0], {outer, row}, {row, 1});
        piece.dst_base = at;
        piece.dst_block = row;
        piece.dst_row = out_row;
        pieces.push_back(std::move(piece));
        at += row;
      }
      break;
    }
    default: return Internal("no GPU view for %s", op.typeName());
  }
  return pieces;
}

class CopyExecution final : public GpuExecution {
 public:
  bool resolvesDtypesAtResize() const override { return true; }
  CopyExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}
  // Concat over channels of f32 tensors whose blocks line up: every input
  // but the last has whole blocks of four, so the packed output is the
  // inputs' blocks one after another (the last one's zero lanes last).
  PackRule packRule(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) const override {
    if (op_.type != fb::OpType::Concat) return {};
    const int rank = out[0]->dimensions();
    const fb::AxisParams* p = op_.params<fb::AxisParams>();
    const int axis = p ? p->axis() : 0;
    if (rank < 3 || (axis != 1 && axis != 1 - rank) || in.size() > 32) return {};
    for (size_t k = 0; k < in.size(); ++k) {
      if (!in[k] || in[k]->dtype() != fb::DataType::F32 || in[k]->dimensions() != rank) return {};
      if (k + 1 < in.size() && in[k]->length(1) % 4 != 0) return {};
    }
    return {static_cast<uint32_t>((uint64_t{1} << in.size()) - 1), 1, true};
  }

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    KILN_ASSIGN_OR_RETURN(units_, UnitsFor(gpu()->storageType(*in[0]), gpu()->gpuCaps(), "copy", "copy_u8"));
    KILN_ASSIGN_OR_RETURN(std::vector<Piece> pieces,
                     Pieces(op_, in, out, [this](const Tensor& t) { return gpu()->storageShape(t); }));
    for (const Piece& p : pieces) KILN_RETURN_IF_ERROR(addPiece(p));
    return Status::Ok();
  }

  Status addPiece(Piece p) {
    KILN_RETURN_IF_ERROR(RequireUnits32(*p.src, units_.units));
    KILN_RETURN_IF_ERROR(RequireUnits32(*p.dst, units_.units));
    const bool tile = !p.mods.empty(), rows = p.dst_block > 0;
    if (!tile) p.mods = p.dims;
    // Elements to units: an innermost dim of `u` units.
    const int64_t u = units_.units;
    if (u > 1) {
      for (int64_t& s : p.strides) s *= u;  // wrapping (mods) stays per element
      p.dims.push_back(u);
      p.strides.push_back(1);
      p.mods.push_back(u);
      p.base *= u;
      p.dst_base *= u;
      p.dst_block *= u;
      p.dst_row *= u;
    }
    // Collapse: drop unit dims; merge a dim into its outer neighbour when
    // the pair is contiguous in the source and the inner one does not wrap.
    std::vector<int64_t> dims, strides, mods;
    int64_t n = 1;
    for (size_t d = 0; d < p.dims.size(); ++d) {
      n *= p.dims[d];
      if (p.dims[d] == 1) continue;
      if (!dims.empty() && strides.back() == p.strides[d] * p.dims[d] && p.mods[d] == p.dims[d]) {
        dims.back() *= p.dims[d];
        mods.back() *= p.dims[d];
        strides.back() = p.strides[d];
      } else {
        dims.push_back(p.dims[d]);
        strides.push_back(p.strides[d]);
        mods.push_back(p.mods[d]);
      }
    }
    if (n == 0) return Status::Ok();
    const uint64_t bytes = static_cast<uint64_t>(n) * (DataTypeSize(gpu()->storageType(*p.dst)) / static_cast<size_t>(u));
    if (!tile && !rows && dims.size() <= 1 && (dims.empty() || strides[0] == 1) && p.base == 0 &&
        bytes == gpu()->storageBytes(*p.src) && bytes == gpu()->storageBytes(*p.dst)) {
      addCopy(p.src, p.dst);  // the whole tensor, in order
      return Status::Ok();
    }
    if (dims.size() > kMaxRank)
      return Unsupported("%s: a view of %zu dims after merging (the GPU kernel takes %d)", op_.typeName(),
                         dims.size(), kMaxRank);
    // Whole quads of units (a contiguous innermost run, every offset a
    // multiple of four: packed tensors' channel Concat, Slice of whole
    // rows): copy.comp's QUADS moves four units an access.
    auto quad = [](int64_t v) { return v % 4 == 0; };
    bool quads = std::strcmp(units_.shader.c_str(), "copy") == 0 && !tile && !dims.empty() && strides.back() == 1 &&
                 quad(dims.back()) && quad(p.base) &&
                 (!rows || (quad(p.dst_base) && quad(p.dst_block) && quad(p.dst_row)));
    for (size_t d = 0; quads && d + 1 < dims.size(); ++d) quads = quad(strides[d]);
    if (quads) {
      dims.back() /= 4;
      mods.back() /= 4;
      for (size_t d = 0; d + 1 < dims.size(); ++d) strides[d] /= 4;
      p.base /= 4, p.dst_base /= 4, p.dst_block /= 4, p.dst_row /= 4;
      n /= 4;
    }
    struct {
      uint32_t n, rank;
      int32_t src_base;
      uint32_t dst_base, dst_block, dst_row;
      uint32_t dims[kMaxRank];
      int32_t strides[kMaxRank];
      uint32_t mods[kMaxRank];
    } push{};
    push.n = static_cast<uint32_t>(n);
    push.rank = static_cast<uint32_t>(dims.size());
    push.src_base = static_cast<int32_t>(p.base);
    push.dst_base = static_cast<uint32_t>(p.dst_base);
    push.dst_block = static_cast<uint32_t>(p.dst_block);
    push.dst_row = static_cast<uint32_t>(p.dst_row);
    for (size_t d = 0; d < dims.size(); ++d) {
      push.dims[d] = static_cast<uint32_t>(dims[d]);
      push.strides[d] = static_cast<int32_t>(strides[d]);
      push.mods[d] = static_cast<uint32_t>(mods[d]);
    }
    // Several items an invocation on CPU drivers (copy_strided.glsl's EPI).
    const uint32_t epi = gpu()->gpuCaps().cpu_kernels ? 8 : 1;
    return add1D(units_.shader.c_str(), {{p.src}, {p.dst, nullptr, true}}, push, (uint64_t{push.n} + epi - 1) / epi,
                 {tile ? 1u : 0u, rows ? 1u : 0u, epi, quads ? 1u : 0u});
  }

  const GraphOp& op_;
  MoveUnits units_;  // of the bound dtype, set by plan()
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuLayoutCopy(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  if ((op.type == fb::OpType::DepthToSpace || op.type == fb::OpType::SpaceToDepth) &&
      !op.params<fb::SpaceDepthParams>())
    return Unsupported("%s without SpaceDepthParams", op.typeName());
  KILN_RETURN_IF_ERROR(UnitsFor(b->storageType(DeclaredInputDtype(op, graph, 0)), b->gpuCaps(), "copy", "copy_u8").status());
  return Make(std::make_unique<CopyExecution>(b, op));
}

}  // namespace kiln
