// kiln-inspect: look inside a Kiln model file.
//
//   kiln-inspect MODEL                 summary
//   kiln-inspect --json [--full] MODEL the whole model as JSON
//   kiln-inspect --map MODEL           what every byte of the file is
//   kiln-inspect --locate PATH MODEL   where one value lives
//
// The model is loaded (and so fully verified) by Interpreter first; the
// views then walk the verified bytes. Exit codes: 0 ok, 1 model or path
// error, 2 usage error.
#include <cstdio>
#include <cstring>
#include <string>

#include "inspect/inspect.h"
#include "kiln/interpreter.h"
#include "model.h"

namespace {

const char kUsage[] =
    "usage: kiln-inspect [--json [--full] | --map | --locate PATH] MODEL\n"
    "\n"
    "  (no option)    summary: name, format, producer, ops by type, tensors,\n"
    "                 parameter count, weight bytes, graph inputs and outputs\n"
    "  --json         the whole model as JSON (constant data summarised)\n"
    "  --full         with --json: all constant values\n"
    "  --map          byte map: offset, length, bytes and meaning of every\n"
    "                 byte of the file, then totals by kind\n"
    "  --locate PATH  where one value lives, e.g. 'ops[1].params.kernel_shape',\n"
    "                 'tensors[5].name', 'ops[0].params.pads[2]', 'name'\n"
    "  --help         this text\n"
    "\n"
    "exit status: 0 ok, 1 model or path error, 2 usage error\n";

int Usage(const char* error) {
  std::fprintf(stderr, "kiln-inspect: %s\n%s", error, kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  enum class Mode { kSummary, kJson, kMap, kLocate } mode = Mode::kSummary;
  bool full = false;
  std::string locate_path, model_path;
  int modes = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (!std::strcmp(a, "--json")) {
      mode = Mode::kJson, ++modes;
    } else if (!std::strcmp(a, "--map")) {
      mode = Mode::kMap, ++modes;
    } else if (!std::strcmp(a, "--full")) {
      full = true;
    } else if (!std::strcmp(a, "--locate")) {
      if (i + 1 >= argc) return Usage("--locate needs a PATH");
      mode = Mode::kLocate, ++modes;
      locate_path = argv[++i];
    } else if (!std::strncmp(a, "--locate=", 9)) {
      mode = Mode::kLocate, ++modes;
      locate_path = a + 9;
    } else if (a[0] == '-' && a[1] != '\0') {
      return Usage((std::string("unknown option ") + a).c_str());
    } else if (!model_path.empty()) {
      return Usage("more than one MODEL given");
    } else {
      model_path = a;
    }
  }
  if (model_path.empty()) return Usage("no MODEL given");
  if (modes > 1) return Usage("--json, --map and --locate are exclusive");
  if (full && mode != Mode::kJson) return Usage("--full goes with --json");

  auto interp = kiln::Interpreter::createFromFile(model_path);
  if (!interp.ok()) {
    std::fprintf(stderr, "kiln-inspect: %s\n", interp.status().ToString().c_str());
    return 1;
  }
  const kiln::ByteRegion& bytes = (*interp)->model().bytes();
  const uint8_t* data = bytes.data();
  size_t size = bytes.size();

  std::string out;
  kiln::Status status;
  switch (mode) {
    case Mode::kSummary: out = kiln::inspect::Summary(**interp); break;
    case Mode::kJson: {
      auto json = kiln::inspect::ToJson(data, size, full);
      if (json.ok()) out = std::move(*json); else status = json.status();
      break;
    }
    case Mode::kMap: {
      auto map = kiln::inspect::BuildByteMap(data, size);
      if (map.ok()) out = kiln::inspect::FormatByteMap(*map, data); else status = map.status();
      break;
    }
    case Mode::kLocate: {
      auto loc = kiln::inspect::Locate(data, size, locate_path);
      if (loc.ok()) out = kiln::inspect::FormatLocation(*loc, data); else status = loc.status();
      break;
    }
  }
  if (!status.ok()) {
    std::fprintf(stderr, "kiln-inspect: %s: %s\n", model_path.c_str(), status.message().c_str());
    return 1;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
