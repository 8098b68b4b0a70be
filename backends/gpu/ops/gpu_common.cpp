#include "gpu_common.h"

#include <algorithm>
#include <cstring>

#include "half.h"

namespace kiln {

Status RequireDtypes(const GraphOp& op, const Graph& graph, std::initializer_list<fb::DataType> allowed) {
  auto check = [&](int t) -> Status {
    if (t < 0) return Status::Ok();
    fb::DataType d = graph.tensors[static_cast<size_t>(t)].dtype;
    if (std::find(allowed.begin(), allowed.end(), d) == allowed.end())
      return Unsupported("tensor '%s' is %s; the GPU %s kernel takes %s", graph.tensors[static_cast<size_t>(t)].name.c_str(),
                         fb::EnumNameDataType(d), op.typeName(), fb::EnumNameDataType(*allowed.begin()));
    return Status::Ok();
  };
  for (int t : op.inputs) KILN_RETURN_IF_ERROR(check(t));
  for (int t : op.outputs) KILN_RETURN_IF_ERROR(check(t));
  return Status::Ok();
}

const GraphTensor* ConstantInput(const GraphOp& op, const Graph& graph, size_t k) {
  if (k >= op.inputs.size() || op.inputs[k] < 0) return nullptr;
  const GraphTensor& t = graph.tensors[static_cast<size_t>(op.inputs[k])];
  return t.isConstant() ? &t : nullptr;
}

StatusOr<GpuBuffer> CreateWeightBuffer(GpuBackend* gpu, const std::vector<float>& values) {
  GpuBuffer b;
  if (gpu->halfStorage()) {
    std::vector<uint16_t> h(values.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = FloatToHalf(values[i]);
    KILN_ASSIGN_OR_RETURN(b, gpu->createBuffer(h.size() * 2, h.data()));
  } else {
    KILN_ASSIGN_OR_RETURN(b, gpu->createBuffer(values.size() * 4, values.data()));
  }
  gpu->addOwnWeightBytes(static_cast<int64_t>(b.bytes));
  return b;
}

Status ReserveBuffer(GpuBackend* gpu, GpuBuffer* buf, uint64_t bytes) {
  if (buf->bytes >= bytes) return Status::Ok();
  gpu->freeBuffer(buf);
  KILN_ASSIGN_OR_RETURN(*buf, gpu->createBuffer(bytes));
  return Status::Ok();
}

StatusOr<float> ConstantScalar(const GraphOp& op, const Graph& graph, size_t k, float fallback) {
  if (k >= op.inputs.size() || op.inputs[k] < 0) return fallback;
  const GraphTensor* t = ConstantInput(op, graph, k);
  if (!t) return Unsupported("input %zu is computed at run time; the GPU kernel needs it constant", k);
  if (t->constant.size < DataTypeSize(t->dtype)) return fallback;
  const uint8_t* p = t->constant.data;
  switch (t->dtype) {
    case fb::DataType::F32: { float v; std::memcpy(&v, p, 4); return v; }
    case fb::DataType::F16: { uint16_t v; std::memcpy(&v, p, 2); return HalfToFloat(v); }
    default: return Unsupported("input %zu is %s; the GPU kernel takes f32", k, fb::EnumNameDataType(t->dtype));
  }
}

StatusOr<Broadcast> MakeBroadcast(const std::vector<int64_t>& out, const std::vector<std::vector<int64_t>>& ins) {
  const size_t rank = out.size();
  // Right-align every input; strides 0 where a dim is broadcast.
  std::vector<std::vector<int64_t>> strides(ins.size(), std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < ins.size(); ++k) {
    const auto& s = ins[k];
    if (s.size() > rank) return InvalidArgument("broadcast: input rank %zu above output rank %zu", s.size(), rank);
    int64_t stride = 1;
    for (size_t d = s.size(); d-- > 0;) {
      size_t od = d + rank - s.size();
      if (s[d] != 1 && s[d] != out[od]) return InvalidArgument("broadcast: dim %lld onto %lld", (long long)s[d], (long long)out[od]);
      strides[k][od] = s[d] == 1 ? 0 : stride;
      stride *= s[d];
    }
  }
  // Collapse: drop size-1 dims, merge a dim into the next inner one when
  // every input is contiguous across the pair.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> st(ins.size());
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < ins.size() && merge; ++k) merge = st[k].back() == strides[k][d] * out[d];
    if (merge) {
      dims.back() *= out[d];
      for (size_t k = 0; k < ins.size(); ++k) st[k].back() = strides[k][d];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < ins.size(); ++k) st[k].push_back(strides[k][d]);
    }
  }
  if (dims.size() > 6) return Unsupported("broadcast over %zu dims (the GPU kernel takes 6)", dims.size());
  Broadcast b;
  b.rank = static_cast<uint32_t>(dims.size());
  b.strides.assign(ins.size(), std::vector<uint32_t>(6, 0));
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] > UINT32_MAX) return Unsupported("dim %lld is over 32 bits", (long long)dims[d]);
    b.dims[d] = static_cast<uint32_t>(dims[d]);
    for (size_t k = 0; k < ins.size(); ++k) b.strides[k][d] = static_cast<uint32_t>(st[k][d]);
  }
  return b;
}

Status Require32Bit(const Tensor& t) {
  if (t.elementCount() > INT32_MAX)
    return Unsupported("'%s' has %lld elements; GPU kernels index with 32 bits", t.name().c_str(),
                       (long long)t.elementCount());
  return Status::Ok();
}

BroadcastPush MakeBroadcastPush(const Broadcast& bc, uint32_t n) {
  BroadcastPush push{};
  push.n = n;
  push.rank = bc.rank;
  for (int d = 0; d < 6; ++d) {
    push.dims[d] = bc.dims[d];
    push.sa[d] = bc.strides[0][d];
    push.sb[d] = bc.strides[1][d];
  }
  return push;
}

}  // namespace kiln
