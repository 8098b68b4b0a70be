// Host kernels: the ops whose output shapes depend on their input values
// (NonZero, Compress, Unique, NonMaxSuppression; results computed in
// engine/src/ops/shape_data_dependent.cpp, the shapes planned from the same
// values at resize), ReverseSequence, Det and Einsum.
#include <cmath>
#include <cstring>

#include "elements.h"
#include "host_backend.h"
#include "ops/data_dependent.h"
#include "ops/op_params.h"
#include "ops/shape_inference.h"

namespace kiln {
namespace {

// The planned output holds `want` items along its dim 0 or `axis`; the values
// now give `got`: the session plans again when value inputs change, so this
// only fails when an input was written between resize and run by a path the
// session cannot see.
Status CheckPlanned(const GraphOp& op, int64_t got, int64_t want) {
  if (got != want)
    return InvalidArgument("%s: its input values give %lld results, the session planned %lld: call resize after "
                              "writing them",
                              op.typeName(), static_cast<long long>(got), static_cast<long long>(want));
  return Status::Ok();
}

Status RunNonZero(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  const std::vector<int64_t> flat = NonZeroFlat(x);
  const int64_t n = static_cast<int64_t>(flat.size()), rank = x.dimensions();
  KILN_RETURN_IF_ERROR(CheckPlanned(op, n, y.shape()[1]));
  int64_t* dst = y.host<int64_t>();
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = flat[static_cast<size_t>(k)];
    for (int64_t d = rank; d-- > 0;) {
      const int64_t len = x.shape()[static_cast<size_t>(d)];
      dst[d * n + k] = rem % len;
      rem /= len;
    }
  }
  return Status::Ok();
}

Status RunCompress(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  auto* p = op.params<fb::CompressParams>();
  int64_t outer = 1, n = x.elementCount(), inner = 1;
  int axis = 0;
  if (p && p->has_axis()) {
    KILN_ASSIGN_OR_RETURN(axis, NormalizeAxis(p->axis(), x.dimensions()), "Compress");
    AroundAxis(x.shape(), axis, &outer, &n, &inner);
  }
  const std::vector<int64_t> sel = CompressSelection(*in[1], n);
  const int64_t k = static_cast<int64_t>(sel.size());
  KILN_RETURN_IF_ERROR(CheckPlanned(op, k, y.shape()[static_cast<size_t>(p && p->has_axis() ? axis : 0)]));
  const size_t bytes = static_cast<size_t>(inner) * x.elementSize();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(y.host<uint8_t>() + static_cast<size_t>(o * k + j) * bytes,
                  x.host<uint8_t>() + static_cast<size_t>(o * n + sel[static_cast<size_t>(j)]) * bytes, bytes);
  return Status::Ok();
}

Status RunUnique(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  KILN_ASSIGN_OR_RETURN(UniqueResult u, ComputeUnique(op, x));
  const int64_t n = static_cast<int64_t>(u.first.size());
  Tensor& y = *out[0];
  KILN_RETURN_IF_ERROR(CheckPlanned(op, n, y.shape()[static_cast<size_t>(std::max(u.axis, 0))]));
  int64_t outer = 1, items = u.items, inner = 1;
  if (u.axis >= 0) AroundAxis(x.shape(), u.axis, &outer, &items, &inner);
  const size_t bytes = static_cast<size_t>(inner) * x.elementSize();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(y.host<uint8_t>() + static_cast<size_t>(o * n + j) * bytes,
                  x.host<uint8_t>() + static_cast<size_t>(o * u.items + u.first[static_cast<size_t>(j)]) * bytes, bytes);
  const std::vector<int64_t>* lists[] = {&u.first, &u.inverse, &u.counts};
  for (size_t k = 1; k < out.size() && k < 4; ++k)
    if (out[k]) std::memcpy(out[k]->hostData(), lists[k - 1]->data(), lists[k - 1]->size() * 8);
  return Status::Ok();
}

Status RunNonMaxSuppression(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                            HostBackend&) {
  KILN_ASSIGN_OR_RETURN(auto sel, ComputeNms(op, in));
  KILN_RETURN_IF_ERROR(CheckPlanned(op, static_cast<int64_t>(sel.size()), out[0]->shape()[0]));
  if (!sel.empty()) std::memcpy(out[0]->hostData(), sel.data(), sel.size() * sizeof(sel[0]));
  return Status::Ok();
}

// ReverseSequence(x, lengths): along time_axis, the first lengths[b] items of
// each batch b reversed, the rest copied.
Status RunReverseSequence(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out,
                          HostBackend&) {
  const Tensor& x = *in[0];
  auto* p = op.params<fb::ReverseSequenceParams>();
  const int rank = x.dimensions();
  KILN_ASSIGN_OR_RETURN(int bax, NormalizeAxis(p ? p->batch_axis() : 1, rank), "ReverseSequence batch_axis");
  KILN_ASSIGN_OR_RETURN(int tax, NormalizeAxis(p ? p->time_axis() : 0, rank), "ReverseSequence time_axis");
  if (bax == tax) return InvalidArgument("ReverseSequence: batch_axis and time_axis are both %d", bax);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lens, TensorInts(*in[1]), "ReverseSequence lengths");
  const int64_t nb = x.shape()[static_cast<size_t>(bax)], nt = x.shape()[static_cast<size_t>(tax)];
  if (static_cast<int64_t>(lens.size()) != nb)
    return InvalidArgument("ReverseSequence: %zu lengths for a batch of %lld", lens.size(), static_cast<long long>(nb));
  for (int64_t l : lens)
    if (l < 0 || l > nt)
      return InvalidArgument("ReverseSequence: length %lld is out of range for %lld steps", static_cast<long long>(l),
                             static_cast<long long>(nt));
  const std::vector<int64_t> st = ContiguousStrides(x.shape());
  const size_t es = x.elementSize();
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    const int64_t b = i / st[static_cast<size_t>(bax)] % nb, t = i / st[static_cast<size_t>(tax)] % nt;
    const int64_t len = lens[static_cast<size_t>(b)];
    const int64_t src_t = t < len ? len - 1 - t : t;
    const int64_t src = i + (src_t - t) * st[static_cast<size_t>(tax)];
    std::memcpy(out[0]->host<uint8_t>() + static_cast<size_t>(i) * es, x.host<uint8_t>() + static_cast<size_t>(src) * es, es);
  }
  return Status::Ok();
}

// Det: LU with partial pivoting in double, per matrix.
Status RunDet(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  const Tensor& x = *in[0];
  if (!IsFloating(x.dtype()) || !IsArithmetic(x.dtype())) return Unsupported("host Det supports f32 and f64, not %s", DataTypeName(x.dtype()));
  const int64_t m = x.shape().back(), mats = out[0]->elementCount();
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t k = 0; k < mats; ++k) {
    for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = LoadDouble(x.hostData(), x.dtype(), k * m * m + i);
    double det = 1;
    for (int64_t c = 0; c < m && det != 0; ++c) {
      int64_t piv = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[static_cast<size_t>(r * m + c)]) > std::fabs(a[static_cast<size_t>(piv * m + c)])) piv = r;
      if (a[static_cast<size_t>(piv * m + c)] == 0) {
        det = 0;
        break;
      }
      if (piv != c) {
        for (int64_t j = 0; j < m; ++j) std::swap(a[static_cast<size_t>(c * m + j)], a[static_cast<size_t>(piv * m + j)]);
        det = -det;
      }
      const double d = a[static_cast<size_t>(c * m + c)];
      det *= d;
      for (int64_t r = c + 1; r < m; ++r) {
        const double f = a[static_cast<size_t>(r * m + c)] / d;
        for (int64_t j = c; j < m; ++j) a[static_cast<size_t>(r * m + j)] -= f * a[static_cast<size_t>(c * m + j)];
      }
    }
    StoreDouble(out[0]->hostData(), out[0]->dtype(), k, det);
  }
  (void)op;
  return Status::Ok();
}

// Einsum: every output element is the sum, over the letters not in the
// output, of the product of the operands (a direct loop: Einsum in
// inference graphs is small; a GPU lowers it to MatMul and Transpose).
Status RunEinsum(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  std::vector<const std::vector<int64_t>*> shapes;
  for (Tensor* t : in) shapes.push_back(&t->shape());
  KILN_ASSIGN_OR_RETURN(EinsumSpec spec, ParseEinsum(op, shapes));
  const fb::DataType dt = in[0]->dtype();
  if (!IsArithmetic(dt)) return Unsupported("host Einsum does not support %s", DataTypeName(dt));
  // All letters: output ones first, then the summed ones.
  std::string letters = spec.output;
  for (const std::string& s : spec.inputs)
    for (char ch : s)
      if (letters.find(ch) == std::string::npos) letters += ch;
  std::vector<int> slot(128, -1);
  for (size_t i = 0; i < letters.size(); ++i) slot[static_cast<size_t>(letters[i])] = static_cast<int>(i);
  // Per operand, the stride of each letter (0 where it broadcasts or is absent).
  std::vector<std::vector<int64_t>> stride(in.size(), std::vector<int64_t>(letters.size(), 0));
  for (size_t k = 0; k < in.size(); ++k) {
    const std::vector<int64_t> st = ContiguousStrides(in[k]->shape());
    for (size_t d = 0; d < spec.inputs[k].size(); ++d)
      if (in[k]->shape()[d] != 1) stride[k][static_cast<size_t>(slot[static_cast<size_t>(spec.inputs[k][d])])] += st[d];
  }
  std::vector<int64_t> extent;
  for (char ch : letters) extent.push_back(spec.size[static_cast<size_t>(ch)]);
  const size_t nout = spec.output.size();
  int64_t summed = 1;
  for (size_t i = nout; i < letters.size(); ++i) summed *= extent[i];
  std::vector<int64_t> idx(letters.size());
  for (int64_t o = 0; o < out[0]->elementCount(); ++o) {
    int64_t rem = o;
    for (size_t i = nout; i-- > 0;) {
      idx[i] = rem % extent[i];
      rem /= extent[i];
    }
    double acc = 0;
    for (int64_t s = 0; s < summed; ++s) {
      int64_t r = s;
      for (size_t i = letters.size(); i-- > nout;) {
        idx[i] = r % extent[i];
        r /= extent[i];
      }
      double prod = 1;
      for (size_t k = 0; k < in.size(); ++k) {
        int64_t off = 0;
        for (size_t i = 0; i < letters.size(); ++i) off += idx[i] * stride[k][i];
        prod *= LoadDouble(in[k]->hostData(), dt, off);
      }
      acc += prod;
    }
    StoreDouble(out[0]->hostData(), dt, o, acc);
  }
  return Status::Ok();
}

}  // namespace

KILN_HOST_FN_FACTORY(NonZero)
KILN_HOST_FN_FACTORY(Compress)
KILN_HOST_FN_FACTORY(Unique)
KILN_HOST_FN_FACTORY(NonMaxSuppression)
KILN_HOST_FN_FACTORY(ReverseSequence)
KILN_HOST_FN_FACTORY(Det)
KILN_HOST_FN_FACTORY(Einsum)

}  // namespace kiln
