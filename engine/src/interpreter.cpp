#include "kiln/interpreter.h"

#include <cstdlib>

#include "model.h"

namespace kiln {

Interpreter::Interpreter(std::unique_ptr<Model> model) : model_(std::move(model)) {}
Interpreter::~Interpreter() = default;

const fb::Net& Interpreter::net() const { return model_->net(); }
const std::string& Interpreter::modelName() const { return model_->name(); }

StatusOr<std::unique_ptr<Interpreter>> Interpreter::createFromFile(const std::string& path,
                                                                   const LoadOptions& options) {
  std::string name = options.display_name.empty() ? path : options.display_name;
  std::string dir = options.weights_dir;
  if (dir.empty()) {
    size_t slash = path.rfind('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  }
  auto bytes = ByteRegion::MapFile(path);
  if (!bytes.ok()) return bytes.status();
  ASSIGN_OR_RETURN(auto model, Model::Load(std::move(bytes).value(), name, dir));
  return std::unique_ptr<Interpreter>(new Interpreter(std::move(model)));
}

StatusOr<std::unique_ptr<Interpreter>> Interpreter::createFromBuffer(const void* data, size_t size,
                                                                     BufferOwnership ownership,
                                                                     const LoadOptions& options,
                                                                     std::function<void(const void*)> release) {
  std::string name = options.display_name.empty() ? "<buffer>" : options.display_name;
  std::shared_ptr<ByteRegion> region;
  if (ownership == BufferOwnership::kAdopt) {
    if (!release) release = [](const void* p) { std::free(const_cast<void*>(p)); };
    region = ByteRegion::Adopt(data, size, std::move(release));
    // Constant data must sit 64-byte aligned in memory; copy when it cannot.
    if (reinterpret_cast<uintptr_t>(data) % kDataAlignment != 0) {
      ASSIGN_OR_RETURN(region, ByteRegion::Copy(data, size), "%s", name.c_str());
    }
  } else {
    if (!data && size) return InvalidArgument("%s: null data with size %zu", name.c_str(), size);
    ASSIGN_OR_RETURN(region, ByteRegion::Copy(data, size), "%s", name.c_str());
  }
  ASSIGN_OR_RETURN(auto model, Model::Load(std::move(region), name, options.weights_dir));
  return std::unique_ptr<Interpreter>(new Interpreter(std::move(model)));
}

}  // namespace kiln
