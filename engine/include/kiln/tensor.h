// Tensor: an n-dimensional array with a dtype, held by a session (on a
// backend's memory) or by the app (host memory).
//
// Engine tensors are NCHW (outermost first). A host tensor the app creates
// may declare NHWC: copyFromHostTensor / copyToHostTensor then move the
// channel axis (axis 1 of the engine shape) to the end and back.
//
// Ownership: a session owns its tensors (getSessionInput returns a pointer
// valid until the session is released or resized); Tensor::create gives the
// caller a host tensor it owns.
// Thread-safety: none; a tensor is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/types.h"
#include "kiln/status.h"

namespace kiln {

enum class DimensionType { kNCHW, kNHWC };

class Backend;

class Tensor {
 public:
  // A host tensor owning zero-initialized memory. `shape` is in `layout`'s order.
  static std::unique_ptr<Tensor> create(const std::vector<int64_t>& shape, fb::DataType dtype = kDefaultDataType,
                                        DimensionType layout = DimensionType::kNCHW);
  // A host tensor over caller memory of at least elementCount * elementSize
  // bytes (not owned; must outlive the tensor).
  static std::unique_ptr<Tensor> wrap(const std::vector<int64_t>& shape, fb::DataType dtype, void* data,
                                      DimensionType layout = DimensionType::kNCHW);
  // A host tensor with `t`'s shape and dtype in `layout`, with a copy of its
  // contents when `copy_data`.
  static StatusOr<std::unique_ptr<Tensor>> createHostTensorFromDevice(const Tensor& t, bool copy_data = true,
                                                                      DimensionType layout = DimensionType::kNCHW);

  Tensor();
  ~Tensor();
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  const std::string& name() const { return name_; }
  fb::DataType dtype() const { return dtype_; }
  DimensionType dimensionType() const { return layout_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int dimensions() const { return static_cast<int>(shape_.size()); }
  int64_t length(int axis) const { return shape_.at(static_cast<size_t>(axis)); }
  int64_t elementCount() const;
  size_t elementSize() const { return DataTypeSize(dtype_); }
  // Saturating: SIZE_MAX when the count or the product overflows (a shape
  // the session's resize refuses before any buffer is made).
  size_t byteSize() const;

  // Host memory, or nullptr when the data lives on a device.
  void* hostData() const { return host_; }
  template <typename T>
  T* host() const { return static_cast<T*>(host_); }
  bool onHost() const { return backend_ == nullptr; }

  // ONNX sequences (host only): a sequence tensor's value is a list of
  // tensors of its dtype, each with its own shape; its own shape is a
  // scalar placeholder. Copies between sequence tensors share the elements
  // (which never change once made).
  bool isSequence() const { return is_sequence_; }
  const std::vector<std::shared_ptr<const Tensor>>& sequence() const { return items_; }
  void setSequence(std::vector<std::shared_ptr<const Tensor>> items) {
    is_sequence_ = true;
    items_ = std::move(items);
  }
  void markSequence() { is_sequence_ = true; }
  // ONNX optionals (host only): empty, or one value (a tensor, or a
  // sequence tensor), held like a sequence's elements.
  bool isOptional() const { return is_optional_; }
  std::shared_ptr<const Tensor> optionalValue() const { return items_.empty() ? nullptr : items_[0]; }
  void setOptional(std::shared_ptr<const Tensor> value) {
    is_optional_ = true;
    items_.clear();
    if (value) items_.push_back(std::move(value));
  }
  void markOptional() { is_optional_ = true; }
  // A sequence or an optional: its value is held apart from its bytes.
  bool isContainer() const { return is_sequence_ || is_optional_; }

  // Copies `src` (a host tensor of the same logical shape and dtype) into this
  // tensor, wherever it lives. Layout is converted when they differ.
  Status copyFromHostTensor(const Tensor& src);
  // Copies this tensor into the host tensor `dst` (same logical shape, dtype).
  Status copyToHostTensor(Tensor* dst) const;

  // ---- engine side (backends and sessions) ----
  void setName(std::string name) { name_ = std::move(name); }
  void setDtype(fb::DataType dtype) { dtype_ = dtype; }
  void setShape(std::vector<int64_t> shape) { shape_ = std::move(shape); }
  // Points the tensor at memory owned elsewhere. `backend` null = host memory.
  void bind(Backend* backend, void* host, uint64_t device_handle = 0, uint64_t device_offset = 0);
  Backend* backend() const { return backend_; }
  uint64_t deviceHandle() const { return device_handle_; }
  uint64_t deviceOffset() const { return device_offset_; }
  // The shape in NCHW order, whatever this tensor's layout.
  std::vector<int64_t> logicalShape() const;

 private:
  std::string name_;
  fb::DataType dtype_ = kDefaultDataType;
  DimensionType layout_ = DimensionType::kNCHW;
  std::vector<int64_t> shape_;
  void* host_ = nullptr;
  Backend* backend_ = nullptr;
  uint64_t device_handle_ = 0;
  uint64_t device_offset_ = 0;
  std::unique_ptr<uint8_t[], void (*)(uint8_t*)> owned_{nullptr, nullptr};
  bool is_sequence_ = false;
  bool is_optional_ = false;
  std::vector<std::shared_ptr<const Tensor>> items_;
};

}  // namespace kiln
