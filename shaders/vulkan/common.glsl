// Shared by every Kiln compute shader (included after #version).
//
// Conventions:
//   * specialization constants 0, 1, 2 are the work-group size; a shader's
//     own constants start at id 3;
//   * push constants hold what changes with shapes (at most 128 bytes);
//   * storage type and arithmetic type are named separately: buffers hold
//     STORE_T, math is in float (fp32 accumulation even for fp16 storage).
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

// x / y rounded to nearest, as IEEE division (the host's): Vulkan lets
// OpFDiv be 2.5 ulp off, and NVIDIA's is (a reciprocal), which moved a
// Div + Round graph's 25.5 to 25 (conformance on an H100, stop 37). The
// residual x - q*y is exact with fma, and one correction step rounds q.
float DivRn(float x, float y) {
  precise float q = x / y;
  if (q == 0.0 || isinf(q) || isnan(q)) return q;
  precise float r = fma(-q, y, x);
  return q + r / y;
}

// STORE_T: the element type of float tensors (STORE4_T: four of them, a
// channel-packed pixel): float, or float16_t in the
// fp16-storage variant (<shader>_f16, built with -DKILN_FP16, used when the
// session asks for Precision::kLow). UNIT_T: the unit a data-movement shader
// moves: a 32-bit word, or 16 bits in the <shader>_u16 variant (f16 and
// fp16-stored tensors). Loads widen to float and stores narrow from float
// (GL_EXT_shader_16bit_storage); arithmetic stays fp32.
#if defined(KILN_FP16) || defined(KILN_UNIT16)
#extension GL_EXT_shader_16bit_storage : require
#endif
#ifdef KILN_FP16
#define STORE_T float16_t
#define STORE4_T f16vec4
#else
#define STORE_T float
#define STORE4_T vec4
#endif
// KILN_FP16_MATH (the <shader>_f16m variants: fp16 storage on a device
// with shaderFloat16, at precision low; VulkanBackend::kernel picks them):
// MATH_T / MATH4_T are float16_t / f16vec4, for the kernels that do their
// multiply-adds in half (partial sums of a bounded length, added to f32
// accumulators); elsewhere float and vec4.
#ifdef KILN_FP16_MATH
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define MATH_T float16_t
#define MATH4_T f16vec4
#else
#define MATH_T float
#define MATH4_T vec4
#endif
#define KILN_F16_CHUNK 16u  // input blocks (64 channels) a half partial sum

// UnitToFloat / FloatToUnit read and write a unit holding a float (Resize's
// linear mode): fp16 bits in a 16-bit unit. Macros, since 16-bit types may
// only be loaded and stored (no parameters) without shaderInt16.
#ifdef KILN_UNIT16
#define UNIT_T uint16_t
#define UnitToFloat(u) unpackHalf2x16(uint(u)).x
#define FloatToUnit(f) UNIT_T(packHalf2x16(vec2((f), 0.0)))
#else
#define UNIT_T uint
#define UnitToFloat(u) uintBitsToFloat(u)
#define FloatToUnit(f) floatBitsToUint(f)
#endif

// A 1-D index over work that may have been folded into y (more than 65535
// groups of x).
#define KILN_GLOBAL_INDEX (gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// Broadcast index: the element of an input for output element `i`, given the
// output's dims (innermost last) and the input's strides (0 where broadcast).
#define KILN_MAX_RANK 6
uint BroadcastOffset(uint i, uint rank, uint dims[KILN_MAX_RANK], uint strides[KILN_MAX_RANK]) {
  uint off = 0;
  [[unroll]] for (int d = KILN_MAX_RANK - 1; d >= 0; --d) {
    if (uint(d) < rank) {
      uint q = i / dims[d];
      off += (i - q * dims[d]) * strides[d];
      i = q;
    }
  }
  return off;
}

// The push constants of the broadcasting two-input shaders (binary,
// binary_int, binary_bytes, pow_mixed, compare, compare_bool): c's n
// elements over `rank` dims, a's and b's strides (0 where broadcast).
#define KILN_BROADCAST_PUSH                \
  layout(push_constant) uniform P {        \
    uint n, rank;                          \
    uint dims[KILN_MAX_RANK];              \
    uint sa[KILN_MAX_RANK];                \
    uint sb[KILN_MAX_RANK];                \
  } p

// An index of an index tensor normalized into [0, dim) (negative indices
// count from the end), or -1 when out of range: `lo` is the i32, or an i64's
// low word with `hi` its high word (wide); an i64 outside int's range is out
// of range. KILN_INDEX(k, dim) reads index k of the shader's `ind` buffer
// (one word an index, or two with its IDX64 specialization constant).
int NormalizeIndex(uint lo, uint hi, bool wide, uint dim) {
  int v = int(lo);
  if (wide && hi != (v < 0 ? 0xffffffffu : 0u)) return -1;
  if (v < 0) v += int(dim);
  return v >= 0 && v < int(dim) ? v : -1;
}
#define KILN_INDEX(k, dim) \
  NormalizeIndex(IDX64 ? ind[2u * (k)] : ind[k], IDX64 ? ind[2u * (k) + 1u] : 0u, IDX64, dim)

// erf with |error| < 1.5e-7 (Abramowitz and Stegun 7.1.26).
float Erf(float x) {
  float s = sign(x), a = abs(x);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t *
                      exp(-a * a);
  return s * y;
}

// The pooling kernels' windows (pool, pool_bytes).
// Kernel positions k in [0, kernel) with lo <= start + k * dilation < hi.
uvec2 TapRange(int start, uint kernel, uint dilation, int lo, int hi) {
  const int d = int(dilation);
  const int k0 = start >= lo ? 0 : (lo - start + d - 1) / d;
  const int k1 = start >= hi ? 0 : min(int(kernel), (hi - start + d - 1) / d);
  return uvec2(k0, max(k0, k1));
}
