// libFuzzer: a model converted and then resized and run on the host with
// small inputs, so that shapes and values computed at resize (Reshape's
// target, Resize's sizes, Pad's pads, ...) come from fuzzed bytes. TFLite
// when the bytes carry its file identifier ("TFL3" at offset 4), else ONNX.
#include "fuzz_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln::fuzz;
  const bool tflite = size >= 8 && std::memcmp(data + 4, "TFL3", 4) == 0;
  auto interp = ImportAndLoad(data, size, tflite ? Format::kTflite : Format::kOnnx);
  if (interp.ok()) (void)RunSmall(**interp);
  return 0;
}
