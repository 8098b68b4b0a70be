// Model conversion: ONNX (and later TFLite) to Kiln. The library behind
// kiln-convert.
//
//   kiln::ConvertOptions opt;
//   opt.input_shapes["input"] = {1, 3, 224, 224};
//   kiln::ConvertReport report;
//   kiln::Status s = kiln::ConvertFile("model.onnx", "model.kiln", opt, &report);
//
// Unsupported ops fail the conversion with their types, counts and node
// names, unless allow_unsupported keeps them as Custom ops.
//
// Thread-safety: the functions are reentrant; no shared state.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "kiln/status.h"

namespace kiln {

struct ConvertOptions {
  bool fp16 = false;                 // store f32 weights as f16
  bool external_weights = false;     // weights in OUT.weights beside the model
  bool allow_unsupported = false;    // keep unknown ops as Custom ops
  bool optimize = true;              // run the graph passes (kiln/passes.h) before writing
  std::map<std::string, std::vector<int64_t>> input_shapes;  // override graph input shapes
  std::function<void(const std::string&)> progress;          // progress lines (may be null)
};

struct ConvertReport {
  std::string source_format;     // "onnx", "tflite"
  int64_t opset = 0;             // ONNX opset; TFLite schema version
  int ops_in = 0;                // nodes in the source graph
  int ops_out = 0;               // ops in the Kiln model (after the graph passes)
  size_t weight_bytes = 0;       // constant data written
  int fp16_weights = 0;          // constants stored as f16 (--fp16)
  std::map<std::string, int> unsupported;  // op type -> count (kept as Custom)
  std::vector<std::pair<std::string, int>> passes;  // graph passes that applied: name, rewrites
};

// Imports an ONNX model file into a NetBuilder.
StatusOr<NetBuilder> ImportOnnx(const std::string& path, const ConvertOptions& options, ConvertReport* report);

// Imports an ONNX model held in memory. External data is read from files in
// `weights_dir`; with none given, a model with external data is refused.
StatusOr<NetBuilder> ImportOnnxBuffer(const void* data, size_t size, const ConvertOptions& options,
                                      ConvertReport* report, const std::string& weights_dir = "");

// Imports a TFLite model file (subgraph 0) into a NetBuilder. 4-D tensors
// become NCHW: a 4-D input [1,256,256,3] is the Kiln input [1,3,256,256],
// and 4-D outputs are NCHW too (see tools/convert/tflite_importer.cpp).
StatusOr<NetBuilder> ImportTflite(const std::string& path, const ConvertOptions& options, ConvertReport* report);

// Imports a TFLite model held in memory (copied; the caller keeps its bytes).
StatusOr<NetBuilder> ImportTfliteBuffer(const void* data, size_t size, const ConvertOptions& options,
                                        ConvertReport* report);

// Every importer returns a Status for any input bytes: a malformed or hostile
// model (a node without its inputs, dims whose product overflows, values out
// of range) is an error naming the node and the problem, never an exception
// or a crash.

// Converts IN (.onnx or .tflite) to OUT (.kiln), choosing the importer by extension.
Status ConvertFile(const std::string& in, const std::string& out, const ConvertOptions& options,
                   ConvertReport* report);

// For tools: an Interpreter over a .kiln file (mapped), or over a .onnx /
// .tflite model converted in memory as kiln-convert does by default (graph
// passes on).
StatusOr<std::unique_ptr<Interpreter>> LoadAnyModel(const std::string& path);

}  // namespace kiln
