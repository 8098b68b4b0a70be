// Shared by conv_c4.comp and conv_dw_c4.comp: their specialization
// constants, bindings, and the load and store of one block of four
// channels in either layout. Included after common.glsl and
// unary_fn.glsl.
//
// X and Y are each channel-packed ([N][ceil(C/4)][vol][4], a vec4 per pixel
// and block; X_PACKED, Y_PACKED) or NCHW (four scalar accesses, channels
// past C masked), so a conv sits at a border between the layouts without a
// conversion pass. Block b always holds channels 4b .. 4b+3 of the tensor:
// the kernels run only for one group, depthwise, or groups of whole blocks
// (ConvExecution::packRule), where a group's blocks are the tensor's.
layout(constant_id = 3) const uint ACT = 0;
layout(constant_id = 4) const bool HAS_BIAS = false;
layout(constant_id = 5) const bool X_PACKED = false;
layout(constant_id = 6) const bool Y_PACKED = false;

// Bindings 0 and 2 are each declared twice: per pixel block (vec4) and per
// element; a spec constant picks the one the layout wants. W4 holds the
// repacked weights and bias (PackConvWeights).
//
// KILN_TEXEL (the <shader>_tx variants, GpuBinding::texel): X and W4 are
// uniform texel buffers instead (W4 and a packed X of vec4 texels, an NCHW
// X of one float a texel), where the device reads those faster (lavapipe:
// a storage-buffer load runs lane by lane).
//
// KILN_FP16_MATH (common.glsl): LOAD_X4_AT_M / LOAD_W4_M load as MATH4_T,
// half without a conversion where the storage is half.
#ifdef KILN_TEXEL
layout(binding = 0) uniform samplerBuffer x_texels;
layout(binding = 1) uniform samplerBuffer w_texels;
#define LOAD_X4_AT(i) texelFetch(x_texels, int(i))
#define LOAD_W4(i) texelFetch(w_texels, int(i))
#define LOAD_X4_AT_M(i) MATH4_T(texelFetch(x_texels, int(i)))
#define LOAD_W4_M(i) MATH4_T(texelFetch(w_texels, int(i)))
#else
layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 0) readonly buffer X4 { STORE4_T x4[]; };
layout(std430, binding = 1) readonly buffer W4 { STORE4_T w4[]; };
#define LOAD_X4_AT(i) vec4(x4[i])
#define LOAD_W4(i) vec4(w4[i])
#define LOAD_X4_AT_M(i) MATH4_T(x4[i])
#define LOAD_W4_M(i) MATH4_T(w4[i])
#endif
layout(std430, binding = 2) writeonly buffer Y { STORE_T y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { STORE4_T y4[]; };

// Channels of `block` at pixel `pix` of image n, X having `channels`
// channels of `vol` pixels; 0 past the last channel.
vec4 LoadX4(uint channels, uint n, uint block, uint vol, uint pix) {
  if (X_PACKED) return LOAD_X4_AT((n * ((channels + 3u) / 4u) + block) * vol + pix);
  vec4 v = vec4(0.0);
  const uint c0 = block * 4u, base = (n * channels + c0) * vol + pix;
  [[unroll]] for (uint j = 0u; j < 4u; ++j)
#ifdef KILN_TEXEL
    if (c0 + j < channels) v[j] = texelFetch(x_texels, int(base + j * vol)).x;
#else
    if (c0 + j < channels) v[j] = float(x[base + j * vol]);
#endif
  return v;
}

// LoadX4 as MATH4_T: in half, as stored, in the _f16m variants.
MATH4_T LoadX4M(uint channels, uint n, uint block, uint vol, uint pix) {
  if (X_PACKED) return LOAD_X4_AT_M((n * ((channels + 3u) / 4u) + block) * vol + pix);
  return MATH4_T(LoadX4(channels, n, block, vol, pix));
}

// v through the fused activation into `block` at pixel `pix` of image n, Y
// having `channels` channels of `vol` pixels; packed lanes past the last
// channel are written zero.
void StoreY4(uint channels, uint n, uint block, uint vol, uint pix, vec4 v, float lo, float hi, float slope) {
  const uint c0 = block * 4u;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) v[j] = c0 + j < channels ? FusedActivation(ACT, v[j], lo, hi, slope) : 0.0;
  if (Y_PACKED) {
    y4[(n * ((channels + 3u) / 4u) + block) * vol + pix] = STORE4_T(v);
    return;
  }
  [[unroll]] for (uint j = 0u; j < 4u; ++j)
    if (c0 + j < channels) y[(n * channels + c0 + j) * vol + pix] = STORE_T(v[j]);
}

// KILN_RESIDUAL (conv_c4.comp, wino_out.comp): a fused residual r
// (fuse_residual's fourth input) at binding 3, in Y's layout and shape,
// added before the activation where HAS_RESIDUAL: y = act(conv + b + r).
// Without one the binding holds another buffer of the op, never read.
#ifdef KILN_RESIDUAL
layout(constant_id = 9) const bool HAS_RESIDUAL = false;
layout(std430, binding = 3) readonly buffer R { STORE_T r[]; };
layout(std430, binding = 3) readonly buffer R4 { STORE4_T r4[]; };

// The residual's channels of `block` at pixel `pix` of image n (Y's
// indexing); 0 past the last channel.
vec4 LoadR4(uint channels, uint n, uint block, uint vol, uint pix) {
  if (Y_PACKED) return vec4(r4[(n * ((channels + 3u) / 4u) + block) * vol + pix]);
  vec4 v = vec4(0.0);
  const uint c0 = block * 4u, base = (n * channels + c0) * vol + pix;
  [[unroll]] for (uint j = 0u; j < 4u; ++j)
    if (c0 + j < channels) v[j] = float(r[base + j * vol]);
  return v;
}

// v plus the residual where there is one, then stored as StoreY4 stores.
void StoreY4R(uint channels, uint n, uint block, uint vol, uint pix, vec4 v, float lo, float hi, float slope) {
  if (HAS_RESIDUAL) v += LoadR4(channels, n, block, vol, pix);
  StoreY4(channels, n, block, vol, pix, v, lo, hi, slope);
}
#endif
