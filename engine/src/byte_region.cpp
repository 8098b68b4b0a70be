#include <cstdlib>
#include <cstring>

#include "mapped_file.h"
#include "model.h"

namespace kiln {
namespace {

class MappedRegion final : public ByteRegion {
 public:
  explicit MappedRegion(std::unique_ptr<MappedFile> f) : file_(std::move(f)) {}
  const uint8_t* data() const override { return file_->data(); }
  size_t size() const override { return file_->size(); }
  void populate() const override { file_->populate(); }

 private:
  std::unique_ptr<MappedFile> file_;
};

class HeapRegion final : public ByteRegion {
 public:
  HeapRegion(uint8_t* p, size_t n) : p_(p), n_(n) {}
  ~HeapRegion() override { std::free(p_); }
  const uint8_t* data() const override { return p_; }
  size_t size() const override { return n_; }

 private:
  uint8_t* p_;
  size_t n_;
};

class AdoptedRegion final : public ByteRegion {
 public:
  AdoptedRegion(const void* p, size_t n, std::function<void(const void*)> release)
      : p_(static_cast<const uint8_t*>(p)), n_(n), release_(std::move(release)) {}
  ~AdoptedRegion() override {
    if (release_) release_(p_);
  }
  const uint8_t* data() const override { return p_; }
  size_t size() const override { return n_; }

 private:
  const uint8_t* p_;
  size_t n_;
  std::function<void(const void*)> release_;
};

}  // namespace

StatusOr<std::shared_ptr<ByteRegion>> ByteRegion::MapFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  return std::shared_ptr<ByteRegion>(std::make_shared<MappedRegion>(std::move(file)));
}

StatusOr<std::shared_ptr<ByteRegion>> ByteRegion::Copy(const void* data, size_t size) {
  size_t padded = (size + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  if (padded < size) return OutOfMemory("buffer of %zu bytes is too large", size);
  void* p = std::aligned_alloc(kDataAlignment, padded == 0 ? kDataAlignment : padded);
  if (!p) return OutOfMemory("cannot allocate %zu bytes for the model copy", size);
  if (size) std::memcpy(p, data, size);
  return std::shared_ptr<ByteRegion>(std::make_shared<HeapRegion>(static_cast<uint8_t*>(p), size));
}

std::shared_ptr<ByteRegion> ByteRegion::Adopt(const void* data, size_t size,
                                              std::function<void(const void*)> release) {
  return std::make_shared<AdoptedRegion>(data, size, std::move(release));
}

}  // namespace kiln
