// Numpy broadcasting over N inputs, row by row: the output is walked in
// rows of its innermost dimension (after merging the dimensions that every
// input walks as one), and for each row the caller gets each
// input's starting offset and inner stride (0 where that input broadcasts).
// Rows are split across the thread pool.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "thread_pool.h"

namespace kiln {

template <size_t N>
struct BroadcastRow {
  int64_t out;                      // first output element of the row
  int64_t count;                    // elements in the row
  std::array<int64_t, N> in;        // first element of each input
  std::array<int64_t, N> stride;    // 0 or 1
};

// Calls row_fn(const BroadcastRow<N>&) for every row of `out_shape`.
template <size_t N, typename RowFn>
void ForEachBroadcastRow(ThreadPool& pool, const std::vector<int64_t>& out_shape,
                         const std::array<const std::vector<int64_t>*, N>& in_shapes, RowFn&& row_fn) {
  const size_t rank = out_shape.size();
  int64_t total = 1;
  for (int64_t d : out_shape) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    BroadcastRow<N> r{0, 1, {}, {}};
    row_fn(r);
    return;
  }
  // Strides of each input aligned to the output's rank (0 on broadcast dims).
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) {
    const std::vector<int64_t>& s = *in_shapes[k];
    strides[k].assign(rank, 0);
    int64_t st = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      size_t d = s.size() - 1 - i, od = rank - 1 - i;
      strides[k][od] = s[d] == 1 ? 0 : st;
      st *= s[d];
    }
  }
  // Merge each dimension into the one after it wherever every input walks
  // the pair as one (contiguous in both, or broadcast in both): [N,C,H,W] *
  // [N,C,1,1] becomes rows of H*W, same shapes become one row, instead of
  // rows as short as W.
  std::vector<int64_t> shape(out_shape.begin(), out_shape.end());
  for (size_t d = rank - 1; d-- > 0;) {
    bool merge = true;
    for (size_t k = 0; k < N && merge; ++k)
      merge = shape[d] == 1 || strides[k][d] == strides[k][d + 1] * shape[d + 1];
    if (!merge) continue;
    shape[d + 1] *= shape[d];
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(d));
    for (size_t k = 0; k < N; ++k) strides[k].erase(strides[k].begin() + static_cast<std::ptrdiff_t>(d));
  }
  const size_t merged = shape.size();
  const int64_t inner = shape[merged - 1];
  const int64_t rows = total / inner;
  // Fewer rows than threads (one row, when all shapes are equal): each long
  // row is cut into pieces of at least 16384 elements so that they spread.
  const int64_t threads = pool.threads();
  const int64_t pieces =
      rows >= threads ? 1 : std::max<int64_t>(1, std::min((threads + rows - 1) / rows, inner / 16384));
  const int64_t piece = (inner + pieces - 1) / pieces;
  pool.parallelFor(rows * pieces, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(merged, 0);
    int64_t rem = begin / pieces;
    for (size_t d = merged - 1; d-- > 0;) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / pieces, at = item % pieces * piece;
      BroadcastRow<N> row;
      row.out = r * inner + at;
      row.count = std::min(piece, inner - at);
      for (size_t k = 0; k < N; ++k) {
        int64_t off = 0;
        for (size_t d = 0; d + 1 < merged; ++d) off += idx[d] * strides[k][d];
        row.stride[k] = strides[k][merged - 1];
        row.in[k] = off + at * row.stride[k];
      }
      if (row.count > 0) row_fn(row);
      if ((item + 1) % pieces) continue;  // the next piece of the same row
      for (size_t d = merged - 1; d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  }, /*grain=*/std::max<int64_t>(1, 16384 / std::max<int64_t>(1, piece)));
}

}  // namespace kiln
