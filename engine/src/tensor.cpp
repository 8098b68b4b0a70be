#include "kiln/tensor.h"

#include <cstdlib>
#include <cstring>

#include "backend.h"
#include "checked_math.h"

namespace kiln {
namespace {

// NCHW <-> NHWC for rank >= 3: the channel axis (1) moves to the end.
std::vector<int64_t> ToNchw(const std::vector<int64_t>& nhwc) {
  if (nhwc.size() < 3) return nhwc;
  std::vector<int64_t> s = {nhwc[0], nhwc.back()};
  s.insert(s.end(), nhwc.begin() + 1, nhwc.end() - 1);
  return s;
}

// Copies `src` (NCHW order, logical shape `nchw`) to `dst` in NHWC order, or
// back when `to_nhwc` is false.
void ConvertLayout(const uint8_t* src, uint8_t* dst, const std::vector<int64_t>& nchw, size_t esize, bool to_nhwc) {
  int64_t n = nchw[0], c = nchw[1], spatial = 1;
  for (size_t i = 2; i < nchw.size(); ++i) spatial *= nchw[i];
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < spatial; ++s) {
        size_t nchw_idx = static_cast<size_t>((b * c + ch) * spatial + s);
        size_t nhwc_idx = static_cast<size_t>((b * spatial + s) * c + ch);
        if (to_nhwc)
          std::memcpy(dst + nhwc_idx * esize, src + nchw_idx * esize, esize);
        else
          std::memcpy(dst + nchw_idx * esize, src + nhwc_idx * esize, esize);
      }
}

}  // namespace

Tensor::Tensor() = default;
Tensor::~Tensor() = default;

int64_t Tensor::elementCount() const {
  int64_t n;
  return CheckedElementCount(shape_, &n) ? n : kDimOverflow;
}

size_t Tensor::byteSize() const {
  size_t bytes;
  return CheckedByteSize(elementCount(), elementSize(), &bytes) ? bytes : SIZE_MAX;
}

std::vector<int64_t> Tensor::logicalShape() const {
  return layout_ == DimensionType::kNHWC ? ToNchw(shape_) : shape_;
}

void Tensor::bind(Backend* backend, void* host, uint64_t device_handle, uint64_t device_offset) {
  backend_ = backend;
  host_ = host;
  device_handle_ = device_handle;
  device_offset_ = device_offset;
}

std::unique_ptr<Tensor> Tensor::create(const std::vector<int64_t>& shape, fb::DataType dtype, DimensionType layout) {
  auto t = std::make_unique<Tensor>();
  t->shape_ = shape;
  t->dtype_ = dtype;
  t->layout_ = layout;
  size_t bytes = t->byteSize();
  t->owned_ = std::unique_ptr<uint8_t[], void (*)(uint8_t*)>(
      static_cast<uint8_t*>(std::calloc(bytes ? bytes : 1, 1)), [](uint8_t* p) { std::free(p); });
  t->host_ = t->owned_.get();
  return t;
}

std::unique_ptr<Tensor> Tensor::wrap(const std::vector<int64_t>& shape, fb::DataType dtype, void* data,
                                     DimensionType layout) {
  auto t = std::make_unique<Tensor>();
  t->shape_ = shape;
  t->dtype_ = dtype;
  t->layout_ = layout;
  t->host_ = data;
  return t;
}

StatusOr<std::unique_ptr<Tensor>> Tensor::createHostTensorFromDevice(const Tensor& t, bool copy_data,
                                                                     DimensionType layout) {
  std::vector<int64_t> shape = t.logicalShape();
  if (layout == DimensionType::kNHWC && shape.size() >= 3) {
    std::vector<int64_t> nhwc = {shape[0]};
    nhwc.insert(nhwc.end(), shape.begin() + 2, shape.end());
    nhwc.push_back(shape[1]);
    shape = nhwc;
  }
  auto host = create(shape, t.dtype(), layout);
  if (copy_data) KILN_RETURN_IF_ERROR(t.copyToHostTensor(host.get()));
  return host;
}

static Status CheckCompatible(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    return InvalidArgument("tensor '%s': dtype %s vs %s", a.name().c_str(), DataTypeName(a.dtype()),
                           DataTypeName(b.dtype()));
  if (a.logicalShape() != b.logicalShape()) {
    auto str = [](const std::vector<int64_t>& s) {
      std::string r;
      for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
      return r.empty() ? std::string("scalar") : r;
    };
    return InvalidArgument("tensor '%s': shape %s (NCHW) vs %s; resize the session input first",
                           a.name().c_str(), str(a.logicalShape()).c_str(), str(b.logicalShape()).c_str());
  }
  return Status::Ok();
}

Status Tensor::copyFromHostTensor(const Tensor& src) {
  if (is_optional_ && !src.is_optional_) {  // a value into an optional: it holds the value
    if (src.dtype() != dtype_)
      return InvalidArgument("'%s': dtype %s vs %s", name_.c_str(), DataTypeName(dtype_), DataTypeName(src.dtype()));
    std::shared_ptr<Tensor> v = create(src.shape(), src.dtype());
    if (src.is_sequence_)
      v->setSequence(src.items_);
    else if (src.byteSize() && src.hostData())
      std::memcpy(v->hostData(), src.hostData(), src.byteSize());
    items_ = {v};
    return Status::Ok();
  }
  if (src.isContainer() || isContainer()) {
    if (src.is_sequence_ != is_sequence_ || src.is_optional_ != is_optional_)
      return InvalidArgument("tensor '%s': a %s does not copy into a %s", name_.c_str(),
                             src.is_optional_ ? "optional" : src.is_sequence_ ? "sequence" : "tensor",
                             is_optional_ ? "optional" : is_sequence_ ? "sequence" : "tensor");
    if (src.dtype() != dtype_)
      return InvalidArgument("'%s': dtype %s vs %s", name_.c_str(), DataTypeName(dtype_), DataTypeName(src.dtype()));
    items_ = src.items_;
    return Status::Ok();
  }
  KILN_RETURN_IF_ERROR(CheckCompatible(*this, src));
  if (byteSize() == 0) return Status::Ok();  // nothing to copy (and wrap() of no data is null)
  if (!src.hostData()) return InvalidArgument("copyFromHostTensor: source '%s' is not a host tensor", src.name().c_str());
  bool convert = src.dimensionType() != layout_ && shape_.size() >= 3;
  if (!backend_) {
    if (!host_) return InvalidArgument("tensor '%s' has no memory (session not resized?)", name_.c_str());
    if (convert)
      ConvertLayout(static_cast<const uint8_t*>(src.hostData()), static_cast<uint8_t*>(host_), src.logicalShape(),
                    elementSize(), /*to_nhwc=*/src.dimensionType() == DimensionType::kNCHW);
    else
      std::memcpy(host_, src.hostData(), byteSize());
    return Status::Ok();
  }
  if (!convert) return backend_->onCopyBuffer(src, this);
  auto staged = create(logicalShape(), dtype_, layout_);
  KILN_RETURN_IF_ERROR(staged->copyFromHostTensor(src));
  return backend_->onCopyBuffer(*staged, this);
}

Status Tensor::copyToHostTensor(Tensor* dst) const {
  if (!dst) return InvalidArgument("copyToHostTensor: null destination");
  if (isContainer()) {
    if (dst->dtype() != dtype_)
      return InvalidArgument("'%s': dtype %s vs %s", name_.c_str(), DataTypeName(dtype_), DataTypeName(dst->dtype()));
    dst->is_sequence_ = is_sequence_;
    dst->is_optional_ = is_optional_;
    dst->items_ = items_;
    return Status::Ok();
  }
  KILN_RETURN_IF_ERROR(CheckCompatible(*this, *dst));
  if (byteSize() == 0) return Status::Ok();
  if (!dst->hostData()) return InvalidArgument("copyToHostTensor: destination is not a host tensor");
  bool convert = dst->dimensionType() != layout_ && shape_.size() >= 3;
  if (!backend_) {
    if (!host_) return InvalidArgument("tensor '%s' has no memory (session not resized?)", name_.c_str());
    if (convert)
      ConvertLayout(static_cast<const uint8_t*>(host_), static_cast<uint8_t*>(dst->hostData()), logicalShape(),
                    elementSize(), /*to_nhwc=*/dst->dimensionType() == DimensionType::kNHWC);
    else
      std::memcpy(dst->hostData(), host_, byteSize());
    return Status::Ok();
  }
  if (!convert) return backend_->onCopyBuffer(*this, dst);
  auto staged = create(logicalShape(), dtype_, layout_);
  KILN_RETURN_IF_ERROR(backend_->onCopyBuffer(*this, staged.get()));
  return staged->copyToHostTensor(dst);
}

}  // namespace kiln
