// Interpreter: owns one loaded model and creates sessions over it (MNN's
// vocabulary: createFromFile / createFromBuffer, then sessions).
//
// Loading maps the file read-only (weights are used in place, never copied)
// and verifies it completely before returning: the FlatBuffers structure,
// then every index, size, params table and constant range. A malformed file
// gives a Status naming the file, the op or tensor, and the problem; it never
// crashes or reads out of bounds.
//
// Thread-safety: an Interpreter's const methods may be called from several
// threads; different Interpreters are fully independent.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "kiln/format.h"
#include "kiln/status.h"

namespace kiln {

class Model;

// What createFromBuffer does with the caller's bytes.
enum class BufferOwnership {
  kCopy,   // copy them; the caller keeps its buffer
  kAdopt,  // take them: `release` (default std::free) is called when the
           // interpreter no longer needs them, also when loading fails
};

struct LoadOptions {
  // Directory where external weights files are looked up. Defaults to the
  // model file's directory; a buffer-loaded model with external weights
  // needs it set.
  std::string weights_dir;
  // Name used in error messages; defaults to the file path or "<buffer>".
  std::string display_name;
};

class Interpreter {
 public:
  static StatusOr<std::unique_ptr<Interpreter>> createFromFile(const std::string& path,
                                                               const LoadOptions& options = {});
  static StatusOr<std::unique_ptr<Interpreter>> createFromBuffer(
      const void* data, size_t size, BufferOwnership ownership = BufferOwnership::kCopy,
      const LoadOptions& options = {}, std::function<void(const void*)> release = nullptr);
  ~Interpreter();

  // The verified model. Valid as long as the Interpreter lives.
  const fb::Net& net() const;
  const std::string& modelName() const;
  // The internal model (for tools and the engine).
  const Model& model() const { return *model_; }

 private:
  explicit Interpreter(std::unique_ptr<Model> model);
  std::unique_ptr<Model> model_;
};

}  // namespace kiln
