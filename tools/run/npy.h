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
  bool narrowed_from_f64 = false;  // read from float64 values, now f32 (callers say so)
};

// f8 (float64) arrays are narrowed to f32 on read (narrowed_from_f64 set).
// A header whose shape is not plain digits, overflows, or does not match the
// data that follows (too little or too much) is an error.
StatusOr<NpyArray> ReadNpy(const std::string& path);
Status WriteNpy(const std::string& path, const NpyArray& array);

}  // namespace kiln
