// Static facts about each op type: the params table it takes and how many
// inputs and outputs it has. The model verifier checks every op against
// these; shape functions and kernels come per backend.
#pragma once

#include "kiln_generated.h"

namespace kiln {

struct OpDef {
  fb::OpType type;
  const char* name;
  fb::OpParams params;   // NONE: the op takes no params table
  bool params_required;
  int min_inputs, max_inputs;
  int min_outputs, max_outputs;
};

// The definition of `type`, or nullptr for Invalid / unknown values.
const OpDef* FindOpDef(fb::OpType type);

}  // namespace kiln
