#include "inspect/constant_data.h"

#include <cmath>
#include <cstring>

#include "elements.h"
#include "kiln/format.h"

namespace kiln::inspect {
namespace {

bool IsFloatType(fb::DataType t) {
  return IsFloating(t);
}

// Element i of data `p` as a double (exact for every Kiln dtype but i64
// beyond 2^53, which only matters for the min/max of float types: unused).
double Element(fb::DataType t, const uint8_t* p) { return LoadDouble(p, t, 0); }

std::string ElementText(fb::DataType t, const uint8_t* p) {
  ScalarValue v;
  switch (t) {
    case fb::DataType::I64:
      v.type = reflection::Long;
      v.i = flatbuffers::ReadScalar<int64_t>(p);
      return FormatScalar(v, nullptr);
    case fb::DataType::BOOL: return *p ? "true" : "false";
    case fb::DataType::F32:
    case fb::DataType::F16:
    case fb::DataType::BF16:
      v.type = reflection::Float;
      v.f = Element(t, p);
      return FormatScalar(v, nullptr);
    default:
      v.type = reflection::Long;
      v.i = static_cast<int64_t>(Element(t, p));
      return FormatScalar(v, nullptr);
  }
}

}  // namespace

bool IsConstantData(const VectorInfo& v) {
  return v.parent && v.parent->object && ShortName(v.parent->object->name()) == "Tensor" && v.field &&
         v.field->name()->str() == "data" && v.element_type == reflection::UByte;
}

StatusOr<DataSummary> SummarizeData(const Walker& w, const VectorInfo& v, size_t max_values) {
  DataSummary s;
  KILN_ASSIGN_OR_RETURN(ScalarValue dt, w.FieldValue(*v.parent, "dtype"));
  auto dtype = static_cast<fb::DataType>(dt.u);
  size_t esize = dt.u <= 255 ? DataTypeSize(dtype) : 0;
  s.bytes = v.count;
  s.dtype = esize ? fb::EnumNameDataType(dtype) : "?";
  if (!esize) return s;
  s.elements = s.bytes / esize;
  if (v.elements > w.size() || s.elements * esize > w.size() - v.elements)
    return InvalidArgument("constant data at %zu is outside the buffer", v.elements);
  const uint8_t* base = w.data() + v.elements;
  for (size_t i = 0; i < s.elements && i < max_values; ++i) s.values.push_back(ElementText(dtype, base + i * esize));
  if (IsFloatType(dtype)) {
    for (size_t i = 0; i < s.elements; ++i) {
      double x = Element(dtype, base + i * esize);
      if (!std::isfinite(x)) continue;
      if (!s.has_range || x < s.min) s.min = x;
      if (!s.has_range || x > s.max) s.max = x;
      s.has_range = true;
    }
  }
  return s;
}

std::string FormatDataSummary(const DataSummary& s) {
  std::string out = s.dtype + " x " + std::to_string(s.elements);
  if (s.dtype == "?") return out + " (unknown dtype), " + std::to_string(s.bytes) + " bytes";
  if (!s.values.empty()) {
    out += s.values.size() < s.elements ? ", first " + std::to_string(s.values.size()) + ": [" : ": [";
    for (size_t i = 0; i < s.values.size(); ++i) out += (i ? ", " : "") + s.values[i];
    out += s.values.size() < s.elements ? ", ...]" : "]";
  }
  if (s.has_range) {
    ScalarValue lo, hi;
    lo.type = hi.type = reflection::Float;
    lo.f = s.min;
    hi.f = s.max;
    out += ", min " + FormatScalar(lo, nullptr) + ", max " + FormatScalar(hi, nullptr);
  }
  return out;
}

}  // namespace kiln::inspect
