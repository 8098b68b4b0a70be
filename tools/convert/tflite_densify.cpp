// TFLite sparse constants (SparsityParameters) to dense tensors, with every
// index of the file checked (see Densify in tflite_reader.h).
#include <algorithm>
#include <cstring>

#include "checked_math.h"
#include "ops/shape_inference.h"
#include "tflite_reader.h"

namespace kiln::tflite {

namespace {

// Densify's walk over the levels (TFLite's FormatConverter, sparse to dense,
// with every index checked): level L ranges over the coordinates of dim
// traversal_order[L]; a leaf takes the next stored value.
class Densifier {
 public:
  Densifier(const Sparsity& sp, std::vector<int64_t> level_size, std::vector<int64_t> dense_stride,
            std::vector<int64_t> block_size, ByteSpan values, size_t elem, uint8_t* out)
      : sp_(sp), n_(dense_stride.size()), level_size_(std::move(level_size)), stride_(std::move(dense_stride)),
        block_size_(std::move(block_size)), values_(values), elem_(elem), out_(out),
        coord_(level_size_.size(), 0) {}

  Status Walk(size_t level, int64_t pos) {
    if (level == coord_.size()) return Leaf();
    const DimensionMetadata& m = sp_.dim_metadata[level];
    if (m.format == kDimDense) {
      for (int64_t i = 0; i < level_size_[level]; ++i) {
        coord_[level] = i;
        KILN_RETURN_IF_ERROR(Walk(level + 1, SatAdd(SatMul(pos, level_size_[level]), i)));
      }
      return Status::Ok();
    }
    // SPARSE_CSR: `pos` is this level's segment; segments were checked non-decreasing and inside indices.
    if (pos < 0 || static_cast<uint64_t>(pos) >= m.segments.size() - 1)
      return InvalidArgument("dim_metadata %zu: array_segments has %zu entries, too few for segment %lld", level,
                             m.segments.size(), static_cast<long long>(pos));
    for (int64_t k = m.segments[static_cast<size_t>(pos)]; k < m.segments[static_cast<size_t>(pos) + 1]; ++k) {
      const int64_t i = m.indices[static_cast<size_t>(k)];
      if (i < 0 || i >= level_size_[level])
        return InvalidArgument("dim_metadata %zu: array_indices[%lld] = %lld is out of range [0, %lld)", level,
                               static_cast<long long>(k), static_cast<long long>(i),
                               static_cast<long long>(level_size_[level]));
      coord_[level] = i;
      KILN_RETURN_IF_ERROR(Walk(level + 1, k));
    }
    return Status::Ok();
  }
  size_t consumed() const { return next_; }

 private:
  Status Leaf() {
    if ((next_ + 1) * elem_ > values_.size)
      return InvalidArgument("the levels address more than the %zu stored values", values_.size / elem_);
    int64_t idx[kMaxLevels] = {};
    for (size_t l = 0; l < n_; ++l) idx[sp_.traversal_order[l]] = coord_[l];
    for (size_t l = n_; l < coord_.size(); ++l) {  // a block coordinate refines its tensor dim
      const size_t b = static_cast<size_t>(sp_.traversal_order[l]) - n_;
      const size_t d = static_cast<size_t>(sp_.block_map[b]);
      idx[d] = idx[d] * block_size_[b] + coord_[l];
    }
    int64_t off = 0;
    for (size_t d = 0; d < n_; ++d) off += idx[d] * stride_[d];  // each idx[d] < shape[d]: inside the tensor
    std::memcpy(out_ + static_cast<size_t>(off) * elem_, values_.data + next_ * elem_, elem_);
    ++next_;
    return Status::Ok();
  }

 public:
  static constexpr size_t kMaxLevels = 16;

 private:
  const Sparsity& sp_;
  const size_t n_;
  const std::vector<int64_t> level_size_, stride_, block_size_;
  const ByteSpan values_;
  const size_t elem_;
  uint8_t* const out_;
  std::vector<int64_t> coord_;
  size_t next_ = 0;
};

// Whether v is a permutation of [lo, lo + v.size()).
bool IsPermutation(const int32_t* v, size_t n, int32_t lo) {
  std::vector<bool> seen(n, false);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = static_cast<int64_t>(v[i]) - lo;
    if (x < 0 || x >= static_cast<int64_t>(n) || seen[static_cast<size_t>(x)]) return false;
    seen[static_cast<size_t>(x)] = true;
  }
  return true;
}

}  // namespace

StatusOr<TensorData> Densify(int8_t type, const std::vector<int64_t>& shape, const Sparsity& sp, ByteSpan values) {
  const size_t elem = TypeSize(type);
  if (elem == 0) return Unsupported("sparse %s data", TensorTypeName(type));
  const size_t n = shape.size(), k = sp.block_map.size(), levels = n + k;
  if (n == 0) return InvalidArgument("a sparse scalar");
  if (levels > Densifier::kMaxLevels)
    return Unsupported("%zu levels (rank %zu, %zu block dims); at most %zu are supported", levels, n, k,
                       Densifier::kMaxLevels);
  if (k > n) return InvalidArgument("block_map has %zu entries for rank %zu", k, n);
  if (sp.traversal_order.size() != levels || sp.dim_metadata.size() != levels)
    return InvalidArgument(
        "traversal_order has %zu entries and dim_metadata %zu, rank %zu with %zu block dims needs %zu",
        sp.traversal_order.size(), sp.dim_metadata.size(), n, k, levels);
  const std::vector<int64_t> order(sp.traversal_order.begin(), sp.traversal_order.end());
  if (!IsPermutation(sp.traversal_order.data(), n, 0) ||
      !IsPermutation(sp.traversal_order.data() + n, k, static_cast<int32_t>(n)))
    return InvalidArgument("traversal_order %s is not a permutation of the %zu dims followed by one of the %zu block dims",
                           ShapeToString(order).c_str(), n, k);
  std::vector<bool> blocked(n, false);
  for (int32_t d : sp.block_map) {
    if (d < 0 || static_cast<size_t>(d) >= n || blocked[static_cast<size_t>(d)])
      return InvalidArgument("block_map %s must name distinct dims below %zu",
                             ShapeToString(std::vector<int64_t>(sp.block_map.begin(), sp.block_map.end())).c_str(), n);
    blocked[static_cast<size_t>(d)] = true;
  }
  // Sizes: block dim b's from its level's dense_size; a blocked tensor dim counts blocks.
  std::vector<int64_t> level_of(levels), block_size(k), outer(shape), level_size(levels);
  for (size_t l = 0; l < levels; ++l) level_of[static_cast<size_t>(sp.traversal_order[l])] = static_cast<int64_t>(l);
  for (size_t b = 0; b < k; ++b) {
    const size_t d = static_cast<size_t>(sp.block_map[b]);
    block_size[b] = sp.dim_metadata[static_cast<size_t>(level_of[n + b])].dense_size;
    if (block_size[b] < 1 || shape[d] % block_size[b] != 0)
      return InvalidArgument("block dim %zu of size %lld does not divide dim %zu of size %lld", b,
                             static_cast<long long>(block_size[b]), d, static_cast<long long>(shape[d]));
    outer[d] = shape[d] / block_size[b];
  }
  for (size_t l = 0; l < levels; ++l) {
    const size_t dim = static_cast<size_t>(sp.traversal_order[l]);
    level_size[l] = dim < n ? outer[dim] : block_size[dim - n];
    const DimensionMetadata& m = sp.dim_metadata[l];
    if (m.format == kDimDense) {
      if (m.dense_size != level_size[l])
        return InvalidArgument("dim_metadata %zu: DENSE size %d, its dim (%zu) has %lld", l, m.dense_size, dim,
                               static_cast<long long>(level_size[l]));
    } else if (m.format == kDimSparseCsr) {
      if (m.segments.empty() || m.segments[0] != 0)
        return InvalidArgument("dim_metadata %zu: array_segments must start at 0", l);
      for (size_t s = 1; s < m.segments.size(); ++s)
        if (m.segments[s] < m.segments[s - 1] || m.segments[s] > static_cast<int64_t>(m.indices.size()))
          return InvalidArgument("dim_metadata %zu: array_segments[%zu] = %lld is below the one before it or past the "
                                 "%zu array_indices", l, s, static_cast<long long>(m.segments[s]), m.indices.size());
    } else {
      return InvalidArgument("dim_metadata %zu: unknown format %d", l, m.format);
    }
  }
  // The dense tensor, bounded by the stored values.
  if (values.size % elem != 0)
    return InvalidArgument("%zu bytes of values are not a whole number of %s elements", values.size,
                           TensorTypeName(type));
  const int64_t stored = static_cast<int64_t>(values.size / elem);
  TensorData d;
  d.type = type;
  d.shape = shape;
  int64_t count = 0;
  size_t bytes = 0;
  if (!CheckedElementCount(shape, &count) || !CheckedByteSize(count, elem, &bytes))
    return InvalidArgument("shape %s: its size overflows", ShapeToString(shape).c_str());
  if (count > std::max(kMinDensifyElements, SatMul(stored, kMaxDensifyRatio)))
    return InvalidArgument("shape %s from %lld stored values: more than %lld times as many elements",
                           ShapeToString(shape).c_str(), static_cast<long long>(stored),
                           static_cast<long long>(kMaxDensifyRatio));
  d.bytes.assign(bytes, 0);
  std::vector<int64_t> stride(n, 1);
  for (size_t i = n; i-- > 1;) stride[i - 1] = stride[i] * shape[i];
  Densifier w(sp, level_size, stride, block_size, values, elem, d.bytes.data());
  KILN_RETURN_IF_ERROR(w.Walk(0, 0));
  if (w.consumed() != static_cast<size_t>(stored))
    return InvalidArgument("the levels address %zu values, %lld are stored", w.consumed(),
                           static_cast<long long>(stored));
  return d;
}

}  // namespace kiln::tflite
