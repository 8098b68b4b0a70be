// Conv and ConvTranspose on GPU (f32, 1 to 3 spatial axes: the shaders
// are 3-D, a 2-D op is a 3-D one of depth 1, a 1-D op also of height 1).
// Conv picks a kernel per shape at resize:
//   * depthwise (one input channel per group): conv_depthwise.comp, direct;
//   * 1x1, stride 1, unpadded, one group: a GEMM over channels, W [M, C]
//     times each image's [C, D*H*W] (gemm.comp, batched over N);
//   * otherwise: conv.comp, an implicit GEMM over (group, M/group) x
//     (N*OD*OH*OW) with K = C/group * KD * KH * KW, the im2col tile read
//     from X on the fly (conv_direct.comp on CPU drivers).
// W's NCHW layout is already the row-major [M, K] matrix every path wants,
// so weights are used in place (constant or not). Where X or Y is
// channel-packed (GpuLayout::kPacked; constant W and bias, one group,
// depthwise, or groups of whole channel blocks), conv_c4.comp /
// conv_dw_c4.comp compute on vec4 blocks of four channels with the weights
// repacked once into blocks of their own (PackConvWeights). Bias and the fused
// activation are applied in the store. ConvTranspose gathers
// (conv_transpose.comp). Pads follow the host kernels (nn_conv.cpp):
// explicit, VALID, SAME_UPPER / SAME_LOWER, and for ConvTranspose the split
// implied by output_shape / output_padding.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "gpu_nn_gemm.h"

namespace kiln {
namespace {

using IntVec = std::vector<int64_t>;

IntVec IntsOr(const flatbuffers::Vector<int32_t>* v, size_t n, int64_t dflt) {
  if (!v || v->size() == 0) return IntVec(n, dflt);
  return IntVec(v->begin(), v->end());
}

// The window of a Conv or ConvTranspose over three spatial axes (depth,
// height, width), as the shaders' push constants hold it (CONV_WINDOW in
// conv_common.glsl): input and output extents, kernel, strides, dilations,
// begin pads. Axes an op lacks are the leading ones, of extent 1.
struct Window {
  uint32_t d = 1, h = 1, w = 1, od = 1, oh = 1, ow = 1, kd = 1, kh = 1, kw = 1;
  uint32_t sd = 1, sh = 1, sw = 1, dd = 1, dh = 1, dw = 1;
  int32_t pd = 0, ph = 0, pw = 0;
};
static_assert(sizeof(Window) == 18 * 4, "Window is CONV_WINDOW: 18 words");

// `in`, `out`, `kernel`, `strides`, `dilations`, `pad_begin`: one entry per
// spatial axis (1 to 3).
Window MakeWindow(const IntVec& in, const IntVec& out, const IntVec& kernel, const IntVec& strides,
                  const IntVec& dilations, const IntVec& pad_begin) {
  Window w;
  // Window's fields by axis, depth first; the op's axes fill the last ones.
  uint32_t* const ext[3] = {&w.d, &w.h, &w.w};
  uint32_t* const oext[3] = {&w.od, &w.oh, &w.ow};
  uint32_t* const ker[3] = {&w.kd, &w.kh, &w.kw};
  uint32_t* const str[3] = {&w.sd, &w.sh, &w.sw};
  uint32_t* const dil[3] = {&w.dd, &w.dh, &w.dw};
  int32_t* const pad[3] = {&w.pd, &w.ph, &w.pw};
  const size_t n = in.size(), first = 3 - n;
  for (size_t i = 0; i < n; ++i) {
    *ext[first + i] = static_cast<uint32_t>(in[i]);
    *oext[first + i] = static_cast<uint32_t>(out[i]);
    *ker[first + i] = static_cast<uint32_t>(kernel[i]);
    *str[first + i] = static_cast<uint32_t>(strides[i]);
    *dil[first + i] = static_cast<uint32_t>(dilations[i]);
    *pad[first + i] = static_cast<int32_t>(pad_begin[i]);
  }
  return w;
}

// Conv padding as [begins..., ends...] (the host's WindowPads).
IntVec ConvPads(const fb::ConvParams* p, const IntVec& in, const IntVec& out, const IntVec& kernel,
                const IntVec& strides, const IntVec& dilations) {
  const size_t n = in.size();
  const fb::AutoPad ap = p ? p->auto_pad() : fb::AutoPad::NotSet;
  const IntVec pads = IntsOr(p ? p->pads() : nullptr, 0, 0);
  IntVec r(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (ap == fb::AutoPad::SameUpper || ap == fb::AutoPad::SameLower) {
      const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, (out[i] - 1) * strides[i] + extent - in[i]);
      r[i] = ap == fb::AutoPad::SameUpper ? total / 2 : total - total / 2;
      r[i + n] = total - r[i];
    } else if (ap == fb::AutoPad::NotSet && pads.size() == 2 * n) {
      r[i] = pads[i];
      r[i + n] = pads[i + n];
    }
  }
  return r;
}

// ConvTranspose begin pads (the host's TransposePadBegin): explicit pads, or,
// when output_shape or SAME_* fix the output size, a split of the total
// padding (the odd element at the end for SAME_UPPER, else at the beginning).
IntVec TransposePadBegin(const fb::ConvParams* p, const IntVec& in, const IntVec& out, const IntVec& kernel,
                         const IntVec& strides, const IntVec& dilations) {
  const size_t n = in.size();
  const fb::AutoPad ap = p ? p->auto_pad() : fb::AutoPad::NotSet;
  const bool has_output_shape = p && p->output_shape() && p->output_shape()->size() > 0;
  const bool same = ap == fb::AutoPad::SameUpper || ap == fb::AutoPad::SameLower;
  IntVec begin(n, 0);
  if (!has_output_shape && !same) {
    if (ap == fb::AutoPad::NotSet) {
      const IntVec pads = IntsOr(p ? p->pads() : nullptr, 2 * n, 0);
      for (size_t i = 0; i < n; ++i) begin[i] = pads[i];
    }
    return begin;
  }
  const IntVec out_pad = IntsOr(p ? p->output_padding() : nullptr, n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t total = std::max<int64_t>(0, strides[i] * (in[i] - 1) + out_pad[i] + extent - out[i]);
    begin[i] = ap == fb::AutoPad::SameUpper ? total / 2 : total - total / 2;
  }
  return begin;
}

// Shapes and attributes common to both ops, read at resize.
struct ConvShapes {
  IntVec in, out, kernel, strides, dilations;
  uint32_t batch = 0, c = 0, m = 0, groups = 1;
};

StatusOr<ConvShapes> ReadConvShapes(const fb::ConvParams* p, const std::vector<Tensor*>& in,
                                    const std::vector<Tensor*>& out) {
  for (const Tensor* t : {in[0], in[1], out[0]}) KILN_RETURN_IF_ERROR(Require32Bit(*t));
  ConvShapes s;
  const IntVec& x = in[0]->shape();
  const IntVec& y = out[0]->shape();
  if (x.size() < 3 || x.size() > 5)
    return Unsupported("'%s' has rank %zu; the GPU conv kernels take 3 to 5", in[0]->name().c_str(), x.size());
  const size_t n = x.size() - 2;
  s.in.assign(x.begin() + 2, x.end());
  s.out.assign(y.begin() + 2, y.end());
  s.kernel.assign(in[1]->shape().begin() + 2, in[1]->shape().end());
  s.strides = IntsOr(p ? p->strides() : nullptr, n, 1);
  s.dilations = IntsOr(p ? p->dilations() : nullptr, n, 1);
  s.batch = static_cast<uint32_t>(x[0]);
  s.c = static_cast<uint32_t>(x[1]);
  s.m = static_cast<uint32_t>(y[1]);
  s.groups = static_cast<uint32_t>(p ? p->group() : 1);
  return s;
}

// The push-constant tail of every conv shader.
struct ActPush {
  float lo, hi, slope;
};

// The constant weights (and bias) of a conv in the blocks conv_c4.comp and
// conv_dw_c4.comp read, as floats (four per vec4); the bias starts at vec4
// *bias_at. Depthwise: the vec4 of channel block cb and tap t at
// cb * kvol + t. Otherwise: column j of (group g, output block mb, tap t,
// input block cb) at ((gmb * kvol + t) * cg4 + cb) * 4 + j, gmb =
// g * mg4 + mb, lane l holding W[g*mg + 4mb + l][4cb + j][t]. Zero past the
// channels.
std::vector<float> PackConvWeights(const float* w, const float* bias, const ConvShapes& s, uint32_t kvol,
                                   bool depthwise, uint32_t* bias_at) {
  const uint32_t cg = s.c / s.groups, mg = s.m / s.groups;
  std::vector<float> out;
  if (depthwise) {
    const uint32_t c4 = (s.m + 3) / 4;
    *bias_at = c4 * kvol;
    out.assign((*bias_at + c4) * 4, 0.f);
    for (uint32_t c = 0; c < s.m; ++c)
      for (uint32_t t = 0; t < kvol; ++t) out[((c / 4) * kvol + t) * 4 + c % 4] = w[c * kvol + t];
    if (bias)
      for (uint32_t c = 0; c < s.m; ++c) out[(*bias_at + c / 4) * 4 + c % 4] = bias[c];
    return out;
  }
  const uint32_t cg4 = (cg + 3) / 4, mg4 = (mg + 3) / 4, blocks = s.groups * mg4;
  *bias_at = blocks * kvol * cg4 * 4;
  out.assign((*bias_at + blocks) * 4, 0.f);
  for (uint32_t g = 0; g < s.groups; ++g)
    for (uint32_t mi = 0; mi < mg; ++mi) {
      const uint32_t m = g * mg + mi, gmb = g * mg4 + mi / 4;
      for (uint32_t ci = 0; ci < cg; ++ci)
        for (uint32_t t = 0; t < kvol; ++t)
          out[((((gmb * kvol + t) * cg4 + ci / 4) * 4 + ci % 4) * 4) + mi % 4] = w[(m * cg + ci) * kvol + t];
      if (bias) out[(*bias_at + gmb) * 4 + mi % 4] = bias[m];
    }
  return out;
}

// Winograd F(2x2, 3x3) weights for wino_gemm.comp: U = G g G^T of every
// (output channel, input channel) 3x3 kernel g, as 16 positions of vec4
// columns: column j of (pos, output block mb, input block cb) at
// ((pos * m4 + mb) * c4 + cb) * 4 + j, lane l holding U[4mb + l][4cb + j]
// at pos; zero past the channels. The bias follows at vec4 *bias_at.
std::vector<float> WinogradWeights(const float* w, const float* bias, uint32_t c, uint32_t m, uint32_t* bias_at) {
  const uint32_t c4 = (c + 3) / 4, m4 = (m + 3) / 4;
  *bias_at = 16 * m4 * c4 * 4;
  std::vector<float> out((*bias_at + m4) * 4, 0.f);
  // By 4x4 blocks of (output, input) channels, the 16 kernels of a block
  // side by side (lane 4j + l: input 4cb + j, output 4mb + l), in double
  // as before: each position's 16 floats of a block are contiguous, so the
  // writes go out in 16 sequential streams (one kernel at a time scattered
  // them 16 ways, and ResNet18's Vulkan session spent ~60 ms a session here
  // on lavapipe's machine).
  for (uint32_t mb = 0; mb < m4; ++mb)
    for (uint32_t cb = 0; cb < c4; ++cb) {
      double g[9][16] = {};
      for (uint32_t l = 0; l < 4 && 4 * mb + l < m; ++l)
        for (uint32_t j = 0; j < 4 && 4 * cb + j < c; ++j) {
          const float* k = w + (size_t{4 * mb + l} * c + 4 * cb + j) * 9;
          for (int t = 0; t < 9; ++t) g[t][4 * j + l] = k[t];
        }
      // G g, G = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}}, by rows r.
      double gg[4][3][16];
      for (int k = 0; k < 3; ++k)
        for (int i = 0; i < 16; ++i) {
          const double a = g[k][i], b = g[3 + k][i], d = g[6 + k][i];
          gg[0][k][i] = a;
          gg[1][k][i] = 0.5 * a + 0.5 * b + 0.5 * d;
          gg[2][k][i] = 0.5 * a - 0.5 * b + 0.5 * d;
          gg[3][k][i] = d;
        }
      // (G g) G^T, by columns q.
      for (int r = 0; r < 4; ++r) {
        float* u[4];
        for (int q = 0; q < 4; ++q) u[q] = out.data() + ((size_t{static_cast<uint32_t>(r * 4 + q)} * m4 + mb) * c4 + cb) * 16;
        for (int i = 0; i < 16; ++i) {
          const double a = gg[r][0][i], b = gg[r][1][i], d = gg[r][2][i];
          u[0][i] = static_cast<float>(a);
          u[1][i] = static_cast<float>(0.5 * a + 0.5 * b + 0.5 * d);
          u[2][i] = static_cast<float>(0.5 * a - 0.5 * b + 0.5 * d);
          u[3][i] = static_cast<float>(d);
        }
      }
    }
  if (bias)
    for (uint32_t mi = 0; mi < m; ++mi) out[(*bias_at + mi / 4) * 4 + mi % 4] = bias[mi];
  return out;
}

// The push constants of wino_in / wino_gemm / wino_out (wino_common.glsl).
struct WinoPush {
  uint32_t c, c4, m, m4, batch, total, h, w, oh, ow;
  int32_t ph, pw;
  uint32_t tw, tiles, bias_at;
  float lo, hi, slope;
};

class ConvExecution final : public GemmExecution {
 public:
  ConvExecution(GpuBackend* b, const fb::ConvParams* p, const GraphTensor* w, const GraphTensor* bias, bool has_bias)
      : GemmExecution(b), p_(p), act_(ReadFusedActivation(p)), w_(w), bias_(bias), has_bias_(has_bias) {}
  ~ConvExecution() override {
    gpu()->addOwnWeightBytes(-static_cast<int64_t>(packed_w_.bytes + wino_w_.bytes));
    for (GpuBuffer* b : {&packed_w_, &wino_w_, &wino_v_, &wino_m_}) gpu()->freeBuffer(b);
  }

  // X and Y each packed or not (the c4 kernels take either), given constant
  // weights and groups the blocks can follow.
  PackRule packRule(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) const override {
    if (!w_ || (has_bias_ && !bias_) || in[0]->dimensions() < 3 || in[0]->dimensions() > 5) return {};
    const int64_t groups = p_ ? p_->group() : 1, c = in[0]->length(1), m = out[0]->length(1);
    if (groups < 1 || c % groups != 0 || m % groups != 0) return {};
    const int64_t cg = c / groups, mg = m / groups;
    if (groups != 1 && !(cg == 1 && mg == 1) && (cg % 4 != 0 || mg % 4 != 0)) return {};
    // A residual is added over the stored elements: it and Y share a layout
    // (and so X too: the rule has one uniform set).
    if (Residual(in)) return {1 | 8, 1, true};
    return {1, 1, false};
  }
  // The packed kernels read their own copy of W and the bias.
  uint32_t unboundInputs(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) const override {
    return packed(in[0]) || packed(out[0]) ? 6u : 0u;
  }

 private:
  static const Tensor* Residual(const std::vector<Tensor*>& in) { return in.size() > 3 ? in[3] : nullptr; }

  // A fused residual (input 3, fuse_residual). The packed kernels other
  // than depthwise (conv_c4, Winograd's wino_out) add it in their store,
  // before the activation. Elsewhere the conv runs without its activation,
  // then y += r (binary.comp) and the activation (unary.comp), in place
  // over the stored elements. KILN_GPU_RESIDUAL_STORE=0 takes that path
  // everywhere (to compare).
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor* r = Residual(in);
    if (!r) return planConv(in, out, act_, nullptr);
    if (residualInStore(in, out)) return planConv(in, out, act_, r);
    KILN_RETURN_IF_ERROR(planConv(in, out, GpuFusedActivation{}, nullptr));
    const Tensor* y = out[0];
    KILN_ASSIGN_OR_RETURN(Broadcast bc, MakeBroadcast(gpu()->storageShape(*y),
                                                 {gpu()->storageShape(*y), gpu()->storageShape(*r)}));
    const uint32_t n = static_cast<uint32_t>(gpu()->storageElements(*y));
    const uint32_t epi = gpu()->gpuCaps().cpu_kernels ? 8 : 1;  // as the elementwise ops (gpu_elementwise.cpp)
    // y and r read as texels where the device reads them faster so (binary_tx).
    const uint8_t tx = texelsOf(gpu()->storageBytes(*y), 1) && texelsOf(gpu()->storageBytes(*r), 1) ? 1 : 0;
    KILN_RETURN_IF_ERROR(add1D("binary", {{y, nullptr, false, tx}, {r, nullptr, false, tx}, {y, nullptr, true}},
                               MakeBroadcastPush(bc, n),
                               (uint64_t{n} + epi - 1) / epi, {/*Add*/ 0, /*f32*/ 0, epi}));
    if (act_.code == 0) return Status::Ok();
    UnaryPush push{n, act_.code == UnaryCode(fb::OpType::LeakyRelu) ? act_.slope : act_.lo, act_.hi};
    if (packed(y) && y->length(1) % 4 != 0) {
      push.c = static_cast<uint32_t>(y->length(1));
      push.plane = static_cast<uint32_t>(y->elementCount() / y->length(0) / y->length(1));
    }
    return add1D("unary", {{y}, {y, nullptr, true}}, push, (uint64_t{n} + epi - 1) / epi, {act_.code, epi});
  }

  // Whether the conv's kernel adds the residual in its store: a packed
  // path other than depthwise (planPacked: conv_c4 or Winograd), r in Y's
  // layout and shape.
  bool residualInStore(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) const {
    static const bool on = !EnvIsZero("KILN_GPU_RESIDUAL_STORE");
    const Tensor *x = in[0], *y = out[0], *r = Residual(in);
    if (!on || !(packed(x) || packed(y)) || packed(r) != packed(y) || r->shape() != y->shape()) return false;
    const int64_t groups = p_ ? p_->group() : 1;
    return !(groups > 1 && x->length(1) == groups && y->length(1) == groups);
  }

  // The conv, `fa` fused; `r`, a residual the kernel adds (residualInStore), or null.
  Status planConv(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, const GpuFusedActivation& fa,
                  const Tensor* r) {
    KILN_ASSIGN_OR_RETURN(ConvShapes s, ReadConvShapes(p_, in, out));
    const IntVec pads = ConvPads(p_, s.in, s.out, s.kernel, s.strides, s.dilations);
    const Window w = MakeWindow(s.in, s.out, s.kernel, s.strides, s.dilations, pads);
    if (packed(in[0]) || packed(out[0])) return planPacked(s, w, in[0], out[0], r, fa);
    const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
    const ActPush act{fa.lo, fa.hi, fa.slope};
    const uint32_t cg = s.c / s.groups, mg = s.m / s.groups;
    const std::vector<uint32_t> spec = {fa.code, bias != nullptr};
    // Without a bias, W stands in for the unused binding.
    std::vector<GpuBinding> bindings = {{in[0]}, {in[1]}, {bias ? bias : in[1]}, {out[0], nullptr, true}};

    if (cg == 1 && s.groups > 1) {
      struct {
        uint32_t total, c, mult;
        Window win;
        ActPush act;
      } push{static_cast<uint32_t>(out[0]->elementCount()), s.c, mg, w, act};
      return add1D("conv_depthwise", std::move(bindings), push, push.total, spec);
    }

    const bool pointwise = s.groups == 1 && w.kd == 1 && w.kh == 1 && w.kw == 1 && w.sd == 1 && w.sh == 1 &&
                           w.sw == 1 && std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v == 0; });
    if (pointwise) {
      GemmArgs g;
      g.m = s.m;
      g.n = w.od * w.oh * w.ow;
      g.k = s.c;
      g.a_rs = s.c;
      g.b_rs = g.n;
      g.batches = s.batch;
      g.sb[3] = s.c * g.n;
      g.bdims[3] = s.batch;
      g.c_rs = 1;  // bias[m]
      g.beta = 1.f;
      g.act = fa;
      return addGemm(in[1], in[0], bias, out[0], g);
    }

    struct {
      uint32_t c, cg, mg, groups, batch;
      Window win;
      ActPush act;
      uint32_t total;
    } push{s.c, cg, mg, s.groups, s.batch, w, act, 0};
    if (gpu()->gpuCaps().cpu_kernels) {
      // CPU drivers: register blocks straight from memory (conv_direct.comp).
      const uint64_t total = uint64_t{s.batch} * s.groups * ((mg + 3) / 4) * w.od * w.oh * ((w.ow + 3) / 4);
      if (total > UINT32_MAX) return Unsupported("conv of %llu invocations", (unsigned long long)total);
      push.total = static_cast<uint32_t>(total);
      return add1D("conv_direct", std::move(bindings), push, total, spec);
    }
    const uint64_t cols = static_cast<uint64_t>(s.batch) * w.od * w.oh * w.ow;
    uint32_t local[3], groups[3];
    PickGemmTile(mg, cols, s.groups, gpu()->gpuCaps().max_workgroup_invocations, local);
    const uint64_t tm = 4 * local[1], tn = 4 * local[0];
    Groups1D((mg + tm - 1) / tm * ((cols + tn - 1) / tn) * s.groups, 1, groups);
    return add("conv", std::move(bindings), push, groups, local, spec);
  }

  Status planPacked(const ConvShapes& s, const Window& w, const Tensor* x, const Tensor* y, const Tensor* r,
                    const GpuFusedActivation& fa) {
    const bool depthwise = s.groups > 1 && s.c == s.groups && s.m == s.groups;
    if (WinogradSuits(s, w)) return planWinograd(s, w, x, y, r, fa);
    const uint32_t kvol = w.kd * w.kh * w.kw;
    if (!packed_w_.handle) {
      std::vector<float> wf, bf;
      KILN_RETURN_IF_ERROR(readWeights(static_cast<size_t>(s.m) * (s.c / s.groups) * kvol, s.m, &wf, &bf));
      std::vector<float> blocks =
          PackConvWeights(wf.data(), bias_ ? bf.data() : nullptr, s, kvol, depthwise, &bias_at_);
      KILN_ASSIGN_OR_RETURN(packed_w_, CreateWeightBuffer(gpu(), blocks));
    }
    const std::vector<uint32_t> spec = {fa.code, has_bias_, packed(x), packed(y)};
    // X (vec4 texels packed, floats NCHW) and the weights as texel buffers
    // where the device reads them faster so (GpuCaps::texel_elements; the
    // kernels' _tx variants).
    const uint8_t x_texel = packed(x) ? 4 : 1;
    const bool tx = texelsOf(gpu()->storageBytes(*x), x_texel) && texelsOf(packed_w_.bytes, 4);
    std::vector<GpuBinding> bindings = {{x, nullptr, false, static_cast<uint8_t>(tx ? x_texel : 0)},
                                        {nullptr, &packed_w_, false, static_cast<uint8_t>(tx ? 4 : 0)},
                                        {y, nullptr, true}};
    const ActPush act{fa.lo, fa.hi, fa.slope};
    struct {
      uint32_t total;
      uint32_t c, c4, bias_at;
      Window win;
      ActPush act;
    } dw{0, s.c, (s.c + 3) / 4, bias_at_, w, act};
    if (depthwise) {
      // XB output columns an invocation: 1 on GPUs, the conv tile's columns on CPU drivers.
      // On Vulkan's row reader 7 where that fits the rows and 8 does not
      // (GpuCaps::dw_fit_cols: 7x7, 14x14, 28x28 outputs).
      uint32_t xb = gpu()->gpuCaps().cpu_kernels ? gpu()->gpuCaps().conv_tile_cols : 1;
      if (gpu()->gpuCaps().dw_fit_cols && xb == 8 && w.ow % 8 != 0 && w.ow % 7 == 0) xb = 7;
      std::vector<uint32_t> dw_spec = spec;
      dw_spec.push_back(xb);
      // 3x3 or 5x5, 2-D, dilation 1, column stride 1 or 2, 7 or 8 columns
      // an invocation: the row's pixels read once for the 7 or 8 outputs
      // (conv_dw_c4.comp's RS and RK; Vulkan only).
      const bool rows = (xb == 8 || xb == 7) && w.kd == 1 && w.d == 1 && w.kh == w.kw && (w.kw == 3 || w.kw == 5) &&
                        w.dh == 1 && w.dw == 1 && (w.sw == 1 || w.sw == 2);
      dw_spec.push_back(rows && dw_rows_on_ ? w.sw : 0);
      dw_spec.push_back(rows ? w.kw : 3);
      // RB output rows an item (GpuCaps::dw_rows_per_item; conv_dw_c4.cl
      // states what it takes).
      uint32_t rb = gpu()->gpuCaps().dw_rows_per_item;
      if (!(rows && dw_rows_on_ && xb % 4 == 0 && w.sw == 1 && w.sh == 1 && w.od == 1 && packed(x) && w.oh >= rb &&
            w.w >= 4))
        rb = 1;
      dw_spec.push_back(rb);
      const uint64_t total = uint64_t{s.batch} * dw.c4 * w.od * ((w.oh + rb - 1) / rb) * ((w.ow + xb - 1) / xb);
      if (total > UINT32_MAX) return Unsupported("conv of %llu invocations", (unsigned long long)total);
      dw.total = static_cast<uint32_t>(total);
      return add1D("conv_dw_c4", std::move(bindings), dw, total, dw_spec);
    }
    const uint32_t cg = s.c / s.groups, mg = s.m / s.groups;
    // A 1x1 conv of stride 1 without pads maps each pixel to the same one:
    // its plane is one row of pixels, so that the register tile's columns
    // run across the image rows (13x13: 22 tiles of 8 instead of 26).
    Window win = w;
    if (kvol == 1 && w.sd == 1 && w.sh == 1 && w.sw == 1 && w.pd == 0 && w.ph == 0 && w.pw == 0 && w.od == w.d &&
        w.oh == w.h && w.ow == w.w) {
      win.w = win.ow = w.d * w.h * w.w;
      win.d = win.h = win.od = win.oh = 1;
    }
    struct {
      uint32_t c, cg, cg4, m, mg, mg4, batch, total, bias_at;
      Window win;
      ActPush act;
    } push{s.c, cg, (cg + 3) / 4, s.m, mg, (mg + 3) / 4, s.batch, 0, bias_at_, win, act};
    // The invocation's register tile, by device (GpuCaps::conv_tile_*).
    const GpuCaps& caps = gpu()->gpuCaps();
    const uint32_t xb = caps.conv_tile_cols;
    const uint32_t mb = kvol == 1 && caps.conv_tile_blocks_pointwise && push.mg4 % caps.conv_tile_blocks_pointwise == 0
                            ? caps.conv_tile_blocks_pointwise
                            : caps.conv_tile_blocks;
    std::vector<uint32_t> tile_spec = spec;
    tile_spec.push_back(xb);
    tile_spec.push_back(mb);
    tile_spec.push_back(r != nullptr);
    bindings.push_back({r ? r : x});  // binding 3: the residual, or X unread
    const uint64_t total =
        uint64_t{s.batch} * s.groups * ((push.mg4 + mb - 1) / mb) * win.od * win.oh * ((win.ow + xb - 1) / xb);
    if (total > UINT32_MAX) return Unsupported("conv of %llu invocations", (unsigned long long)total);
    push.total = static_cast<uint32_t>(total);
    return add1D("conv_c4", std::move(bindings), push, total, tile_spec);
  }

  // The constant weights (`wn` floats) and bias (`m`, or none) as floats,
  // for the kernels' own layouts.
  Status readWeights(size_t wn, uint32_t m, std::vector<float>* wf, std::vector<float>* bf) const {
    if (w_->constant.size != wn * 4 || (bias_ && bias_->constant.size != size_t{m} * 4))
      return Internal("conv weights of %zu bytes for %zu elements", w_->constant.size, wn);
    wf->resize(wn);
    bf->resize(bias_ ? m : 0);
    std::memcpy(wf->data(), w_->constant.data, wn * 4);  // model bytes need not be 4-aligned
    if (bias_) std::memcpy(bf->data(), bias_->constant.data, bf->size() * 4);
    return Status::Ok();
  }

  // 2-D 3x3 convs of stride 1, one group, with enough channels for the
  // 16 products to outweigh the transforms: through Winograd F(2x2, 3x3)
  // (2.25x fewer multiply-adds). KILN_GPU_WINOGRAD=0 turns it off.
  static bool WinogradSuits(const ConvShapes& s, const Window& w) {
    static const bool on = !EnvIsZero("KILN_GPU_WINOGRAD");
    return on && s.in.size() == 2 && s.groups == 1 && w.kh == 3 && w.kw == 3 && w.sh == 1 && w.sw == 1 &&
           w.dh == 1 && w.dw == 1 && s.c >= 8 && s.m >= 8;
  }

  // Three dispatches: wino_in (V = B^T d B of every 4x4 input patch a 2x2
  // output tile reads, [N][16][C/4][tiles] vec4), wino_gemm (the 16
  // products U[pos] V[pos], [N][16][M/4][tiles] vec4), wino_out (A^T m A,
  // the bias and the fused activation, into Y).
  Status planWinograd(const ConvShapes& s, const Window& w, const Tensor* x, const Tensor* y, const Tensor* r,
                      const GpuFusedActivation& fa) {
    const bool half = gpu()->halfStorage();
    if (!wino_w_.handle) {
      std::vector<float> wf, bf;
      KILN_RETURN_IF_ERROR(readWeights(size_t{s.m} * s.c * 9, s.m, &wf, &bf));
      std::vector<float> u = WinogradWeights(wf.data(), bias_ ? bf.data() : nullptr, s.c, s.m, &wino_bias_at_);
      KILN_ASSIGN_OR_RETURN(wino_w_, CreateWeightBuffer(gpu(), u));
    }
    WinoPush push{};
    push.c = s.c, push.c4 = (s.c + 3) / 4, push.m = s.m, push.m4 = (s.m + 3) / 4, push.batch = s.batch;
    push.h = w.h, push.w = w.w, push.oh = w.oh, push.ow = w.ow, push.ph = w.ph, push.pw = w.pw;
    push.tw = (w.ow + 1) / 2;
    const uint64_t tiles = uint64_t{push.tw} * ((w.oh + 1) / 2);
    const uint64_t v_units = uint64_t{s.batch} * 16 * push.c4 * tiles * 4, m_units = uint64_t{s.batch} * 16 * push.m4 * tiles * 4;
    if (v_units > UINT32_MAX || m_units > UINT32_MAX)
      return Unsupported("Winograd conv of %llu transformed values", (unsigned long long)std::max(v_units, m_units));
    push.tiles = static_cast<uint32_t>(tiles);
    push.bias_at = wino_bias_at_;
    push.lo = fa.lo, push.hi = fa.hi, push.slope = fa.slope;
    const uint64_t unit = half ? 2 : 4;
    KILN_RETURN_IF_ERROR(ReserveBuffer(gpu(), &wino_v_, v_units * unit));
    KILN_RETURN_IF_ERROR(ReserveBuffer(gpu(), &wino_m_, m_units * unit));
    // Bindings read as texel buffers where the device reads them faster so
    // (GpuCaps::texel_elements): X (vec4 texels packed, floats NCHW), V, U
    // and the products.
    const uint8_t x_texel = packed(x) ? 4 : 1;
    const bool tx = texelsOf(wino_v_.bytes, 4) && texelsOf(wino_m_.bytes, 4) && texelsOf(wino_w_.bytes, 4) &&
                    texelsOf(gpu()->storageBytes(*x), x_texel);
    const uint8_t t4 = tx ? 4 : 0;
    const GpuBinding u{nullptr, &wino_w_, false, t4};
    push.total = static_cast<uint32_t>(uint64_t{s.batch} * push.c4 * tiles);
    KILN_RETURN_IF_ERROR(add1D("wino_in", {{x, nullptr, false, static_cast<uint8_t>(tx ? x_texel : 0)}, u,
                                           {nullptr, &wino_v_, true}},
                               push, push.total, {0, 0, packed(x), 0}));
    const uint32_t tb = gpu()->gpuCaps().conv_tile_cols, mb = gpu()->gpuCaps().conv_tile_blocks;
    const uint64_t products = uint64_t{s.batch} * 16 * ((push.m4 + mb - 1) / mb) * ((tiles + tb - 1) / tb);
    if (products > UINT32_MAX) return Unsupported("Winograd conv of %llu invocations", (unsigned long long)products);
    push.total = static_cast<uint32_t>(products);
    KILN_RETURN_IF_ERROR(add1D("wino_gemm", {{nullptr, &wino_v_, false, t4}, u, {nullptr, &wino_m_, true}}, push,
                               push.total, {0, 0, 0, 0, tb, mb}));
    push.total = static_cast<uint32_t>(uint64_t{s.batch} * push.m4 * tiles);
    // Binding 3: the residual, or the products again, unread (spec 9).
    const GpuBinding rb = r ? GpuBinding{r} : GpuBinding{nullptr, &wino_m_};
    return add1D("wino_out", {{nullptr, &wino_m_, false, t4}, u, {y, nullptr, true}, rb}, push, push.total,
                 {fa.code, has_bias_, 0, packed(y), 0, 0, r != nullptr});
  }

  const fb::ConvParams* p_;
  GpuFusedActivation act_;
  const GraphTensor* w_;     // constant weights, or null
  const GraphTensor* bias_;  // constant bias, or null
  bool has_bias_;
  GpuBuffer packed_w_;  // PackConvWeights, made at the first packed resize
  uint32_t bias_at_ = 0;
  // Winograd F(2x2, 3x3) (planWinograd): the transformed weights and bias,
  // and the transformed input and products (scratch, grown by resizes).
  GpuBuffer wino_w_, wino_v_, wino_m_;
  uint32_t wino_bias_at_ = 0;
  // KILN_GPU_DW_ROWS=0: depthwise convs read each tap's pixel (no row reader).
  const bool dw_rows_on_ = [] {
    const char* v = std::getenv("KILN_GPU_DW_ROWS");
    return !(v && v[0] == '0');
  }();
};

class ConvTransposeExecution final : public GpuExecution {
 public:
  ConvTransposeExecution(GpuBackend* b, const fb::ConvParams* p)
      : GpuExecution(b), p_(p), act_(ReadFusedActivation(p)) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    KILN_ASSIGN_OR_RETURN(ConvShapes s, ReadConvShapes(p_, in, out));
    const IntVec pads = TransposePadBegin(p_, s.in, s.out, s.kernel, s.strides, s.dilations);
    const Window w = MakeWindow(s.in, s.out, s.kernel, s.strides, s.dilations, pads);
    const Tensor* bias = in.size() > 2 ? in[2] : nullptr;
    struct {
      uint32_t total, c, cg, mg, groups;
      Window win;
      ActPush act;
    } push{static_cast<uint32_t>(out[0]->elementCount()), s.c, s.c / s.groups, s.m / s.groups, s.groups, w,
           {act_.lo, act_.hi, act_.slope}};
    return add1D("conv_transpose", {{in[0]}, {in[1]}, {bias ? bias : in[1]}, {out[0], nullptr, true}}, push,
                 push.total, {act_.code, bias != nullptr});
  }

  const fb::ConvParams* p_;
  GpuFusedActivation act_;
};

// f32, and a weight rank known now: 3 to 5 (1 to 3 spatial axes).
Status CheckConv(const GraphOp& op, const Graph& graph) {
  KILN_RETURN_IF_ERROR(RequireF32(op, graph));
  const GraphTensor& wt = graph.tensors[static_cast<size_t>(op.inputs[1])];
  if (!wt.has_shape) return Unsupported("%s weights of unknown rank", op.typeName());
  if (wt.dims.size() < 3 || wt.dims.size() > 5)
    return Unsupported("%s with %zu spatial axes (the GPU kernels take 1 to 3)", op.typeName(), wt.dims.size() - 2);
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuConv(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(CheckConv(op, graph));
  const bool has_bias = op.inputs.size() > 2 && op.inputs[2] >= 0;
  return Make(std::make_unique<ConvExecution>(b, op.params<fb::ConvParams>(), ConstantInput(op, graph, 1),
                                              ConstantInput(op, graph, 2), has_bias));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuConvTranspose(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(CheckConv(op, graph));
  return Make(std::make_unique<ConvTransposeExecution>(b, op.params<fb::ConvParams>()));
}

}  // namespace kiln
