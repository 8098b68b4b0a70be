// Every elementwise function of the GPU kernels, written once for GLSL: the
// unary ops (unary.comp) and the activations fused into Conv, ConvTranspose
// and Gemm (FusedActivation) share UnaryFn and its numbering, fb::OpType's
// values (kiln_op_codes.h, generated at build time from schema/kiln.fbs).
// Included after common.glsl. OpenCL C's twin is in shaders/opencl/common.cl.
#include "kiln_op_codes.h"

// log(1 + e^v) without overflow for large v.
float Softplus(float v) { return v > 0.0 ? v + log(1.0 + exp(-v)) : log(1.0 + exp(v)); }

// alpha and beta: LeakyRelu's slope, Elu's, Celu's and ThresholdedRelu's
// alpha (alpha); Clip's bounds (alpha, beta); HardSigmoid's and Selu's alpha
// and beta (Selu's gamma); Shrink's bias and lambd; Mean's 1 / n (alpha). Code 0 (and any code
// without a case): the identity.
float UnaryFn(uint code, float v, float alpha, float beta) {
  switch (code) {
    case KILN_OP_Relu: return max(v, 0.0);
    case KILN_OP_LeakyRelu: return v >= 0.0 ? v : v * alpha;
    case KILN_OP_Clip: return v < alpha ? alpha : (v > beta ? beta : v);
    case KILN_OP_Sigmoid: return 1.0 / (1.0 + exp(-v));
    case KILN_OP_Tanh: return tanh(clamp(v, -15.0, 15.0));
    case KILN_OP_HardSigmoid: return clamp(alpha * v + beta, 0.0, 1.0);
    case KILN_OP_HardSwish: return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);
    case KILN_OP_Elu: return v >= 0.0 ? v : alpha * (exp(v) - 1.0);
    case KILN_OP_Erf: return Erf(v);
    case KILN_OP_Gelu: return 0.5 * v * (1.0 + Erf(v * 0.70710678118654752));
    case KILN_FN_GELU_TANH: {
      float u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
      return 0.5 * v * (1.0 + tanh(clamp(u, -15.0, 15.0)));
    }
    case KILN_FN_SILU: return v / (1.0 + exp(-v));
    case KILN_OP_Exp: return exp(v);
    case KILN_OP_Log: return log(v);
    case KILN_OP_Sqrt: return sqrt(v);
    case KILN_OP_Neg: return -v;
    case KILN_OP_Abs: return abs(v);
    case KILN_OP_Reciprocal: return 1.0 / v;
    case KILN_OP_Softsign: return v / (1.0 + abs(v));
    case KILN_OP_Mean: return v * alpha;  // the scale after Mean's sum
    case KILN_OP_Sin: return sin(v);
    case KILN_OP_Cos: return cos(v);
    case KILN_OP_Tan: return tan(v);
    // Through atan, whose precision GLSL drivers keep (lavapipe's asin and
    // acos are off by 4e-4).
    case KILN_OP_Asin: return atan(v, sqrt(max(1.0 - v * v, 0.0)));
    case KILN_OP_Acos: return atan(sqrt(max(1.0 - v * v, 0.0)), v);
    case KILN_OP_Atan: return atan(v);
    case KILN_OP_Sinh: return sinh(v);
    case KILN_OP_Cosh: return cosh(v);
    case KILN_OP_Asinh: return asinh(v);
    case KILN_OP_Acosh: return acosh(v);
    case KILN_OP_Atanh: return atanh(v);
    case KILN_OP_Ceil: return ceil(v);
    case KILN_OP_Floor: return floor(v);
    case KILN_OP_Round: return roundEven(v);
    case KILN_OP_Sign: return sign(v);
    case KILN_OP_Softplus: return Softplus(v);
    case KILN_OP_Mish: return v * tanh(clamp(Softplus(v), -15.0, 15.0));
    case KILN_OP_Selu: return beta * (v > 0.0 ? v : alpha * (exp(v) - 1.0));
    case KILN_OP_Celu: return v > 0.0 ? v : alpha * (exp(v / alpha) - 1.0);
    case KILN_OP_ThresholdedRelu: return v > alpha ? v : 0.0;
    case KILN_OP_Shrink: return v < -beta ? v + alpha : (v > beta ? v - alpha : 0.0);
    default: return v;
  }
}

// The activation a graph pass fused into a producer, as the nn shaders take
// it (a specialization constant and push constants; see GpuFusedActivation
// in backends/gpu/ops/gpu_nn_gemm.h): Clip's bounds in lo and hi (Relu6 is
// Clip [0, 6]), LeakyRelu's slope in alpha.
float FusedActivation(uint act, float v, float lo, float hi, float alpha) {
  return UnaryFn(act, v, act == KILN_OP_LeakyRelu ? alpha : lo, hi);
}
