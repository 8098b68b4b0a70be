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

// The work-group size (the backend always passes it; defaults for the
// build-time check).
#ifndef KILN_SPEC_0
#define KILN_SPEC_0 64
#endif
#ifndef KILN_SPEC_1
#define KILN_SPEC_1 1
#endif
#ifndef KILN_SPEC_2
#define KILN_SPEC_2 1
#endif

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
// Four consecutive elements, vec4 i (a channel-packed pixel block).
#ifdef KILN_FP16
#define LOAD4(p, i) vload_half4((i), (p))
#define STORE4(p, i, v) vstore_half4((v), (i), (p))
#else
#define LOAD4(p, i) vload4((i), (p))
#define STORE4(p, i, v) vstore4((v), (i), (p))
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

// Index k of an index tensor (i32, or i64 when idx64) normalized into
// [0, dim) (negative indices count from the end), or -1 when out of range:
// the indexing kernels (gather, gather_elements, gather_nd, scatter,
// one_hot) skip, zero or turn off those.
int IndexIn(__global const uint* ind, uint k, uint dim, bool idx64) {
  int v;
  if (idx64) {
    const long l = ((__global const long*)ind)[k];
    v = l == (long)(int)l ? (int)l : (int)dim;
  } else {
    v = (int)ind[k];
  }
  if (v < 0) v += (int)dim;
  return v >= 0 && v < (int)dim ? v : -1;
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

// Items base .. base + epi - 1 (those below n) of a strided copy through
// `visit(dst, src)`; offsets step item by item, the full divisions only
// where a row ends (copy.cl, copy_u8.cl; shaders/vulkan/copy_strided.glsl).
#define KILN_COPY_ITEMS(p, epi, tile, rows, visit)                             \
  {                                                                            \
    const uint base_ = KILN_GLOBAL_INDEX * (epi);                              \
    if (base_ < (p).n) {                                                       \
      const uint inner_ = (p).rank > 0u ? (p).dims[(p).rank - 1u] : 1u;        \
      const int step_ = (p).rank > 0u ? (p).strides[(p).rank - 1u] : 0;        \
      const uint block_ = (rows) ? (p).dst_block : 0xFFFFFFFFu;                \
      uint c_ = base_ % inner_, src_ = SrcOffset(&(p), base_, tile);           \
      uint col_ = (rows) ? base_ % block_ : 0u, dst_ = DstOffset(&(p), base_, rows); \
      for (uint e_ = 0u; e_ < (epi); ++e_) {                                   \
        const uint i_ = base_ + e_;                                            \
        if (i_ >= (p).n) break;                                                \
        visit(dst_, src_);                                                     \
        if ((tile) || ++c_ == inner_) {                                        \
          c_ = 0u;                                                             \
          src_ = SrcOffset(&(p), i_ + 1u, tile);                               \
        } else {                                                               \
          src_ = (uint)((int)src_ + step_);                                    \
        }                                                                      \
        if ((rows) && ++col_ == block_) {                                      \
          col_ = 0u;                                                           \
          dst_ += (p).dst_row - block_ + 1u;                                   \
        } else {                                                               \
          ++dst_;                                                              \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }


// Every elementwise function of the kernels, written once for OpenCL C: the
// unary ops (unary.cl) and the fused activations share UnaryFn and its
// numbering, fb::OpType's values (kiln_op_codes.h, generated at build time
// from schema/kiln.fbs and put before this file in every program). The GLSL
// twin is shaders/vulkan/unary_fn.glsl. alpha and beta: LeakyRelu's slope
// and Elu's alpha (alpha); Clip's bounds; HardSigmoid's alpha and beta. Code
// 0 (and any code without a case): the identity.
// log(1 + e^v) without overflow for large v.
// The push constants of the broadcasting two-input kernels (binary,
// binary_int, binary_bytes, pow_mixed, compare, compare_bool): c's n
// elements over `rank` dims, a's and b's strides (0 where broadcast).
typedef struct {
  uint n, rank;
  uint dims[KILN_MAX_RANK];
  uint sa[KILN_MAX_RANK];
  uint sb[KILN_MAX_RANK];
} BroadcastPush;

// x / y rounded to nearest, as IEEE division (the host's): OpenCL C lets
// float division be 2.5 ulp off (shaders/vulkan/common.glsl's DivRn).
float DivRn(float x, float y) {
  const float q = x / y;
  if (q == 0.0f || isinf(q) || isnan(q)) return q;
  return q + fma(-q, y, x) / y;
}

// The float functions of the binary ops (binary.cl, binary_bytes.cl;
// shaders/vulkan/binary_fn.glsl): 0 Add, 1 Sub, 2 Mul, 3 Div, 4 Pow, 5 Max,
// 6 Min, 7 PRelu, 8 Mod with fmod (the dividend's sign), 9 Mod (the
// divisor's sign).
float BinaryFloat(uint op, float x, float y) {
  switch (op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return DivRn(x, y);
    case 4: {  // Pow: negative bases with integral exponents keep their sign
      if (x >= 0.0f) return pow(x, y);
      float r = pow(-x, y);
      return fmod(y, 2.0f) == 1.0f ? -r : (y == floor(y) ? r : NAN);
    }
    case 5: return fmax(x, y);
    case 6: return fmin(x, y);
    case 8:
    case 9: {
      const float r = fmod(x, y);
      return op == 9 && r != 0.0f && ((r < 0.0f) != (y < 0.0f)) ? r + y : r;
    }
    default: return x >= 0.0f ? x : x * y;  // 7: PRelu
  }
}

float Softplus(float v) { return v > 0.0f ? v + log(1.0f + exp(-v)) : log(1.0f + exp(v)); }

float UnaryFn(uint code, float v, float alpha, float beta) {
  switch (code) {
    case KILN_OP_Relu: return fmax(v, 0.0f);
    case KILN_OP_LeakyRelu: return v >= 0.0f ? v : v * alpha;
    case KILN_OP_Clip: return v < alpha ? alpha : (v > beta ? beta : v);
    case KILN_OP_Sigmoid: return 1.0f / (1.0f + exp(-v));
    case KILN_OP_Tanh: return tanh(clamp(v, -15.0f, 15.0f));
    case KILN_OP_HardSigmoid: return clamp(alpha * v + beta, 0.0f, 1.0f);
    case KILN_OP_HardSwish: return v * clamp(v / 6.0f + 0.5f, 0.0f, 1.0f);
    case KILN_OP_Elu: return v >= 0.0f ? v : alpha * (exp(v) - 1.0f);
    case KILN_OP_Erf: return erf(v);
    case KILN_OP_Gelu: return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
    case KILN_FN_GELU_TANH: {
      float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      return 0.5f * v * (1.0f + tanh(clamp(u, -15.0f, 15.0f)));
    }
    case KILN_FN_SILU: return v / (1.0f + exp(-v));
    case KILN_OP_Exp: return exp(v);
    case KILN_OP_Log: return log(v);
    case KILN_OP_Sqrt: return sqrt(v);
    case KILN_OP_Neg: return -v;
    case KILN_OP_Abs: return fabs(v);
    case KILN_OP_Reciprocal: return 1.0f / v;
    case KILN_OP_Softsign: return v / (1.0f + fabs(v));
    case KILN_OP_Mean: return v * alpha;  // the scale after Mean's sum
    case KILN_OP_Sin: return sin(v);
    case KILN_OP_Cos: return cos(v);
    case KILN_OP_Tan: return tan(v);
    case KILN_OP_Asin: return asin(v);
    case KILN_OP_Acos: return acos(v);
    case KILN_OP_Atan: return atan(v);
    case KILN_OP_Sinh: return sinh(v);
    case KILN_OP_Cosh: return cosh(v);
    case KILN_OP_Asinh: return asinh(v);
    case KILN_OP_Acosh: return acosh(v);
    case KILN_OP_Atanh: return atanh(v);
    case KILN_OP_Ceil: return ceil(v);
    case KILN_OP_Floor: return floor(v);
    case KILN_OP_Round: return rint(v);
    case KILN_OP_Sign: return sign(v);
    case KILN_OP_Softplus: return Softplus(v);
    case KILN_OP_Mish: return v * tanh(clamp(Softplus(v), -15.0f, 15.0f));
    case KILN_OP_Selu: return beta * (v > 0.0f ? v : alpha * (exp(v) - 1.0f));
    case KILN_OP_Celu: return v > 0.0f ? v : alpha * (exp(v / alpha) - 1.0f);
    case KILN_OP_ThresholdedRelu: return v > alpha ? v : 0.0f;
    case KILN_OP_Shrink: return v < -beta ? v + alpha : (v > beta ? v - alpha : 0.0f);
    default: return v;
  }
}

// The activation a graph pass fused into Conv, ConvTranspose or Gemm: Clip's
// bounds in lo and hi (Relu6 is Clip [0, 6]), LeakyRelu's slope in alpha.
float FusedActivation(uint act, float v, float lo, float hi, float alpha) {
  return UnaryFn(act, v, act == KILN_OP_LeakyRelu ? alpha : lo, hi);
}

// One block of four channels of conv_c4.cl / conv_dw_c4.cl
// (shaders/vulkan/conv_c4_common.glsl): channels 4*block.. at pixel `pix`
// of image n, the tensor having `channels` channels of `vol` pixels,
// channel-packed or NCHW; 0 past the last channel.
float4 LoadX4(__global const STORE_T* x, bool packed, uint channels, uint n, uint block, uint vol, uint pix) {
  if (packed) return LOAD4(x, (n * ((channels + 3u) / 4u) + block) * vol + pix);
  const uint c0 = block * 4u, base = (n * channels + c0) * vol + pix;
  float4 v = (float4)(0.0f);
  if (c0 < channels) v.x = LOAD(x, base);
  if (c0 + 1u < channels) v.y = LOAD(x, base + vol);
  if (c0 + 2u < channels) v.z = LOAD(x, base + 2u * vol);
  if (c0 + 3u < channels) v.w = LOAD(x, base + 3u * vol);
  return v;
}

// v through the fused activation `act` into that block; packed lanes past
// the last channel are written zero.
void StoreY4(__global STORE_T* y, bool packed, uint act, uint channels, uint n, uint block, uint vol, uint pix,
             float4 v, float lo, float hi, float slope) {
  const uint c0 = block * 4u;
  float e[4] = {v.x, v.y, v.z, v.w};
  for (uint j = 0u; j < 4u; ++j) e[j] = c0 + j < channels ? FusedActivation(act, e[j], lo, hi, slope) : 0.0f;
  if (packed) {
    STORE4(y, (n * ((channels + 3u) / 4u) + block) * vol + pix, (float4)(e[0], e[1], e[2], e[3]));
    return;
  }
  for (uint j = 0u; j < 4u && c0 + j < channels; ++j) STORE(y, (n * channels + c0 + j) * vol + pix, e[j]);
}

// StoreY4 after adding a fused residual r (fuse_residual's fourth input,
// in Y's layout and shape) where `residual`: y = act(conv + b + r).
void StoreY4R(__global STORE_T* y, __global const STORE_T* r, bool residual, bool packed, uint act, uint channels,
              uint n, uint block, uint vol, uint pix, float4 v, float lo, float hi, float slope) {
  if (residual) v += LoadX4(r, packed, channels, n, block, vol, pix);
  StoreY4(y, packed, act, channels, n, block, vol, pix, v, lo, hi, slope);
}

// The push constants of the Winograd F(2x2, 3x3) kernels (wino_in.cl,
// wino_gemm.cl, wino_out.cl; shaders/vulkan/wino_common.glsl).
typedef struct {
  uint c, c4, m, m4, batch, total, h, w, oh, ow;
  int ph, pw;
  uint tw, tiles, bias_at;
  float lo, hi, slope;
} WinoPush;

// The window part of the conv kernels' push constants (struct Window of
// backends/gpu/ops/gpu_nn_conv.cpp): input extents, output extents, kernel,
// strides, dilations, begin pads over depth, height, width.
#define CONV_WINDOW \
  uint d, h, w;     \
  uint od, oh, ow;  \
  uint kd, kh, kw;  \
  uint sd, sh, sw;  \
  uint dd, dh, dw;  \
  int pd, ph, pw;

// The push constants of conv.cl and conv_direct.cl (one C++ struct in
// gpu_nn_conv.cpp): channels in all groups, per group in and out, groups,
// batch; the window; the fused activation's bounds; work items (direct).
typedef struct {
  uint c, cg, mg, groups, batch;
  CONV_WINDOW
  float lo, hi, slope;
  uint total;
} ConvPush;

// The tiled-GEMM core of gemm.cl and conv.cl (shaders/vulkan/gemm_tile.glsl):
// a work group of LX x LY computes a TM x TN tile from TK-deep slices of A
// (As[k][m]) and B (Bs[k][n]) staged in local memory; each work item owns a
// 4 x 4 register block at rows ty + i * LY and columns tx + j * LX.
#define TK 16u
#define LX ((uint)KILN_SPEC_0)
#define LY ((uint)KILN_SPEC_1)
#define TM (4u * LY)
#define TN (4u * LX)
#define NT (LX * LY)
#define TILE_MAX 64u
#define AS_STRIDE (TM + 1u)
#define BS_STRIDE (TN + 1u)
#define TILE_INDEX ((uint)get_group_id(0) + (uint)get_group_id(1) * (uint)get_num_groups(0))
#define LOCAL_INDEX ((uint)get_local_id(0) + (uint)get_local_id(1) * (uint)get_local_size(0))

// acc[i * 4 + j] += As * Bs over one TK slice.
void MultiplyTile(__local const float* As, __local const float* Bs, float* acc) {
  const uint tx = get_local_id(0), ty = get_local_id(1);
  for (uint k = 0u; k < TK; ++k) {
    float a[4], b[4];
    for (uint i = 0u; i < 4u; ++i) a[i] = As[k * AS_STRIDE + ty + i * LY];
    for (uint j = 0u; j < 4u; ++j) b[j] = Bs[k * BS_STRIDE + tx + j * LX];
    for (uint i = 0u; i < 4u; ++i)
      for (uint j = 0u; j < 4u; ++j) acc[i * 4u + j] += a[i] * b[j];
  }
}

// The rows of the reduce family's row kernels (reduce, reduce_arg, softmax,
// norm_stats; see shaders/vulkan/reduce_rows.glsl), a row being the
// elements behind one result. With ROW_GROUP (spec constant 3, defined by
// the kernel) one work group of KILN_SPEC_0 items, a power of two, takes a
// row (rows folded into y past the group-count limit): its items stride over
// the row and a tree in __local arrays of KILN_SPEC_0 entries combines their
// partials. Otherwise one item takes a row. Either way a row is walked as
// ROW_LANE, ROW_LANE + ROW_STEP, ...
#define ROW_INDEX (ROW_GROUP ? (uint)get_group_id(0) + (uint)get_group_id(1) * (uint)get_num_groups(0) : KILN_GLOBAL_INDEX)
#define ROW_LANE (ROW_GROUP ? (uint)get_local_id(0) : 0u)
#define ROW_STEP (ROW_GROUP ? (uint)get_local_size(0) : 1u)

// Cast between f32, f16, i32, i64 and bool on raw bits, shared by cast.cl
// (32-bit words) and cast_u8.cl (bytes); see shaders/vulkan/cast.glsl. An
// element is a ulong (narrower ones zero-extended). The result is the host
// kernel's (host_fallback/ops/elementwise.cpp) bit for bit on every device,
// whatever its float rounding and denormal modes:
//   * float -> int truncates toward zero and saturates, NaN -> 0;
//   * int -> float rounds as the host's int64 -> double -> float does: to
//     53 bits, then to 24 bits, each to nearest even;
//   * f32 -> f16 rounds to nearest even, f16 -> f32 is exact (integer code:
//     vstore_half could meet a device that flushes subnormals);
//   * x -> bool is x != 0 (NaN is true); i64 -> i32 keeps the low word;
//   * float -> u8 / i8 truncates toward zero and saturates to the byte's
//     range (NaN -> 0); integers -> u8 / i8 keep the low byte (wrap).
// The kinds are the op layer's cast kinds (gpu_layout_logic.cpp).
#define KIND_F32 0u
#define KIND_F16 1u
#define KIND_I32 2u
#define KIND_I64 3u
#define KIND_BOOL 4u
#define KIND_U8 5u
#define KIND_I8 6u

// v rounded to its `keep` most significant bits, to nearest even.
ulong RoundBits(ulong v, int keep) {
  const int drop = 64 - (int)clz(v) - keep;
  if (drop <= 0) return v;
  const ulong q = v >> drop, rem = v & ((1ul << drop) - 1ul), half_ulp = 1ul << (drop - 1);
  const bool up = rem > half_ulp || (rem == half_ulp && (q & 1ul) != 0ul);
  return (q + (up ? 1ul : 0ul)) << drop;
}

// A signed 64-bit integer as f32 bits. The magnitude, once rounded, has at
// most 24 significant bits, so its conversion to float is exact.
uint IntToFloat(long v) {
  const float f = (float)RoundBits(RoundBits(v < 0 ? 0ul - (ulong)v : (ulong)v, 53), 24);
  return as_uint(v < 0 ? -f : f);
}

// f32 bits truncated toward zero to a signed integer of `bits` (32 or 64)
// bits, saturated; NaN -> 0.
long FloatToInt(uint f, uint bits) {
  if ((f & 0x7fffffffu) > 0x7f800000u) return 0;
  return bits == 64u ? convert_long_sat_rtz(as_float(f)) : (long)convert_int_sat_rtz(as_float(f));
}

uint FloatToHalf(uint x) {
  const uint sign = (x >> 16) & 0x8000u;
  const int e = (int)((x >> 23) & 0xffu) - 127 + 15;
  uint mant = x & 0x7fffffu;
  if (((x >> 23) & 0xffu) == 0xffu) return sign | 0x7c00u | (mant != 0u ? 0x200u : 0u);
  if (e >= 31) return sign | 0x7c00u;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000u;
    const uint shift = (uint)(14 - e);
    uint h = mant >> shift;
    const uint rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (h & 1u) != 0u)) ++h;
    return sign | h;
  }
  uint h = sign | ((uint)e << 10) | (mant >> 13);
  const uint rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) ++h;
  return h;
}

uint HalfToFloat(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (e == 0u) {
    if (mant == 0u) return sign;
    const int msb = 31 - (int)clz(mant);  // subnormal: normalize
    return sign | ((uint)(msb - 24 + 127) << 23) | ((mant << (uint)(10 - msb)) & 0x3ffu) << 13;
  }
  if (e == 31u) return sign | 0x7f800000u | (mant << 13);
  return sign | ((e + 127u - 15u) << 23) | (mant << 13);
}

// Element bits v of kind src as kind dst.
ulong CastBits(ulong v, uint src, uint dst) {
  if (src == KIND_F32 || src == KIND_F16) {
    const uint f = src == KIND_F16 ? HalfToFloat((uint)v) : (uint)v;
    switch (dst) {
      case KIND_F32: return f;
      case KIND_F16: return FloatToHalf(f);
      case KIND_I32: return (uint)FloatToInt(f, 32u);
      case KIND_I64: return as_ulong(FloatToInt(f, 64u));
      case KIND_U8: return (ulong)(uint)clamp((int)FloatToInt(f, 32u), 0, 255);
      case KIND_I8: return (ulong)((uint)clamp((int)FloatToInt(f, 32u), -128, 127) & 0xffu);
      default: return (f & 0x7fffffffu) != 0u ? 1ul : 0ul;
    }
  }
  long i = as_long(v);
  if (src == KIND_I32) i = (long)(int)(uint)v;
  if (src == KIND_BOOL) i = v != 0ul ? 1 : 0;
  if (src == KIND_U8) i = (long)(v & 0xfful);
  if (src == KIND_I8) i = (long)as_char((uchar)(v & 0xfful));
  switch (dst) {
    case KIND_F32: return IntToFloat(i);
    case KIND_F16: return FloatToHalf(IntToFloat(i));
    case KIND_I32: return (uint)i;
    case KIND_I64: return as_ulong(i);
    case KIND_U8:
    case KIND_I8: return as_ulong(i) & 0xfful;
    default: return i != 0 ? 1ul : 0ul;
  }
}

// The quantized kernels' 8-bit loads, division and requantizing (quantize,
// dequantize, dq_range, qmatmul, qconv; shaders/vulkan/quant.glsl), with the
// host kernels' arithmetic (host_fallback/ops/quant.cpp). The quotient is
// DivRn's in the _f64 variants too: NVIDIA's compiler turned
// (float)((double)a / (double)b) back into its inexact float division (the
// scale of DynamicQuantizeLinear 1 ulp off on an H100, stop 37).
#ifdef KILN_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define QDIV(a, b) DivRn((a), (b))

int LoadQ(uchar v, uint type) { return type == 1 ? (int)as_char(v) : (int)v; }
int QLo(uint type) { return type == 1 ? -128 : 0; }
int QHi(uint type) { return type == 1 ? 127 : 255; }

// round(q) half to even, plus zp, saturated to [lo, hi]; NaN gives zp.
int QuantizeValue(float q, int zp, int lo, int hi) {
  if (isnan(q)) return zp;
  const float r = rint(q) + (float)zp;
  if (r < (float)lo) return lo;
  if (r > (float)hi) return hi;
  return (int)r;
}

// An int32 sum as f32 times an f32 multiplier, in f32 (the host's and
// onnxruntime's arithmetic), rounded half to even, plus zp, saturated.
int Requantize(int acc, float mult, int zp, int lo, int hi) { return QuantizeValue((float)acc * mult, zp, lo, hi); }

// The four bytes of a word as integers of quantized type `type` (the int8
// kernels' packed words, qpack4).
int4 Unpack4(uint v, uint type) {
  const int4 b = (int4)((int)(v & 0xff), (int)((v >> 8) & 0xff), (int)((v >> 16) & 0xff), (int)(v >> 24));
  return type == 1 ? (b << 24) >> 24 : b;
}

// Their dot product (no device here offers cl_khr_integer_dot_product).
int Dot4(int4 a, int4 b) {
  const int4 p = a * b;
  return p.x + p.y + p.z + p.w;
}

// The push constants of qconv / qconv_dot and qmatmul / qmatmul_dot (as
// gpu_quant.cpp's QConvPush and QMatMulPush).
typedef struct {
  uint n, cin, cout, cg, mg;
  uint in_dims[3];
  uint out_dims[3];
  uint ksize[3];
  uint stride[3];
  uint dil[3];
  uint pad[3];
  float act_lo, act_hi;
} QConvPush;

typedef struct {
  uint n, m, cols, k, rank;
  uint batch[4];
  uint stride_a[4];
  uint stride_b[4];
} QMatMulPush;

// MatMulInteger's / QLinearMatMul's output element i (row r, column j) from
// its int32 sum (qmatmul, qmatmul_dot; flags as qmatmul.cl): the sum itself
// (yt 2), or requantized with sa sb / sy.
void QMatMulStore(__global uchar* y, uint i, uint r, uint j, int acc, uint flags, uint yt, __global const float* sa,
                  __global const float* sb, __global const float* sy, __global const uchar* zy,
                  __global const int* bias) {
  if ((flags & 64) != 0) acc += bias[j];
  if (yt == 2) {
    ((__global int*)y)[i] = acc;
    return;
  }
  const float mult = QDIV(sa[(flags & 16) != 0 ? r : 0] * sb[(flags & 32) != 0 ? j : 0], sy[0]);
  y[i] = (uchar)(Requantize(acc, mult, LoadQ(zy[0], yt), QLo(yt), QHi(yt)) & 0xff);
}

// ConvInteger's / QLinearConv's output element i (channel m) from its int32
// sum (qconv, qconv_dot; FLAGS as qconv.cl): the sum itself (YT 2), or
// requantized with sx sw[m] / sy, the fused clamp's bounds act_lo / act_hi
// (flags 256 / 512) quantized.
void QConvStore(__global uchar* y, uint i, uint m, int acc, uint flags, uint yt, __global const float* sx,
                __global const float* sw, __global const float* sy, __global const uchar* zy,
                __global const int* bias, float act_lo, float act_hi) {
  if ((flags & 64) != 0) acc += bias[m];
  if (yt == 2) {
    ((__global int*)y)[i] = acc;
    return;
  }
  const float mult = QDIV(sx[0] * sw[(flags & 32) != 0 ? m : 0], sy[0]);
  const int zyv = LoadQ(zy[0], yt);
  int lo = QLo(yt), hi = QHi(yt);
  // A fused Relu / Relu6 / Clip: the bounds' quantized images (the host's ActivationRange).
  if ((flags & 256) != 0) lo = max(lo, zyv + (int)clamp(rint(QDIV(act_lo, sy[0])), -1e9f, 1e9f));
  if ((flags & 512) != 0) hi = min(hi, zyv + (int)clamp(rint(QDIV(act_hi, sy[0])), -1e9f, 1e9f));
  y[i] = (uchar)(Requantize(acc, mult, zyv, lo, max(lo, hi)) & 0xff);
}

// The pooling kernels' windows (pool, pool_bytes).
typedef struct {
  uint total;  // output elements
  // ksize: the kernel shape (`kernel` is a keyword of OpenCL C)
  uint in_size[3], out_size[3], ksize[3], stride[3], dilation[3];
  int pad_begin[3], pad_end[3];
} PoolPush;

// Kernel positions k in [0, ksize) with lo <= start + k * dilation < hi.
uint2 TapRange(int start, uint ksize, uint dilation, int lo, int hi) {
  const int d = (int)dilation;
  const int k0 = start >= lo ? 0 : (lo - start + d - 1) / d;
  const int k1 = start >= hi ? 0 : min((int)ksize, (hi - start + d - 1) / d);
  return (uint2)((uint)k0, (uint)max(k0, k1));
}
