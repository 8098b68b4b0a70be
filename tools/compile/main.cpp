// kiln-compile: an ahead-of-time bundle of a model for the host backend: the
// model with its input shapes fixed and the weights its host ops pack at
// session creation and resize (GEMM panels, Winograd filters), written by
// Interpreter::saveBundle; a session of the bundle takes them in place from
// the file's mapping instead of packing.
//
//   kiln-compile MODEL -o OUT.kbundle [--backend host] [--threads N]
//                [--precision normal|low] [--input-shape NAME=D0,D1,...]...
//
// MODEL: .kiln, .onnx or .tflite (converted in memory, passes on). Symbolic
// input dims must be given with --input-shape. Exit status: 0 written, 1
// model or write error, 2 usage error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "kiln/convert.h"
#include "kiln/interpreter.h"

namespace {

int Usage(const char* why) {
  if (why) std::fprintf(stderr, "kiln-compile: %s\n", why);
  std::fprintf(stderr,
               "usage: kiln-compile MODEL -o OUT.kbundle [--backend host|vulkan|opencl] [--threads N]\n"
               "                    [--precision normal|low] [--input-shape NAME=D0,D1,...]...\n");
  return 2;
}

bool ParseDims(const std::string& s, std::vector<int64_t>* dims) {
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    const std::string d = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    const long long v = std::strtoll(d.c_str(), &end, 10);
    if (d.empty() || *end || v < 0) return false;
    dims->push_back(v);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return !dims->empty();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;
  std::string model, out, backend = "host";
  ScheduleConfig config;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "-o") {
      const char* v = value();
      if (!v) return Usage("-o needs a path");
      out = v;
    } else if (a == "--backend") {
      const char* v = value();
      if (!v) return Usage("--backend needs host, vulkan or opencl");
      backend = v;
    } else if (a == "--threads") {
      const char* v = value();
      config.numThread = v ? std::atoi(v) : 0;
      if (config.numThread < 1) return Usage("--threads needs a count of at least 1");
    } else if (a == "--precision") {
      const char* v = value();
      if (!v || (std::strcmp(v, "normal") && std::strcmp(v, "low"))) return Usage("--precision is normal or low");
      config.precision = std::strcmp(v, "low") == 0 ? Precision::kLow : Precision::kNormal;
    } else if (a == "--input-shape") {
      const char* v = value();
      const std::string s = v ? v : "";
      const size_t eq = s.find('=');
      std::vector<int64_t> dims;
      if (eq == std::string::npos || eq == 0 || !ParseDims(s.substr(eq + 1), &dims))
        return Usage("--input-shape takes NAME=D0,D1,... (non-negative integers)");
      shapes[s.substr(0, eq)] = dims;
    } else if (a == "--help" || a == "-h") {
      Usage(nullptr);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return Usage(("unknown option " + a).c_str());
    } else if (model.empty()) {
      model = a;
    } else {
      return Usage("one model at a time");
    }
  }
  if (model.empty() || out.empty()) return Usage("a model and -o OUT are needed");
  if (backend == "host") {
    config.type = ForwardType::kHost;
  } else if (backend == "vulkan" || backend == "opencl") {
    config.type = backend == "vulkan" ? ForwardType::kVulkan : ForwardType::kOpenCL;
    config.backupType = ForwardType::kHost;
  } else {
    return Usage("--backend is host, vulkan or opencl");
  }
  auto interp = LoadAnyModel(model);
  if (!interp.ok()) {
    std::fprintf(stderr, "kiln-compile: %s\n", interp.status().ToString().c_str());
    return 1;
  }
  auto session = (*interp)->createSession(config);
  if (!session.ok()) {
    std::fprintf(stderr, "kiln-compile: %s\n", session.status().ToString().c_str());
    return 1;
  }
  for (auto& [name, dims] : shapes) {
    Tensor* in = (*session)->getInput(name);
    if (!in) {
      std::fprintf(stderr, "kiln-compile: --input-shape %s: the model has no input of that name\n", name.c_str());
      return 1;
    }
    Status s = (*session)->resizeTensor(in, dims);
    if (!s.ok()) {
      std::fprintf(stderr, "kiln-compile: --input-shape %s: %s\n", name.c_str(), s.ToString().c_str());
      return 1;
    }
  }
  if (!shapes.empty()) {
    Status s = (*session)->resize();
    if (!s.ok()) {
      std::fprintf(stderr, "kiln-compile: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  if (backend != "host") {
    // The GPU session must really be on that backend, and it runs once
    // (inputs zero) so that drivers that compile at first enqueue (PoCL's
    // work-group functions) have done so before their state is read.
    const Placement& pl = (*session)->placement();
    if (!pl.ops_per_backend.count(backend)) {
      std::fprintf(stderr, "kiln-compile: no op of the model runs on %s here (%s)\n", backend.c_str(),
                   pl.toString().c_str());
      return 1;
    }
    for (const auto& [name, t] : (*session)->getInputAll())
      if (t && t->host<uint8_t>()) std::memset(t->host<uint8_t>(), 0, t->byteSize());
    Status r = (*session)->run();
    if (!r.ok()) {
      std::fprintf(stderr, "kiln-compile: running the %s session once: %s\n", backend.c_str(), r.ToString().c_str());
      return 1;
    }
  }
  Status s = (*interp)->saveBundle(*session, out);
  if (!s.ok()) {  // a model with symbolic input dims was not resized at creation
    std::fprintf(stderr, "kiln-compile: %s%s\n", s.ToString().c_str(),
                 shapes.empty() ? " (give symbolic input dims with --input-shape)" : "");
    return 1;
  }
  const SessionPhases p = (*session)->phases();
  if (backend == "host")
    std::printf("%s -> %s: host bundle, %d thread%s; packing it saves %.1f ms of session creation here\n",
                model.c_str(), out.c_str(), config.numThread, config.numThread == 1 ? "" : "s", p.pack);
  else
    std::printf("%s -> %s: %s bundle for %s; it saves up to %.1f ms of pipelines and %.1f ms of packing at "
                "session creation, and the driver's compiles at the first run\n",
                model.c_str(), out.c_str(), backend.c_str(), (*session)->devices()[backend].c_str(), p.pipelines, p.pack);
  return 0;
}
