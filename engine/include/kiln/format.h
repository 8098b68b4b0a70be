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

}  // namespace kiln
