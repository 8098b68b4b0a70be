// Control-flow models for the engine and GPU tests (If, Loop, Scan built
// with NetBuilder::addSubgraph), each with a reference computed in C++.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/net_builder.h"

namespace kiln::test {

// x[4], y[4] -> If(ReduceSum(x) > 0) { 2x + y } else { y - x }: a condition
// computed from float data, read at run time.
NetBuilder IfOnData();
std::vector<float> IfOnDataRef(const std::vector<float>& x, const std::vector<float>& y);

// sr (i64 scalar), x[4] -> If(sr == 16000) { Relu(x) } else { -x }: a
// configuration condition, decided at resize.
NetBuilder IfOnSampleRate();

// x[3] -> Loop(M = 4 constant or the i64 input "m" when `m_input`) carrying
// acc = acc * 0.5 + x (from 0), scanning acc: outputs acc[3], scans[M, 3].
NetBuilder LoopWithTripCount(bool m_input = false);
void LoopWithTripCountRef(const std::vector<float>& x, int64_t m, std::vector<float>* acc,
                          std::vector<float>* scans);

// v[2] -> Loop(no M) { v = 2v } while sum(v) < 100, scanning v: the
// iteration count depends on the data (computed at resize).
NetBuilder LoopUntil();
void LoopUntilRef(const std::vector<float>& v, std::vector<float>* last, std::vector<float>* scans);

// s0[2], seq[2, 5] -> Scan over axis 1, reversed: s = s + slice; scan out
// s * w (w[2] captured constant) stacked on axis 0: outputs s[2], out[5, 2].
NetBuilder ScanReverse();
void ScanReverseRef(const std::vector<float>& s0, const std::vector<float>& seq, std::vector<float>* s,
                    std::vector<float>* out);

}  // namespace kiln::test

namespace kiln::test {

// A recurrent cell for Session::bindState: h[1,4], x[1,4] ->
// h_out = tanh(h * 0.5 + x), out = h_out * 2.
NetBuilder StreamingCell();
// `steps` runs of the cell from h = 0 with the given x each run: the last `out`.
std::vector<float> StreamingCellRef(const std::vector<std::vector<float>>& xs);

}  // namespace kiln::test
