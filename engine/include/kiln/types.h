// The model format's types the session API names, declared without the
// generated FlatBuffers header (kiln_generated.h), so that interpreter.h,
// session.h and tensor.h do not pull it in: fb::DataType opaquely (with its
// underlying type, as the schema's `enum DataType : ubyte`) and fb::Net.
// The element types are named below (kiln::dtype::kF32, ...), so that an app
// using the installed headers alone can make and check tensors; inside the
// build tree, kiln/format.h gives fb::DataType's enumerators and the Net's
// accessors.
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

// fb::DataType's values by name (schema/kiln.fbs; each checked against the
// generated enum in kiln/format.h).
namespace dtype {
constexpr fb::DataType kF32 = static_cast<fb::DataType>(0);
constexpr fb::DataType kF16 = static_cast<fb::DataType>(1);
constexpr fb::DataType kBF16 = static_cast<fb::DataType>(2);
constexpr fb::DataType kI32 = static_cast<fb::DataType>(3);
constexpr fb::DataType kI64 = static_cast<fb::DataType>(4);
constexpr fb::DataType kI8 = static_cast<fb::DataType>(5);
constexpr fb::DataType kU8 = static_cast<fb::DataType>(6);
constexpr fb::DataType kBool = static_cast<fb::DataType>(7);
constexpr fb::DataType kF64 = static_cast<fb::DataType>(8);
constexpr fb::DataType kU16 = static_cast<fb::DataType>(9);
constexpr fb::DataType kU32 = static_cast<fb::DataType>(10);
constexpr fb::DataType kU64 = static_cast<fb::DataType>(11);
constexpr fb::DataType kI16 = static_cast<fb::DataType>(12);
}  // namespace dtype

// The default element type.
constexpr fb::DataType kDefaultDataType = dtype::kF32;

}  // namespace kiln
