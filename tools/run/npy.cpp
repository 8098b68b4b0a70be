#include "npy.h"

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace kiln {
namespace {

struct Descr {
  const char* code;
  fb::DataType dtype;
};
const Descr kDescrs[] = {{"<f4", fb::DataType::F32}, {"<f2", fb::DataType::F16}, {"<i4", fb::DataType::I32},
                         {"<i8", fb::DataType::I64}, {"|i1", fb::DataType::I8},  {"|u1", fb::DataType::U8},
                         {"|b1", fb::DataType::BOOL}};

}  // namespace

StatusOr<NpyArray> ReadNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("%s: cannot open", path.c_str());
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) return InvalidArgument("%s: not a .npy file", path.c_str());
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint8_t b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else {
    uint8_t b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  if (!f || header_len > (1u << 20)) return InvalidArgument("%s: bad .npy header", path.c_str());
  std::string header(header_len, '\0');
  f.read(header.data(), header_len);
  auto field = [&](const char* key) -> std::string {
    size_t k = header.find(key);
    if (k == std::string::npos) return "";
    size_t c = header.find(':', k);
    return c == std::string::npos ? "" : header.substr(c + 1);
  };
  std::string descr = field("'descr'"), order = field("'fortran_order'"), shape = field("'shape'");
  if (order.find("True") != std::string::npos && order.find("True") < order.find(','))
    return Unsupported("%s: Fortran-order arrays are not supported", path.c_str());
  NpyArray a;
  bool f64 = descr.find("<f8") != std::string::npos && descr.find("<f8") < descr.find(',');
  bool known = f64;
  for (const Descr& d : kDescrs) {
    size_t p = descr.find(d.code);
    if (p != std::string::npos && p < descr.find(',')) {
      a.dtype = d.dtype;
      known = true;
    }
  }
  if (!known) return Unsupported("%s: dtype %s is not supported", path.c_str(), descr.substr(0, descr.find(',')).c_str());
  size_t open = shape.find('('), close = shape.find(')');
  if (open == std::string::npos || close == std::string::npos) return InvalidArgument("%s: no shape", path.c_str());
  std::string dims = shape.substr(open + 1, close - open - 1);
  int64_t n = 1;
  for (size_t pos = 0; pos < dims.size();) {
    size_t comma = dims.find(',', pos);
    std::string d = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    d.erase(0, d.find_first_not_of(' '));
    d.erase(d.find_last_not_of(' ') + 1);
    if (!d.empty()) {
      if (d.size() > 18 || d.find_first_not_of("0123456789") != std::string::npos)
        return InvalidArgument("%s: bad dim '%s' in the shape", path.c_str(), d.c_str());
      const int64_t v = std::strtoll(d.c_str(), nullptr, 10);
      a.shape.push_back(v);
      if (__builtin_mul_overflow(n, v, &n)) return InvalidArgument("%s: the shape's element count overflows", path.c_str());
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  // The data must be exactly the rest of the file: checked before anything
  // is allocated, so a header declaring 2^40 elements is an error, not an abort.
  const std::streamoff data_at = f.tellg();
  f.seekg(0, std::ios::end);
  const std::streamoff file_end = f.tellg();
  f.seekg(data_at);
  size_t esize = f64 ? 8 : DataTypeSize(a.dtype), want = 0;
  if (!f || data_at < 0 || __builtin_mul_overflow(static_cast<size_t>(n), esize, &want))
    return InvalidArgument("%s: bad .npy header", path.c_str());
  const uint64_t have = static_cast<uint64_t>(file_end - data_at);
  if (have < want)
    return InvalidArgument("%s: truncated data: %llu bytes for %lld elements of %zu bytes", path.c_str(),
                           (unsigned long long)have, (long long)n, esize);
  if (have > want)
    return InvalidArgument("%s: %llu bytes after the data of shape %s", path.c_str(), (unsigned long long)(have - want),
                           shape.substr(open, close - open + 1).c_str());
  std::vector<uint8_t> raw(want);
  f.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
  if (!f && !raw.empty()) return InvalidArgument("%s: truncated data", path.c_str());
  if (f64) {
    a.dtype = fb::DataType::F32;
    a.narrowed_from_f64 = true;
    a.bytes.resize(static_cast<size_t>(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, raw.data() + i * 8, 8);
      float v = static_cast<float>(d);
      std::memcpy(a.bytes.data() + i * 4, &v, 4);
    }
  } else {
    a.bytes = std::move(raw);
  }
  return a;
}

Status WriteNpy(const std::string& path, const NpyArray& a) {
  const char* code = nullptr;
  for (const Descr& d : kDescrs)
    if (d.dtype == a.dtype) code = d.code;
  if (!code) return Unsupported("%s: cannot write %s as .npy", path.c_str(), DataTypeName(a.dtype));
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) shape += std::to_string(a.shape[i]) + (a.shape.size() == 1 || i + 1 < a.shape.size() ? "," : "");
  shape += ")";
  std::string header = "{'descr': '" + std::string(code) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) return IoError("%s: cannot write", path.c_str());
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(lb, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(reinterpret_cast<const char*>(a.bytes.data()), static_cast<std::streamsize>(a.bytes.size()));
  if (!f) return IoError("%s: write failed", path.c_str());
  return Status::Ok();
}

}  // namespace kiln
