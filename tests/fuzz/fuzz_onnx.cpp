// libFuzzer: ONNX bytes through the importer, the graph passes and the loader.
#include "fuzz_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kiln::fuzz::ImportAndLoad(data, size, kiln::fuzz::Format::kOnnx);
  return 0;
}
