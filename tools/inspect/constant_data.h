// The one piece of Kiln-specific knowledge on top of the generic walk:
// Tensor.data holds constant tensor values whose element type is the
// tensor's `dtype`, so a byte vector there is decoded as f32 / f16 / ... for
// display instead of being shown as bytes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "inspect/walker.h"

namespace kiln::inspect {

// True for the `data` vector of a Tensor table.
bool IsConstantData(const VectorInfo& v);

struct DataSummary {
  std::string dtype;                // "F32"; "?" for an unknown dtype
  size_t bytes = 0;
  size_t elements = 0;              // bytes / element size (0 for an unknown dtype)
  std::vector<std::string> values;  // the first ones decoded (all, when asked)
  bool has_range = false;           // min / max: float dtypes with a finite value
  double min = 0, max = 0;
};

// Decodes the first `max_values` elements (all for SIZE_MAX) of a constant
// data vector `v` (IsConstantData(v) must hold).
StatusOr<DataSummary> SummarizeData(const Walker& w, const VectorInfo& v, size_t max_values);

// "f32 x 216, first 8: [0.12, ...], min -0.99, max 0.98".
std::string FormatDataSummary(const DataSummary& s);

}  // namespace kiln::inspect
