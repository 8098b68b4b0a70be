// TFLite sparse constants (SparsityParameters) and DENSIFY: models with
// sparse weights encoded here from the schema's description, checked against
// their dense equivalents; hostile sparsity metadata must give an error
// naming the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "half.h"
#include "kiln/convert.h"
#include "tflite_builder.h"
#include "tflite_reader.h"
#include "tflite_test_util.h"

namespace kiln::test {
namespace {

namespace tfl = tflite;

// ---- sparse constants (SparsityParameters) and DENSIFY ----

// Encodes a dense row-major tensor of `shape` as TFLite stores a sparse
// constant, written here from the schema's description (not from the
// importer): the levels are the dims in `order` (tensor dims 0..n-1, block
// dims n..n+k-1); block dim b, of size block[b], divides tensor dim
// block_map[b]; a SPARSE_CSR level keeps only the coordinates with a non-zero
// element below them, and records for each position of the level above the
// end of its segment of indices.
struct Encoded {
  SparseSpec spec;
  std::vector<float> values;  // stored elements, in traversal order
};
Encoded Sparsify(const std::vector<float>& dense, const Shape& shape, const std::vector<int32_t>& order,
                 const std::vector<int32_t>& block_map, const std::vector<int>& block,
                 const std::vector<int8_t>& formats, uint8_t index_type) {
  const size_t n = shape.size(), levels = order.size();
  std::vector<int> size(levels), blk(n, 1);
  for (size_t b = 0; b < block_map.size(); ++b) blk[block_map[b]] = block[b];
  for (size_t l = 0; l < levels; ++l)
    size[l] = order[l] < static_cast<int>(n) ? shape[order[l]] / blk[order[l]] : block[order[l] - n];
  Encoded e;
  e.spec.traversal_order = order;
  e.spec.block_map = block_map;
  for (size_t l = 0; l < levels; ++l) {
    SparseLevel lv;
    lv.format = formats[l];
    lv.dense_size = size[l];
    lv.segments_type = lv.indices_type = index_type;
    if (lv.format == tfl::kDimSparseCsr) lv.segments = {0};
    e.spec.levels.push_back(lv);
  }
  std::vector<int> coord(levels);
  auto value = [&]() {
    std::vector<int> outer(n), inner(n, 0);
    for (size_t l = 0; l < levels; ++l) {
      if (order[l] < static_cast<int>(n)) outer[order[l]] = coord[l];
      else inner[block_map[order[l] - n]] = coord[l];
    }
    size_t at = 0;
    for (size_t d = 0; d < n; ++d) at = at * shape[d] + outer[d] * blk[d] + inner[d];
    return dense[at];
  };
  std::function<bool(size_t)> any = [&](size_t l) {
    if (l == levels) return value() != 0.f;
    const int keep = coord[l];
    bool found = false;
    for (int i = 0; i < size[l] && !found; ++i) coord[l] = i, found = any(l + 1);
    coord[l] = keep;
    return found;
  };
  std::function<void(size_t)> walk = [&](size_t l) {
    if (l == levels) return e.values.push_back(value());
    SparseLevel& lv = e.spec.levels[l];
    for (int i = 0; i < size[l]; ++i) {
      coord[l] = i;
      if (lv.format == tfl::kDimSparseCsr) {
        if (!any(l + 1)) continue;
        lv.indices.push_back(i);
      }
      walk(l + 1);
    }
    if (lv.format == tfl::kDimSparseCsr) lv.segments.push_back(static_cast<int64_t>(lv.indices.size()));
  };
  walk(0);
  return e;
}

// Random values with zeros: each element (block > 1: each block of 1 x block
// along the last dim) zero with probability 1/2, and row `zero_row` all zero.
std::vector<float> SparseValues(size_t rows, size_t cols, uint32_t seed, size_t block = 1, int zero_row = -1) {
  std::vector<float> v = Random(rows * cols, seed), mask = Random(rows * cols / block, seed + 1);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c)
      if (mask[(r * cols + c) / block] < 0.f || static_cast<int>(r) == zero_row) v[r * cols + c] = 0.f;
  return v;
}

// FULLY_CONNECTED whose weights are a sparse constant behind DENSIFY (TFLite's
// sparse FC layers): row CSR, column-major CSR, both dims CSR (an all-zero row
// left out), and 1x4 blocks (TFLite's block-sparse FC format), with int32,
// uint16 and uint8 index vectors. DENSIFY folds away: one Gemm, its weights
// the dense matrix; the same without DENSIFY (FULLY_CONNECTED reading the
// sparse constant itself, as TFLite's sparse FC kernels do).
TEST(TfliteImport, DensifyFullyConnected) {
  const int O = 8, K = 12;
  const std::vector<float> w = SparseValues(O, K, 301, 1, 5), wb = SparseValues(O, K, 302, 4);
  struct Case {
    std::string name;
    const std::vector<float>& w;
    std::vector<int32_t> order, block_map;
    std::vector<int> block;
    std::vector<int8_t> formats;
    uint8_t index_type;
  };
  const int8_t D = tfl::kDimDense, S = tfl::kDimSparseCsr;
  const std::vector<Case> cases = {
      {"rows CSR, uint8", w, {0, 1}, {}, {}, {D, S}, tfl::kIndexUint8},
      {"column-major CSR, uint16", w, {1, 0}, {}, {}, {D, S}, tfl::kIndexUint16},
      {"both dims CSR, int32", w, {0, 1}, {}, {}, {S, S}, tfl::kIndexInt32},
      {"1x4 blocks, uint8", wb, {0, 1, 2}, {1}, {4}, {D, S, D}, tfl::kIndexUint8},
      {"2x4 blocks, column-major, int32", wb, {1, 0, 2, 3}, {0, 1}, {2, 4}, {D, S, D, D}, tfl::kIndexInt32},
  };
  const std::vector<float> x = Random(2 * K, 303), bias = Random(O, 304);
  std::vector<float> want(2 * O);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (int b = 0; b < 2; ++b)
      for (int o = 0; o < O; ++o) {
        float a = bias[o];
        for (int k = 0; k < K; ++k) a += x[b * K + k] * c.w[o * K + k];
        want[b * O + o] = a;
      }
    Encoded e = Sparsify(c.w, {O, K}, c.order, c.block_map, c.block, c.formats, c.index_type);
    ASSERT_LT(e.values.size(), static_cast<size_t>(O * K)) << "the encoding leaves zeros out";
    for (bool densify : {true, false}) {  // TFLite's FULLY_CONNECTED also reads sparse weights directly
      SCOPED_TRACE(densify ? "DENSIFY" : "sparse weights read by FULLY_CONNECTED");
      TfliteBuilder t;
      int xi = t.tensor("x", {2, K}), y = t.tensor("y", {2, O}), wd = t.tensor("w_dense", {O, K});
      int ws = t.sparseTensor("w_sparse", {O, K}, tfl::kFloat32, TfliteBuilder::Bytes(e.values), e.spec);
      if (densify) t.op(tfl::DENSIFY, {ws}, {wd});
      t.op(tfl::FULLY_CONNECTED, {xi, densify ? wd : ws, t.constF32("b", {O}, bias)}, {y},
           tfl::kFullyConnectedOptions, {});
      t.io({xi}, {y});
      ConvertReport rep;
      auto out = RunModel(t.finish(), {{"x", {{2, K}, x}}}, {}, &rep);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(rep.ops_in, densify ? 2 : 1);
      EXPECT_EQ(rep.ops_out, 1) << "DENSIFY is folded";
      EXPECT_TRUE(rep.unsupported.empty());
      ExpectNear(out->at("y").f32(), want, 1e-5f, "fc");
    }
  }
}

// CONV_2D whose OHWI weights are an fp16 sparse constant -> DENSIFY ->
// DEQUANTIZE (the chain of MediaPipe's face_detection_full_range_sparse):
// 2x2 blocks over O and I, the levels in the order H, O, W, I and the block
// dims swapped, two CSR levels in a row. The session sees one Conv.
TEST(TfliteImport, DensifyBlockSparseConv) {
  const Shape xs = {1, 5, 5, 4}, ws = {6, 3, 3, 4}, ys = {1, 5, 5, 6};
  std::vector<float> w = Random(Count(ws), 311);
  const std::vector<float> mask = Random(Count(ws) / 4, 312);
  for (int o = 0; o < 6; ++o)
    for (int k = 0; k < 9; ++k)
      for (int i = 0; i < 4; ++i) {
        float& v = w[(o * 9 + k) * 4 + i];
        v = mask[((o / 2) * 9 + k) * 2 + i / 2] < 0.f ? 0.f : std::round(v * 64.f) / 64.f;  // exact in f16
      }
  const int8_t D = tfl::kDimDense, S = tfl::kDimSparseCsr;
  Encoded e = Sparsify(w, ws, {1, 0, 2, 3, 5, 4}, {0, 3}, {2, 2}, {D, S, S, D, D, D}, tfl::kIndexUint8);
  ASSERT_LT(e.values.size(), w.size());
  std::vector<uint16_t> half;
  for (float v : e.values) half.push_back(FloatToHalf(v));
  TfliteBuilder t;
  int x = t.tensor("x", xs), y = t.tensor("y", ys);
  int sparse = t.sparseTensor("w_sparse", ws, tfl::kFloat16, TfliteBuilder::Bytes(half), e.spec);
  int dense = t.tensor("w_f16", ws, tfl::kFloat16), wf = t.tensor("w", ws);
  t.op(tfl::DENSIFY, {sparse}, {dense});
  t.op(tfl::DEQUANTIZE, {dense}, {wf});
  t.op(tfl::CONV_2D, {x, wf, -1}, {y}, tfl::kConv2DOptions, {B(tfl::opt::kPadding, tfl::kSame)});
  t.io({x}, {y});
  std::vector<float> xv = Random(Count(xs), 313);
  ConvertReport rep;
  auto out = RunModel(t.finish(), {{"x", {NchwShape(xs), ToNchw(xv, xs)}}}, {}, &rep);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(rep.ops_out, 1) << "DENSIFY and DEQUANTIZE are folded";
  EXPECT_EQ(out->at("y").shape, NchwShape(ys));
  ExpectNear(out->at("y").f32(), ToNchw(ConvRef(xv, xs, w, ws, {}, 1, 1, true, ys), ys), 1e-5f, "sparse conv");
}

// Hostile sparse constants: every index, segment, size and count read from
// the file is checked; each case is an error naming the tensor and the
// problem, never a read outside the vectors or the values.
TEST(HostileTflite, SparseConstants) {
  const int O = 4, K = 6;
  const int8_t D = tfl::kDimDense, S = tfl::kDimSparseCsr;
  const std::vector<float> w = SparseValues(O, K, 321, 1, 2);
  const Encoded good = Sparsify(w, {O, K}, {0, 1}, {}, {}, {D, S}, tfl::kIndexUint8);
  ASSERT_GE(good.spec.levels[1].indices.size(), 3u);
  ASSERT_LT(good.values.size(), 13u);
  struct Case {
    std::string want;
    std::function<void(Encoded&, Shape&)> edit;
  };
  const std::vector<Case> cases = {
      {"dim_metadata 1: array_indices[1] = 200 is out of range [0, 6)",
       [](Encoded& e, Shape&) { e.spec.levels[1].indices[1] = 200; }},
      {"dim_metadata 1: array_indices[0] = 6 is out of range [0, 6)",
       [](Encoded& e, Shape&) { e.spec.levels[1].indices[0] = 6; }},
      {"dim_metadata 1: array_segments[2] = 1 is below the one before it",
       [](Encoded& e, Shape&) { e.spec.levels[1].segments[1] = 3, e.spec.levels[1].segments[2] = 1; }},
      {"array_segments[4] = 250 is below the one before it or past the",
       [](Encoded& e, Shape&) { e.spec.levels[1].segments[4] = 250; }},
      {"dim_metadata 1: array_segments has 3 entries, too few for segment 2",
       [](Encoded& e, Shape&) { e.spec.levels[1].segments.resize(3); }},
      {"dim_metadata 1: array_segments must start at 0",
       [](Encoded& e, Shape&) { e.spec.levels[1].segments[0] = 1; }},
      {"dim_metadata 1: array_segments must start at 0",
       [](Encoded& e, Shape&) { e.spec.levels[1].segments.clear(); }},
      {"dim_metadata 0: DENSE size 5, its dim (0) has 4", [](Encoded& e, Shape&) { e.spec.levels[0].dense_size = 5; }},
      {"dim_metadata 1: unknown format 7", [](Encoded& e, Shape&) { e.spec.levels[1].format = 7; }},
      {"array_indices: unknown SparseIndexVector type 9",
       [](Encoded& e, Shape&) { e.spec.levels[1].indices_type = 9; }},
      {"traversal_order [0,0] is not a permutation", [](Encoded& e, Shape&) { e.spec.traversal_order = {0, 0}; }},
      {"traversal_order has 2 entries and dim_metadata 1, rank 2 with 0 block dims needs 2",
       [](Encoded& e, Shape&) { e.spec.levels.pop_back(); }},
      {"block_map has 3 entries for rank 2", [](Encoded& e, Shape&) { e.spec.block_map = {0, 1, 1}; }},
      {"block_map [2] must name distinct dims below 2",
       [](Encoded& e, Shape&) {
         e.spec.traversal_order = {0, 1, 2};
         e.spec.block_map = {2};
         e.spec.levels.push_back(SparseLevel{D, 1, {}, {}});
       }},
      {"block dim 0 of size 4 does not divide dim 1 of size 6",
       [](Encoded& e, Shape&) {
         e.spec.traversal_order = {0, 1, 2};
         e.spec.block_map = {1};
         e.spec.levels.push_back(SparseLevel{D, 4, {}, {}});
       }},
      {"the levels address more than the", [](Encoded& e, Shape&) { e.values.pop_back(); }},
      {"values, 13 are stored", [](Encoded& e, Shape&) { e.values.resize(13, 1.f); }},
      {"more than 64 times as many elements",
       [](Encoded& e, Shape& s) {
         s = {1 << 20, 1 << 10};
         e.spec.levels[0].dense_size = 1 << 20;
       }},
      {"its size overflows",  // dims whose product wraps int64
       [](Encoded& e, Shape& s) {
         s = {1 << 30, 1 << 30, 1 << 30};
         e.spec.traversal_order = {0, 1, 2};
         e.spec.levels.assign(3, SparseLevel{D, 1 << 30, {}, {}});
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    Encoded e = good;
    Shape shape = {O, K};
    c.edit(e, shape);
    TfliteBuilder t;
    int x = t.tensor("x", {1, K}), y = t.tensor("y", {1, O}), wd = t.tensor("w_dense", shape);
    int ws = t.sparseTensor("w_sparse", shape, tfl::kFloat32, TfliteBuilder::Bytes(e.values), e.spec);
    t.op(tfl::DENSIFY, {ws}, {wd});
    t.op(tfl::FULLY_CONNECTED, {x, wd, -1}, {y}, tfl::kFullyConnectedOptions, {});
    t.io({x}, {y});
    const std::vector<uint8_t> bytes = t.finish();
    auto r = ImportTfliteBuffer(bytes.data(), bytes.size(), ConvertOptions{}, nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("'w_sparse'"), std::string::npos) << r.status().message();
  }
  // The unedited encoding imports; every byte of it flipped gives an error or a model, never a crash.
  TfliteBuilder t;
  int x = t.tensor("x", {1, K}), y = t.tensor("y", {1, O}), wd = t.tensor("w_dense", {O, K});
  int ws = t.sparseTensor("w_sparse", {O, K}, tfl::kFloat32, TfliteBuilder::Bytes(good.values), good.spec);
  t.op(tfl::DENSIFY, {ws}, {wd});
  t.op(tfl::FULLY_CONNECTED, {x, wd, -1}, {y}, tfl::kFullyConnectedOptions, {});
  t.io({x}, {y});
  const std::vector<uint8_t> bytes = t.finish();
  ASSERT_TRUE(ImportTfliteBuffer(bytes.data(), bytes.size(), ConvertOptions{}, nullptr).ok());
  for (size_t k = 0; k < bytes.size(); ++k)
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bad = bytes;
      bad[k] ^= mask;
      auto r = ImportTfliteBuffer(bad.data(), bad.size(), ConvertOptions{}, nullptr);
      if (!r.ok()) {
        EXPECT_FALSE(r.status().message().empty());
      }
    }
}

}  // namespace
}  // namespace kiln::test
