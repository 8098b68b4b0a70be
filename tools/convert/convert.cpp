#include <cstring>

#include "kiln/convert.h"
#include "kiln/passes.h"
#include "fp16.h"

namespace kiln {

static bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status ConvertFile(const std::string& in, const std::string& out, const ConvertOptions& options,
                   ConvertReport* report) {
  const bool tflite = EndsWith(in, ".tflite");
  if (!tflite && !EndsWith(in, ".onnx")) return Unsupported("%s: only .onnx and .tflite input is supported", in.c_str());
  KILN_ASSIGN_OR_RETURN(NetBuilder b, tflite ? ImportTflite(in, options, report) : ImportOnnx(in, options, report));
  if (options.optimize) {
    PassReport passes;
    KILN_RETURN_IF_ERROR(OptimizeNet(b.net(), &passes), "%s: graph passes", in.c_str());
    if (report) {
      report->passes = passes.applied;
      report->ops_out = static_cast<int>(b.net().ops.size());
      report->weight_bytes = 0;  // folding adds and drops constants
      for (const auto& t : b.net().tensors) report->weight_bytes += t->data.size();
    }
  }
  if (options.fp16) {
    KILN_ASSIGN_OR_RETURN(int n, StoreWeightsAsF16(b.net()), "%s: --fp16", in.c_str());
    if (report) {
      report->fp16_weights = n;
      report->weight_bytes = 0;
      for (const auto& t : b.net().tensors) report->weight_bytes += t->data.size();
    }
  }
  WriteOptions w;
  if (options.external_weights) {
    std::string base = out.substr(out.rfind('/') == std::string::npos ? 0 : out.rfind('/') + 1);
    if (EndsWith(base, ".kiln")) base.resize(base.size() - 5);
    w.external_weights = base + ".weights";
    w.external_min_bytes = 1024;
  }
  KILN_RETURN_IF_ERROR(b.writeFile(out, w));
  return Status::Ok();
}

StatusOr<std::unique_ptr<Interpreter>> LoadAnyModel(const std::string& path) {
  const bool onnx = EndsWith(path, ".onnx");
  if (!onnx && !EndsWith(path, ".tflite")) return Interpreter::createFromFile(path);
  KILN_ASSIGN_OR_RETURN(NetBuilder b, onnx ? ImportOnnx(path, {}, nullptr) : ImportTflite(path, {}, nullptr));
  PassReport passes;  // what kiln-convert would do
  KILN_RETURN_IF_ERROR(OptimizeNet(b.net(), &passes), "%s: graph passes", path.c_str());
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, b.finish());
  LoadOptions options;
  options.display_name = path;
  return Interpreter::createFromBuffer(bytes.data(), bytes.size(), BufferOwnership::kCopy, options);
}

}  // namespace kiln
