// Host kernels of the sequence ops: the result of ops/sequence_eval.h, into
// the output (a sequence's elements, or a tensor's bytes in the memory the
// session planned from the same values).
#include <cstring>

#include "host_backend.h"
#include "ops/sequence_eval.h"
#include "ops/shape_inference.h"

namespace kiln {
namespace {

Status RunSequence(const GraphOp& op, const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, HostBackend&) {
  KILN_ASSIGN_OR_RETURN(SequenceResult r, EvalSequenceOp(op, in, out[0]->dtype()));
  if (r.is_optional) {
    if (!out[0]->isOptional()) return Internal("%s: output '%s' is not declared an optional", op.typeName(), out[0]->name().c_str());
    out[0]->setOptional(r.items.empty() ? nullptr : r.items[0]);
    return Status::Ok();
  }
  if (r.is_sequence) {
    if (!out[0]->isSequence()) return Internal("%s: output '%s' is not declared a sequence", op.typeName(), out[0]->name().c_str());
    out[0]->setSequence(std::move(r.items));
    return Status::Ok();
  }
  if (r.tensor->shape() != out[0]->shape())
    return InvalidArgument("%s: the result is %s, the session planned %s: resize after writing the inputs",
                           op.typeName(), ShapeToString(r.tensor->shape()).c_str(),
                           ShapeToString(out[0]->shape()).c_str());
  if (r.tensor->byteSize()) std::memcpy(out[0]->hostData(), r.tensor->hostData(), r.tensor->byteSize());
  return Status::Ok();
}

}  // namespace

KILN_HOST_FN_FACTORY(Sequence)

}  // namespace kiln
