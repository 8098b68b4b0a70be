// kiln-inspect's views of a model, as a library so tests can check them:
// a summary, JSON, a byte map of the file, and the location of one value.
// Each takes the bytes of a model that Interpreter has loaded (and so
// verified); all but the summary are built on the Walker (walker.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/interpreter.h"
#include "kiln/status.h"

namespace kiln::inspect {

// ---- Summary ------------------------------------------------------------

// Name, format version, producer, ops by type, tensor and parameter counts,
// weight bytes, graph inputs and outputs.
std::string Summary(const Interpreter& interp);

// ---- JSON ---------------------------------------------------------------

// The whole model as JSON: every stored field, enums by name, unions with
// their "<name>_type". Constant data is summarised (dtype, bytes, element
// count, first 8 values, min/max for floats); `full` adds all values.
StatusOr<std::string> ToJson(const uint8_t* data, size_t size, bool full);

// ---- Byte map -----------------------------------------------------------

enum class RegionKind { kHeader, kTable, kVTable, kVector, kString, kData, kPadding, kGap };
const char* RegionKindName(RegionKind k);

struct Region {
  size_t offset = 0;
  size_t length = 0;
  RegionKind kind = RegionKind::kGap;
  std::string meaning;  // "ops[1].params<ConvParams>.kernel_shape[0] = 3"
};

struct ByteMap {
  // Sorted by offset, non-overlapping, covering [0, file_size) exactly.
  std::vector<Region> regions;
  size_t file_size = 0;
  size_t total(RegionKind k) const;
};

// Fails (never returns a map that lies) if two objects overlap.
StatusOr<ByteMap> BuildByteMap(const uint8_t* data, size_t size);
// One line per region (offset, length, bytes in hex, meaning), then totals.
std::string FormatByteMap(const ByteMap& map, const uint8_t* data);

// ---- Locate -------------------------------------------------------------

struct Span {
  std::string what;  // "value", "offset field", "vtable", "length prefix", ...
  size_t offset = 0;
  size_t length = 0;
};

struct Location {
  std::string path;    // canonical: "ops[0].params<ConvParams>.kernel_shape[1]"
  std::string kind;    // "int field", "string", "vector of int", "table Op", ...
  size_t offset = 0;   // the value's own bytes: a scalar, a string's characters,
  size_t length = 0;   // a vector's elements, a table's inline part
  std::string value;   // decoded; strings quoted
  std::vector<Span> spans;  // every piece involved, the value's bytes first
};

// `path`: fields separated by '.', vector indices in brackets, a union
// member type optionally in angle brackets: "ops[1].params.kernel_shape[0]",
// "tensors[5].name", "ops[0].params<ConvParams>", "name". "" is the root.
// An unknown path gives kNotFound naming the first step that does not
// resolve and what is available there.
StatusOr<Location> Locate(const uint8_t* data, size_t size, const std::string& path);
std::string FormatLocation(const Location& loc, const uint8_t* data);

// "0a 00 00 00", or the first 16 bytes then "... (N bytes)".
std::string HexBytes(const uint8_t* data, size_t offset, size_t length);

}  // namespace kiln::inspect
