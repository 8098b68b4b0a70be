// A loaded, verified Kiln model: the bytes of the file (mapped or in
// memory), the FlatBuffers view over them, and the external weights files
// it refers to, each mapped once.
//
// Load() verifies everything before the model can be used (FlatBuffers
// structure, then the semantic checks of model_verifier.cpp); afterwards the
// engine trusts the view without further bounds checks.
//
// Thread-safety: immutable after Load(); any number of threads may read it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/format.h"
#include "kiln/status.h"

namespace kiln {

class MappedFile;

// A read-only region of bytes and whatever keeps it alive.
class ByteRegion {
 public:
  virtual ~ByteRegion() = default;
  virtual const uint8_t* data() const = 0;
  virtual size_t size() const = 0;
  // Maps every page of a file mapping now (a bundle's packed weights are
  // read in place: faulting them in at the first run would slow it); no-op
  // for memory.
  virtual void populate() const {}

  static StatusOr<std::shared_ptr<ByteRegion>> MapFile(const std::string& path);
  // A 64-byte-aligned heap copy of [data, data + size).
  static StatusOr<std::shared_ptr<ByteRegion>> Copy(const void* data, size_t size);
  // Takes ownership of `data`; `release` is called on it when the region dies.
  static std::shared_ptr<ByteRegion> Adopt(const void* data, size_t size,
                                           std::function<void(const void*)> release);
};

struct ConstantView {
  const uint8_t* data = nullptr;  // null: the tensor is not a constant
  size_t size = 0;
};

class Model {
 public:
  // `name` prefixes every error message (usually the file name); `base_dir`
  // is where external weights files are looked up ("" = none allowed).
  static StatusOr<std::unique_ptr<Model>> Load(std::shared_ptr<ByteRegion> bytes,
                                               const std::string& name,
                                               const std::string& base_dir);
  ~Model();

  const fb::Net& net() const { return *net_; }
  const std::string& name() const { return name_; }
  const ByteRegion& bytes() const { return *bytes_; }

  // Constant data of tensor `index`, inline or external; {nullptr, 0} when
  // the tensor is not a constant. `index` must be a valid tensor index.
  ConstantView constant(int index) const { return constants_[static_cast<size_t>(index)]; }
  // The same for tensor `index` of subgraph `sub` (Net.subgraphs); both
  // must be valid.
  ConstantView constant(int sub, int index) const {
    return sub < 0 ? constant(index) : sub_constants_[static_cast<size_t>(sub)][static_cast<size_t>(index)];
  }
  int numSubgraphs() const { return static_cast<int>(sub_constants_.size()); }

 private:
  friend class ModelVerifier;
  Model() = default;

  std::shared_ptr<ByteRegion> bytes_;
  const fb::Net* net_ = nullptr;
  std::string name_;
  std::vector<ConstantView> constants_;
  std::vector<std::vector<ConstantView>> sub_constants_;
  std::map<std::string, std::shared_ptr<ByteRegion>> external_files_;
};

}  // namespace kiln
