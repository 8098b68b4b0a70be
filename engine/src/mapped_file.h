// Read-only memory mapping of a whole file (POSIX mmap). Weights are used in
// place from the mapping; nothing is read into heap buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kiln/status.h"

namespace kiln {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to (nullptr, 0).
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Maps every page now (MADV_POPULATE_READ where the kernel has it, else a
  // read of each page), so that first reads take no page faults.
  void populate() const;

 private:
  MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  const uint8_t* data_;
  size_t size_;
};

// Writes `size` bytes to `path` whole or not at all: into PATH.tmp, then
// renamed over PATH (a reader never sees half a file). Errors are kIoError
// and start with `what` ("saveBundle: cannot open ...").
Status WriteFileAtomically(const std::string& path, const void* data, size_t size, const char* what);

}  // namespace kiln
