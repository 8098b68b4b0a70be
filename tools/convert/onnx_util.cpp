#include "onnx_util.h"

#include <cstring>
#include <fstream>

namespace kiln::onnx_import {

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t AttrInt(const onnx::NodeProto& n, const char* name, int64_t def) {
  auto* a = FindAttr(n, name);
  return a ? a->i() : def;
}

float AttrFloat(const onnx::NodeProto& n, const char* name, float def) {
  auto* a = FindAttr(n, name);
  return a ? a->f() : def;
}

std::string AttrString(const onnx::NodeProto& n, const char* name, const std::string& def) {
  auto* a = FindAttr(n, name);
  return a ? a->s() : def;
}

std::vector<int64_t> AttrInts(const onnx::NodeProto& n, const char* name) {
  auto* a = FindAttr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>();
}

std::vector<int32_t> AttrInts32(const onnx::NodeProto& n, const char* name) {
  std::vector<int32_t> v;
  for (int64_t x : AttrInts(n, name)) v.push_back(static_cast<int32_t>(x));
  return v;
}

std::vector<float> AttrFloats(const onnx::NodeProto& n, const char* name) {
  auto* a = FindAttr(n, name);
  return a ? std::vector<float>(a->floats().begin(), a->floats().end()) : std::vector<float>();
}

StatusOr<fb::DataType> MapDataType(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return fb::DataType::F32;
    case onnx::TensorProto::FLOAT16: return fb::DataType::F16;
    case onnx::TensorProto::BFLOAT16: return fb::DataType::BF16;
    case onnx::TensorProto::INT32: return fb::DataType::I32;
    case onnx::TensorProto::INT64: return fb::DataType::I64;
    case onnx::TensorProto::INT8: return fb::DataType::I8;
    case onnx::TensorProto::UINT8: return fb::DataType::U8;
    case onnx::TensorProto::BOOL: return fb::DataType::BOOL;
    default: break;
  }
  return Unsupported("ONNX data type %s is not supported",
                     onnx::TensorProto_DataType_IsValid(t)
                         ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t)).c_str()
                         : std::to_string(t).c_str());
}

StatusOr<TensorData> ReadTensor(const onnx::TensorProto& t, const std::string& base_dir) {
  TensorData d;
  ASSIGN_OR_RETURN(d.dtype, MapDataType(t.data_type()), "tensor '%s'", t.name().c_str());
  d.shape.assign(t.dims().begin(), t.dims().end());
  int64_t n = 1;
  for (int64_t s : d.shape) {
    if (s < 0) return InvalidArgument("tensor '%s': negative dim", t.name().c_str());
    n *= s;
  }
  size_t es = DataTypeSize(d.dtype), bytes = static_cast<size_t>(n) * es;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0, length = bytes;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::stoull(kv.value());
      if (kv.key() == "length") length = std::stoull(kv.value());
    }
    if (location.empty() || location[0] == '/' || location.find("..") != std::string::npos)
      return InvalidArgument("tensor '%s': bad external data location '%s'", t.name().c_str(), location.c_str());
    if (length != bytes)
      return InvalidArgument("tensor '%s': external length %llu, expected %zu", t.name().c_str(),
                             (unsigned long long)length, bytes);
    std::ifstream f(base_dir + "/" + location, std::ios::binary);
    if (!f) return NotFound("tensor '%s': external data file '%s' not found", t.name().c_str(), location.c_str());
    f.seekg(static_cast<std::streamoff>(offset));
    d.bytes.resize(bytes);
    f.read(reinterpret_cast<char*>(d.bytes.data()), static_cast<std::streamsize>(bytes));
    if (!f) return IoError("tensor '%s': external data file '%s' is too short", t.name().c_str(), location.c_str());
    return d;
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      return InvalidArgument("tensor '%s': raw_data has %zu bytes, expected %zu", t.name().c_str(),
                             t.raw_data().size(), bytes);
    d.bytes.assign(t.raw_data().begin(), t.raw_data().end());
    return d;
  }
  d.bytes.resize(bytes);
  if (bytes == 0) return d;  // empty tensor: no typed values to read (and their data() may be null)
  auto need = [&](int have) -> Status {
    if (have != n) return InvalidArgument("tensor '%s': %d values for %lld elements", t.name().c_str(), have, (long long)n);
    return Status::Ok();
  };
  switch (d.dtype) {
    case fb::DataType::F32:
      RETURN_IF_ERROR(need(t.float_data_size()));
      std::memcpy(d.bytes.data(), t.float_data().data(), bytes);
      break;
    case fb::DataType::I64:
      RETURN_IF_ERROR(need(t.int64_data_size()));
      std::memcpy(d.bytes.data(), t.int64_data().data(), bytes);
      break;
    default:  // int32_data holds i32, i8, u8, bool, f16 and bf16 bit patterns
      RETURN_IF_ERROR(need(t.int32_data_size()));
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = t.int32_data(static_cast<int>(i));
        std::memcpy(d.bytes.data() + i * es, &v, es);  // little-endian: low bytes first
      }
      break;
  }
  return d;
}

}  // namespace kiln::onnx_import
