// Small models for tests, built with NetBuilder, and temp-file helpers.
#pragma once

#include <string>
#include <vector>

#include "kiln/net_builder.h"

namespace kiln::test {

// A small CNN: Conv(3x3, bias) -> Relu -> MaxPool -> GlobalAveragePool ->
// Flatten -> Gemm -> Softmax, input "image" [1, 3, "h", "w"], output "probs".
// Deterministic weights (seeded).
NetBuilder TinyCnn();

// Deterministic pseudo-random floats in [-1, 1), or [-scale, scale).
std::vector<float> RandomFloats(size_t n, uint32_t seed);
std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents when
// the test process exits normally.
std::string TempDir();

std::vector<uint8_t> ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace kiln::test
