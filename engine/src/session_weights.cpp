// Session weights (MNN's getWeight / setWeight, for personalization, LoRA
// merges and calibration): a constant of the session's graph read back, or
// replaced for this session only.
//
// The model stays immutable. The first setWeight gives the session its own
// copy of the graph, whose constant views then point at session-owned,
// 64-byte aligned copies of the new values; the executions of the ops
// reading a replaced constant are created again from that graph (their
// packed panels, transformed filters and GPU uploads are made from the new
// values), the others keep pointing into the graph they were made from
// (kept alive: same ops, same tensors), and the session resizes again
// (keeping the inputs the app wrote), which binds the constants and
// uploads their GPU mirrors.
#include <cstring>

#include "ops/shape_inference.h"
#include "session_impl.h"
#include "host_backend.h"

namespace kiln {

int SessionImpl::weightIndex(const std::string& name) const {
  for (size_t i = 0; i < graph_->tensors.size(); ++i)
    if (graph_->tensors[i].isConstant() && graph_->tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

StatusOr<std::unique_ptr<Tensor>> SessionImpl::weight(const std::string& name) const {
  const int t = weightIndex(name);
  if (t < 0) return NotFound("no weight (constant) named '%s' in the model's graph", name.c_str());
  const GraphTensor& gt = graph_->tensors[static_cast<size_t>(t)];
  auto out = Tensor::create(gt.dims, gt.dtype);
  if (out->byteSize() != gt.constant.size)
    return Internal("weight '%s': %zu bytes for %zu", name.c_str(), gt.constant.size, out->byteSize());
  if (gt.constant.size) std::memcpy(out->hostData(), gt.constant.data, gt.constant.size);
  out->setName(gt.name);
  return out;
}

Status SessionImpl::setWeight(const std::string& name, const Tensor& value) {
  const int t = weightIndex(name);
  if (t < 0) return NotFound("setWeight: no weight (constant) named '%s' in the model's graph", name.c_str());
  const GraphTensor& gt = graph_->tensors[static_cast<size_t>(t)];
  if (value.dtype() != gt.dtype)
    return InvalidArgument("setWeight '%s': the value is %s, the weight %s", name.c_str(), DataTypeName(value.dtype()),
                           DataTypeName(gt.dtype));
  if (value.shape() != gt.dims)
    return InvalidArgument("setWeight '%s': the value's shape is %s, the weight's %s", name.c_str(),
                           ShapeToString(value.shape()).c_str(), ShapeToString(gt.dims).c_str());
  std::unique_ptr<Tensor> staged;
  const Tensor* src = &value;
  if (!value.onHost() || !value.hostData()) {
    KILN_ASSIGN_OR_RETURN(staged, Tensor::createHostTensorFromDevice(value, true), "setWeight '%s'", name.c_str());
    src = staged.get();
  }
  if (src->byteSize() != gt.constant.size)
    return InvalidArgument("setWeight '%s': %zu bytes for a weight of %zu", name.c_str(), src->byteSize(),
                           gt.constant.size);
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<ByteRegion> bytes, ByteRegion::Copy(src->hostData(), src->byteSize()),
                        "setWeight '%s'", name.c_str());
  if (!own_graph_) {
    replaced_graphs_.push_back(graph_);
    own_graph_ = std::make_shared<Graph>(*graph_);
    graph_ = own_graph_;
  }
  own_graph_->tensors[static_cast<size_t>(t)].constant = ConstantView{bytes->data(), bytes->size()};
  weights_[t] = std::move(bytes);
  // The readers' executions again, on the backend each runs on.
  for (int op : graph_->tensors[static_cast<size_t>(t)].consumers) {
    const size_t i = static_cast<size_t>(op);
    if (control_[i]) continue;  // reads its captures at run time
    host_->forgetBundled(op);  // an ahead-of-time bundle's forms of it were made from the old value
    Backend* b = backends_[static_cast<size_t>(op_backend_[i])].get();
    auto exec = b->onCreate(graph_->ops[i], *graph_);
    if (!exec.ok()) return exec.status().WithContext("setWeight '" + name + "': " + where(op) + " on " + b->name());
    for (Step& s : steps_)
      if (s.op == op) s.exec = exec->get();
    execs_[i] = std::move(exec).value();
  }
  for (auto& b : backends_) b->onConstantChanged(*tensors_[static_cast<size_t>(t)]);  // uploaded mirrors
  if (!resized_) return Status::Ok();  // the first resize binds it
  resized_ = false;
  return resizeKeepingInputs();
}

}  // namespace kiln
