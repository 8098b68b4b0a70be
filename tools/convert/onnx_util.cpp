#include "onnx_util.h"

#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "checked_math.h"

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

StatusOr<std::vector<int32_t>> AttrInts32(const onnx::NodeProto& n, const char* name) {
  std::vector<int32_t> v;
  for (int64_t x : AttrInts(n, name)) {
    if (x < INT32_MIN || x > INT32_MAX)
      return InvalidArgument("attribute %s: value %lld is out of the int32 range", name, static_cast<long long>(x));
    v.push_back(static_cast<int32_t>(x));
  }
  return v;
}

StatusOr<int32_t> AttrInt32(const onnx::NodeProto& n, const char* name, int64_t def) {
  int64_t x = AttrInt(n, name, def);
  if (x < INT32_MIN || x > INT32_MAX)
    return InvalidArgument("attribute %s: value %lld is out of the int32 range", name, static_cast<long long>(x));
  return static_cast<int32_t>(x);
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
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
    case onnx::TensorProto::DOUBLE: return fb::DataType::F64;
    case onnx::TensorProto::UINT16: return fb::DataType::U16;
    case onnx::TensorProto::UINT32: return fb::DataType::U32;
    case onnx::TensorProto::UINT64: return fb::DataType::U64;
    case onnx::TensorProto::INT16: return fb::DataType::I16;
    default: break;
  }
  return Unsupported("ONNX data type %s is not supported",
                     onnx::TensorProto_DataType_IsValid(t)
                         ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t)).c_str()
                         : std::to_string(t).c_str());
}

namespace {

// A decimal uint64 from an external_data field, or an error naming it.
StatusOr<uint64_t> ParseU64(const onnx::TensorProto& t, const std::string& key, const std::string& v) {
  if (v.empty() || v.size() > 20 || v.find_first_not_of("0123456789") != std::string::npos)
    return InvalidArgument("tensor '%s': external data %s '%s' is not a number", t.name().c_str(), key.c_str(),
                           v.c_str());
  uint64_t r = 0;
  for (char c : v)
    if (__builtin_mul_overflow(r, 10, &r) || __builtin_add_overflow(r, static_cast<uint64_t>(c - '0'), &r))
      return InvalidArgument("tensor '%s': external data %s '%s' is out of range", t.name().c_str(), key.c_str(),
                             v.c_str());
  return r;
}

}  // namespace

StatusOr<TensorData> ReadTensor(const onnx::TensorProto& t, const std::string& base_dir) {
  TensorData d;
  KILN_ASSIGN_OR_RETURN(d.dtype, MapDataType(t.data_type()), "tensor '%s'", t.name().c_str());
  d.shape.assign(t.dims().begin(), t.dims().end());
  int64_t n = 0;
  size_t es = DataTypeSize(d.dtype), bytes = 0;
  for (int64_t s : d.shape)
    if (s < 0) return InvalidArgument("tensor '%s': negative dim in %s", t.name().c_str(), ShapeString(d.shape).c_str());
  if (!CheckedElementCount(d.shape, &n) || !CheckedByteSize(n, es, &bytes))
    return InvalidArgument("tensor '%s': shape %s overflows", t.name().c_str(), ShapeString(d.shape).c_str());
  // Every allocation below is sized from data that is present: the file's
  // bytes, raw_data or the typed values, never from the dims alone.
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0, length = bytes;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") {
        KILN_ASSIGN_OR_RETURN(offset, ParseU64(t, kv.key(), kv.value()));
      } else if (kv.key() == "length") {
        KILN_ASSIGN_OR_RETURN(length, ParseU64(t, kv.key(), kv.value()));
      }
    }
    if (location.empty() || location[0] == '/' || location.find("..") != std::string::npos)
      return InvalidArgument("tensor '%s': bad external data location '%s'", t.name().c_str(), location.c_str());
    if (base_dir.empty())
      return InvalidArgument("tensor '%s': external data '%s' in a model read from memory (no directory)",
                             t.name().c_str(), location.c_str());
    if (length != bytes)
      return InvalidArgument("tensor '%s': external length %llu, expected %zu", t.name().c_str(),
                             (unsigned long long)length, bytes);
    std::ifstream f(base_dir + "/" + location, std::ios::binary | std::ios::ate);
    if (!f) return NotFound("tensor '%s': external data file '%s' not found", t.name().c_str(), location.c_str());
    const std::streamoff size = f.tellg();
    uint64_t end = 0;
    if (size < 0 || __builtin_add_overflow(offset, length, &end) || end > static_cast<uint64_t>(size))
      return InvalidArgument("tensor '%s': external data [%llu, +%llu) is outside '%s' (%lld bytes)", t.name().c_str(),
                             (unsigned long long)offset, (unsigned long long)length, location.c_str(),
                             static_cast<long long>(size));
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
  // The typed field each dtype's values live in (onnx.proto).
  const bool in_u64 = d.dtype == fb::DataType::U32 || d.dtype == fb::DataType::U64;
  const int have = d.dtype == fb::DataType::F32   ? t.float_data_size()
                   : d.dtype == fb::DataType::I64 ? t.int64_data_size()
                   : d.dtype == fb::DataType::F64 ? t.double_data_size()
                   : in_u64                       ? t.uint64_data_size()
                                                  : t.int32_data_size();
  if (have != n)
    return InvalidArgument("tensor '%s': %d values for %lld elements %s", t.name().c_str(), have, (long long)n,
                           ShapeString(d.shape).c_str());
  d.bytes.resize(bytes);
  if (bytes == 0) return d;  // empty tensor: no typed values to read (and their data() may be null)
  switch (d.dtype) {
    case fb::DataType::F32:
      std::memcpy(d.bytes.data(), t.float_data().data(), bytes);
      break;
    case fb::DataType::I64:
      std::memcpy(d.bytes.data(), t.int64_data().data(), bytes);
      break;
    case fb::DataType::F64:
      std::memcpy(d.bytes.data(), t.double_data().data(), bytes);
      break;
    case fb::DataType::U64:
      std::memcpy(d.bytes.data(), t.uint64_data().data(), bytes);
      break;
    case fb::DataType::U32:
      for (int64_t i = 0; i < n; ++i) {
        uint32_t v = static_cast<uint32_t>(t.uint64_data(static_cast<int>(i)));
        std::memcpy(d.bytes.data() + i * es, &v, es);
      }
      break;
    default:  // int32_data holds i32, i16, u16, i8, u8, bool, f16 and bf16 bit patterns
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = t.int32_data(static_cast<int>(i));
        std::memcpy(d.bytes.data() + i * es, &v, es);  // little-endian: low bytes first
      }
      break;
  }
  return d;
}

namespace {

// The names g's nodes (and their subgraphs') read that g does not define:
// what a control-flow node using g reads from the enclosing graph.
void OuterNames(const onnx::GraphProto& g, std::set<std::string>* out, int depth) {
  if (depth > 32) return;  // the importer refuses such nesting with a message
  std::set<std::string> defined;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& i : g.initializer()) defined.insert(i.name());
  for (const auto& n : g.node())
    for (const std::string& o : n.output()) defined.insert(o);
  std::set<std::string> used;
  for (const auto& n : g.node()) {
    for (const std::string& i : n.input()) used.insert(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) OuterNames(a.g(), &used, depth + 1);
      for (const auto& sg : a.graphs()) OuterNames(sg, &used, depth + 1);
    }
  }
  for (const auto& o : g.output()) used.insert(o.name());
  for (const std::string& u : used)
    if (!u.empty() && !defined.count(u)) out->insert(u);
}

}  // namespace

StatusOr<std::vector<int>> TopologicalOrder(const onnx::GraphProto& g) {
  const int count = g.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < count; ++i)
    for (const std::string& o : g.node(i).output())
      if (!o.empty()) producer.emplace(o, i);
  std::vector<std::vector<int>> users(static_cast<size_t>(count));
  std::vector<int> pending(static_cast<size_t>(count), 0);
  for (int i = 0; i < count; ++i) {
    std::set<int> deps;
    std::set<std::string> reads(g.node(i).input().begin(), g.node(i).input().end());
    for (const auto& a : g.node(i).attribute())  // control flow: what its subgraphs read
      if (a.has_g()) OuterNames(a.g(), &reads, 0);
    for (const std::string& in : reads) {
      auto it = producer.find(in);
      if (!in.empty() && it != producer.end() && it->second != i) deps.insert(it->second);
    }
    for (int d : deps) users[static_cast<size_t>(d)].push_back(i);
    pending[static_cast<size_t>(i)] = static_cast<int>(deps.size());
  }
  std::set<int> ready;
  for (int i = 0; i < count; ++i)
    if (pending[static_cast<size_t>(i)] == 0) ready.insert(i);
  std::vector<int> order;
  order.reserve(static_cast<size_t>(count));
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int u : users[static_cast<size_t>(i)])
      if (--pending[static_cast<size_t>(u)] == 0) ready.insert(u);
  }
  if (static_cast<int>(order.size()) == count) return order;
  std::string names;
  int listed = 0;
  for (int i = 0; i < count; ++i)
    if (pending[static_cast<size_t>(i)] > 0 && listed++ < 8) {
      const onnx::NodeProto& n = g.node(i);
      names += StrFormat(" '%s' (%s)", n.name().empty() ? (n.output_size() ? n.output(0).c_str() : "?") : n.name().c_str(),
                         n.op_type().c_str());
    }
  return InvalidArgument("the graph has a cycle: %d nodes depend on each other's outputs:%s%s",
                         count - static_cast<int>(order.size()), names.c_str(), listed > 8 ? " ..." : "");
}

}  // namespace kiln::onnx_import
