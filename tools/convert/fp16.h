#pragma once

#include "kiln/format.h"
#include "kiln/status.h"

namespace kiln {

// Stores every inline f32 constant of at least `min_elements` as f16 and
// reads it through a Cast to f32; returns how many were converted.
StatusOr<int> StoreWeightsAsF16(fb::NetT& net, size_t min_elements = 16);

}  // namespace kiln
