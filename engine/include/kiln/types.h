// The model format's types the session API names, declared without the
// generated FlatBuffers header (kiln_generated.h), so that interpreter.h,
// session.h and tensor.h do not pull it in: fb::DataType opaquely (with its
// underlying type, as the schema's `enum DataType : ubyte`) and fb::Net.
// Include kiln/format.h for DataType's enumerators and the Net's accessors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln {
namespace fb {
enum class DataType : uint8_t;
struct Net;
}  // namespace fb

// Size in bytes of one element; 0 for values outside the enum.
size_t DataTypeSize(fb::DataType dtype);
// "f32", "i64", ...; "?" for values outside the enum.
const char* DataTypeName(fb::DataType dtype);

// fb::DataType::F32, the default element type (checked against the schema
// in kiln/format.h).
constexpr fb::DataType kDefaultDataType = static_cast<fb::DataType>(0);

}  // namespace kiln
