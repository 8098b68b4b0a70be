// kiln-run MODEL --input NAME=FILE.npy ... [--output-dir DIR]
//          [--backend host|vulkan|opencl|auto] [--threads N] [--precision normal|high|low]
//          [--layout auto|planar|packed]
//          [--compare BACKEND [--tolerance X]] [--runs N] [--state OUT=IN ...]
// Runs a .kiln model (or an .onnx / .tflite one, converted in memory) on NumPy inputs
// and writes each output as DIR/NAME.npy. Prints the placement and the time.
// --compare runs the same inputs on BACKEND too (normal precision), op by op,
// and names the first op whose outputs differ by more than X (default 1e-3,
// 1e-2 with --precision low; see compare.h for the error measure).
// --runs N runs N times on the same inputs; --state OUT=IN binds output OUT
// to input IN (Session::bindState): each run's OUT is the next run's IN, as
// a streaming model (a VAD, a keyword spotter) is called. A state input not
// given with --input starts at zeros. The outputs written are the last run's.
// MODEL may also be a host module (NAME.so, kiln-compile --emit-module): it
// is loaded with kiln_module_open (its weights beside it) and run on the
// inputs, which must have the shapes it was compiled for (--runs applies;
// the session options do not).
// Exit codes: 0 ok (and, with --compare, every op agrees); 1 model, input or
// run error (message on stderr); 2 usage; 3 --compare found an op that differs.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/convert.h"
#include "compare.h"
#include "kiln/interpreter.h"
#include "kiln/module.h"
#include "npy.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: kiln-run MODEL --input NAME=FILE.npy ... [--output-dir DIR]\n"
               "                [--backend host|vulkan|opencl|auto] [--threads N] [--precision normal|high|low]\n"
               "                [--layout auto|planar|packed]\n"
               "                [--compare host|vulkan|opencl|auto [--tolerance X]] [--runs N] [--state OUT=IN ...]\n");
  return 2;
}

int Fail(const std::string& what, const kiln::Status& s) {
  std::fprintf(stderr, "kiln-run: %s: %s\n", what.c_str(), s.message().c_str());
  return 1;
}

// Creates a session, sizes its inputs from the arrays and fills them.
kiln::StatusOr<kiln::Session*> Prepare(kiln::Interpreter* interp, const kiln::ScheduleConfig& config,
                                       const std::map<std::string, kiln::NpyArray>& arrays) {
  KILN_ASSIGN_OR_RETURN(kiln::Session * s, interp->createSession(config));
  for (auto& [name, a] : arrays) KILN_RETURN_IF_ERROR(s->resizeTensor(s->getInput(name), a.shape), "input '%s'", name.c_str());
  KILN_RETURN_IF_ERROR(s->resize(), "resize");
  for (auto& [name, a] : arrays) {
    auto host = kiln::Tensor::wrap(a.shape, a.dtype, const_cast<uint8_t*>(a.bytes.data()));
    KILN_RETURN_IF_ERROR(s->getInput(name)->copyFromHostTensor(*host), "input '%s'", name.c_str());
  }
  return s;
}

// Runs the model op by op on `session` and on a reference session; prints
// the first op that differs. Returns the exit code.
int Compare(kiln::Interpreter* interp, kiln::Session* session, kiln::ScheduleConfig ref_config, double tolerance,
            const std::map<std::string, kiln::NpyArray>& arrays) {
  ref_config.precision = kiln::Precision::kNormal;
  auto ref = Prepare(interp, ref_config, arrays);
  if (!ref.ok()) return Fail("compare", ref.status());
  auto test_ops = kiln::RecordRun(session);
  if (!test_ops.ok()) return Fail("compare", test_ops.status());
  auto ref_ops = kiln::RecordRun(*ref);
  if (!ref_ops.ok()) return Fail("compare", ref_ops.status());
  int compared = 0;
  auto d = kiln::FirstDivergence(*test_ops, *ref_ops, tolerance, &compared);
  if (!d.ok()) return Fail("compare", d.status());
  const char* ref_name = kiln::ForwardTypeName(ref_config.type);
  if (!d->has_value()) {
    std::printf("compare: all %d ops agree with %s within %g\n", compared, ref_name, tolerance);
    return 0;
  }
  const kiln::Divergence& v = **d;
  std::printf("compare: op %d '%s' (%s, on %s) differs from %s (on %s): output '%s' ", v.test_op.op.index,
              v.test_op.op.name.c_str(), v.test_op.op.type.c_str(), v.test_op.op.backend.c_str(), ref_name,
              v.ref_backend.c_str(), v.tensor.c_str());
  if (!v.reason.empty())
    std::printf("has %s\n", v.reason.c_str());
  else
    std::printf("error %.3g > %g (max |diff| %.6g at element %lld: %.8g vs %.8g)\n", v.error, tolerance, v.max_abs,
                static_cast<long long>(v.worst_index), v.test_value, v.ref_value);
  std::printf("compare: the %d ops before it agree\n", v.ops_compared - 1);
  return 3;
}

std::string SafeName(std::string n) {
  for (char& c : n)
    if (c == '/' || c == '\\' || c == ':') c = '_';
  return n;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

// Writes `a` as DIR/NAME.npy (or only reports it, with no DIR).
int WriteOutput(const std::string& out_dir, const std::string& name, const kiln::NpyArray& a) {
  const std::string shape = ShapeText(a.shape);
  if (out_dir.empty()) {
    std::printf("output %s: %s %s\n", name.c_str(), kiln::DataTypeName(a.dtype), shape.c_str());
    return 0;
  }
  const std::string path = out_dir + "/" + SafeName(name) + ".npy";
  kiln::Status st = kiln::WriteNpy(path, a);
  if (!st.ok()) return Fail("output '" + name + "'", st);
  std::printf("output %s: %s %s -> %s\n", name.c_str(), kiln::DataTypeName(a.dtype), shape.c_str(), path.c_str());
  return 0;
}

void PrintTimes(const std::vector<double>& times, bool state) {
  if (times.size() == 1) {
    std::printf("run: %.3f ms\n", times[0]);
    return;
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  std::printf("runs: %zu, first %.3f ms, median %.3f ms%s\n", times.size(), times[0], sorted[sorted.size() / 2],
              state ? ", state carried between runs" : "");
}

// kiln-run NAME.so: a host module, loaded and run as an app would.
int RunModule(const std::string& path, const std::map<std::string, std::string>& inputs, const std::string& out_dir,
              int runs) {
  const auto t_open = std::chrono::steady_clock::now();
  KilnModule* m = kiln_module_open(path.c_str(), nullptr);
  const double open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_open).count();
  if (!m) {
    std::fprintf(stderr, "kiln-run: %s\n", kiln_last_error());
    return 1;
  }
  std::unique_ptr<KilnModule, void (*)(KilnModule*)> hold(m, kiln_module_close);
  const KilnModuleInfo& info = *kiln_module_get_info(m);
  std::vector<kiln::NpyArray> ins(static_cast<size_t>(info.num_inputs));
  std::vector<const void*> in_ptrs;
  for (int k = 0; k < info.num_inputs; ++k) {
    const KilnModuleTensorInfo& t = info.inputs[k];
    auto it = inputs.find(t.name);
    if (it == inputs.end()) {
      std::fprintf(stderr, "kiln-run: input '%s' is not given (--input %s=FILE.npy)\n", t.name, t.name);
      return 1;
    }
    auto a = kiln::ReadNpy(it->second);
    if (!a.ok()) return Fail("input '" + std::string(t.name) + "'", a.status());
    const std::vector<int64_t> want(t.dims, t.dims + t.rank);
    if (a->dtype != static_cast<kiln::fb::DataType>(t.dtype) || a->shape != want) {
      std::fprintf(stderr, "kiln-run: input '%s' is %s %s, the module was compiled for %s %s\n", t.name,
                   kiln::DataTypeName(a->dtype), ShapeText(a->shape).c_str(),
                   kiln::DataTypeName(static_cast<kiln::fb::DataType>(t.dtype)), ShapeText(want).c_str());
      return 1;
    }
    ins[static_cast<size_t>(k)] = std::move(a).value();
    in_ptrs.push_back(ins[static_cast<size_t>(k)].bytes.data());
  }
  for (auto& [name, file] : inputs) {
    bool known = false;
    for (int k = 0; k < info.num_inputs; ++k) known = known || name == info.inputs[k].name;
    if (!known) {
      std::fprintf(stderr, "kiln-run: the module has no input '%s'\n", name.c_str());
      return 1;
    }
  }
  std::vector<kiln::NpyArray> outs(static_cast<size_t>(info.num_outputs));
  std::vector<void*> out_ptrs;
  for (int k = 0; k < info.num_outputs; ++k) {
    const KilnModuleTensorInfo& t = info.outputs[k];
    kiln::NpyArray& a = outs[static_cast<size_t>(k)];
    a.dtype = static_cast<kiln::fb::DataType>(t.dtype);
    a.shape.assign(t.dims, t.dims + t.rank);
    a.bytes.resize(t.byte_size);
    out_ptrs.push_back(a.bytes.data());
  }
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    if (kiln_module_execute(m, in_ptrs.data(), out_ptrs.data()) != KILN_OK) {
      std::fprintf(stderr, "kiln-run: run: %s\n", kiln_last_error());
      return 1;
    }
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("module %s: %s, host, %d thread%s, %zu bytes of activations; opened in %.1f ms\n", path.c_str(),
              info.model_name, info.num_threads, info.num_threads == 1 ? "" : "s", info.activations_byte_size, open_ms);
  PrintTimes(times, false);
  if (!out_dir.empty()) mkdir(out_dir.c_str(), 0755);
  for (int k = 0; k < info.num_outputs; ++k)
    if (int rc = WriteOutput(out_dir, info.outputs[k].name, outs[static_cast<size_t>(k)])) return rc;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, out_dir;
  std::map<std::string, std::string> inputs;
  kiln::ScheduleConfig config;
  kiln::ForwardType compare_type = kiln::ForwardType::kHost;
  bool compare = false;
  double tolerance = -1;
  int runs = 1;
  std::vector<std::pair<std::string, std::string>> states;  // (output, input)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--input" && i + 1 < argc) {
      std::string v = argv[++i];
      size_t eq = v.find('=');
      if (eq == std::string::npos) return Usage();
      inputs[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--state" && i + 1 < argc) {
      std::string v = argv[++i];
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) return Usage();
      states.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
      if (runs < 1) return Usage();
    } else if (a == "--output-dir" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (a == "--backend" && i + 1 < argc) {
      if (!kiln::ParseForwardType(argv[++i], &config.type)) return Usage();
    } else if (a == "--compare" && i + 1 < argc) {
      if (!kiln::ParseForwardType(argv[++i], &compare_type)) return Usage();
      compare = true;
    } else if (a == "--tolerance" && i + 1 < argc) {
      char* end = nullptr;
      tolerance = std::strtod(argv[++i], &end);
      if (*end || !(tolerance >= 0)) return Usage();
    } else if (a == "--precision" && i + 1 < argc) {
      if (!kiln::ParsePrecision(argv[++i], &config.precision)) return Usage();
    } else if (a == "--layout" && i + 1 < argc) {
      if (!kiln::ParseGpuLayout(argv[++i], &config.gpuLayout)) return Usage();
    } else if (a == "--threads" && i + 1 < argc) {
      config.numThread = std::atoi(argv[++i]);
      if (config.numThread < 1 || config.numThread > kiln::kMaxThreads) {
        std::fprintf(stderr, "kiln-run: --threads must be 1 to %d\n", kiln::kMaxThreads);
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      Usage();
      return 0;
    } else if (!a.empty() && a[0] != '-' && model.empty()) {
      model = a;
    } else {
      return Usage();
    }
  }
  if (model.empty() || (tolerance >= 0 && !compare)) return Usage();
  if (tolerance < 0) tolerance = config.precision == kiln::Precision::kLow ? 1e-2 : 1e-3;

  if (model.size() > 3 && model.compare(model.size() - 3, 3, ".so") == 0) {
    if (compare || !states.empty()) {
      std::fprintf(stderr, "kiln-run: a module runs as compiled: --compare and --state take a model\n");
      return 2;
    }
    return RunModule(model, inputs, out_dir, runs);
  }
  setenv("KILN_QUIET", "1", 0);  // the placement is printed below, once
  auto loaded = kiln::LoadAnyModel(model);
  if (!loaded.ok()) return Fail("load", loaded.status());
  std::unique_ptr<kiln::Interpreter> interp = std::move(loaded).value();
  auto session = interp->createSession(config);
  if (!session.ok()) return Fail("session", session.status());
  kiln::Session* s = *session;

  std::map<std::string, kiln::NpyArray> arrays;
  std::set<std::string> state_inputs;
  for (auto& [out, in] : states) {
    kiln::Status b = s->bindState(out, in);
    if (!b.ok()) return Fail("--state " + out + "=" + in, b);
    state_inputs.insert(in);
  }
  for (auto& [name, t] : s->getInputAll()) {
    auto it = inputs.find(name);
    if (it == inputs.end() && state_inputs.count(name)) continue;  // starts at zeros
    if (it == inputs.end()) {
      std::fprintf(stderr, "kiln-run: input '%s' is not given (--input %s=FILE.npy)\n", name.c_str(), name.c_str());
      return 1;
    }
    auto a = kiln::ReadNpy(it->second);
    if (!a.ok()) return Fail("input '" + name + "'", a.status());
    if (a->narrowed_from_f64)
      std::fprintf(stderr, "kiln-run: input '%s': %s holds float64 values, read as float32\n", name.c_str(),
                   it->second.c_str());
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
  if (!states.empty() && !(st = s->resetState()).ok()) return Fail("state", st);
  for (auto& [name, a] : arrays) {
    auto host = kiln::Tensor::wrap(a.shape, a.dtype, a.bytes.data());
    st = s->getInput(name)->copyFromHostTensor(*host);
    if (!st.ok()) return Fail("input '" + name + "'", st);
  }
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    st = s->run();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!st.ok()) return Fail(runs > 1 ? "run " + std::to_string(r + 1) : "run", st);
  }

  std::printf("%s\n", s->placement().toString().c_str());
  PrintTimes(times, !states.empty());
  if (!out_dir.empty()) mkdir(out_dir.c_str(), 0755);
  for (auto& [name, t] : s->getOutputAll()) {
    kiln::NpyArray a;
    a.dtype = t->dtype();
    a.shape = t->shape();
    a.bytes.resize(t->byteSize());
    auto host = kiln::Tensor::wrap(a.shape, a.dtype, a.bytes.data());
    st = t->copyToHostTensor(host.get());
    if (!st.ok()) return Fail("output '" + name + "'", st);
    if (int rc = WriteOutput(out_dir, name, a)) return rc;
  }
  if (compare) {
    kiln::ScheduleConfig ref = config;
    ref.type = compare_type;
    return Compare(interp.get(), s, ref, tolerance, arrays);
  }
  return 0;
}
