// kiln-compile: an ahead-of-time bundle of a model for the host backend: the
// model with its input shapes fixed and the weights its host ops pack at
// session creation and resize (GEMM panels, Winograd filters), written by
// Interpreter::saveBundle; a session of the bundle takes them in place from
// the file's mapping instead of packing.
//
//   kiln-compile MODEL -o OUT.kbundle [--backend host] [--threads N]
//                [--precision normal|low] [--input-shape NAME=D0,D1,...]...
//
// --emit-module -o NAME.so: a host module instead (kiln/module.h): NAME.cpp
// (generated: the memory plan and one libkiln kernel call per op), NAME.h,
// NAME.kbundle (its weights) and NAME.so, compiled from NAME.cpp with the
// C++ compiler this build used (KILN_MODULE_CXX overrides it; kiln/module.h
// is found beside the tool's install, in the build's source tree, or in
// KILN_INCLUDE_DIR).
//
// MODEL: .kiln, .onnx or .tflite (converted in memory, passes on). Symbolic
// input dims must be given with --input-shape. Exit status: 0 written, 1
// model or write error, 2 usage error.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
               "                    [--precision normal|low] [--input-shape NAME=D0,D1,...]...\n"
               "       kiln-compile MODEL --emit-module -o OUT.so [--threads N] [--precision normal|low]\n"
               "                    [--input-shape NAME=D0,D1,...]...\n");
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

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Where kiln/module.h is: $KILN_INCLUDE_DIR, the install beside this tool
// (PREFIX/bin/kiln-compile -> PREFIX/include), the build's source tree.
std::string ModuleIncludeDir() {
  if (const char* dir = std::getenv("KILN_INCLUDE_DIR"); dir && *dir) return dir;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string exe(self, static_cast<size_t>(n));
    const size_t slash = exe.find_last_of('/');
    const std::string prefix = slash == std::string::npos ? "." : exe.substr(0, slash) + "/..";
    if (IsFile(prefix + "/include/kiln/module.h")) return prefix + "/include";
  }
  return KILN_SOURCE_INCLUDE_DIR;
}

// Compiles the generated STEM.cpp into STEM.so; returns "" or what failed.
std::string CompileModule(const std::string& stem) {
  const char* env = std::getenv("KILN_MODULE_CXX");
  const std::string cxx = env && *env ? env : KILN_MODULE_CXX;
  const std::string inc = ModuleIncludeDir();
  if (!IsFile(inc + "/kiln/module.h"))
    return "kiln/module.h is not in '" + inc + "' (set KILN_INCLUDE_DIR to the directory holding kiln/)";
  const size_t slash = stem.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : stem.substr(0, slash);
  std::vector<std::string> args = {cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-I" + inc, "-I" + dir,
                                   stem + ".cpp", "-o", stem + ".so"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    return "cannot run the C++ compiler '" + cxx + "' (set KILN_MODULE_CXX)";
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "'" + cxx + "' failed on " + stem + ".cpp";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln;
  std::string model, out, backend = "host";
  ScheduleConfig config;
  std::map<std::string, std::vector<int64_t>> shapes;
  bool emit_module = false;
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
    } else if (a == "--emit-module") {
      emit_module = true;
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
  if (emit_module && backend != "host") return Usage("--emit-module makes a host module: --backend host only");
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
  if (emit_module) {
    const std::string stem = out.size() > 3 && out.compare(out.size() - 3, 3, ".so") == 0 ? out.substr(0, out.size() - 3) : out;
    Status m = (*interp)->saveModule(*session, stem);
    if (!m.ok()) {
      const bool unresized = m.message().find("resize it first") != std::string::npos;
      std::fprintf(stderr, "kiln-compile: %s%s\n", m.ToString().c_str(),
                   unresized && shapes.empty() ? " (give symbolic input dims with --input-shape)" : "");
      return 1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::string failed = CompileModule(stem);
    if (!failed.empty()) {
      std::fprintf(stderr, "kiln-compile: %s\n", failed.c_str());
      return 1;
    }
    std::printf("%s -> %s.so (%s.cpp, %s.h, weights %s.kbundle): host module, %d thread%s; compiled in %.1f s\n",
                model.c_str(), stem.c_str(), stem.c_str(), stem.c_str(), stem.c_str(), config.numThread,
                config.numThread == 1 ? "" : "s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return 0;
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
