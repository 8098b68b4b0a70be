// Numpy broadcasting over N inputs, row by row: the output is walked in
// rows of its innermost dimension, and for each row the caller gets each
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
  const int64_t inner = out_shape[rank - 1];
  const int64_t rows = total / inner;
  pool.parallelFor(rows, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(rank, 0);
    int64_t rem = begin;
    for (size_t d = rank - 1; d-- > 0;) {
      idx[d] = rem % out_shape[d];
      rem /= out_shape[d];
    }
    for (int64_t r = begin; r < end; ++r) {
      BroadcastRow<N> row;
      row.out = r * inner;
      row.count = inner;
      for (size_t k = 0; k < N; ++k) {
        int64_t off = 0;
        for (size_t d = 0; d + 1 < rank; ++d) off += idx[d] * strides[k][d];
        row.in[k] = off;
        row.stride[k] = strides[k][rank - 1];
      }
      row_fn(row);
      for (size_t d = rank - 1; d-- > 0;) {
        if (++idx[d] < out_shape[d]) break;
        idx[d] = 0;
      }
    }
  }, /*grain=*/std::max<int64_t>(1, 16384 / std::max<int64_t>(1, inner)));
}

}  // namespace kiln
