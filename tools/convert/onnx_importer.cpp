// ONNX -> Kiln: walks the nodes in topological order (sorted at import), maps each to a Kiln op with its
// attributes (ONNX defaults applied; opsets 1 to 18), initializers and
// Constant nodes to constants, graph inputs with their (possibly symbolic)
// shapes.
#include <fstream>

#include "onnx_importer.h"

namespace kiln {

using namespace onnx_import;

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
