// kiln-kernelbench [--backend host|vulkan|opencl[,...]] [--kernels gemm,conv1x1,...] [--quick]
//                  [--precision normal|low] [--threads N] [--loops 20] [--warmup 3] [--csv FILE] [--plot FILE.png]
//
// Times single kernels over a sweep of sizes on each backend, each as a
// one-op model run through a normal session: GEMM (MatMul), conv 1x1, conv
// 3x3, depthwise 3x3, elementwise Add, ReduceSum over rows, a copy
// (Transpose). Each line gives the median op time (device timestamps where
// the backend has them, else the wall clock around the op), GFLOP/s, GB/s
// (each operand read once, the output written once: the least traffic the
// kernel can have), the arithmetic intensity, and the fraction of the roof:
// min(peak GFLOP/s, intensity x peak GB/s), or for a copy the fraction of
// peak GB/s. The peaks are measured first on each backend by kernels made
// for it (Backend::measurePeaks: register-only FMA chains, a large copy).
// --plot draws the roofline chart with gnuplot. --precision low runs the
// GPU kernels on fp16-stored tensors (their half-arithmetic or matrix-unit
// variants where the device has them); the GB/s and the roofs still count
// f32 bytes and the f32 peak.
//
// Exit status: 0 when every kernel ran on every backend; 1 when one failed
// (the rest are still measured) or the CSV/plot could not be written; 2 on
// bad usage.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend.h"
#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "gemm.h"
#include "qgemm.h"
#include "session_impl.h"

namespace {

using namespace kiln;

int Usage() {
  std::fprintf(stderr,
               "usage: kiln-kernelbench [--backend host|vulkan|opencl[,...]] [--kernels K,...] [--quick]\n"
               "                        [--precision normal|low] [--threads N] [--loops 20] [--warmup 3] [--csv FILE] [--plot FILE.png]\n"
               "kernels: gemm conv1x1 conv3x3 dw3x3 qgemm qconv1x1 qconv3x3 qdw3x3 add reduce copy\n");
  return 2;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  for (size_t p = 0; p <= s.size();) {
    size_t c = s.find(',', p);
    if (c == std::string::npos) c = s.size();
    if (c > p) out.push_back(s.substr(p, c - p));
    p = c + 1;
  }
  return out;
}

// One kernel at one size: a one-op model and its work.
struct Case {
  std::string kernel, size;
  double flops = 0, bytes = 0;  // per run (int8 kernels: 2 ops a multiply-add)
  std::vector<uint8_t> model;
  bool int8 = false;  // an 8-bit kernel: its roof is the integer dot product's
  std::string timed_op;  // the op timed, by name; empty: every op but copies
};

std::vector<float> Weights(size_t n) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-0.1f, 0.1f);
  std::vector<float> w(n);
  for (float& v : w) v = d(rng);
  return w;
}

Case Finish(NetBuilder& b, int out, std::string kernel, std::string size, double flops, double bytes) {
  b.addOutput(out);
  Case c{std::move(kernel), std::move(size), flops, bytes, {}, false, {}};
  auto m = b.finish();
  if (m.ok()) c.model = std::move(m).value();
  return c;
}

Case Gemm(int64_t n) {
  NetBuilder b("gemm");
  int x = b.addInput("a", fb::DataType::F32, {n, n});
  int y = b.addInput("b", fb::DataType::F32, {n, n});
  int o = b.addOp(fb::OpType::MatMul, "gemm", {x, y}, {"c"})[0];
  const double e = static_cast<double>(n) * n;
  return Finish(b, o, "gemm", StrFormat("%lldx%lldx%lld", (long long)n, (long long)n, (long long)n),
                2.0 * e * n, 12.0 * e);
}

// Conv with stride 1 and "same" padding; group == c for depthwise. As in a
// model, between two other convs (1x1, not timed): a GPU session then holds
// its input and output in the layout a model's layers get (channel-packed,
// GpuLayout), where a conv alone reads and writes the app's NCHW tensors.
Case Conv(const char* kernel, int64_t c, int64_t hw, int k, int64_t group) {
  NetBuilder b(kernel);
  int x = b.addInput("x", fb::DataType::F32, {1, c, hw, hw});
  auto conv = [&](const std::string& name, int in, int kk, int64_t g) {
    const int64_t wn = c * (c / g) * kk * kk;
    int w = b.addConstant(name + ".w", {c, c / g, kk, kk}, Weights(static_cast<size_t>(wn)));
    int bias = b.addConstant(name + ".bias", {c}, Weights(static_cast<size_t>(c)));
    fb::ConvParamsT p;
    p.kernel_shape = {kk, kk};
    p.pads = {kk / 2, kk / 2, kk / 2, kk / 2};
    p.group = static_cast<int32_t>(g);
    return b.addOp(fb::OpType::Conv, name, {in, w, bias}, {name + ".y"}, p)[0];
  };
  const int o = conv("after", conv(kernel, conv("before", x, 1, 1), k, group), 1, 1);
  const int64_t wn = c * (c / group) * k * k;
  const double px = static_cast<double>(hw) * hw;
  Case r = Finish(b, o, kernel, StrFormat("c%lld %lldx%lld", (long long)c, (long long)hw, (long long)hw),
                  2.0 * static_cast<double>(wn) * px, 4.0 * (2.0 * c * px + static_cast<double>(wn) + c));
  r.timed_op = kernel;
  return r;
}

// QLinearConv (uint8 activations, per-channel int8 weights, int32 bias),
// stride 1, "same" padding; group == c for depthwise.
Case QConv(const char* kernel, int64_t c, int64_t hw, int k, int64_t group) {
  NetBuilder b(kernel);
  int x = b.addInput("x", fb::DataType::U8, {1, c, hw, hw});
  const int64_t wn = c * (c / group) * k * k;
  std::mt19937 rng(5);
  std::vector<int8_t> w(static_cast<size_t>(wn));
  for (int8_t& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  const uint8_t zx = 128, zy = 128;
  const int8_t zw0 = 0;
  int sx = b.addConstant("sx", {}, std::vector<float>{0.02f});
  int zxt = b.addConstant("zx", fb::DataType::U8, {}, &zx, 1);
  int wt = b.addConstant("w", fb::DataType::I8, {c, c / group, k, k}, w.data(), w.size());
  int sw = b.addConstant("sw", {c}, std::vector<float>(static_cast<size_t>(c), 0.004f));
  std::vector<int8_t> zw(static_cast<size_t>(c), zw0);
  int zwt = b.addConstant("zw", fb::DataType::I8, {c}, zw.data(), zw.size());
  int sy = b.addConstant("sy", {}, std::vector<float>{0.05f});
  int zyt = b.addConstant("zy", fb::DataType::U8, {}, &zy, 1);
  int bias = b.addConstant("bias", {c}, std::vector<int32_t>(static_cast<size_t>(c), 100));
  fb::ConvParamsT p;
  p.kernel_shape = {k, k};
  p.pads = {k / 2, k / 2, k / 2, k / 2};
  p.group = static_cast<int32_t>(group);
  int o = b.addOp(fb::OpType::QLinearConv, kernel, {x, sx, zxt, wt, sw, zwt, sy, zyt, bias}, {"y"}, p)[0];
  b.net().tensors[static_cast<size_t>(o)]->dtype = fb::DataType::U8;
  const double px = static_cast<double>(hw) * hw;
  Case cs = Finish(b, o, kernel, StrFormat("c%lld %lldx%lld", (long long)c, (long long)hw, (long long)hw),
                   2.0 * static_cast<double>(wn) * px, 2.0 * c * px + static_cast<double>(wn) + 12.0 * c);
  cs.int8 = true;
  return cs;
}

// QLinearMatMul of uint8 activations [n, n] by int8 weights [n, n] (per
// column scales, as fuse_qdq writes a quantized Gemm), uint8 out.
Case QGemm(int64_t n) {
  NetBuilder b("qgemm");
  int a = b.addInput("a", fb::DataType::U8, {n, n});
  std::mt19937 rng(6);
  std::vector<int8_t> w(static_cast<size_t>(n * n));
  for (int8_t& v : w) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  const uint8_t za = 128, zy = 128;
  const std::vector<int8_t> zb(static_cast<size_t>(n), 0);
  int sa = b.addConstant("sa", {}, std::vector<float>{0.02f});
  int zat = b.addConstant("za", fb::DataType::U8, {}, &za, 1);
  int wt = b.addConstant("b", fb::DataType::I8, {n, n}, w.data(), w.size());
  int sb = b.addConstant("sb", {n}, std::vector<float>(static_cast<size_t>(n), 0.004f));
  int zbt = b.addConstant("zb", fb::DataType::I8, {n}, zb.data(), zb.size());
  int sy = b.addConstant("sy", {}, std::vector<float>{0.5f});
  int zyt = b.addConstant("zy", fb::DataType::U8, {}, &zy, 1);
  int o = b.addOp(fb::OpType::QLinearMatMul, "qgemm", {a, sa, zat, wt, sb, zbt, sy, zyt}, {"y"})[0];
  b.net().tensors[static_cast<size_t>(o)]->dtype = fb::DataType::U8;
  const double e = static_cast<double>(n) * n;
  Case cs = Finish(b, o, "qgemm", StrFormat("%lldx%lldx%lld", (long long)n, (long long)n, (long long)n),
                   2.0 * e * n, 3.0 * e);
  cs.int8 = true;
  return cs;
}

// The multiply-adds a 32-bit lane of the host's int8 kernel does for each
// FMA of the f32 peak probe: 4 with VNNI or sdot, 2 with AVX2's vpmaddwd.
double HostInt8Factor() {
  switch (QBestIsa()) {
    case QIsa::kAvx512Vnni:
    case QIsa::kAmx:  // its tile products can pass this roof
    case QIsa::kNeonDot: return 4;
    case QIsa::kAvx2: return 2;
    case QIsa::kScalar: return 1;
  }
  return 1;
}

Case Add(int64_t n) {
  NetBuilder b("add");
  int x = b.addInput("x", fb::DataType::F32, {n});
  int y = b.addInput("y", fb::DataType::F32, {n});
  int o = b.addOp(fb::OpType::Add, "add", {x, y}, {"z"})[0];
  return Finish(b, o, "add", StrFormat("%lld", (long long)n), static_cast<double>(n), 12.0 * n);
}

Case Reduce(int64_t rows, int64_t cols) {
  NetBuilder b("reduce");
  int x = b.addInput("x", fb::DataType::F32, {rows, cols});
  fb::ReduceParamsT p;
  p.axes = {1};
  int o = b.addOp(fb::OpType::ReduceSum, "reduce", {x}, {"y"}, p)[0];
  const double n = static_cast<double>(rows) * cols;
  return Finish(b, o, "reduce", StrFormat("%lldx%lld", (long long)rows, (long long)cols), n, 4.0 * (n + rows));
}

Case Copy(int64_t c, int64_t hw) {
  NetBuilder b("copy");
  int x = b.addInput("x", fb::DataType::F32, {1, c, hw, hw});
  fb::TransposeParamsT p;
  p.perm = {0, 2, 3, 1};
  int o = b.addOp(fb::OpType::Transpose, "copy", {x}, {"y"}, p)[0];
  const double n = static_cast<double>(c) * hw * hw;
  return Finish(b, o, "copy", StrFormat("c%lld %lldx%lld NCHW->NHWC", (long long)c, (long long)hw, (long long)hw),
                0, 8.0 * n);
}

std::vector<Case> Sweep(const std::vector<std::string>& kernels, bool quick) {
  std::vector<Case> all;
  auto want = [&](const char* k) { return std::find(kernels.begin(), kernels.end(), k) != kernels.end(); };
  auto take = [&](std::vector<Case> cs) {
    if (quick) cs.resize(1);
    for (Case& c : cs) all.push_back(std::move(c));
  };
  if (want("gemm")) take({Gemm(128), Gemm(256), Gemm(512), Gemm(1024)});
  if (want("conv1x1")) take({Conv("conv1x1", 64, 56, 1, 1), Conv("conv1x1", 128, 28, 1, 1), Conv("conv1x1", 256, 14, 1, 1),
                             Conv("conv1x1", 512, 7, 1, 1)});
  if (want("conv3x3")) take({Conv("conv3x3", 64, 56, 3, 1), Conv("conv3x3", 128, 28, 3, 1), Conv("conv3x3", 256, 14, 3, 1),
                             Conv("conv3x3", 512, 7, 3, 1)});
  if (want("dw3x3")) take({Conv("dw3x3", 32, 112, 3, 32), Conv("dw3x3", 144, 56, 3, 144), Conv("dw3x3", 192, 28, 3, 192),
                           Conv("dw3x3", 576, 14, 3, 576)});
  if (want("qgemm")) take({QGemm(128), QGemm(256), QGemm(512)});
  if (want("qconv1x1")) take({QConv("qconv1x1", 64, 56, 1, 1), QConv("qconv1x1", 128, 28, 1, 1),
                              QConv("qconv1x1", 256, 14, 1, 1), QConv("qconv1x1", 512, 7, 1, 1)});
  if (want("qconv3x3")) take({QConv("qconv3x3", 64, 56, 3, 1), QConv("qconv3x3", 128, 28, 3, 1),
                              QConv("qconv3x3", 256, 14, 3, 1), QConv("qconv3x3", 512, 7, 3, 1)});
  if (want("qdw3x3")) take({QConv("qdw3x3", 32, 112, 3, 32), QConv("qdw3x3", 144, 56, 3, 144),
                            QConv("qdw3x3", 192, 28, 3, 192), QConv("qdw3x3", 576, 14, 3, 576)});
  if (want("add")) take({Add(1 << 16), Add(1 << 20), Add(1 << 22)});
  if (want("reduce")) take({Reduce(256, 1024), Reduce(1024, 4096), Reduce(4096, 256)});
  if (want("copy")) take({Copy(64, 56), Copy(64, 112), Copy(256, 56)});
  return all;
}

struct Options {
  std::vector<std::string> backends = {"host"};
  std::vector<std::string> kernels = {"gemm",     "conv1x1", "conv3x3", "dw3x3", "qgemm", "qconv1x1",
                                      "qconv3x3", "qdw3x3",  "add",     "reduce", "copy"};
  bool quick = false;
  int threads = 1, loops = 20, warmup = 3;
  std::string csv, plot;
  Precision precision = Precision::kNormal;  // --precision low: fp16 storage on GPUs
};

struct Line {
  std::string backend, kernel, size, error;
  double ms = 0, gflops = 0, gbps = 0, intensity = 0, roof_fraction = 0;
  bool device_timer = false;
};

// Median time of the model's one op over o.loops runs.
Status TimeCase(const Case& c, ForwardType type, const Options& o, Line* line) {
  if (c.model.empty()) return Internal("the model could not be built");
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Interpreter> interp, Interpreter::createFromBuffer(c.model.data(), c.model.size()));
  ScheduleConfig config;
  config.type = type;
  config.numThread = o.threads;
  config.profile = true;
  config.precision = o.precision;
  KILN_ASSIGN_OR_RETURN(Session * s, interp->createSession(config));
  const Placement& where = s->placement();
  for (const OpPlacement& p : where.ops)
    if (p.backend != ForwardTypeName(type))
      return Unsupported("%s ran on %s: %s", p.type.c_str(), p.backend.c_str(), p.reason.c_str());
  KILN_RETURN_IF_ERROR(s->resize());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (auto& [name, t] : s->getInputAll()) {
    auto host = Tensor::create(t->shape(), t->dtype());
    if (t->dtype() == fb::DataType::U8)
      for (int64_t i = 0; i < host->elementCount(); ++i) host->host<uint8_t>()[i] = static_cast<uint8_t>(rng() & 255);
    else
      for (int64_t i = 0; i < host->elementCount(); ++i) host->host<float>()[i] = d(rng);
    KILN_RETURN_IF_ERROR(t->copyFromHostTensor(*host));
  }
  for (int i = 0; i < o.warmup; ++i) KILN_RETURN_IF_ERROR(s->run());
  std::vector<double> ms;
  for (int i = 0; i < std::max(1, o.loops); ++i) {
    KILN_RETURN_IF_ERROR(s->run());
    for (const OpProfile& p : s->profile())
      if (c.timed_op.empty() ? p.type != "Copy" : p.name == c.timed_op) {
        ms.push_back(p.ms);
        line->device_timer = p.device_timer;
      }
  }
  if (ms.empty()) return Internal("no timing for the op");
  std::sort(ms.begin(), ms.end());
  line->ms = ms[ms.size() / 2];
  return Status::Ok();
}

// The roof at `intensity` flops/byte (a copy: bandwidth only).
double RoofFraction(const Line& l, const DevicePeaks& p) {
  if (l.intensity == 0) return p.gbps > 0 ? l.gbps / p.gbps : 0;
  const double roof = std::min(p.gflops, l.intensity * p.gbps);
  return roof > 0 ? l.gflops / roof : 0;
}

bool WriteCsv(const std::string& file, const std::vector<Line>& lines, const std::map<std::string, DevicePeaks>& peaks) {
  FILE* f = std::fopen(file.c_str(), "w");
  if (!f) return false;
  std::fprintf(f, "backend,kernel,size,ms,gflops,gbps,intensity,peak_gflops,peak_gbps,roof_fraction,timer,error\n");
  for (const Line& l : lines) {
    const DevicePeaks& p = peaks.at(l.backend);
    std::fprintf(f, "%s,%s,%s,%.6f,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%s,\"%s\"\n", l.backend.c_str(), l.kernel.c_str(),
                 l.size.c_str(), l.ms, l.gflops, l.gbps, l.intensity, p.gflops, p.gbps, l.roof_fraction,
                 l.device_timer ? "device" : "wall", l.error.c_str());
  }
  return std::fclose(f) == 0;
}

// Roofline: log-log, one roof a backend, one point a measured kernel (copies,
// with no flops, are not on this chart: see the table).
Status Plot(const std::string& png, const std::vector<Line>& lines, const std::map<std::string, DevicePeaks>& peaks) {
  const std::string dat = png + ".dat", script = png + ".gp";
  FILE* f = std::fopen(dat.c_str(), "w");
  if (!f) return Unavailable("cannot write %s", dat.c_str());
  std::vector<std::string> series;
  for (const Line& l : lines) {
    if (!l.error.empty() || l.intensity <= 0 || l.gflops <= 0) continue;
    const std::string s = l.backend + " " + l.kernel;
    if (std::find(series.begin(), series.end(), s) == series.end()) {
      if (!series.empty()) std::fprintf(f, "\n\n");
      std::fprintf(f, "# %s\n", s.c_str());
      series.push_back(s);
    }
    std::fprintf(f, "%g %g\n", l.intensity, l.gflops);
  }
  std::fclose(f);
  f = std::fopen(script.c_str(), "w");
  if (!f) return Unavailable("cannot write %s", script.c_str());
  std::fprintf(f, "set terminal png size 1100,750\nset output '%s'\nset logscale xy\nset grid\n", png.c_str());
  std::fprintf(f, "set title 'kiln-kernelbench roofline (fp32)'\nset xlabel 'arithmetic intensity (flop/byte)'\n");
  std::fprintf(f, "set ylabel 'GFLOP/s'\nset key outside right\nset xrange [0.05:1000]\nset samples 400\n");
  std::string plot = "plot ";
  int k = 0;
  for (auto& [backend, p] : peaks) {
    std::fprintf(f, "roof%d(x) = x * %g < %g ? x * %g : %g\n", k, p.gbps, p.gflops, p.gbps, p.gflops);
    plot += StrFormat("%sroof%d(x) title '%s roof (%.0f GFLOP/s, %.0f GB/s)' with lines lw 2", k ? ", " : "", k,
                      backend.c_str(), p.gflops, p.gbps);
    ++k;
  }
  for (size_t i = 0; i < series.size(); ++i)
    plot += StrFormat(", '%s' index %zu title '%s' with linespoints pt 7", dat.c_str(), i, series[i].c_str());
  std::fprintf(f, "%s\n", plot.c_str());
  std::fclose(f);
  const std::string cmd = "gnuplot '" + script + "'";
  if (std::system(cmd.c_str()) != 0)
    return Unavailable("gnuplot failed on %s (is it installed? Debian: gnuplot-nox)", script.c_str());
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--backend" || a == "--kernels") {
      const char* v = next();
      if (!v) return Usage();
      (a == "--backend" ? o.backends : o.kernels) = Split(v);
    } else if (a == "--threads" || a == "--loops" || a == "--warmup") {
      const char* v = next();
      if (!v) return Usage();
      const int n = std::atoi(v);
      if (n < 0 || (a != "--warmup" && n < 1)) return Usage();
      (a == "--threads" ? o.threads : a == "--loops" ? o.loops : o.warmup) = n;
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--precision") {
      const char* v = next();
      if (!v || (std::strcmp(v, "low") != 0 && std::strcmp(v, "normal") != 0)) return Usage();
      o.precision = std::strcmp(v, "low") == 0 ? Precision::kLow : Precision::kNormal;
    } else if (a == "--csv" || a == "--plot") {
      const char* v = next();
      if (!v) return Usage();
      (a == "--csv" ? o.csv : o.plot) = v;
    } else if (a == "--help" || a == "-h") {
      Usage();
      return 0;
    } else {
      return Usage();
    }
  }
  const std::vector<std::string> known = {"gemm",     "conv1x1", "conv3x3", "dw3x3", "qgemm", "qconv1x1",
                                          "qconv3x3", "qdw3x3",  "add",     "reduce", "copy"};
  for (const std::string& k : o.kernels)
    if (std::find(known.begin(), known.end(), k) == known.end()) return Usage();
  std::vector<ForwardType> types;
  for (const std::string& b : o.backends) {
    ForwardType t;
    if (!ParseForwardType(b, &t) || t == ForwardType::kAuto) return Usage();  // one device each
    types.push_back(t);
  }
  setenv("KILN_QUIET", "1", 0);

  int rc = 0;
  std::map<std::string, DevicePeaks> peaks;
  std::map<std::string, std::string> devices;
  const std::vector<Case> cases = Sweep(o.kernels, o.quick);
  std::vector<Line> lines;
  for (size_t bi = 0; bi < types.size(); ++bi) {
    const std::string& name = o.backends[bi];
    ScheduleConfig config;
    config.type = types[bi];
    config.numThread = o.threads;
    auto backend = DefaultBackendFactory()(types[bi], config);
    if (!backend.ok()) {
      std::fprintf(stderr, "kiln-kernelbench: %s: %s\n", name.c_str(), backend.status().message().c_str());
      rc = 1;
      continue;
    }
    std::fprintf(stderr, "kiln-kernelbench: measuring the peaks of %s ...\n", name.c_str());
    auto p = (*backend)->measurePeaks();
    if (!p.ok()) {
      std::fprintf(stderr, "kiln-kernelbench: %s: %s\n", name.c_str(), p.status().message().c_str());
      rc = 1;
      continue;
    }
    peaks[name] = *p;
    devices[name] = (*backend)->deviceName();
    backend->reset();
    std::printf("%s: %s\n  peak %.1f GFLOP/s, %.1f GB/s (%s)\n", name.c_str(), devices[name].c_str(), p->gflops,
                p->gbps, p->how.c_str());
    if (p->core_gflops > 0)
      std::printf("  one core: %.1f GFLOP/s (the FMA probe on one thread; \"of core\" = GFLOP/s / this)\n",
                  p->core_gflops);
    if (name == "host") std::printf("  GEMM blocking: %s\n", GemmBlockingText().c_str());
    std::printf("  %-8s %-24s %10s %10s %9s %8s %8s %7s%s\n", "kernel", "size", "ms", "GFLOP/s", "GB/s", "flop/B",
                "roof", "of roof", p->core_gflops > 0 ? "  of core" : "");
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const Case& c = cases[ci];
      std::fprintf(stderr, "kiln-kernelbench: [%zu/%zu] %s %s %s\n", ci + 1, cases.size(), name.c_str(),
                   c.kernel.c_str(), c.size.c_str());
      Line l;
      l.backend = name;
      l.kernel = c.kernel;
      l.size = c.size;
      Status st = TimeCase(c, types[bi], o, &l);
      if (!st.ok()) {
        l.error = st.message();
        rc = 1;
        std::printf("  %-8s %-24s FAILED: %s\n", c.kernel.c_str(), c.size.c_str(), l.error.c_str());
        lines.push_back(l);
        continue;
      }
      const double s = l.ms / 1e3;
      l.gflops = s > 0 ? c.flops / s / 1e9 : 0;
      l.gbps = s > 0 ? c.bytes / s / 1e9 : 0;
      l.intensity = c.flops / c.bytes;
      // An int8 kernel's compute roof: the f32 peak times the dot product's
      // multiply-adds a lane (host), or the f32 peak (the GPUs' int8
      // kernels have no dot product yet).
      DevicePeaks pk = *p;
      const double factor = c.int8 && types[bi] == ForwardType::kHost ? HostInt8Factor() : 1.0;
      pk.gflops *= factor;
      pk.core_gflops *= factor;
      l.roof_fraction = RoofFraction(l, pk);
      const double roof = l.intensity == 0 ? pk.gbps : std::min(pk.gflops, l.intensity * pk.gbps);
      std::printf("  %-8s %-24s %9.4f%s %10.2f %9.2f %8.2f %8.1f %6.1f%%", c.kernel.c_str(), c.size.c_str(), l.ms,
                  l.device_timer ? "*" : " ", l.gflops, l.gbps, l.intensity, roof, 100 * l.roof_fraction);
      if (pk.core_gflops > 0 && l.intensity > 0) std::printf(" %7.1f%%", 100 * l.gflops / pk.core_gflops);
      std::printf("\n");
      lines.push_back(l);
    }
    std::printf("  (* device timestamps; roof: GFLOP/s, or GB/s for the copy; q* kernels: int8 GOP/s against %s)\n",
                types[bi] == ForwardType::kHost ? StrFormat("%.0fx the f32 peak (%s dot product)", HostInt8Factor(),
                                                            QIsaName(QBestIsa())).c_str()
                                                : "the f32 peak");
    std::printf("  (conv rates count the direct convolution's multiply-adds: a 3x3 conv through Winograd does fewer,"
                " so it can pass the roof)\n");
    std::fflush(stdout);
  }
  if (!o.csv.empty() && !WriteCsv(o.csv, lines, peaks)) {
    std::fprintf(stderr, "kiln-kernelbench: cannot write %s\n", o.csv.c_str());
    rc = 1;
  }
  if (!o.plot.empty()) {
    Status st = Plot(o.plot, lines, peaks);
    if (!st.ok()) {
      std::fprintf(stderr, "kiln-kernelbench: %s\n", st.message().c_str());
      rc = 1;
    } else {
      std::fprintf(stderr, "kiln-kernelbench: roofline written to %s\n", o.plot.c_str());
    }
  }
  return rc;
}
