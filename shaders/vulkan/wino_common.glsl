// Winograd F(2x2, 3x3) on channel-packed tensors (wino_in.comp,
// wino_gemm.comp, wino_out.comp; planned by backends/gpu/ops/gpu_nn_conv.cpp,
// which documents the buffers). The three kernels bind (source, weights,
// destination) as conv_c4 binds (X, W4, Y): wino_in and wino_out include
// conv_c4_common.glsl for its loads and stores (and, in their _tx
// variants, its texel reads); wino_gemm declares its own bindings.
//
// A 4x4 input patch d of each 2x2 output tile becomes V = B^T d B, the 16
// positions of V are 16 products U[pos] (M x C, from the weights' G g G^T)
// times V[pos] (C x tiles), and each tile's outputs are A^T m A of the 16
// products: 16 multiply-adds where the direct conv does 36.
layout(push_constant) uniform P {
  uint c, c4;          // input channels, and their blocks of four
  uint m, m4;          // output channels, and their blocks of four
  uint batch, total;   // images; invocations of this dispatch
  uint h, w;           // input extents
  uint oh, ow;         // output extents
  int ph, pw;          // begin pads
  uint tw, tiles;      // tiles a row, tiles an image
  uint bias_at;        // vec4 index of the bias in the transformed weights
  float lo, hi, slope; // fused activation
} p;
