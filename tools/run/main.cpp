// kiln-run MODEL --input NAME=FILE.npy ... [--output-dir DIR]
//          [--backend host|vulkan|opencl|auto] [--threads N]
// Runs a .kiln model (or an .onnx / .tflite one, converted in memory) on NumPy inputs
// and writes each output as DIR/NAME.npy. Prints the placement and the time.
// Exit codes: 0 ok; 1 model, input or run error (message on stderr); 2 usage.
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <string>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "npy.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: kiln-run MODEL --input NAME=FILE.npy ... [--output-dir DIR]\n"
               "                [--backend host|vulkan|opencl|auto] [--threads N]\n");
  return 2;
}

int Fail(const std::string& what, const kiln::Status& s) {
  std::fprintf(stderr, "kiln-run: %s: %s\n", what.c_str(), s.message().c_str());
  return 1;
}

std::string SafeName(std::string n) {
  for (char& c : n)
    if (c == '/' || c == '\\' || c == ':') c = '_';
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, out_dir;
  std::map<std::string, std::string> inputs;
  kiln::ScheduleConfig config;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--input" && i + 1 < argc) {
      std::string v = argv[++i];
      size_t eq = v.find('=');
      if (eq == std::string::npos) return Usage();
      inputs[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--output-dir" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (a == "--backend" && i + 1 < argc) {
      std::string b = argv[++i];
      if (b == "host") config.type = kiln::ForwardType::kHost;
      else if (b == "vulkan") config.type = kiln::ForwardType::kVulkan;
      else if (b == "opencl") config.type = kiln::ForwardType::kOpenCL;
      else if (b == "auto") config.type = kiln::ForwardType::kAuto;
      else return Usage();
    } else if (a == "--threads" && i + 1 < argc) {
      config.numThread = std::atoi(argv[++i]);
    } else if (a == "--help" || a == "-h") {
      Usage();
      return 0;
    } else if (!a.empty() && a[0] != '-' && model.empty()) {
      model = a;
    } else {
      return Usage();
    }
  }
  if (model.empty()) return Usage();

  setenv("KILN_QUIET", "1", 0);  // the placement is printed below, once
  auto loaded = kiln::LoadAnyModel(model);
  if (!loaded.ok()) return Fail("load", loaded.status());
  std::unique_ptr<kiln::Interpreter> interp = std::move(loaded).value();
  auto session = interp->createSession(config);
  if (!session.ok()) return Fail("session", session.status());
  kiln::Session* s = *session;

  std::map<std::string, kiln::NpyArray> arrays;
  for (auto& [name, t] : s->getInputAll()) {
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      std::fprintf(stderr, "kiln-run: input '%s' is not given (--input %s=FILE.npy)\n", name.c_str(), name.c_str());
      return 1;
    }
    auto a = kiln::ReadNpy(it->second);
    if (!a.ok()) return Fail("input '" + name + "'", a.status());
    if (a->dtype != t->dtype()) {
      std::fprintf(stderr, "kiln-run: input '%s' is %s, the model wants %s\n", name.c_str(),
                   kiln::DataTypeName(a->dtype), kiln::DataTypeName(t->dtype()));
      return 1;
    }
    kiln::Status st = s->resizeTensor(t, a->shape);
    if (!st.ok()) return Fail("input '" + name + "'", st);
    arrays[name] = std::move(a).value();
  }
  for (auto& [name, file] : inputs)
    if (!arrays.count(name)) {
      std::fprintf(stderr, "kiln-run: the model has no input '%s'\n", name.c_str());
      return 1;
    }
  kiln::Status st = s->resize();
  if (!st.ok()) return Fail("resize", st);
  for (auto& [name, a] : arrays) {
    auto host = kiln::Tensor::wrap(a.shape, a.dtype, a.bytes.data());
    st = s->getInput(name)->copyFromHostTensor(*host);
    if (!st.ok()) return Fail("input '" + name + "'", st);
  }
  auto t0 = std::chrono::steady_clock::now();
  st = s->run();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) return Fail("run", st);

  std::printf("%s\n", s->placement().toString().c_str());
  std::printf("run: %.3f ms\n", ms);
  if (!out_dir.empty()) mkdir(out_dir.c_str(), 0755);
  for (auto& [name, t] : s->getOutputAll()) {
    kiln::NpyArray a;
    a.dtype = t->dtype();
    a.shape = t->shape();
    a.bytes.resize(t->byteSize());
    auto host = kiln::Tensor::wrap(a.shape, a.dtype, a.bytes.data());
    st = t->copyToHostTensor(host.get());
    if (!st.ok()) return Fail("output '" + name + "'", st);
    std::string shape;
    for (size_t i = 0; i < a.shape.size(); ++i) shape += (i ? "x" : "") + std::to_string(a.shape[i]);
    if (!out_dir.empty()) {
      std::string path = out_dir + "/" + SafeName(name) + ".npy";
      st = kiln::WriteNpy(path, a);
      if (!st.ok()) return Fail("output '" + name + "'", st);
      std::printf("output %s: %s %s -> %s\n", name.c_str(), kiln::DataTypeName(a.dtype), shape.c_str(), path.c_str());
    } else {
      std::printf("output %s: %s %s\n", name.c_str(), kiln::DataTypeName(a.dtype), shape.c_str());
    }
  }
  return 0;
}
