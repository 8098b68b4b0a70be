// ONNX -> Kiln: walks the nodes in topological order (sorted at import), maps each to a Kiln op with its
// attributes (ONNX defaults applied; opsets 1 to 18), initializers and
// Constant nodes to constants, graph inputs with their (possibly symbolic)
// shapes.
#include <fstream>

#include "onnx_importer.h"

namespace kiln {

using namespace onnx_import;

namespace onnx_import {

Status OnnxImporter::ImportGraph(const onnx::GraphProto& g, const std::vector<fb::DataType>& formal) {
  std::set<std::string> initializer_names;
  for (const auto& init : g.initializer()) {
    KILN_ASSIGN_OR_RETURN(TensorData d, ReadTensor(init, base_dir_), "initializer");
    tensors_[init.name()] = b_.addConstant(init.name(), d.dtype, d.shape, d.bytes.data(), d.bytes.size());
    report_->weight_bytes += d.bytes.size();
    initializer_names.insert(init.name());
  }
  int k = 0;
  for (const auto& in : g.input()) {
    if (initializer_names.count(in.name())) continue;
    const fb::DataType* hint = k < static_cast<int>(formal.size()) ? &formal[static_cast<size_t>(k)] : nullptr;
    ++k;
    KILN_RETURN_IF_ERROR(AddInput(in, hint), "graph input '%s'", in.name().c_str());
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int> order, TopologicalOrder(g));
  for (int i : order) {
    const onnx::NodeProto* n = &g.node(i);
    onnx::NodeProto named;
    if (n->name().empty()) {  // messages and placements need a name: use the first output's
      named = *n;
      named.set_name(n->output_size() ? n->output(0) : n->op_type() + std::to_string(i));
      n = &named;
    }
    KILN_RETURN_IF_ERROR(ImportNode(*n), "node %d '%s' (%s)", i, n->name().c_str(), n->op_type().c_str());
    if (opt_.progress && g.node_size() > 200 && (++imported_ % 200) == 0)
      opt_.progress(StrFormat("imported %d of %d nodes", imported_, g.node_size()));
  }
  return Status::Ok();
}

// An optional or a sequence (of tensors) is a scalar placeholder holding its
// value; a tensor keeps its (possibly symbolic) shape.
Status OnnxImporter::AddInput(const onnx::ValueInfoProto& in, const fb::DataType* hint) {
  const onnx::TypeProto* type = &in.type();
  const bool optional = type->has_optional_type();
  if (optional) type = &type->optional_type().elem_type();
  const bool sequence = type->has_sequence_type();
  if (sequence) type = &type->sequence_type().elem_type();
  if (!type->has_tensor_type() && !(hint && !in.has_type()))
    return Unsupported("only tensors, sequences of tensors and optionals of either are supported");
  const auto& tt = type->tensor_type();
  fb::DataType dtype;
  if (hint && tt.elem_type() == 0) {
    dtype = *hint;
  } else {
    KILN_ASSIGN_OR_RETURN(dtype, MapDataType(tt.elem_type()));
  }
  std::vector<Dim> dims;
  if (optional || sequence) {
    tensors_[in.name()] = b_.addInput(in.name(), dtype, dims);
    SetKind(tensors_[in.name()], (sequence ? 1 : 0) | (optional ? 2 : 0));
    return Status::Ok();
  }
  if (!tt.has_shape()) {  // a subgraph input of unknown rank
    tensors_[in.name()] = b_.addInput(in.name(), dtype, dims);
    b_.net().tensors[static_cast<size_t>(tensors_[in.name()])]->unknown_rank = true;
    return Status::Ok();
  }
  auto over = opt_.input_shapes.find(in.name());
  if (over != opt_.input_shapes.end() && !parent_) {
    for (int64_t d : over->second) dims.emplace_back(d);
  } else {
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0)
        dims.emplace_back(d.dim_value());
      else
        dims.emplace_back(d.has_dim_param() ? d.dim_param().c_str() : "");
    }
  }
  tensors_[in.name()] = b_.addInput(in.name(), dtype, dims);
  ranks_[in.name()] = static_cast<int>(dims.size());
  return Status::Ok();
}

}  // namespace onnx_import

namespace {

StatusOr<NetBuilder> ImportModel(const onnx::ModelProto& model, const ConvertOptions& options, ConvertReport* report,
                                 const std::string& weights_dir) {
  ConvertReport local;
  OnnxImporter importer(options, report ? report : &local, weights_dir);
  return GuardAlloc("ONNX import", [&] { return importer.Import(model); });
}

}  // namespace

StatusOr<NetBuilder> ImportOnnx(const std::string& path, const ConvertOptions& options, ConvertReport* report) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("%s: cannot open", path.c_str());
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&f)) return InvalidArgument("%s: not a valid ONNX protobuf", path.c_str());
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  auto r = ImportModel(model, options, report, dir);
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

StatusOr<NetBuilder> ImportOnnxBuffer(const void* data, size_t size, const ConvertOptions& options,
                                      ConvertReport* report, const std::string& weights_dir) {
  if (size > static_cast<size_t>(INT32_MAX)) return Unsupported("<buffer>: ONNX models of 2 GiB or more in memory");
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) return InvalidArgument("<buffer>: not a valid ONNX protobuf");
  auto r = ImportModel(model, options, report, weights_dir);
  if (!r.ok()) return r.status().WithContext("<buffer>");
  return r;
}

}  // namespace kiln
