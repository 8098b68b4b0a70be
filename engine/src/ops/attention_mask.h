// The additive mask of an Attention op (schema/kiln.fbs) as strides, for
// its shape function, the fuse_attention pass and every backend's kernel:
// score (b, i, j) of batch b (the batch dims flattened), query row i and
// key j reads mask[offset(b) + i * row + j * col]. The mask's dims, right-
// aligned against the scores' [..., L, S], are each 1 (broadcast) or the
// scores'. Its batch dims form runs of dims the mask follows or broadcasts
// over; at most kMaxRuns runs (batch dims of 1 in the scores belong to
// any run), which covers [L, S], [B, 1, 1, S], [1, H, L, S], [B, H, L, S].
#pragma once

#include <cstdint>
#include <vector>

namespace kiln {

struct AttentionMask {
  static constexpr int kMaxRuns = 3;
  // Runs outermost first, padded at the front with extent 1, stride 0.
  int64_t extent[kMaxRuns] = {1, 1, 1}, stride[kMaxRuns] = {0, 0, 0};
  int64_t row = 0, col = 0;

  int64_t offset(int64_t b) const {
    int64_t off = 0;
    for (int r = kMaxRuns - 1; r >= 0; --r) {
      off += b % extent[r] * stride[r];
      b /= extent[r];
    }
    return off;
  }
};

// The strides of `mask` (its shape) against scores [batch..., L, S]; false
// when a dim neither is 1 nor matches, the mask has more dims than the
// scores, or its batch dims make more than kMaxRuns runs.
inline bool MakeAttentionMask(const std::vector<int64_t>& batch, int64_t L, int64_t S,
                              const std::vector<int64_t>& mask, AttentionMask* m) {
  std::vector<int64_t> scores = batch;
  scores.push_back(L);
  scores.push_back(S);
  const size_t r = scores.size();
  if (mask.size() > r) return false;
  std::vector<int64_t> dims(r - mask.size(), 1);  // the mask's dims, right-aligned
  dims.insert(dims.end(), mask.begin(), mask.end());
  for (size_t i = 0; i < r; ++i)
    if (dims[i] != 1 && dims[i] != scores[i]) return false;
  *m = AttentionMask();
  m->col = dims[r - 1] == 1 ? 0 : 1;
  m->row = dims[r - 2] == 1 ? 0 : dims[r - 1];
  // Runs of batch dims, innermost first: a dim the mask follows has the
  // stride of the mask's elements inside it.
  int64_t inner = dims[r - 2] * dims[r - 1];
  std::vector<std::pair<int64_t, int64_t>> runs;  // (extent, stride), innermost first
  int state = -1;                                  // 1: follows, 0: broadcasts
  for (size_t i = r - 2; i-- > 0;) {
    if (scores[i] == 1) continue;
    const int follows = dims[i] != 1;
    if (follows != state) runs.emplace_back(1, follows ? inner : 0);
    state = follows;
    runs.back().first *= scores[i];
    if (follows) inner *= dims[i];
  }
  if (runs.size() > AttentionMask::kMaxRuns) return false;
  for (size_t k = 0; k < runs.size(); ++k) {
    m->extent[AttentionMask::kMaxRuns - 1 - k] = runs[k].first;
    m->stride[AttentionMask::kMaxRuns - 1 - k] = runs[k].second;
  }
  return true;
}

}  // namespace kiln
