// NumPy .npy files (format versions 1.0-3.0, little-endian, C order): read
// and write, for kiln-run and the model checks.
#pragma once

#include <string>
#include <vector>

#include "kiln/format.h"
#include "kiln/status.h"

namespace kiln {

struct NpyArray {
  fb::DataType dtype = fb::DataType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// f8 (float64) arrays are narrowed to f32 on read.
StatusOr<NpyArray> ReadNpy(const std::string& path);
Status WriteNpy(const std::string& path, const NpyArray& array);

}  // namespace kiln
