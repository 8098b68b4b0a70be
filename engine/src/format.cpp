#include "kiln/format.h"

namespace kiln {

size_t DataTypeSize(fb::DataType dtype) {
  switch (dtype) {
    case fb::DataType::F32: return 4;
    case fb::DataType::F16: return 2;
    case fb::DataType::BF16: return 2;
    case fb::DataType::I32: return 4;
    case fb::DataType::I64: return 8;
    case fb::DataType::I8: return 1;
    case fb::DataType::U8: return 1;
    case fb::DataType::BOOL: return 1;
    case fb::DataType::F64: return 8;
    case fb::DataType::U16: return 2;
    case fb::DataType::U32: return 4;
    case fb::DataType::U64: return 8;
    case fb::DataType::I16: return 2;
  }
  return 0;
}

const char* DataTypeName(fb::DataType dtype) {
  switch (dtype) {
    case fb::DataType::F32: return "f32";
    case fb::DataType::F16: return "f16";
    case fb::DataType::BF16: return "bf16";
    case fb::DataType::I32: return "i32";
    case fb::DataType::I64: return "i64";
    case fb::DataType::I8: return "i8";
    case fb::DataType::U8: return "u8";
    case fb::DataType::BOOL: return "bool";
    case fb::DataType::F64: return "f64";
    case fb::DataType::U16: return "u16";
    case fb::DataType::U32: return "u32";
    case fb::DataType::U64: return "u64";
    case fb::DataType::I16: return "i16";
  }
  return "?";
}

}  // namespace kiln
