// kiln-convert IN.onnx|IN.tflite OUT.kiln [--external-weights] [--allow-unsupported]
//              [--no-optimize] [--input-shape NAME=1x3x224x224]...
// The graph passes (kiln/passes.h) run unless --no-optimize; the ones that
// applied are printed as "passes: fold_constants 12, fold_batchnorm 20".
// Exit codes: 0 converted; 1 conversion failed (message on stderr); 2 usage.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "kiln/convert.h"
#include "kiln/interpreter.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: kiln-convert IN.onnx|IN.tflite OUT.kiln [--external-weights] [--allow-unsupported] [--fp16]\n"
               "                    [--no-optimize] [--input-shape NAME=1x3x224x224]...\n");
  return 2;
}

bool ParseShape(const std::string& arg, std::string* name, std::vector<int64_t>* shape) {
  size_t eq = arg.rfind('=');
  if (eq == std::string::npos || eq == 0) return false;
  *name = arg.substr(0, eq);
  std::string dims = arg.substr(eq + 1);
  size_t pos = 0;
  while (pos <= dims.size()) {
    size_t x = dims.find('x', pos);
    std::string d = dims.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (d.empty() || d.size() > 18 || d.find_first_not_of("0123456789") != std::string::npos) return false;
    shape->push_back(std::stoll(d));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  kiln::ConvertOptions opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") return Usage(), 0;
    if (a == "--external-weights") opt.external_weights = true;
    else if (a == "--allow-unsupported") opt.allow_unsupported = true;
    else if (a == "--fp16") opt.fp16 = true;
    else if (a == "--no-optimize") opt.optimize = false;
    else if (a == "--input-shape" && i + 1 < argc) {
      std::string name;
      std::vector<int64_t> shape;
      if (!ParseShape(argv[++i], &name, &shape)) {
        std::fprintf(stderr, "kiln-convert: bad --input-shape '%s' (want NAME=1x3x224x224)\n", argv[i]);
        return 2;
      }
      opt.input_shapes[name] = shape;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "kiln-convert: unknown option %s\n", a.c_str());
      return Usage();
    } else {
      pos.push_back(a);
    }
  }
  if (pos.size() != 2) return Usage();
  opt.progress = [](const std::string& line) { std::fprintf(stderr, "kiln-convert: %s\n", line.c_str()); };
  auto t0 = std::chrono::steady_clock::now();
  kiln::ConvertReport report;
  kiln::Status s = kiln::ConvertFile(pos[0], pos[1], opt, &report);
  if (!s.ok()) {
    std::fprintf(stderr, "kiln-convert: %s\n", s.message().c_str());
    return 1;
  }
  // Load what was written: a conversion is only done when the model verifies.
  auto check = kiln::Interpreter::createFromFile(pos[1]);
  if (!check.ok()) {
    std::fprintf(stderr, "kiln-convert: the written model does not load: %s\n", check.status().message().c_str());
    return 1;
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s (%s opset %lld): %d ops in, %d ops out, %zu weight bytes, %.1f ms -> %s\n", pos[0].c_str(),
              report.source_format.c_str(), static_cast<long long>(report.opset), report.ops_in, report.ops_out,
              report.weight_bytes, ms, pos[1].c_str());
  if (opt.optimize) {
    std::string line;
    for (auto& [name, n] : report.passes) line += (line.empty() ? "" : ", ") + name + " " + std::to_string(n);
    std::printf("  passes: %s\n", line.empty() ? "none applied" : line.c_str());
  }
  for (auto& [type, n] : report.unsupported) std::printf("  kept unsupported: %s x%d\n", type.c_str(), n);
  if (report.fp16_weights) std::printf("  fp16: %d weight tensors stored as f16, widened to f32 at session resize\n", report.fp16_weights);
  return 0;
}
