// If, Loop and Scan: their output shapes come from their subgraphs, which
// only a session can resize (engine/src/control_flow.cpp does). Callers
// without one (the graph passes' static shape inference) are told so and
// leave the shapes unknown.
#include "ops/shape_inference.h"

namespace kiln {

Status InferShapeControlFlow(ShapeContext& c) {
  return Unsupported("%s: its output shapes come from its subgraphs, inferred by the session", c.op().typeName());
}

}  // namespace kiln
