// Shared by the conv shaders (conv, conv_direct, conv_depthwise,
// conv_transpose): their specialization constants, bindings, and the window
// part of their push constants, which is the struct Window of
// backends/gpu/ops/gpu_nn_conv.cpp. Three spatial axes (depth, height,
// width); an op with fewer has extent 1 (kernel 1, stride 1, pad 0) on the
// leading ones. Included after common.glsl.
layout(constant_id = 3) const uint ACT = 0;          // fused activation (unary_fn.glsl)
layout(constant_id = 4) const bool HAS_BIAS = false;

layout(std430, binding = 0) readonly buffer X { STORE_T x[]; };
layout(std430, binding = 1) readonly buffer W { STORE_T w[]; };
layout(std430, binding = 2) readonly buffer Bias { STORE_T bias[]; };  // W stands in when there is none
layout(std430, binding = 3) writeonly buffer Y { STORE_T y[]; };

// Input extents, output extents, kernel, strides, dilations, begin pads.
#define CONV_WINDOW \
  uint d, h, w;     \
  uint od, oh, ow;  \
  uint kd, kh, kw;  \
  uint sd, sh, sw;  \
  uint dd, dh, dw;  \
  int pd, ph, pw;
