// TFLite -> Kiln: the entry points (the importer is tflite_importer.h).
#include "tflite_importer.h"

namespace kiln {

using namespace tflite_import;

namespace {

StatusOr<NetBuilder> ImportModel(const tflite::Model& model, const ConvertOptions& options, ConvertReport* report) {
  ConvertReport local;
  if (!report) report = &local;
  if (model.subgraphs.empty()) return InvalidArgument("the model has no subgraph");
  if (model.subgraphs.size() > 1 && options.progress)
    options.progress(StrFormat("%zu subgraphs: importing subgraph 0 only", model.subgraphs.size()));
  TfliteImporter importer(model, options, report);
  return GuardAlloc("TFLite import", [&] { return importer.Import(); });
}

}  // namespace

StatusOr<NetBuilder> ImportTflite(const std::string& path, const ConvertOptions& options, ConvertReport* report) {
  KILN_ASSIGN_OR_RETURN(tflite::Model model, tflite::ReadModelFile(path));
  auto r = ImportModel(model, options, report);
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

StatusOr<NetBuilder> ImportTfliteBuffer(const void* data, size_t size, const ConvertOptions& options,
                                        ConvertReport* report) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  auto model = tflite::ReadModel(std::vector<uint8_t>(p, p + size));
  if (!model.ok()) return model.status().WithContext("<buffer>");
  auto r = ImportModel(*model, options, report);
  if (!r.ok()) return r.status().WithContext("<buffer>");
  return r;
}

}  // namespace kiln
