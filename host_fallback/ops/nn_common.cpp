// Helpers shared by the host nn kernels (declared in nn_common.h).
#include <cmath>
#include <vector>

#include "ops/nn_common.h"
#include "simd_clones.h"
#include "vec_math.h"

namespace kiln::nn {

// Unsupported unless every given input is f32; names the op and the dtype.
Status NeedF32(const GraphOp& op, const std::vector<Tensor*>& in) {
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k] && in[k]->dtype() != fb::DataType::F32)
      return Unsupported("host %s supports f32 only; input %zu '%s' is %s%s", op.typeName(), k,
                         in[k]->name().c_str(), DataTypeName(in[k]->dtype()),
                         in[k]->dtype() == fb::DataType::U8 || in[k]->dtype() == fb::DataType::I8
                             ? " (a quantized tensor needs a DequantizeLinear first)"
                             : "");
  return Status::Ok();
}

// A fused activation (ConvParams / GemmParams .activation) applied in place
// to y[0, n). Relu6 is always [0, 6]; Clip uses [lo, hi]; LeakyRelu `alpha`;
// Gelu is the exact (erf) form.
// Built for AVX-512 and AVX2 too (KILN_SIMD_CLONES): fused into the
// convolutions' tiles, the scalar HardSwish loop was a fifth of
// MobileNetV3's time.
KILN_SIMD_CLONES
void ApplyFusedActivation(fb::Activation act, float lo, float hi, float alpha, float* y, int64_t n) {
  switch (act) {
    case fb::Activation::None: return;
    case fb::Activation::Relu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.f ? y[i] : 0.f;
      return;
    // Comparisons, not std::fmin/fmax: without -ffast-math those are libm
    // calls per element (they were a third of MobileNetV2's time).
    case fb::Activation::Relu6:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.f ? (y[i] < 6.f ? y[i] : 6.f) : 0.f;
      return;
    case fb::Activation::Clip:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] < lo ? lo : (y[i] > hi ? hi : y[i]);
      return;
    case fb::Activation::LeakyRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] >= 0.f ? y[i] : alpha * y[i];
      return;
    case fb::Activation::Sigmoid:
      SigmoidF32(y, y, n);
      return;
    case fb::Activation::HardSwish:
      for (int64_t i = 0; i < n; ++i) {
        float g = y[i] / 6.f + 0.5f;
        g = g > 0.f ? g : 0.f;  // one select a bound, so the loop vectorizes
        g = g < 1.f ? g : 1.f;
        y[i] *= g;
      }
      return;
    case fb::Activation::Gelu:
      for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * y[i] * (1.f + std::erf(y[i] * 0.70710678118f));
      return;
    case fb::Activation::Silu:
      SiluF32(y, y, n);
      return;
  }
}

Status QuantFusedClamp(const GraphOp& op, float* lo, float* hi) {
  fb::Activation act = fb::Activation::None;
  float amin = 0, amax = 0;
  if (const auto* p = op.params<fb::ConvParams>()) {
    act = p->activation(), amin = p->activation_min(), amax = p->activation_max();
  } else if (const auto* q = op.params<fb::QuantActivationParams>()) {
    act = q->activation(), amin = q->activation_min(), amax = q->activation_max();
  }
  if (!ActivationAsClamp(act, amin, amax, lo, hi))
    return Unsupported("%s: fused activation %s has no integer form (only Relu, Relu6 and Clip)", op.typeName(),
                       fb::EnumNameActivation(act));
  return Status::Ok();
}

bool ActivationAsClamp(fb::Activation act, float act_min, float act_max, float* lo, float* hi) {
  switch (act) {
    case fb::Activation::None: *lo = -INFINITY; *hi = INFINITY; return true;
    case fb::Activation::Relu: *lo = 0.f; *hi = INFINITY; return true;
    case fb::Activation::Relu6: *lo = 0.f; *hi = 6.f; return true;
    case fb::Activation::Clip: *lo = act_min; *hi = act_max; return true;
    default: return false;
  }
}

// Padding of a sliding window (Conv, pools) whose output sizes `out` are
// already known, as [begins..., ends...]: explicit `pads` (empty = 0) for
// NotSet, 0 for Valid, the ONNX split for SAME_UPPER (the odd element at the
// end) and SAME_LOWER (at the beginning).
namespace {
std::vector<int64_t> BlobMeta(const fb::PrepackedBlob& b) {
  return b.meta() ? std::vector<int64_t>(b.meta()->begin(), b.meta()->end()) : std::vector<int64_t>{};
}
}  // namespace

PackedA BundledOrPackA(HostBackend& be, int index, const std::string& key, bool trans_a, int64_t M, int64_t K,
                       const float* A, int64_t lda) {
  PackedA a;
  if (const fb::PrepackedBlob* blob = be.bundled(index, key)) {
    const bool adopted = ViewPackedA(GemmBestIsa(), trans_a, M, K, be.halfWeights(), BlobMeta(*blob),
                                     blob->data()->data(), blob->data()->size(), &a);
    be.noteBundled(index, key, adopted);
    if (adopted) return a;
  }
  a = PackA(GemmBestIsa(), trans_a, M, K, 1.f, A, lda, be.halfWeights(), &be.pool());
  be.countWeightBytes(a.bytes());
  return a;
}

PackedB BundledOrPackB(HostBackend& be, int index, const std::string& key, bool trans_b, int64_t K, int64_t N,
                       const float* B, int64_t ldb) {
  PackedB b;
  if (const fb::PrepackedBlob* blob = be.bundled(index, key)) {
    const bool adopted = ViewPackedB(GemmBestIsa(), trans_b, K, N, be.halfWeights(), BlobMeta(*blob),
                                     blob->data()->data(), blob->data()->size(), &b);
    be.noteBundled(index, key, adopted);
    if (adopted) return b;
  }
  b = PackB(GemmBestIsa(), trans_b, K, N, B, ldb, be.halfWeights(), &be.pool());
  be.countWeightBytes(b.bytes());
  return b;
}

}  // namespace kiln::nn
