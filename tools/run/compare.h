// Op-by-op comparison of two sessions of one model (kiln-run --compare):
// "the GPU gives a wrong answer, where?".
//
// RecordRun runs a session with an after-callback that copies every op's
// outputs to the host (as doubles); FirstDivergence walks two such records in
// op order and returns the first op whose outputs differ by more than the
// tolerance. Both sessions must come from one Interpreter (same graph, same
// op indices); ops computed at resize (shape subgraphs) are not called back
// and so are not compared.
//
// The error of an output is max|test - ref| / max(max|ref|, 1e-6): relative
// to the tensor's scale, not per element, so that values near zero (where
// float rounding of a sum dominates) do not raise false alarms. A NaN on one
// side only is an infinite error; NaN on both sides agrees. A shape or dtype
// mismatch is a divergence too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/format.h"
#include "kiln/session.h"
#include "kiln/status.h"

namespace kiln {

struct RecordedTensor {
  std::string name;
  fb::DataType dtype = fb::DataType::F32;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

struct RecordedOp {
  OpInfo op;
  std::vector<RecordedTensor> outputs;
};

// Runs `s` once, recording every op's outputs in run order.
StatusOr<std::vector<RecordedOp>> RecordRun(Session* s);

struct Divergence {
  RecordedOp test_op;        // the op as the tested session ran it (its backend)
  std::string ref_backend;   // where the reference ran it
  std::string tensor;        // the output that differs
  double error = 0;          // max|test - ref| / max(max|ref|, 1e-6)
  double max_abs = 0;        // max|test - ref|
  int64_t worst_index = -1;  // flat index of the largest difference
  double test_value = 0, ref_value = 0;
  std::string reason;        // "shape 1x3 vs 1x4", "dtype", or empty for values
  int ops_compared = 0;      // ops checked up to and including this one
};

// The error of `test` against `ref` as defined above (and where it is worst).
double TensorError(const RecordedTensor& test, const RecordedTensor& ref, double* max_abs, int64_t* worst);

// The first op (in `test`'s order) whose outputs differ beyond `tolerance`;
// nullopt when all agree. `*compared` gets the number of ops compared. An op
// present in only one record (never expected: same graph) is an error.
StatusOr<std::optional<Divergence>> FirstDivergence(const std::vector<RecordedOp>& test,
                                                    const std::vector<RecordedOp>& ref, double tolerance,
                                                    int* compared);

}  // namespace kiln
