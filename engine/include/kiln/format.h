// The Kiln model format: the FlatBuffers schema (schema/kiln.fbs, compiled
// to kiln_generated.h at build time) plus the constants and helpers that go
// with it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kiln/types.h"
#include "kiln_generated.h"

namespace kiln {

// The newest format this build reads and writes. Files carry it in
// Net.format_version; a loader rejects a file newer than it knows.
constexpr uint32_t kFormatVersion = 1;

// Constant data is placed at this alignment in a model file (and in external
// weights files), so mmapped weights can be used in place by SIMD kernels.
constexpr size_t kDataAlignment = 64;

static_assert(kDefaultDataType == fb::DataType::F32, "kiln/types.h's default element type is F32");
// kiln/types.h names the element types for apps without this header.
static_assert(dtype::kF32 == fb::DataType::F32 && dtype::kF16 == fb::DataType::F16 &&
                  dtype::kBF16 == fb::DataType::BF16 && dtype::kI32 == fb::DataType::I32 &&
                  dtype::kI64 == fb::DataType::I64 && dtype::kI8 == fb::DataType::I8 &&
                  dtype::kU8 == fb::DataType::U8 && dtype::kBool == fb::DataType::BOOL &&
                  dtype::kF64 == fb::DataType::F64 && dtype::kU16 == fb::DataType::U16 &&
                  dtype::kU32 == fb::DataType::U32 && dtype::kU64 == fb::DataType::U64 &&
                  dtype::kI16 == fb::DataType::I16,
              "kiln/types.h's dtype constants match schema/kiln.fbs");
static_assert(fb::DataType::MAX == fb::DataType::I16, "a new DataType needs its kiln::dtype constant in kiln/types.h");

}  // namespace kiln
