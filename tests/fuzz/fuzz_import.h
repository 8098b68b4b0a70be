// What the importer fuzz targets do with one input: import (ONNX or TFLite),
// run the graph passes, write the model and load it back, and, for the run
// target, resize and run a host session on small inputs, so that the values
// computed at resize are fuzzed as well. Every step must return a Status for
// any bytes: a crash, a sanitizer report, a leak or an exception escaping is
// a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>

#include "kiln/convert.h"
#include "kiln/format.h"
#include "kiln/interpreter.h"
#include "kiln/passes.h"

namespace kiln::fuzz {

enum class Format { kOnnx, kTflite };

// Fuzzing keeps every session small: a hostile shape fails resize quickly
// instead of allocating gigabytes.
constexpr size_t kTensorLimit = size_t{1} << 24;
constexpr size_t kSessionLimit = size_t{1} << 26;
constexpr int64_t kMaxInputElements = 1 << 16;

inline StatusOr<std::unique_ptr<Interpreter>> ImportAndLoad(const uint8_t* data, size_t size, Format format) {
  ConvertOptions opt;
  opt.allow_unsupported = true;  // keep going past unknown ops: the rest of the graph is fuzzed too
  KILN_ASSIGN_OR_RETURN(NetBuilder b, format == Format::kOnnx ? ImportOnnxBuffer(data, size, opt, nullptr)
                                                         : ImportTfliteBuffer(data, size, opt, nullptr));
  KILN_RETURN_IF_ERROR(OptimizeNet(b.net(), nullptr));
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, b.finish());
  return Interpreter::createFromBuffer(bytes.data(), bytes.size());
}

// Resizes every input to its declared shape (symbolic dims as 2) and runs
// once on the host with deterministic values.
inline Status RunSmall(Interpreter& interp) {
  ScheduleConfig config;
  config.maxTensorBytes = kTensorLimit;
  config.maxSessionBytes = kSessionLimit;
  KILN_ASSIGN_OR_RETURN(Session * session, interp.createSession(config));
  const fb::Net& net = interp.net();
  if (net.inputs())
    for (int32_t i : *net.inputs()) {
      const fb::Tensor* gt = net.tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
      std::vector<int64_t> shape;
      int64_t n = 1;
      if (gt->shape())
        for (const fb::Dim* d : *gt->shape()) {
          shape.push_back(d->size() < 0 ? 2 : d->size());
          if (shape.back() > kMaxInputElements || (n *= std::max<int64_t>(shape.back(), 1)) > kMaxInputElements)
            return InvalidArgument("input '%s' too large for fuzzing", gt->name()->c_str());
        }
      Tensor* t = interp.getSessionInput(session, gt->name()->str());
      if (!t) return Internal("input '%s' not found", gt->name()->c_str());
      KILN_RETURN_IF_ERROR(interp.resizeTensor(t, shape));
    }
  KILN_RETURN_IF_ERROR(interp.resizeSession(session));
  for (auto& [name, t] : interp.getSessionInputAll(session)) {
    if (!t->hostData()) continue;
    uint8_t* p = t->host<uint8_t>();
    for (size_t i = 0; i < t->byteSize(); ++i) p[i] = static_cast<uint8_t>(i * 37 + 11) & 0x3f;
  }
  Status s = interp.runSession(session);
  (void)interp.releaseSession(session);
  return s;
}

}  // namespace kiln::fuzz
