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
