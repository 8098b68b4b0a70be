// Prepended to every Kiln OpenCL kernel. The conventions are those of
// shaders/vulkan/common.glsl, so that one op-layer description
// (backends/gpu/gpu_backend.h) drives both kernel languages:
//   * specialization constant k is the build option KILN_SPEC_<k> (0, 1, 2:
//     the work-group size); each kernel gives its own defaults;
//   * the push constants are one struct argument after the buffers, laid
//     out as the GLSL push block (32-bit scalars and arrays of them);
//   * storage and arithmetic types are named separately: buffers of float
//     tensors hold STORE_T (float, or half with KILN_FP16: LOAD widens and
//     STORE narrows with vload_half / vstore_half, core OpenCL 1.2, so no
//     cl_khr_fp16 is needed), math is float; data-movement kernels move
//     UNIT_T (uint, or ushort with KILN_UNIT16).
#define KILN_MAX_RANK 6

// A 1-D index over work that may have been folded into y.
#define KILN_GLOBAL_INDEX ((uint)get_global_id(0) + (uint)get_global_id(1) * (uint)get_global_size(0))

#ifdef KILN_FP16
#define STORE_T half
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half((v), (i), (p))
#else
#define STORE_T float
#define LOAD(p, i) ((p)[i])
#define STORE(p, i, v) ((p)[i] = (v))
#endif

#ifdef KILN_UNIT16
#define UNIT_T ushort
#else
#define UNIT_T uint
#endif

// Broadcast index: the element of an input for output element `i`, given the
// output's dims (innermost last) and the input's strides (0 where broadcast).
uint BroadcastOffset(uint i, uint rank, const uint* dims, const uint* strides) {
  uint off = 0;
  for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if ((uint)d < rank) {
      uint q = i / dims[d];
      off += (i - q * dims[d]) * strides[d];
      i = q;
    }
  }
  return off;
}

// The strided copy of copy.cl / copy_u8.cl (see shaders/vulkan/copy_strided.glsl):
// item i reads src_base + sum_d c_d * strides[d] (c_d mod mods[d] with
// TILE) and writes i, or with DST_ROWS dst_base + (i / dst_block) * dst_row
// + i % dst_block.
typedef struct {
  uint n, rank;
  int src_base;
  uint dst_base, dst_block, dst_row;
  uint dims[KILN_MAX_RANK];
  int strides[KILN_MAX_RANK];
  uint mods[KILN_MAX_RANK];
} StridedCopy;

uint SrcOffset(const StridedCopy* p, uint i, bool tile) {
  int off = p->src_base;
  for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if ((uint)d < p->rank) {
      uint q = i / p->dims[d];
      uint c = i - q * p->dims[d];
      if (tile) c %= p->mods[d];
      off += (int)c * p->strides[d];
      i = q;
    }
  }
  return (uint)off;
}

uint DstOffset(const StridedCopy* p, uint i, bool rows) {
  if (!rows) return i;
  uint row = i / p->dst_block;
  return p->dst_base + row * p->dst_row + (i - row * p->dst_block);
}
