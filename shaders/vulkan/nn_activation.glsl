// The activation a graph pass may fuse into Conv, ConvTranspose and Gemm
// (fb::Activation; the code is the enum value, a specialization constant of
// the including shader). Included after common.glsl.
//   0 None, 1 Relu, 2 Relu6 (always [0, 6]), 3 Clip [lo, hi], 4 LeakyRelu
//   (slope alpha), 5 Sigmoid, 6 HardSwish, 7 Gelu (exact, erf form), 8 Silu.
float FusedActivation(uint act, float v, float lo, float hi, float alpha) {
  switch (act) {
    case 1: return max(v, 0.0);
    case 2: return clamp(v, 0.0, 6.0);
    case 3: return v < lo ? lo : (v > hi ? hi : v);
    case 4: return v >= 0.0 ? v : alpha * v;
    case 5: return 1.0 / (1.0 + exp(-v));
    case 6: return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);
    case 7: return 0.5 * v * (1.0 + Erf(v * 0.70710678118654752));
    case 8: return v / (1.0 + exp(-v));
    default: return v;
  }
}
