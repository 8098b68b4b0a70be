// The quantized ops on GPU, bit for bit with the host kernels
// (host_fallback/ops/quant.cpp): QuantizeLinear and DequantizeLinear (per
// tensor or per axis; f32 <-> u8 / i8, quantize.comp, dequantize.comp),
// DynamicQuantizeLinear (a one-work-group min / max reduction that writes the
// scale and zero point, dq_range.comp, then quantize.comp with them),
// MatMulInteger and QLinearMatMul, ConvInteger and QLinearConv. The integer
// products keep the host's exact int32 sums (wrapped to int32 as it stores
// them): by four-byte words where they can (qpack4 packs the operands four
// channels or four k a word; qconv_dot and qmatmul_dot sum 4 x 4 blocks
// with the zero points applied after the byte products, through SPIR-V's
// packed dot products where the device has them, GpuCaps::int8_dot),
// depthwise convs a row's columns an invocation (qconv_dw), the rest one
// output an invocation (qconv.comp, qmatmul.comp). The QLinear forms
// requantize with the host's arithmetic: the multiplier s_a * s_b / s_y in
// f32, its product with the sum in f32, round half to even, saturated.
// Divisions run in double and round to float (the correctly rounded f32
// quotient the host computes) in the _f64 variants, which the QLinear ops
// need (devices without f64 arithmetic leave them on the host). 8-bit
// tensors need the device's 8-bit storage; f16 / bf16 / f64 floats, 16-bit
// and i32 quantized types stay on the host. No shared-memory tiles yet.
#include <algorithm>
#include <cmath>

#include "ops/nn_common.h"
#include "ops/op_params.h"
#include "gpu_common.h"
#include "gpu_layout.h"

namespace kiln {
namespace {

// 0 u8, 1 i8, 2 i32 (the kernels' TYPE spec constants).
StatusOr<uint32_t> ByteType(const Tensor& t, const char* op, bool allow_i32 = false) {
  switch (t.dtype()) {
    case fb::DataType::U8: return 0u;
    case fb::DataType::I8: return 1u;
    case fb::DataType::I32:
      if (allow_i32) return 2u;
      break;
    default: break;
  }
  return Unsupported("GPU %s takes u8 and i8 tensors, not %s ('%s')", op, fb::EnumNameDataType(t.dtype()),
                     t.name().c_str());
}

Status RequireF32Tensor(const Tensor& t, const char* op) {
  if (t.dtype() != fb::DataType::F32)
    return Unsupported("GPU %s takes f32 floats, not %s ('%s')", op, fb::EnumNameDataType(t.dtype()), t.name().c_str());
  return Status::Ok();
}

Status CheckZeroPoint(const Tensor* z, fb::DataType type, const char* op) {
  if (z && z->dtype() != type)
    return InvalidArgument("%s: zero point '%s' is %s but its operand is %s", op, z->name().c_str(),
                           fb::EnumNameDataType(z->dtype()), fb::EnumNameDataType(type));
  return Status::Ok();
}

const Tensor* Opt(const std::vector<Tensor*>& in, size_t k) { return k < in.size() ? in[k] : nullptr; }

// The per-axis split of the host's PerAxis: element i takes value (i / inner) % n.
Status PerAxis(const GraphOp& op, const Tensor& x, const Tensor& s, const Tensor* z, uint32_t* n, uint32_t* inner) {
  const int64_t count = s.elementCount();
  *n = 1, *inner = 1;
  if (z && z->elementCount() != count)
    return InvalidArgument("%s: zero point '%s' has %lld values but the scale %lld", op.typeName(), z->name().c_str(),
                           static_cast<long long>(z->elementCount()), static_cast<long long>(count));
  if (count == 1 && s.dimensions() <= 1) return Status::Ok();
  if (s.dimensions() != 1) return InvalidArgument("%s: scale must be a scalar or 1-D", op.typeName());
  const auto* p = op.params<fb::AxisParams>();
  KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(p ? p->axis() : 1, x.dimensions()), "%s", op.typeName());
  int64_t outer, len, in;
  AroundAxis(x.shape(), axis, &outer, &len, &in);
  if (len != count)
    return InvalidArgument("%s: per-axis scale has %lld values but x has %lld along axis %d", op.typeName(),
                           static_cast<long long>(count), static_cast<long long>(len), axis);
  *n = static_cast<uint32_t>(len), *inner = static_cast<uint32_t>(in);
  return Status::Ok();
}

struct QuantizePush {
  uint32_t n, axis_n, inner;
};

class QuantizeExecution final : public GpuExecution {
 public:
  QuantizeExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}

 private:
  const char* divKernel(const char* stem) const {
    return gpu()->gpuCaps().float64 ? (std::string(stem) == "quantize" ? "quantize_f64" : "dq_range_f64") : stem;
  }

  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& x = *in[0];
    const bool dequant = op_.type == fb::OpType::DequantizeLinear;
    if (op_.type == fb::OpType::DynamicQuantizeLinear) {
      KILN_RETURN_IF_ERROR(RequireF32Tensor(x, op_.typeName()));
      KILN_RETURN_IF_ERROR(Require32Bit(x));
      if (out[0]->dtype() != fb::DataType::U8) return InvalidArgument("DynamicQuantizeLinear: y must be u8");
      QuantizePush push{static_cast<uint32_t>(x.elementCount()), 1, 1};
      const uint32_t groups[3] = {1, 1, 1}, local[3] = {64, 1, 1};
      KILN_RETURN_IF_ERROR(add(divKernel("dq_range"), {{&x}, {out[1], nullptr, true}, {out[2], nullptr, true}}, push,
                               groups, local));
      if (push.n == 0) return Status::Ok();
      return add1D(divKernel("quantize"), {{&x}, {out[1]}, {out[2]}, {out[0], nullptr, true}}, push, push.n,
                   {0u, 1u});
    }
    const Tensor& s = *in[1];
    const Tensor* z = Opt(in, 2);
    const Tensor& y = *out[0];
    KILN_RETURN_IF_ERROR(RequireF32Tensor(s, op_.typeName()));
    KILN_RETURN_IF_ERROR(RequireF32Tensor(dequant ? y : x, op_.typeName()));
    KILN_ASSIGN_OR_RETURN(uint32_t type, ByteType(dequant ? x : y, op_.typeName()));
    KILN_RETURN_IF_ERROR(CheckZeroPoint(z, (dequant ? x : y).dtype(), op_.typeName()));
    KILN_RETURN_IF_ERROR(Require32Bit(x));
    QuantizePush push{static_cast<uint32_t>(x.elementCount()), 1, 1};
    KILN_RETURN_IF_ERROR(PerAxis(op_, x, s, z, &push.axis_n, &push.inner));
    if (push.n == 0) return Status::Ok();
    return add1D(dequant ? "dequantize" : divKernel("quantize"), {{&x}, {&s}, {z ? z : &s}, {&y, nullptr, true}}, push,
                 push.n, {type, z ? 1u : 0u});
  }

  const GraphOp& op_;
};

// Zero-point and scale flags of qmatmul.comp / qconv.comp (spec constant 6).
enum QFlags : uint32_t {
  kAZp = 1, kAZpPer = 2, kBZp = 4, kBZpPer = 8, kASPer = 16, kBSPer = 32, kBias = 64, kRequant = 128,
  kActLo = 256, kActHi = 512  // QLinearConv's fused Relu / Relu6 / Clip bounds (qconv only)
};

// The count of a zero point / scale: 1 (per tensor) or `per`; else an error.
Status PerOrOne(const Tensor* t, int64_t per, const char* op, const char* what, uint32_t bit, uint32_t* flags) {
  if (!t) return Status::Ok();
  const int64_t c = t->elementCount();
  if (c == per && per != 1) *flags |= bit;
  else if (c != 1)
    return InvalidArgument("%s: %s '%s' has %lld values; it takes one or %lld", op, what, t->name().c_str(),
                           static_cast<long long>(c), static_cast<long long>(per));
  return Status::Ok();
}

// qpack4's push constants: words [outer][c4][sp] from bytes [outer][c][sp].
struct QPackPush {
  uint32_t n, c, c4, sp, fill_mod;
};

// A block size of the int8 kernels by words: the variable `env` where it is
// 2, 4 or 8 (another value: 4), else `fallback` (A/B runs on a device).
uint32_t BlockSize(const char* env, uint32_t fallback) {
  const char* e = std::getenv(env);
  if (!e) return fallback;
  const int v = std::atoi(e);
  return v == 2 || v == 8 ? static_cast<uint32_t>(v) : 4;
}

// The int8 kernels by packed words (qconv_dot, qmatmul_dot); KILN_GPU_QDOT=0:
// the one-output kernels everywhere (A/B).
bool DotKernelsOn() {
  static const bool on = !EnvIsZero("KILN_GPU_QDOT");
  return on;
}

// A zero point's qpack4 fill mode: 0 none, 1 one value, 2 one per outer index.
uint32_t FillMode(const Tensor* z) { return !z ? 0u : z->elementCount() == 1 ? 1u : 2u; }

// A constant operand for the packed int8 kernels, made once on the host
// (qpack4's layout: words [outer][c4][sp], channel 4 c4 + j in byte j, the
// padding channels holding fill[outer % fill.size()], or 0 where fill is
// empty) and uploaded: the weights of a model are not repacked every run.
struct ConstantWords {
  const GraphTensor* src = nullptr;   // the constant bytes
  const GraphTensor* fill = nullptr;  // its zero point (a constant too), or null
  bool usable() const { return src != nullptr; }
};

Status UploadWords(GpuBackend* gpu, const ConstantWords& cw, int64_t outer, int64_t c, int64_t sp, GpuBuffer* out) {
  if (out->handle) return Status::Ok();  // made at an earlier resize
  const int64_t c4 = (c + 3) / 4;
  if (cw.src->constant.size != static_cast<size_t>(outer * c * sp))
    return Internal("packed int8 operand of %zu bytes for %lld", cw.src->constant.size,
                    static_cast<long long>(outer * c * sp));
  const uint8_t* src = cw.src->constant.data;
  const size_t fills = cw.fill ? cw.fill->constant.size : 0;
  std::vector<uint32_t> words(static_cast<size_t>(outer * c4 * sp));
  for (int64_t o = 0; o < outer; ++o) {
    const uint32_t pad = fills ? cw.fill->constant.data[static_cast<size_t>(o) % fills] : 0u;
    for (int64_t q = 0; q < c4; ++q)
      for (int64_t s = 0; s < sp; ++s) {
        uint32_t word = 0;
        for (int64_t j = 0; j < 4; ++j) {
          const int64_t ch = 4 * q + j;
          word |= (ch < c ? uint32_t{src[(o * c + ch) * sp + s]} : pad) << (8 * j);
        }
        words[static_cast<size_t>((o * c4 + q) * sp + s)] = word;
      }
  }
  KILN_ASSIGN_OR_RETURN(*out, gpu->createBuffer(words.size() * 4, words.data()));
  gpu->addOwnWeightBytes(static_cast<int64_t>(out->bytes));
  return Status::Ok();
}

// The constant words of input k with zero point input z (-1: none): usable
// where both are constants.
ConstantWords ConstantOperand(const GraphOp& op, const Graph& graph, size_t k, int z) {
  ConstantWords cw;
  const GraphTensor* src = ConstantInput(op, graph, k);
  const bool has_z = z >= 0 && static_cast<size_t>(z) < op.inputs.size() && op.inputs[static_cast<size_t>(z)] >= 0;
  const GraphTensor* fill = has_z ? ConstantInput(op, graph, static_cast<size_t>(z)) : nullptr;
  if (src && (!has_z || fill)) cw.src = src, cw.fill = fill;
  return cw;
}

// The int8 executions by packed words (qconv_dot, qmatmul_dot): operand 0's
// words packed by qpack4 in every run, operand 1's too unless it is a
// constant (then packed once on the host, UploadWords), and the kernel
// reading both. plan() tries planPacked and, where it declines (too large
// to pack), takes the one-output kernel.
class PackedQExecution : public GpuExecution {
 protected:
  PackedQExecution(GpuBackend* b, ConstantWords second) : GpuExecution(b), second_const_(second) {}
  ~PackedQExecution() override {
    gpu()->addOwnWeightBytes(-static_cast<int64_t>(second_const_.usable() ? words_[1].bytes : 0));
    for (GpuBuffer& w : words_) gpu()->freeBuffer(&w);
  }

  // Operand k's bytes [outer][c][sp] (src) as words [outer][c4][sp], the
  // padding channels holding `fill` (a zero point: one value, or one an
  // outer index modulo fill_mod) or zero.
  Status packOperand(int k, const Tensor& src, const Tensor* fill, uint64_t outer, uint32_t c, uint32_t sp,
                     uint32_t fill_mod) {
    if (k == 1 && second_const_.usable()) {
      return UploadWords(gpu(), second_const_, static_cast<int64_t>(outer), c, sp, &words_[1]);
    }
    const uint32_t c4 = (c + 3) / 4;
    QPackPush push{static_cast<uint32_t>(outer * c4 * sp), c, c4, sp, fill_mod};
    KILN_RETURN_IF_ERROR(ReserveBuffer(gpu(), &words_[k], uint64_t{push.n} * 4));
    return add1D("qpack4", {{&src}, {fill ? fill : &src}, {nullptr, &words_[k], true}}, push, push.n,
                 {FillMode(fill)});
  }

  // The packed kernel `stem` on both operands' words, then `rest`: its
  // _f64 variant for the QLinear forms, _dp where the device has int8 dot
  // products.
  template <typename Push>
  Status addPacked(std::string stem, bool ql, std::vector<GpuBinding> rest, const Push& push, uint64_t items,
                   const std::vector<uint32_t>& spec) {
    if (ql) stem += "_f64";
    if (gpu()->gpuCaps().int8_dot) stem += "_dp";
    rest.insert(rest.begin(), {{nullptr, &words_[0]}, {nullptr, &words_[1]}});
    return add1D(stem.c_str(), std::move(rest), push, items, spec);
  }

  // planPacked()'s status in *s and true, or false (its dispatches dropped)
  // where it declined as Unsupported: the caller then plans the one-output
  // kernel.
  template <typename Plan>
  bool tryPacked(Plan&& planPacked, Status* s) {
    const size_t before = dispatches_.size();
    *s = planPacked();
    if (s->code() != StatusCode::kUnsupported) return true;
    dispatches_.resize(before);
    return false;
  }

 private:
  const ConstantWords second_const_;
  GpuBuffer words_[2];  // the operands' words, grown by resizes (words_[1]: once, for a constant operand 1)
};

struct QMatMulPush {
  uint32_t n, m, cols, k, rank;
  uint32_t batch[4], sa[4], sb[4];
};

class QMatMulExecution final : public PackedQExecution {
 public:
  QMatMulExecution(GpuBackend* b, const GraphOp& op, ConstantWords b_words) : PackedQExecution(b, b_words), op_(op) {}

 private:
  // Products of K >= 4 through qmatmul_dot: A packed four k of a row a word
  // (za in the padding), B four k of a column a word, 4 x 4 outputs an
  // invocation (2 x 2 on GPUs), packed dot products where the device has
  // them.
  Status planDot(QMatMulPush push, const Tensor& a, const Tensor& b, const Tensor* az,
                 std::vector<GpuBinding> rest, const std::vector<uint32_t>& spec, bool ql) {
    const uint32_t kTn = spec[4], kTm = spec[5];  // qmatmul_dot.comp's TN and TM (spec constants 7, 8)
    const uint64_t k4 = (push.k + 3) / 4, a_rows = a.elementCount() / push.k;
    const uint64_t b_sets = b.elementCount() / (uint64_t{push.k} * push.cols);
    const uint64_t a_words = a_rows * k4, b_words = b_sets * k4 * push.cols;
    const uint64_t batches = push.n / (uint64_t{push.m} * push.cols);
    const uint64_t items = batches * ((push.m + kTm - 1) / kTm) * ((push.cols + kTn - 1) / kTn);
    const uint64_t limit = gpu()->gpuCaps().max_storage_buffer_range;
    if (a_words * 4 > limit || b_words * 4 > limit || items > UINT32_MAX)
      return Unsupported("too large for qmatmul_dot");
    // The batch strides in words of the packed operands.
    for (uint32_t d = 0; d < push.rank; ++d) {
      push.sa[d] = static_cast<uint32_t>(push.sa[d] / (uint64_t{push.m} * push.k) * push.m * k4);
      push.sb[d] = static_cast<uint32_t>(push.sb[d] / (uint64_t{push.k} * push.cols) * k4 * push.cols);
    }
    KILN_RETURN_IF_ERROR(packOperand(0, a, az, a_rows, push.k, 1, push.m));
    KILN_RETURN_IF_ERROR(packOperand(1, b, nullptr, b_sets, push.k, push.cols, 1));
    return addPacked("qmatmul_dot", ql, std::move(rest), push, items, spec);
  }

  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const bool ql = op_.type == fb::OpType::QLinearMatMul;
    const Tensor& a = *in[0];
    const Tensor& b = *in[ql ? 3 : 1];
    const Tensor* az = ql ? in[2] : Opt(in, 2);
    const Tensor* bz = ql ? in[5] : Opt(in, 3);
    const Tensor& y = *out[0];
    KILN_ASSIGN_OR_RETURN(uint32_t at, ByteType(a, op_.typeName()));
    KILN_ASSIGN_OR_RETURN(uint32_t bt, ByteType(b, op_.typeName()));
    KILN_ASSIGN_OR_RETURN(uint32_t yt, ByteType(y, op_.typeName(), !ql));
    if (!ql && yt != 2) return InvalidArgument("MatMulInteger: y must be int32");
    if (ql && yt == 2) return Unsupported("GPU QLinearMatMul writes u8 or i8");
    KILN_RETURN_IF_ERROR(CheckZeroPoint(az, a.dtype(), op_.typeName()));
    KILN_RETURN_IF_ERROR(CheckZeroPoint(bz, b.dtype(), op_.typeName()));
    KILN_RETURN_IF_ERROR(Require32Bit(a));
    KILN_RETURN_IF_ERROR(Require32Bit(b));
    KILN_RETURN_IF_ERROR(Require32Bit(y));
    std::vector<int64_t> as = a.shape(), bs = b.shape();
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const size_t rank = std::max(as.size(), bs.size()) - 2;
    if (rank > 4) return Unsupported("GPU %s takes at most 4 batch dims", op_.typeName());
    QMatMulPush push{};
    push.m = static_cast<uint32_t>(as[as.size() - 2]);
    push.k = static_cast<uint32_t>(as.back());
    push.cols = static_cast<uint32_t>(bs.back());
    push.rank = static_cast<uint32_t>(rank);
    int64_t step_a = int64_t{push.m} * push.k, step_b = int64_t{push.k} * push.cols;
    for (size_t d = rank; d-- > 0;) {
      const int64_t da = d + as.size() >= rank + 2 ? as[d + as.size() - 2 - rank] : 1;
      const int64_t db = d + bs.size() >= rank + 2 ? bs[d + bs.size() - 2 - rank] : 1;
      push.batch[d] = static_cast<uint32_t>(std::max(da, db));
      push.sa[d] = da == 1 ? 0 : static_cast<uint32_t>(step_a);
      push.sb[d] = db == 1 ? 0 : static_cast<uint32_t>(step_b);
      step_a *= da;
      step_b *= db;
    }
    push.n = static_cast<uint32_t>(y.elementCount());
    uint32_t flags = (az ? kAZp : 0u) | (bz ? kBZp : 0u) | (ql ? kRequant : 0u);
    KILN_RETURN_IF_ERROR(PerOrOne(az, push.m, op_.typeName(), "a_zero_point", kAZpPer, &flags));
    KILN_RETURN_IF_ERROR(PerOrOne(bz, push.cols, op_.typeName(), "b_zero_point", kBZpPer, &flags));
    const Tensor* sa = &a;
    const Tensor* sb = &a;
    const Tensor* sy = &a;
    const Tensor* yz = &a;
    if (ql) {
      sa = in[1], sb = in[4], sy = in[6], yz = in[7];
      for (const Tensor* s : {sa, sb, sy}) KILN_RETURN_IF_ERROR(RequireF32Tensor(*s, op_.typeName()));
      KILN_RETURN_IF_ERROR(PerOrOne(sa, push.m, op_.typeName(), "a_scale", kASPer, &flags));
      KILN_RETURN_IF_ERROR(PerOrOne(sb, push.cols, op_.typeName(), "b_scale", kBSPer, &flags));
      if (sy->elementCount() != 1) return InvalidArgument("QLinearMatMul: y_scale must be one value");
      if (!yz || yz->elementCount() != 1) return InvalidArgument("QLinearMatMul: y_zero_point must be one value");
      KILN_RETURN_IF_ERROR(CheckZeroPoint(yz, y.dtype(), op_.typeName()));
    }
    const Tensor* bias = &a;
    if (const Tensor* given = ql ? Opt(in, 8) : nullptr) {  // Kiln's int32 bias of B's columns
      if (given->dtype() != fb::DataType::I32 || given->elementCount() != push.cols)
        return InvalidArgument("QLinearMatMul: bias '%s' must be int32 with %u values", given->name().c_str(),
                               push.cols);
      bias = given;
      flags |= kBias;
    }
    if (push.n == 0) return Status::Ok();
    std::vector<GpuBinding> rest = {{az ? az : &a}, {bz ? bz : &a}, {sa}, {sb},
                                    {sy},           {yz},           {bias}, {&y, nullptr, true}};
    Status s;
    // The block an invocation: 4 x 4 on CPU drivers, 2 x 2 on GPUs, where
    // smaller blocks keep more invocations in flight (an H100, stop 46,
    // qgemm 512^3: Vulkan 0.0419 -> 0.0237 ms, OpenCL 0.0755 -> 0.0534;
    // 4 x 2, 2 x 4 and 8 x 4 in between or slower). KILN_GPU_QMM_ROWS /
    // KILN_GPU_QMM_COLS = 2|4|8 (A/B).
    const uint32_t block = gpu()->gpuCaps().cpu_kernels ? 4 : 2;
    auto packed = [&] {
      return planDot(push, a, b, az, rest,
                     {at, bt, yt, flags, BlockSize("KILN_GPU_QMM_COLS", block), BlockSize("KILN_GPU_QMM_ROWS", block)},
                     ql);
    };
    if (DotKernelsOn() && push.k >= 4 && tryPacked(packed, &s)) return s;
    rest.insert(rest.begin(), {{&a}, {&b}});
    return add1D(ql ? "qmatmul_f64" : "qmatmul", std::move(rest), push, push.n, {at, bt, yt, flags});
  }

  const GraphOp& op_;
};

struct QConvPush {
  uint32_t n, cin, cout, cg, mg;
  uint32_t in[3], out[3], kernel[3], stride[3], dil[3], pad[3];
  float act_lo, act_hi;  // the fused activation's bounds on the real output (kActLo / kActHi)
};

class QConvExecution final : public PackedQExecution {
 public:
  QConvExecution(GpuBackend* b, const GraphOp& op, ConstantWords w_words) : PackedQExecution(b, w_words), op_(op) {}

 private:
  // Convs of at least four output channels a group (not depthwise) through
  // qconv_dot: X and W packed four channels a word (W's padding channels
  // hold its zero point, so their products cancel), TM x TW outputs an
  // invocation, packed dot products where the device has them
  // (GpuCaps::int8_dot).
  Status planDot(const QConvPush& push, const Tensor& x, const Tensor& w, const Tensor* wz,
                 std::vector<GpuBinding> rest, const std::vector<uint32_t>& spec, bool ql) {
    const uint32_t kTw = spec[4];  // qconv_dot.comp's TW (spec constant 7: ColumnsAnInvocation)
    const uint32_t kTm = spec[5];  // its TM (spec constant 8: ChannelsAnInvocation)
    const uint32_t groups = push.cout / push.mg, cg4 = (push.cg + 3) / 4;
    const uint64_t xsp = uint64_t{push.in[0]} * push.in[1] * push.in[2];
    const uint64_t ksp = uint64_t{push.kernel[0]} * push.kernel[1] * push.kernel[2];
    const uint64_t osp = uint64_t{push.out[0]} * push.out[1] * push.out[2];
    const uint64_t batch = push.n / (uint64_t{push.cout} * osp);
    const uint64_t x_words = batch * groups * cg4 * xsp, w_words = uint64_t{push.cout} * cg4 * ksp;
    const uint64_t items = batch * groups * ((push.mg + kTm - 1) / kTm) * uint64_t{push.out[0]} * push.out[1] *
                           ((push.out[2] + kTw - 1) / kTw);
    const uint64_t limit = gpu()->gpuCaps().max_storage_buffer_range;
    if (x_words * 4 > limit || w_words * 4 > limit || x_words > UINT32_MAX || items > UINT32_MAX)
      return Unsupported("too large for qconv_dot");
    KILN_RETURN_IF_ERROR(packOperand(0, x, nullptr, batch * groups, push.cg, static_cast<uint32_t>(xsp), 1));
    KILN_RETURN_IF_ERROR(packOperand(1, w, wz, push.cout, push.cg, static_cast<uint32_t>(ksp), push.cout));
    return addPacked("qconv_dot", ql, std::move(rest), push, items, spec);
  }

  // qconv_dot's (and qconv_dw's) columns an invocation: 8 on CPU drivers
  // (each load there is a memory access of its own; a wider block reuses
  // the weights' words for more columns), 2 on GPUs, where a smaller
  // block leaves more invocations in flight: on an H100 (stop 46, TM 4)
  // int8 ResNet-18 1.87 -> 1.61 ms on Vulkan, 2.48 -> 1.94 on OpenCL,
  // MobileNetV2 1.42 -> 1.32 and 1.67 -> 1.45, against 4 columns; 8
  // columns or 8 channels were slower still than 4 (docs/GPU_PERFORMANCE.md).
  // KILN_GPU_QDOT_COLS=2|4|8 (A/B).
  uint32_t ColumnsAnInvocation() const {
    return BlockSize("KILN_GPU_QDOT_COLS", gpu()->gpuCaps().cpu_kernels ? 8 : 2);
  }
  // qconv_dot's output channels an invocation: 4; KILN_GPU_QDOT_ROWS=2|8
  // (A/B).
  uint32_t ChannelsAnInvocation() const { return BlockSize("KILN_GPU_QDOT_ROWS", 4); }

  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const bool ql = op_.type == fb::OpType::QLinearConv;
    const Tensor& x = *in[0];
    const Tensor& w = *in[ql ? 3 : 1];
    const Tensor* xz = ql ? in[2] : Opt(in, 2);
    const Tensor* wz = ql ? in[5] : Opt(in, 3);
    const Tensor& y = *out[0];
    KILN_ASSIGN_OR_RETURN(uint32_t xt, ByteType(x, op_.typeName()));
    KILN_ASSIGN_OR_RETURN(uint32_t wt, ByteType(w, op_.typeName()));
    KILN_ASSIGN_OR_RETURN(uint32_t yt, ByteType(y, op_.typeName(), !ql));
    if (!ql && yt != 2) return InvalidArgument("ConvInteger: y must be int32");
    if (ql && yt == 2) return Unsupported("GPU QLinearConv writes u8 or i8");
    KILN_RETURN_IF_ERROR(CheckZeroPoint(xz, x.dtype(), op_.typeName()));
    KILN_RETURN_IF_ERROR(CheckZeroPoint(wz, w.dtype(), op_.typeName()));
    KILN_RETURN_IF_ERROR(Require32Bit(x));
    KILN_RETURN_IF_ERROR(Require32Bit(w));
    KILN_RETURN_IF_ERROR(Require32Bit(y));
    const size_t nsp = x.shape().size() - 2;
    if (x.dimensions() < 3 || nsp > 3 || w.dimensions() != x.dimensions())
      return Unsupported("GPU %s takes 1 to 3 spatial dims", op_.typeName());
    const auto* p = op_.params<fb::ConvParams>();
    const std::vector<int64_t> xs = x.shape(), ws = w.shape(), ys = y.shape();
    const std::vector<int64_t> kernel(ws.begin() + 2, ws.end()), xin(xs.begin() + 2, xs.end()),
        yout(ys.begin() + 2, ys.end());
    const std::vector<int64_t> strides = nn::IntsOr(p ? p->strides() : nullptr, nsp, 1);
    const std::vector<int64_t> dil = nn::IntsOr(p ? p->dilations() : nullptr, nsp, 1);
    const std::vector<int64_t> pads = nn::WindowPads(p ? p->auto_pad() : fb::AutoPad::NotSet,
                                                     nn::IntsOr(p ? p->pads() : nullptr, 0, 0), xin, yout, kernel,
                                                     strides, dil);
    const int64_t group = p ? p->group() : 1;
    QConvPush push{};
    push.n = static_cast<uint32_t>(y.elementCount());
    push.cin = static_cast<uint32_t>(xs[1]);
    push.cout = static_cast<uint32_t>(ws[0]);
    push.cg = static_cast<uint32_t>(ws[1]);
    if (group < 1 || ws[0] % group != 0 || ws[1] * group != xs[1])
      return InvalidArgument("%s: channels %lld, weight channels %lld, group %lld disagree", op_.typeName(),
                             static_cast<long long>(xs[1]), static_cast<long long>(ws[1]), static_cast<long long>(group));
    push.mg = static_cast<uint32_t>(ws[0] / group);
    // Spatial dims right-aligned into three (leading ones of size 1).
    for (size_t d = 0; d < 3; ++d) {
      push.in[d] = push.out[d] = push.kernel[d] = push.stride[d] = push.dil[d] = 1;
      push.pad[d] = 0;
    }
    for (size_t d = 0; d < nsp; ++d) {
      const size_t u = 3 - nsp + d;
      push.in[u] = static_cast<uint32_t>(xin[d]);
      push.out[u] = static_cast<uint32_t>(yout[d]);
      push.kernel[u] = static_cast<uint32_t>(kernel[d]);
      push.stride[u] = static_cast<uint32_t>(strides[d]);
      push.dil[u] = static_cast<uint32_t>(dil[d]);
      push.pad[u] = static_cast<uint32_t>(pads[d]);  // a begin pad, >= 0
    }
    uint32_t flags = (xz ? kAZp : 0u) | (wz ? kBZp : 0u) | (ql ? kRequant : 0u);
    if (xz && xz->elementCount() != 1)
      return InvalidArgument("%s: x_zero_point '%s' must be one value", op_.typeName(), xz->name().c_str());
    KILN_RETURN_IF_ERROR(PerOrOne(wz, push.cout, op_.typeName(), "w_zero_point", kBZpPer, &flags));
    const Tensor* sx = &x;
    const Tensor* sw = &x;
    const Tensor* sy = &x;
    const Tensor* yz = &x;
    const Tensor* bias = &x;
    if (ql) {
      sx = in[1], sw = in[4], sy = in[6], yz = in[7];
      for (const Tensor* s : {sx, sw, sy}) KILN_RETURN_IF_ERROR(RequireF32Tensor(*s, op_.typeName()));
      if (sx->elementCount() != 1 || sy->elementCount() != 1)
        return InvalidArgument("QLinearConv: x_scale and y_scale must be one value each");
      KILN_RETURN_IF_ERROR(PerOrOne(sw, push.cout, op_.typeName(), "w_scale", kBSPer, &flags));
      if (!yz || yz->elementCount() != 1) return InvalidArgument("QLinearConv: y_zero_point must be one value");
      KILN_RETURN_IF_ERROR(CheckZeroPoint(yz, y.dtype(), op_.typeName()));
      // A fused clamp (fuse_qdq): bounds of the real value, quantized in the shader.
      float lo = 0, hi = 0;
      KILN_RETURN_IF_ERROR(nn::QuantFusedClamp(op_, &lo, &hi));
      if (std::isfinite(lo)) flags |= kActLo, push.act_lo = lo;
      if (std::isfinite(hi)) flags |= kActHi, push.act_hi = hi;
      if (const Tensor* bt = Opt(in, 8)) {
        if (bt->dtype() != fb::DataType::I32 || bt->elementCount() != ws[0])
          return InvalidArgument("QLinearConv: bias '%s' must be int32 with %lld values", bt->name().c_str(),
                                 static_cast<long long>(ws[0]));
        bias = bt;
        flags |= kBias;
      }
    }
    if (push.n == 0) return Status::Ok();
    std::vector<GpuBinding> rest = {{xz ? xz : &x}, {wz ? wz : &x}, {sx}, {sw},
                                    {sy},           {yz},           {bias}, {&y, nullptr, true}};
    Status s;
    auto packed = [&] {
      return planDot(push, x, w, wz, rest, {xt, wt, yt, flags, ColumnsAnInvocation(), ChannelsAnInvocation()}, ql);
    };
    if (DotKernelsOn() && push.mg >= 4 && tryPacked(packed, &s)) return s;
    if (DotKernelsOn() && push.mg == 1 && push.cg == 1 && push.cin == push.cout) {
      // Depthwise: qconv_dw, a row's columns an invocation (2 on GPUs, 8 on
      // CPU drivers, as qconv_dot's).
      const uint32_t tw = ColumnsAnInvocation();
      const uint64_t osp = uint64_t{push.out[0]} * push.out[1] * push.out[2];
      const uint64_t items = push.n / osp * push.out[0] * push.out[1] * ((push.out[2] + tw - 1) / tw);
      rest.insert(rest.begin(), {{&x}, {&w}});
      return add1D(ql ? "qconv_dw_f64" : "qconv_dw", std::move(rest), push, items, {xt, wt, yt, flags, tw});
    }
    rest.insert(rest.begin(), {{&x}, {&w}});
    return add1D(ql ? "qconv_f64" : "qconv", std::move(rest), push, push.n, {xt, wt, yt, flags});
  }

  const GraphOp& op_;
};

// Declines (the op runs on the host) what the kernels do not take.
Status QuantSupported(const GraphOp& op, const Graph& graph, GpuBackend* b, bool needs_f64) {
  KILN_RETURN_IF_ERROR(
      RequireDtypes(op, graph, {fb::DataType::F32, fb::DataType::U8, fb::DataType::I8, fb::DataType::I32}));
  if (!b->gpuCaps().storage_8bit)
    return Unsupported("GPU %s needs 8-bit storage (storageBuffer8BitAccess), which the device lacks", op.typeName());
  if (b->halfStorage()) return Unsupported("GPU %s runs without fp16 storage", op.typeName());
  if (needs_f64 && !b->gpuCaps().float64)
    return Unsupported("GPU %s requantizes in double (the host's rounding); the device has no f64", op.typeName());
  return Status::Ok();
}

struct QAddPush {
  uint32_t n, a_step, b_step;
  float act_lo, act_hi;
};

// QLinearAdd (qadd.comp / qadd.cl): same shapes, or A or B one value (other
// broadcasts run on the host).
class QAddExecution final : public GpuExecution {
 public:
  QAddExecution(GpuBackend* b, const GraphOp& op) : GpuExecution(b), op_(op) {}

 private:
  Status plan(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out) override {
    const Tensor& a = *in[0];
    const Tensor& b = *in[3];
    const Tensor& c = *out[0];
    KILN_ASSIGN_OR_RETURN(uint32_t type, ByteType(a, op_.typeName()));
    if (b.dtype() != a.dtype() || c.dtype() != a.dtype())
      return InvalidArgument("QLinearAdd: A, B and C must be the same 8-bit type");
    KILN_RETURN_IF_ERROR(Require32Bit(a));
    KILN_RETURN_IF_ERROR(Require32Bit(b));
    KILN_RETURN_IF_ERROR(Require32Bit(c));
    QAddPush push{static_cast<uint32_t>(c.elementCount()), 1, 1, 0.f, 0.f};
    if (a.elementCount() == 1 && c.elementCount() != 1) push.a_step = 0;
    else if (a.shape() != c.shape()) return Unsupported("GPU QLinearAdd broadcasts only a single value");
    if (b.elementCount() == 1 && c.elementCount() != 1) push.b_step = 0;
    else if (b.shape() != c.shape()) return Unsupported("GPU QLinearAdd broadcasts only a single value");
    uint32_t flags = 0;
    const Tensor* zs[3] = {Opt(in, 2), Opt(in, 5), Opt(in, 7)};
    for (int k = 0; k < 3; ++k) {
      const Tensor* s = in[static_cast<size_t>(k == 0 ? 1 : k == 1 ? 4 : 6)];
      KILN_RETURN_IF_ERROR(RequireF32Tensor(*s, op_.typeName()));
      if (s->elementCount() != 1 || (zs[k] && zs[k]->elementCount() != 1))
        return InvalidArgument("QLinearAdd: scales and zero points must be one value each (per tensor)");
      KILN_RETURN_IF_ERROR(CheckZeroPoint(zs[k], a.dtype(), op_.typeName()));
      if (zs[k]) flags |= 1u << k;
    }
    float lo = 0, hi = 0;
    KILN_RETURN_IF_ERROR(nn::QuantFusedClamp(op_, &lo, &hi));
    if (std::isfinite(lo)) flags |= 8u, push.act_lo = lo;
    if (std::isfinite(hi)) flags |= 16u, push.act_hi = hi;
    if (push.n == 0) return Status::Ok();
    const Tensor* any = in[1];  // bound where a zero point is absent (not read)
    return add1D("qadd_f64",
                 {{&a}, {in[1]}, {zs[0] ? zs[0] : any}, {&b}, {in[4]}, {zs[1] ? zs[1] : any}, {in[6]},
                  {zs[2] ? zs[2] : any}, {&c, nullptr, true}},
                 push, push.n, {type, flags});
  }

  const GraphOp& op_;
};

}  // namespace

StatusOr<std::unique_ptr<Execution>> CreateGpuQAdd(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(QuantSupported(op, graph, b, true));
  return Make(std::make_unique<QAddExecution>(b, op));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuQuantize(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(QuantSupported(op, graph, b, false));
  if (op.type == fb::OpType::DequantizeLinear && !op.inputs.empty() &&
      DeclaredInputDtype(op, graph, 0) == fb::DataType::I32)
    return Unsupported("GPU DequantizeLinear takes u8 and i8");
  return Make(std::make_unique<QuantizeExecution>(b, op));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuQMatMul(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(QuantSupported(op, graph, b, op.type == fb::OpType::QLinearMatMul));
  const bool ql = op.type == fb::OpType::QLinearMatMul;
  return Make(std::make_unique<QMatMulExecution>(b, op, ConstantOperand(op, graph, ql ? 3 : 1, -1)));
}

StatusOr<std::unique_ptr<Execution>> CreateGpuQConv(const GraphOp& op, const Graph& graph, GpuBackend* b) {
  KILN_RETURN_IF_ERROR(QuantSupported(op, graph, b, op.type == fb::OpType::QLinearConv));
  const bool ql = op.type == fb::OpType::QLinearConv;
  return Make(std::make_unique<QConvExecution>(b, op, ConstantOperand(op, graph, ql ? 3 : 1, ql ? 5 : 3)));
}

}  // namespace kiln
