// kiln-bench MODEL|DIR [--backend host|vulkan|opencl|auto[,...]] [--threads N]
//            [--loops 50] [--warmup 5] [--precision normal|high|low] [--tuning none|fast|full]
//            [--layout auto|planar|packed]
//            [--shape NAME=D0,D1,...] [--input NAME=FILE.npy] [--state OUT=IN]
//            [--profile [--trace FILE.json]] [--json]
//
// For each model (a .kiln, .onnx or .tflite file, or every such file in DIR)
// and each backend: the device, load time, session-creation time (the first
// session of the process, which includes device start-up; then a session
// with an empty pipeline-cache file; then one with the file that session
// wrote), first-run time, min / median / max over --loops runs after
// --warmup runs, planned memory per backend and the process's peak RSS.
// Inputs are random (fixed seed); symbolic dims are 1 unless --shape says;
// --input takes an input's shape and values from a .npy file (a sample
// rate, a real frame). --state OUT=IN binds OUT to IN (Session::bindState),
// as a streaming model is called: the timed runs are then per-call
// latencies with the state carried on the device, from zeros.
// --profile adds a per-op table of the last run (GPU ops timed by device
// timestamps, host ops and copies by the wall clock), a per-type summary,
// and a Chrome trace (chrome://tracing, Perfetto) in FILE.json
// (default kiln-trace.json).
//
// Exit status: 0 when every model ran on every backend asked for, 1 when
// one failed (the others are still measured), 2 on bad usage.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "npy.h"

namespace {

using namespace kiln;
using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

int Usage() {
  std::fprintf(stderr,
               "usage: kiln-bench MODEL|DIR [--backend host|vulkan|opencl|auto[,...]] [--threads N] [--loops 50]\n"
               "                  [--warmup 5] [--precision normal|high|low] [--tuning none|fast|full]\n"
               "                  [--layout auto|planar|packed]\n"
               "                  [--shape NAME=D0,D1,...] [--input NAME=FILE.npy] [--state OUT=IN]\n"
               "                  [--profile [--trace FILE.json]] [--json] [--times FILE]\n");
  return 2;
}

struct Options {
  std::vector<std::string> backends = {"host"};
  int threads = 1, loops = 50, warmup = 5;
  Precision precision = Precision::kNormal;
  Tuning tuning = Tuning::kNone;
  GpuLayout layout = GpuLayout::kAuto;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, NpyArray> inputs;                   // --input
  std::vector<std::pair<std::string, std::string>> states;  // --state (output, input)
  bool json = false;
  bool profile = false;
  std::string trace = "kiln-trace.json";
  std::string times;  // --times FILE: each timed run's ms, in order, a line each
};

struct Result {
  std::string model, backend, device, error;
  double load_ms = 0, first_session_ms = 0, cold_cache_ms = 0, warm_cache_ms = 0, again_ms = 0, first_run_ms = 0;
  double min_ms = 0, median_ms = 0, max_ms = 0;
  std::map<std::string, int> ops_per_backend;
  int switches = 0;
  std::vector<MemoryUse> memory;
  long peak_rss_kb = 0;
  std::vector<OpProfile> profile;
  SessionPhases phases_first, phases_warm;  // the first session of the process, the warm-cache one
};

// Resizes every input (symbolic dims from --shape, else 1) and fills it.
// Input `name`'s shape as the model declares it (-1: symbolic), for a
// session that could not resize at creation (an input decides the plan).
std::vector<int64_t> DeclaredShape(const fb::Net& net, const std::string& name) {
  std::vector<int64_t> shape;
  for (int32_t i : *net.inputs()) {
    const fb::Tensor* t = net.tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (t->name()->str() != name || !t->shape()) continue;
    for (const fb::Dim* d : *t->shape()) shape.push_back(d->size());
  }
  return shape;
}

Status PrepareInputs(Session* s, const Options& o, const fb::Net& net) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (auto& [name, a] : o.inputs)
    if (!s->getInput(name)) return NotFound("--input %s: the model has no such input", name.c_str());
  for (auto& [name, t] : s->getInputAll()) {
    std::vector<int64_t> shape = t->shape().empty() ? DeclaredShape(net, name) : t->shape();
    auto it = o.shapes.find(name);
    if (it != o.shapes.end()) shape = it->second;
    auto given = o.inputs.find(name);
    if (given != o.inputs.end()) shape = given->second.shape;
    for (int64_t& d : shape)
      if (d < 0) d = 1;
    KILN_RETURN_IF_ERROR(s->resizeTensor(t, shape));
    if (given != o.inputs.end() && t->hostData()) {  // decides the plan: written before resize
      auto host = Tensor::wrap(shape, given->second.dtype, const_cast<uint8_t*>(given->second.bytes.data()));
      KILN_RETURN_IF_ERROR(t->copyFromHostTensor(*host), "--input %s", name.c_str());
    }
  }
  KILN_RETURN_IF_ERROR(s->resize());
  for (auto& [out, in] : o.states) KILN_RETURN_IF_ERROR(s->bindState(out, in), "--state %s=%s", out.c_str(), in.c_str());
  if (!o.states.empty()) KILN_RETURN_IF_ERROR(s->resetState());
  for (auto& [name, t] : s->getInputAll()) {
    auto given = o.inputs.find(name);
    if (given != o.inputs.end()) {
      auto host = Tensor::wrap(t->shape(), given->second.dtype, const_cast<uint8_t*>(given->second.bytes.data()));
      KILN_RETURN_IF_ERROR(t->copyFromHostTensor(*host), "--input %s", name.c_str());
      continue;
    }
    bool state = false;
    for (auto& [out, in] : o.states) state = state || in == name;
    if (state) continue;  // from zeros, then carried
    auto host = Tensor::create(t->shape(), t->dtype());
    if (t->dtype() == fb::DataType::F32)
      for (int64_t i = 0; i < host->elementCount(); ++i) host->host<float>()[i] = dist(rng);
    KILN_RETURN_IF_ERROR(t->copyFromHostTensor(*host));
  }
  return Status::Ok();
}

Status Bench(const std::string& path, const std::string& backend, const Options& o, Result* r) {
  ScheduleConfig config;
  if (!ParseForwardType(backend, &config.type)) return InvalidArgument("unknown backend '%s'", backend.c_str());
  config.numThread = o.threads;
  config.precision = o.precision;
  config.tuning = o.tuning;
  config.gpuLayout = o.layout;
  config.profile = o.profile;
  auto t0 = Clock::now();
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Interpreter> interp, LoadAnyModel(path));
  r->load_ms = Ms(t0, Clock::now());

  // Session creation (with resize and input upload): the first of the
  // process, then with a cold and a warm pipeline-cache file (a session
  // writes the file when it is released), each as a fresh process would see
  // it (no device, OpenCL program or Vulkan pipeline of an earlier session
  // reused); then once more in the same process, reusing them.
  std::string cache = "/tmp/kiln-bench-" + std::to_string(getpid()) + ".cache";
  std::remove(cache.c_str());
  Session* s = nullptr;
  for (int pass = 0; pass < 4; ++pass) {
    const char* share = pass < 2 ? "0" : "1";
    setenv("KILN_OPENCL_SHARE_PROGRAMS", share, 1);
    setenv("KILN_VULKAN_SHARE", share, 1);
    if (s) KILN_RETURN_IF_ERROR(interp->releaseSession(s));
    config.cacheFile = pass == 0 ? "" : cache;
    t0 = Clock::now();
    KILN_ASSIGN_OR_RETURN(s, interp->createSession(config));
    KILN_RETURN_IF_ERROR(PrepareInputs(s, o, interp->net()), "inputs");
    double ms = Ms(t0, Clock::now());
    double* slot[] = {&r->first_session_ms, &r->cold_cache_ms, &r->warm_cache_ms, &r->again_ms};
    *slot[pass] = ms;
    if (pass == 0 || pass == 2) (pass == 0 ? r->phases_first : r->phases_warm) = s->phases();
  }
  unsetenv("KILN_OPENCL_SHARE_PROGRAMS");
  unsetenv("KILN_VULKAN_SHARE");
  std::remove(cache.c_str());
  r->ops_per_backend = s->placement().ops_per_backend;
  r->switches = s->placement().switches;
  auto devices = s->devices();
  std::string main = backend == "auto" ? "" : backend;
  if (!main.empty() && !devices.count(main)) {  // the backend could not start: say why, time nothing
    std::string why = "no reason given";
    for (const OpPlacement& op : s->placement().ops)
      if (!op.reason.empty()) {
        why = op.reason;
        break;
      }
    return Unavailable("backend %s could not start: %s", backend.c_str(), why.c_str());
  }
  for (auto& [name, d] : devices)
    if (main.empty() || name == main) r->device += (r->device.empty() ? "" : "; ") + d;

  t0 = Clock::now();
  KILN_RETURN_IF_ERROR(s->run(), "first run");
  r->first_run_ms = Ms(t0, Clock::now());
  for (int i = 0; i < o.warmup; ++i) KILN_RETURN_IF_ERROR(s->run());
  std::vector<double> times;
  for (int i = 0; i < o.loops; ++i) {
    t0 = Clock::now();
    KILN_RETURN_IF_ERROR(s->run());
    times.push_back(Ms(t0, Clock::now()));
  }
  if (!o.times.empty()) {
    FILE* f = std::fopen(o.times.c_str(), "a");
    if (!f) return Unavailable("cannot write --times file %s", o.times.c_str());
    for (double t : times) std::fprintf(f, "%.4f\n", t);
    std::fclose(f);
  }
  std::sort(times.begin(), times.end());
  if (!times.empty()) {
    r->min_ms = times.front();
    r->max_ms = times.back();
    r->median_ms = times[times.size() / 2];
  }
  r->memory = s->memory();
  r->profile = s->profile();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  r->peak_rss_kb = ru.ru_maxrss;
  return Status::Ok();
}

std::vector<std::string> ModelsIn(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (!d) return {path};
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    for (const char* ext : {".kiln", ".onnx", ".tflite"})
      if (n.size() > std::strlen(ext) && n.compare(n.size() - std::strlen(ext), std::strlen(ext), ext) == 0)
        out.push_back(path + "/" + n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string Base(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

std::string JsonString(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o + "\"";
}

// GFLOP/s for arithmetic ops, else GB/s of the least memory traffic.
std::string Rate(const OpProfile& p) {
  if (p.ms <= 0) return "-";
  if (p.flops > 0) return StrFormat("%.2f GFLOP/s", p.flops / (p.ms * 1e6));
  return StrFormat("%.2f GB/s", p.bytes / (p.ms * 1e6));
}

void PrintText(const Result& r) {
  if (!r.error.empty()) {
    std::printf("%s [%s]: FAILED: %s\n", Base(r.model).c_str(), r.backend.c_str(), r.error.c_str());
    return;
  }
  std::printf("%s [%s] on %s\n", Base(r.model).c_str(), r.backend.c_str(), r.device.c_str());
  std::string ops;
  for (auto& [b, n] : r.ops_per_backend) ops += (ops.empty() ? "" : ", ") + b + " " + std::to_string(n);
  std::printf("  placement      %s ops, %d switches\n", ops.c_str(), r.switches);
  std::printf("  load           %9.2f ms\n", r.load_ms);
  std::printf("  session        %9.2f ms first in process, %.2f ms empty cache file, %.2f ms warm cache file, "
              "%.2f ms again in process\n",
              r.first_session_ms, r.cold_cache_ms, r.warm_cache_ms, r.again_ms);
  for (const SessionPhases* p : {&r.phases_first, &r.phases_warm})
    std::printf("    %-12s backends %.2f, schedule %.2f, pack %.2f, pipelines %.2f, shapes %.2f, plan %.2f, "
                "upload %.2f, record %.2f ms\n",
                p == &r.phases_first ? "first:" : "warm cache:", p->backends, p->schedule, p->pack, p->pipelines,
                p->shapes, p->plan, p->upload, p->record);
  std::printf("  first run      %9.2f ms\n", r.first_run_ms);
  std::printf("  run            %9.3f ms median (min %.3f, max %.3f)\n", r.median_ms, r.min_ms, r.max_ms);
  for (const MemoryUse& m : r.memory)
    std::printf("  memory %-7s %9.2f MiB planned (lower bound %.2f, sum of tensors %.2f)%s%s\n", m.backend.c_str(),
                m.planned_bytes / 1048576.0, m.lower_bound_bytes / 1048576.0, m.tensor_bytes / 1048576.0,
                m.constant_bytes ? StrFormat(", weights %.2f MiB", m.constant_bytes / 1048576.0).c_str() : "",
                m.packed_tensors ? StrFormat(", %zu tensors channel-packed", m.packed_tensors).c_str() : "");
  std::printf("  peak RSS       %9.1f MiB\n", r.peak_rss_kb / 1024.0);
  if (r.profile.empty()) return;
  double total = 0;
  std::map<std::string, std::pair<double, int>> by_type;
  for (const OpProfile& p : r.profile) {
    total += p.ms;
    by_type[p.backend + " " + p.type].first += p.ms;
    by_type[p.backend + " " + p.type].second++;
  }
  std::printf("  profile of the last run: %.3f ms in %zu steps (* = device timestamps)\n", total, r.profile.size());
  std::printf("    %-32s %-20s %-8s %10s %7s %14s\n", "op", "type", "backend", "ms", "share", "rate");
  std::vector<const OpProfile*> order;
  for (const OpProfile& p : r.profile) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const OpProfile* a, const OpProfile* b) { return a->ms > b->ms; });
  for (size_t i = 0; i < order.size() && i < 20; ++i)
    std::printf("    %-32.32s %-20.20s %-8s %9.3f%s %6.1f%% %14s\n", order[i]->name.c_str(), order[i]->type.c_str(),
                order[i]->backend.c_str(), order[i]->ms, order[i]->device_timer ? "*" : " ",
                total > 0 ? 100 * order[i]->ms / total : 0, Rate(*order[i]).c_str());
  std::printf("    by type:\n");
  std::vector<std::pair<std::string, std::pair<double, int>>> types(by_type.begin(), by_type.end());
  std::sort(types.begin(), types.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
  for (auto& [t, v] : types)
    std::printf("    %-40s %4d ops %9.3f ms %6.1f%%\n", t.c_str(), v.second, v.first, total > 0 ? 100 * v.first / total : 0);
}

// Chrome trace: one track per backend, steps laid end to end.
bool WriteTrace(const std::string& file, const std::vector<Result>& rs) {
  FILE* f = std::fopen(file.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "{\"traceEvents\": [\n");
  bool first = true;
  int pid = 0;
  for (const Result& r : rs) {
    ++pid;
    double ts = 0;
    std::fprintf(f, "%s  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": %s}}",
                 first ? "" : ",\n", pid, JsonString(Base(r.model) + " [" + r.backend + "]").c_str());
    first = false;
    for (const OpProfile& p : r.profile) {
      std::fprintf(f, ",\n  {\"name\": %s, \"cat\": %s, \"ph\": \"X\", \"pid\": %d, \"tid\": %s, \"ts\": %.3f, "
                   "\"dur\": %.3f, \"args\": {\"type\": %s, \"flops\": %.0f, \"bytes\": %.0f}}",
                   JsonString(p.name).c_str(), JsonString(p.type).c_str(), pid, JsonString(p.backend).c_str(), ts,
                   p.ms * 1000, JsonString(p.type).c_str(), p.flops, p.bytes);
      ts += p.ms * 1000;
    }
  }
  std::fprintf(f, "\n]}\n");
  return std::fclose(f) == 0;
}

void PrintJson(const std::vector<Result>& rs) {
  std::printf("[\n");
  for (size_t i = 0; i < rs.size(); ++i) {
    const Result& r = rs[i];
    std::printf("  {\"model\": %s, \"backend\": %s, \"device\": %s, \"error\": %s, \"load_ms\": %.3f, "
                "\"first_session_ms\": %.3f, \"session_cold_cache_ms\": %.3f, \"session_warm_cache_ms\": %.3f, "
                "\"session_again_ms\": %.3f, \"first_run_ms\": %.3f, \"min_ms\": %.4f, \"median_ms\": %.4f, \"max_ms\": %.4f, "
                "\"switches\": %d, \"peak_rss_kb\": %ld, ",
                JsonString(Base(r.model)).c_str(), JsonString(r.backend).c_str(), JsonString(r.device).c_str(),
                JsonString(r.error).c_str(), r.load_ms, r.first_session_ms, r.cold_cache_ms, r.warm_cache_ms, r.again_ms,
                r.first_run_ms, r.min_ms, r.median_ms, r.max_ms, r.switches, r.peak_rss_kb);
    for (const SessionPhases* p : {&r.phases_first, &r.phases_warm})
      std::printf("\"phases_%s\": {\"backends\": %.3f, \"schedule\": %.3f, \"pack\": %.3f, \"pipelines\": %.3f, "
                  "\"shapes\": %.3f, \"plan\": %.3f, \"upload\": %.3f, \"record\": %.3f}, ",
                  p == &r.phases_first ? "first" : "warm", p->backends, p->schedule, p->pack, p->pipelines, p->shapes,
                  p->plan, p->upload, p->record);
    std::printf("\"ops\": {");
    size_t k = 0;
    for (auto& [b, n] : r.ops_per_backend) std::printf("%s%s: %d", k++ ? ", " : "", JsonString(b).c_str(), n);
    std::printf("}, \"planned_bytes\": {");
    k = 0;
    for (const MemoryUse& m : r.memory) std::printf("%s%s: %zu", k++ ? ", " : "", JsonString(m.backend).c_str(), m.planned_bytes);
    std::printf("}}%s\n", i + 1 < rs.size() ? "," : "");
  }
  std::printf("]\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string target;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--backend") {
      const char* v = next();
      if (!v) return Usage();
      o.backends.clear();
      std::string list = v;
      for (size_t p = 0; p <= list.size();) {
        size_t c = list.find(',', p);
        if (c == std::string::npos) c = list.size();
        std::string b = list.substr(p, c - p);
        ForwardType t;
        if (!ParseForwardType(b, &t)) return Usage();
        o.backends.push_back(b);
        p = c + 1;
      }
    } else if (a == "--threads" || a == "--loops" || a == "--warmup") {
      const char* v = next();
      if (!v) return Usage();
      int n = std::atoi(v);
      if (n < 0 || (a == "--threads" && n < 1)) return Usage();
      (a == "--threads" ? o.threads : a == "--loops" ? o.loops : o.warmup) = n;
    } else if (a == "--precision") {
      const char* v = next();
      if (!v) return Usage();
      if (!ParsePrecision(v, &o.precision)) return Usage();
    } else if (a == "--layout") {
      const char* v = next();
      if (!v || !ParseGpuLayout(v, &o.layout)) return Usage();
    } else if (a == "--tuning") {
      const char* v = next();
      if (!v) return Usage();
      std::string t = v;
      if (t == "none") o.tuning = Tuning::kNone;
      else if (t == "fast") o.tuning = Tuning::kFast;
      else if (t == "full") o.tuning = Tuning::kFull;
      else return Usage();
    } else if (a == "--shape") {
      const char* v = next();
      if (!v) return Usage();
      std::string s = v;
      size_t eq = s.find('=');
      if (eq == std::string::npos) return Usage();
      std::vector<int64_t> dims;
      for (size_t p = eq + 1; p <= s.size();) {
        size_t c = s.find(',', p);
        if (c == std::string::npos) c = s.size();
        dims.push_back(std::atoll(s.substr(p, c - p).c_str()));
        p = c + 1;
      }
      o.shapes[s.substr(0, eq)] = dims;
    } else if (a == "--input" || a == "--state") {
      const char* v = next();
      if (!v) return Usage();
      std::string s = v;
      size_t eq = s.find('=');
      if (eq == std::string::npos || eq == 0) return Usage();
      if (a == "--state") {
        o.states.emplace_back(s.substr(0, eq), s.substr(eq + 1));
        continue;
      }
      auto arr = ReadNpy(s.substr(eq + 1));
      if (!arr.ok()) {
        std::fprintf(stderr, "kiln-bench: --input %s: %s\n", s.c_str(), arr.status().message().c_str());
        return 2;
      }
      o.inputs[s.substr(0, eq)] = std::move(arr).value();
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--times") {
      const char* v = next();
      if (!v) return Usage();
      o.times = v;
    } else if (a == "--trace") {
      const char* v = next();
      if (!v) return Usage();
      o.trace = v;
    } else if (a == "--help" || a == "-h") {
      Usage();
      return 0;
    } else if (!a.empty() && a[0] != '-' && target.empty()) {
      target = a;
    } else {
      return Usage();
    }
  }
  if (target.empty()) return Usage();
  setenv("KILN_QUIET", "1", 0);
  std::vector<std::string> models = ModelsIn(target);
  if (models.empty()) {
    std::fprintf(stderr, "kiln-bench: no .kiln, .onnx or .tflite model in %s\n", target.c_str());
    return 1;
  }
  std::vector<Result> results;
  int rc = 0;
  for (const std::string& m : models)
    for (const std::string& b : o.backends) {
      if (!o.json) std::fprintf(stderr, "kiln-bench: %s on %s ...\n", Base(m).c_str(), b.c_str());
      Result r;
      r.model = m;
      r.backend = b;
      Status st = Bench(m, b, o, &r);
      if (!st.ok()) {
        r.error = st.message();
        rc = 1;
      }
      if (!o.json) PrintText(r);
      results.push_back(std::move(r));
    }
  if (o.json) PrintJson(results);
  if (o.profile) {
    if (!WriteTrace(o.trace, results)) {
      std::fprintf(stderr, "kiln-bench: cannot write %s\n", o.trace.c_str());
      return 1;
    }
    std::fprintf(stderr, "kiln-bench: trace written to %s (chrome://tracing or ui.perfetto.dev)\n", o.trace.c_str());
  }
  return rc;
}
