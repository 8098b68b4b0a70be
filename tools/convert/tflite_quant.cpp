// TFLite quantized models in QDQ form (the TfliteImporter methods declared
// under "quantization" in tflite_importer.h; the form is described at the
// top of that file): an 8-bit activation read through one DequantizeLinear,
// each 8-bit output quantized with the file's scale and zero point, 8-bit
// weights and int32 biases kept behind a DequantizeLinear for fuse_qdq.
#include "tflite_importer.h"

namespace kiln::tflite_import {

StatusOr<std::pair<int, int>> TfliteImporter::QuantConsts(int i) {
  const tfl::Tensor& t = T(i);
  const tfl::Quantization& q = t.quant;
  const size_t n = q.scale.size();
  if (n == 0) return InvalidArgument("tensor '%s' has no quantization scale", t.name.c_str());
  if (!q.zero_point.empty() && q.zero_point.size() != n)
    return InvalidArgument("tensor '%s' has %zu scales and %zu zero points", t.name.c_str(), n, q.zero_point.size());
  fb::DataType dtype = fb::DataType::I32;
  int64_t lo = INT32_MIN, hi = INT32_MAX;
  if (t.type == tfl::kInt8) dtype = fb::DataType::I8, lo = -128, hi = 127;
  else if (t.type == tfl::kUInt8) dtype = fb::DataType::U8, lo = 0, hi = 255;
  else if (t.type != tfl::kInt32)
    return Unsupported("tensor '%s': %s quantization (8-bit tensors and int32 biases are supported)",
                       t.name.c_str(), tfl::TensorTypeName(t.type));
  std::vector<uint8_t> zeros;
  for (size_t k = 0; k < n; ++k) {
    if (!(q.scale[k] > 0) || !std::isfinite(q.scale[k]))
      return InvalidArgument("tensor '%s': quantization scale %g is not positive and finite", t.name.c_str(),
                             static_cast<double>(q.scale[k]));
    const int64_t z = q.zero_point.empty() ? 0 : q.zero_point[k];
    if (z < lo || z > hi)
      return InvalidArgument("tensor '%s': zero point %lld is out of the range of %s", t.name.c_str(),
                             static_cast<long long>(z), tfl::TensorTypeName(t.type));
    const int32_t z32 = static_cast<int32_t>(z);
    const uint8_t* b = reinterpret_cast<const uint8_t*>(&z32);
    if (dtype == fb::DataType::I32) zeros.insert(zeros.end(), b, b + 4);
    else zeros.push_back(static_cast<uint8_t>(z32 & 0xff));
  }
  const Ints shape = n == 1 ? Ints{} : Ints{static_cast<int64_t>(n)};
  const int scale = b_.addConstant(Unique(t.name + "/scale"), shape, q.scale);
  const int zero = b_.addConstant(Unique(t.name + "/zero_point"), dtype, shape, zeros.data(), zeros.size());
  return std::make_pair(scale, zero);
}

StatusOr<int> TfliteImporter::QdqOp(OpType type, int x, int i, int64_t axis, const std::string& name) {
  KILN_ASSIGN_OR_RETURN(auto sz, QuantConsts(i));
  fb::OpParamsUnion p;
  if (T(i).quant.scale.size() > 1) p = Make<fb::AxisParamsT>([&](auto& a) { a.axis = static_cast<int32_t>(axis); });
  const int y = Op(type, {x, sz.first, sz.second}, name, std::move(p));
  if (type == OpType::QuantizeLinear)  // the passes read an 8-bit tensor's type before shape inference
    b_.net().tensors[static_cast<size_t>(y)]->dtype = b_.net().tensors[static_cast<size_t>(sz.second)]->dtype;
  return y;
}

StatusOr<int> TfliteImporter::Weights(int i, const Ints& perm) {
  if (!tfl::IsQuantized(T(i)) || folded_.count(i)) {
    KILN_ASSIGN_OR_RETURN(ConstData d, ConstF32(i));
    KILN_RETURN_IF_ERROR(PermuteConst(&d, perm), "constant '%s'", T(i).name.c_str());
    return AddConst(T(i).name, d);
  }
  if (!IsConst(i)) return Unsupported("tensor '%s' must be a constant", T(i).name.c_str());
  KILN_ASSIGN_OR_RETURN(ConstData d, tfl::ReadData(m_, T(i)));
  KILN_RETURN_IF_ERROR(PermuteConst(&d, perm), "constant '%s'", T(i).name.c_str());
  KILN_ASSIGN_OR_RETURN(int w, AddConst(T(i).name, d));
  const int64_t dim = T(i).quant.dimension;
  const int64_t axis = std::find(perm.begin(), perm.end(), dim) - perm.begin();
  if (T(i).quant.scale.size() > 1 &&
      (dim < 0 || dim >= static_cast<int64_t>(perm.size()) ||
       d.shape[static_cast<size_t>(axis)] != static_cast<int64_t>(T(i).quant.scale.size())))
    return InvalidArgument("constant '%s': %zu scales do not match its dimension %lld", T(i).name.c_str(),
                           T(i).quant.scale.size(), static_cast<long long>(dim));
  return QdqOp(OpType::DequantizeLinear, w, i, axis, T(i).name + "/dequantized");
}

StatusOr<int> TfliteImporter::Bias(int i) {
  if (T(i).type != tfl::kInt32 || T(i).quant.scale.empty()) return F32Const(i, "bias");
  if (!IsConst(i)) return Unsupported("bias '%s' must be a constant", T(i).name.c_str());
  if (Rank(i) != 1) return InvalidArgument("bias '%s' must be 1-D", T(i).name.c_str());
  KILN_ASSIGN_OR_RETURN(ConstData d, tfl::ReadData(m_, T(i)));
  KILN_ASSIGN_OR_RETURN(int b, AddConst(T(i).name, d));
  return QdqOp(OpType::DequantizeLinear, b, i, 0, T(i).name + "/dequantized");
}

Status TfliteImporter::ImportOpQuantized(const tfl::Operator& op, const tfl::OperatorCode& code,
                                         const std::string& type) {
  auto quantized = [&](int32_t i) { return i >= 0 && tfl::IsQuantized(T(i)); };
  for (int32_t i : op.inputs)
    if (quantized(i) && T(i).type == tfl::kInt16) return Keep(op, type, "16-bit quantized activations");
  for (int32_t o : op.outputs)
    if (quantized(o) && T(o).type == tfl::kInt16) return Keep(op, type, "16-bit quantized activations");
  struct Swapped {
    int tensor, q;
  };
  std::vector<Swapped> swapped;
  for (int32_t i : op.inputs) {
    if (!quantized(i) || IsConst(i) || std::any_of(swapped.begin(), swapped.end(), [&](auto& s) { return s.tensor == i; }))
      continue;
    KILN_ASSIGN_OR_RETURN(int q, Act(i), "input '%s'", T(i).name.c_str());
    KILN_ASSIGN_OR_RETURN(int f, FloatView(i), "input '%s'", T(i).name.c_str());
    swapped.push_back({i, q});
    kiln_[static_cast<size_t>(i)] = f;
    auto v = fview_nhwc_.find(i);
    if (v != fview_nhwc_.end()) nhwc_[i] = v->second;
  }
  const size_t kept = kept_;
  const int first_new = b_.tensorCount();
  Status s = ImportOp(op, code, type);
  for (const Swapped& w : swapped) {  // the 8-bit tensors back; NHWC views of the f32 ones kept for later readers
    auto v = nhwc_.find(w.tensor);
    if (v != nhwc_.end()) fview_nhwc_[w.tensor] = v->second, nhwc_.erase(v);
    kiln_[static_cast<size_t>(w.tensor)] = w.q;
  }
  KILN_RETURN_IF_ERROR(s);
  if (kept_ != kept) return Status::Ok();  // kept unsupported: nothing to quantize
  for (int32_t o : op.outputs) {
    if (!quantized(o) || kiln_[static_cast<size_t>(o)] < 0) continue;
    const int f = kiln_[static_cast<size_t>(o)];
    nhwc_.erase(o);  // an unrounded view: readers take the quantized tensor's
    KILN_ASSIGN_OR_RETURN(int q, QdqOp(OpType::QuantizeLinear, f, o, QuantAxis(o), T(o).name + "/quantize"),
                          "output '%s'", T(o).name.c_str());
    if (f >= first_new) {  // made by this op: the 8-bit tensor takes its (the TFLite) name
      auto& tensors = b_.net().tensors;
      const std::string name = tensors[static_cast<size_t>(f)]->name;
      tensors[static_cast<size_t>(f)]->name = Unique(name + "/f32");
      tensors[static_cast<size_t>(q)]->name = name;
    }
    kiln_[static_cast<size_t>(o)] = q;
  }
  return Status::Ok();
}

}  // namespace kiln::tflite_import
