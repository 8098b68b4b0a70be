// The strided copy shared by copy.comp (32-bit words) and copy_u8.comp
// (bytes): item i of a logical shape of up to KILN_MAX_RANK dims (outermost
// first) reads the source at
//   src_base + sum_d c_d * strides[d]         (c_d = coordinate d of i;
//                                              with TILE, c_d mod mods[d])
// and writes the destination at i, or with DST_ROWS at
//   dst_base + (i / dst_block) * dst_row + i % dst_block
// (one input of a Concat: a block of rows inside longer output rows).
// Transpose, Slice (negative steps too), Expand (stride 0), Split,
// DepthToSpace, SpaceToDepth and Tile are all this kernel with different
// push constants (backends/gpu/ops/gpu_layout.cpp). Units are the
// buffer's elements: a wider element is an innermost dim of several units.
layout(constant_id = 3) const bool TILE = false;
layout(constant_id = 4) const bool DST_ROWS = false;
// Items an invocation: 1 on GPUs, 8 on CPU drivers (an invocation costs
// them more than a copied item). Along the innermost dim the source offset
// steps by its stride; the full division only where a row ends.
layout(constant_id = 5) const uint EPI = 1u;

layout(push_constant) uniform P {
  uint n, rank;
  int src_base;
  uint dst_base, dst_block, dst_row;
  uint dims[KILN_MAX_RANK];
  int strides[KILN_MAX_RANK];
  uint mods[KILN_MAX_RANK];
} p;

uint SrcOffset(uint i) {
  int off = p.src_base;
  [[unroll]] for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if (uint(d) < p.rank) {
      uint q = i / p.dims[d];
      uint c = i - q * p.dims[d];
      if (TILE) c %= p.mods[d];
      off += int(c) * p.strides[d];
      i = q;
    }
  }
  return uint(off);
}

uint DstOffset(uint i) {
  if (!DST_ROWS) return i;
  uint row = i / p.dst_block;
  return p.dst_base + row * p.dst_row + (i - row * p.dst_block);
}

// Items base .. base + EPI - 1 (those below n) through `visit(dst, src)`,
// the including shader's copy of one item. Offsets step item by item: the
// source by the innermost stride (the full division only where a row
// ends), the destination along its block of the row.
#define KILN_COPY_ITEMS(visit)                                                        \
  {                                                                                   \
    const uint base_ = KILN_GLOBAL_INDEX * EPI;                                       \
    if (base_ < p.n) {                                                                \
      const uint inner_ = p.rank > 0u ? p.dims[p.rank - 1u] : 1u;                     \
      const int step_ = p.rank > 0u ? p.strides[p.rank - 1u] : 0;                     \
      const uint block_ = DST_ROWS ? p.dst_block : 0xFFFFFFFFu;                       \
      uint c_ = base_ % inner_, src_ = SrcOffset(base_);                              \
      uint col_ = DST_ROWS ? base_ % block_ : 0u, dst_ = DstOffset(base_);            \
      for (uint e_ = 0u; e_ < EPI; ++e_) {                                            \
        const uint i_ = base_ + e_;                                                   \
        if (i_ >= p.n) break;                                                         \
        visit(dst_, src_);                                                            \
        if (TILE || ++c_ == inner_) {                                                 \
          c_ = 0u;                                                                    \
          src_ = SrcOffset(i_ + 1u);                                                  \
        } else {                                                                      \
          src_ = uint(int(src_) + step_);                                             \
        }                                                                             \
        if (DST_ROWS && ++col_ == block_) {                                           \
          col_ = 0u;                                                                  \
          dst_ += p.dst_row - block_ + 1u;                                            \
        } else {                                                                      \
          ++dst_;                                                                     \
        }                                                                             \
      }                                                                               \
    }                                                                                 \
  }
