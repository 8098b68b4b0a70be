// kiln-quantize MODEL(.kiln|.onnx|.tflite) --calib DIR -o OUT.kiln [--count N] [--activations uint8|int8]
//               [--calibration minmax|entropy] [--per-tensor-weights] [--max-weight-error X] [--threads N]
//
// Post-training static quantization of a float model (the host runs the
// calibration):
//  1. the float model as the converter leaves it (BatchNorm folded,
//     activations fused into their Conv / Gemm);
//  2. calibration: the first N .npy inputs of DIR (sorted) run through it;
//     the range of every activation that will be quantized is its min / max
//     over them (always including 0), or with --calibration entropy the
//     clipping threshold whose quantized histogram is closest to the full
//     one (least KL divergence; a second pass builds 2048-bin histograms of
//     |x|);
//  3. weights of Conv / Gemm / constant 2-D MatMul: int8, symmetric, per
//     output channel (or per tensor); a layer whose weights lose more than
//     --max-weight-error (RMS error / RMS weight, default 0.02) stays float;
//  4. QuantizeLinear -> DequantizeLinear pairs after each quantized
//     activation and DequantizeLinear after the int8 weights (QDQ), then the
//     graph passes (fuse_qdq makes the integer ops) and OUT is written;
//  5. the report: per layer the weight error and the activation's range,
//     and on the calibration set the quantized outputs against the float
//     model's (relative RMS error, and top-1 agreement for [batch, classes]
//     outputs).
// Single-input models; the input's .npy files are read as they are.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "kiln/passes.h"
#include "npy.h"

namespace kiln {
namespace {

struct Options {
  std::string model, calib, out, activations = "uint8", calibration = "minmax";
  int count = 100, threads = 2;
  bool per_tensor_weights = false;
  double max_weight_error = 0.02;
};

int Usage() {
  std::fprintf(stderr,
               "usage: kiln-quantize MODEL(.kiln|.onnx|.tflite) --calib DIR -o OUT.kiln [--count N]\n"
               "                     [--activations uint8|int8] [--calibration minmax|entropy] [--per-tensor-weights]\n"
               "                     [--max-weight-error X]\n"
               "                     [--threads N]\n");
  return 2;
}

StatusOr<fb::NetT> LoadFloatNet(const std::string& path) {
  const auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
  };
  if (ends(".onnx") || ends(".tflite")) {
    ConvertOptions opt;
    ConvertReport report;
    KILN_ASSIGN_OR_RETURN(NetBuilder b, ends(".onnx") ? ImportOnnx(path, opt, &report) : ImportTflite(path, opt, &report));
    KILN_RETURN_IF_ERROR(OptimizeNet(b.net()));
    return std::move(b.net());
  }
  KILN_ASSIGN_OR_RETURN(auto interp, Interpreter::createFromFile(path));
  fb::NetT net;
  interp->net().UnPackTo(&net);
  return net;
}

StatusOr<std::vector<NpyArray>> ReadCalibration(const std::string& dir, int count) {
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".npy") == 0) files.push_back(dir + "/" + n);
    }
    closedir(d);
  } else {
    return NotFound("--calib %s: not a readable directory", dir.c_str());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return NotFound("--calib %s holds no .npy file", dir.c_str());
  if (static_cast<int>(files.size()) > count) files.resize(static_cast<size_t>(count));
  std::vector<NpyArray> out;
  for (const std::string& f : files) {
    KILN_ASSIGN_OR_RETURN(NpyArray a, ReadNpy(f), "%s", f.c_str());
    if (a.dtype != fb::DataType::F32) return InvalidArgument("%s: f32 inputs only, is %s", f.c_str(), DataTypeName(a.dtype));
    out.push_back(std::move(a));
  }
  return out;
}

// Runs `net` on each input; calls `seen(tensor)` for every op output (all
// tensors kept), or collects the graph outputs when seen is null.
StatusOr<std::vector<std::vector<float>>> RunAll(const fb::NetT& net, const std::vector<NpyArray>& inputs, int threads,
                                                 const std::function<void(const Tensor&)>& seen, const char* what) {
  NetBuilder b(net.name);
  b.net() = net;
  KILN_ASSIGN_OR_RETURN(auto bytes, b.finish());
  KILN_ASSIGN_OR_RETURN(auto interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  ScheduleConfig config;
  config.numThread = threads;
  config.keepAllTensors = static_cast<bool>(seen);
  KILN_ASSIGN_OR_RETURN(Session * s, interp->createSession(config));
  std::vector<std::vector<float>> outs;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor* in = s->getInput();
    if (in->shape() != inputs[i].shape) {
      KILN_RETURN_IF_ERROR(s->resizeTensor(in, inputs[i].shape));
      KILN_RETURN_IF_ERROR(s->resize());
    }
    KILN_RETURN_IF_ERROR(in->copyFromHostTensor(
        *Tensor::wrap(inputs[i].shape, fb::DataType::F32, const_cast<uint8_t*>(inputs[i].bytes.data()))));
    if (seen) {
      KILN_RETURN_IF_ERROR(s->runWithCallBack(nullptr, [&](const std::vector<Tensor*>& ts, const OpInfo&) {
        for (const Tensor* t : ts)
          if (t && t->dtype() == fb::DataType::F32) seen(*t);
        return true;
      }));
    } else {
      KILN_RETURN_IF_ERROR(s->run());
      const Tensor* o = s->getOutput();
      std::vector<float> v(static_cast<size_t>(o->elementCount()));
      KILN_RETURN_IF_ERROR(o->copyToHostTensor(Tensor::wrap(o->shape(), fb::DataType::F32, v.data()).get()));
      outs.push_back(std::move(v));
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "\rkiln-quantize: %s %zu/%zu (%.1f s)", what, i + 1, inputs.size(), sec);
  }
  std::fprintf(stderr, "\n");
  return outs;
}

struct Range {
  float lo = 0, hi = 0;
};

constexpr int kBins = 2048;

// The threshold T of |x| (histogram `h` of kBins bins over [0, amax]) whose
// quantization to `levels` levels on [0, T], outliers clipped into the last
// bin, keeps the distribution closest to the full one (least KL(P || Q)).
float EntropyThreshold(const std::vector<double>& h, float amax, int levels) {
  double best = INFINITY;
  int best_i = kBins;
  for (int i = levels; i <= kBins; ++i) {
    std::vector<double> p(h.begin(), h.begin() + i);
    for (int k = i; k < kBins; ++k) p[static_cast<size_t>(i - 1)] += h[static_cast<size_t>(k)];
    double psum = 0;
    for (double v : p) psum += v;
    if (psum <= 0) continue;
    // Q: the clipped histogram's i bins (without the outliers P folded into
    // its last bin) merged into `levels` chunks, each chunk's mass spread
    // over its bins that held any value.
    std::vector<double> q(static_cast<size_t>(i), 0.0);
    for (int c = 0; c < levels; ++c) {
      const int b0 = c * i / levels, b1 = (c + 1) * i / levels;
      double mass = 0;
      int nonzero = 0;
      for (int k = b0; k < b1; ++k) mass += h[static_cast<size_t>(k)], nonzero += h[static_cast<size_t>(k)] > 0;
      for (int k = b0; k < b1; ++k)
        if (p[static_cast<size_t>(k)] > 0 && nonzero > 0) q[static_cast<size_t>(k)] = mass / nonzero;
    }
    double qsum = 0;
    for (double v : q) qsum += v;
    double kl = 0;
    for (int k = 0; k < i; ++k) {
      const double pk = p[static_cast<size_t>(k)] / psum, qk = q[static_cast<size_t>(k)] / qsum;
      if (pk > 0) kl += pk * std::log(pk / std::max(qk, 1e-12));
    }
    if (kl < best) best = kl, best_i = i;
  }
  return (static_cast<float>(best_i) + 0.5f) * amax / kBins;
}

// The ops whose outputs are quantized, and those whose float inputs are.
bool QuantizesOutput(fb::OpType t) {
  switch (t) {
    case fb::OpType::Conv: case fb::OpType::Gemm: case fb::OpType::MatMul: case fb::OpType::Add:
    case fb::OpType::Relu: case fb::OpType::Clip: case fb::OpType::MaxPool: case fb::OpType::AveragePool:
    case fb::OpType::GlobalAveragePool: case fb::OpType::Concat: return true;
    default: return false;
  }
}
bool TakesWeights(fb::OpType t) { return t == fb::OpType::Conv || t == fb::OpType::Gemm || t == fb::OpType::MatMul; }

const fb::TensorT& Tn(const fb::NetT& net, int t) { return *net.tensors[static_cast<size_t>(t)]; }

std::unique_ptr<fb::OpT> MakeOp(fb::OpType type, const std::string& name, std::vector<int> in, int out) {
  auto op = std::make_unique<fb::OpT>();
  op->type = type;
  op->name = name;
  op->inputs = std::move(in);
  op->outputs = {out};
  return op;
}

int Run(const Options& o) {
  auto net_or = LoadFloatNet(o.model);
  if (!net_or.ok()) return std::fprintf(stderr, "kiln-quantize: %s\n", net_or.status().ToString().c_str()), 1;
  fb::NetT net = std::move(net_or).value();
  if (net.inputs.size() != 1 || net.outputs.size() != 1)
    return std::fprintf(stderr, "kiln-quantize: single-input, single-output models only (this one has %zu, %zu)\n",
                        net.inputs.size(), net.outputs.size()), 1;
  auto calib = ReadCalibration(o.calib, o.count);
  if (!calib.ok()) return std::fprintf(stderr, "kiln-quantize: %s\n", calib.status().ToString().c_str()), 1;
  const auto t0 = std::chrono::steady_clock::now();

  // Readers of each tensor; the activations to quantize.
  std::map<int, std::vector<size_t>> readers;
  for (size_t i = 0; i < net.ops.size(); ++i)
    for (int t : net.ops[i]->inputs)
      if (t >= 0) readers[t].push_back(i);
  std::set<int> outputs(net.outputs.begin(), net.outputs.end());
  std::vector<int> acts;
  auto want = [&](int t) {
    const fb::TensorT& tt = Tn(net, t);
    if (t < 0 || tt.dtype != fb::DataType::F32 || tt.is_constant || !tt.data.empty() || outputs.count(t)) return;
    if (std::find(acts.begin(), acts.end(), t) == acts.end()) acts.push_back(t);
  };
  for (const auto& op : net.ops) {
    if (TakesWeights(op->type) && !op->inputs.empty()) want(op->inputs[0]);
    if (!QuantizesOutput(op->type) || op->outputs.size() != 1) continue;
    const int y = op->outputs[0];
    const auto& r = readers[y];
    if (op->type == fb::OpType::Add && r.size() == 1 &&
        (net.ops[r[0]]->type == fb::OpType::Relu || net.ops[r[0]]->type == fb::OpType::Clip))
      continue;  // quantized after its activation
    want(y);
  }
  // 2. Calibration.
  std::map<std::string, int> by_name;
  for (int t : acts) by_name[Tn(net, t).name] = t;
  std::map<int, Range> range;
  for (int t : acts) range[t] = Range{};
  auto probe = RunAll(net, *calib, o.threads, [&](const Tensor& t) {
    auto it = by_name.find(t.name());
    if (it == by_name.end()) return;
    Range& r = range[it->second];
    const float* v = t.host<float>();
    for (int64_t i = 0; i < t.elementCount(); ++i) r.lo = std::min(r.lo, v[i]), r.hi = std::max(r.hi, v[i]);
  }, "calibration");
  if (!probe.ok()) return std::fprintf(stderr, "kiln-quantize: calibration: %s\n", probe.status().ToString().c_str()), 1;
  if (o.calibration == "entropy") {
    // A second pass: histograms of |x| over [0, max |x|], then each range
    // clipped at its threshold (nonnegative ranges: 256 levels on [0, T];
    // signed: 128 a side).
    std::map<int, std::vector<double>> hist;
    std::map<int, float> amax;
    for (int t : acts) hist[t].assign(kBins, 0.0), amax[t] = std::max(-range[t].lo, range[t].hi);
    auto pass2 = RunAll(net, *calib, o.threads, [&](const Tensor& t) {
      auto it = by_name.find(t.name());
      if (it == by_name.end() || amax[it->second] <= 0) return;
      std::vector<double>& h = hist[it->second];
      const float k = kBins / amax[it->second];
      const float* v = t.host<float>();
      for (int64_t i = 0; i < t.elementCount(); ++i)
        h[static_cast<size_t>(std::min<float>(kBins - 1, std::fabs(v[i]) * k))] += 1;
    }, "histograms");
    if (!pass2.ok()) return std::fprintf(stderr, "kiln-quantize: calibration: %s\n", pass2.status().ToString().c_str()), 1;
    for (int t : acts) {
      if (amax[t] <= 0 || t == net.inputs[0]) continue;
      const bool nonneg = range[t].lo >= 0;
      // A rectified tensor's zeros (bin 0) are exact at any threshold: left
      // in, their mass drowns the tail the divergence should weigh.
      if (nonneg) hist[t][0] = 0;
      const float th = EntropyThreshold(hist[t], amax[t], nonneg ? 256 : 128);
      range[t].lo = std::max(range[t].lo, -th);
      range[t].hi = std::min(range[t].hi, th);
    }
  }
  // The graph input's range from the files themselves.
  for (int t : acts)
    if (t == net.inputs[0])
      for (const NpyArray& a : *calib) {
        const float* v = reinterpret_cast<const float*>(a.bytes.data());
        for (size_t i = 0; i < a.bytes.size() / 4; ++i) range[t].lo = std::min(range[t].lo, v[i]), range[t].hi = std::max(range[t].hi, v[i]);
      }

  // 3 + 4. The QDQ net.
  const fb::NetT float_net = net;
  NetBuilder b(net.name);
  b.net() = std::move(net);
  fb::NetT& q = b.net();
  const bool s8 = o.activations == "int8";
  const fb::DataType qt = s8 ? fb::DataType::I8 : fb::DataType::U8;
  std::map<int, int> replaced;  // activation -> its DequantizeLinear output
  std::map<int, std::vector<std::unique_ptr<fb::OpT>>> after;  // op index (-1: first) -> ops to insert after it
  std::map<int, int> producer;
  for (size_t i = 0; i < q.ops.size(); ++i)
    for (int t : q.ops[i]->outputs) producer[t] = static_cast<int>(i);
  std::printf("%-40s %12s %12s %10s\n", "activation", "min", "max", "scale");
  for (int t : acts) {
    const Range r = range[t];
    const float qmin = s8 ? -128.f : 0.f, qmax = s8 ? 127.f : 255.f;
    const float scale = r.hi > r.lo ? (r.hi - r.lo) / (qmax - qmin) : 1.f;
    const float zf = std::min(qmax, std::max(qmin, std::nearbyint(qmin - r.lo / scale)));
    const std::string name = Tn(q, t).name;
    const int st = b.addConstant(name + "_scale", {}, std::vector<float>{scale});
    const uint8_t zb = static_cast<uint8_t>(static_cast<int>(zf));
    const int zt = b.addConstant(name + "_zero_point", qt, {}, &zb, 1);
    const int tq = b.addTensor(name + "_q", qt), tdq = b.addTensor(name + "_dq", fb::DataType::F32);
    const int at = producer.count(t) ? producer[t] : -1;
    after[at].push_back(MakeOp(fb::OpType::QuantizeLinear, name + "_Q", {t, st, zt}, tq));
    after[at].push_back(MakeOp(fb::OpType::DequantizeLinear, name + "_DQ", {tq, st, zt}, tdq));
    replaced[t] = tdq;
    std::printf("%-40.40s %12.5g %12.5g %10.4g\n", name.c_str(), r.lo, r.hi, scale);
  }
  std::printf("\n%-40s %10s %14s\n", "layer (weights)", "channels", "weight error");
  std::vector<std::unique_ptr<fb::OpT>> weight_dq(q.ops.size());
  int layers = 0, kept_float = 0;
  for (size_t i = 0; i < q.ops.size(); ++i) {
    fb::OpT& op = *q.ops[i];
    if (!TakesWeights(op.type) || op.inputs.size() < 2) continue;
    const int w = op.inputs[1];
    const fb::TensorT& wt = Tn(q, w);
    if (wt.dtype != fb::DataType::F32 || wt.data.empty()) continue;
    std::vector<int64_t> shape;
    for (const auto& d : wt.shape) shape.push_back(d->size);
    if (shape.size() < 2 || (op.type != fb::OpType::Conv && shape.size() != 2)) continue;
    // The output-channel axis: 0 for Conv and a transposed Gemm B, else the last.
    const auto* gp = op.params.AsGemmParams();
    const int axis = op.type == fb::OpType::Conv || (gp && gp->trans_b) ? 0 : static_cast<int>(shape.size()) - 1;
    const int64_t channels = o.per_tensor_weights ? 1 : shape[static_cast<size_t>(axis)];
    const float* wv = reinterpret_cast<const float*>(wt.data.data());
    const int64_t count = static_cast<int64_t>(wt.data.size() / 4);
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    auto channel_of = [&](int64_t k) { return o.per_tensor_weights ? 0 : (k / inner) % shape[static_cast<size_t>(axis)]; };
    std::vector<float> amax(static_cast<size_t>(channels), 0.f);
    for (int64_t k = 0; k < count; ++k) amax[static_cast<size_t>(channel_of(k))] = std::max(amax[static_cast<size_t>(channel_of(k))], std::fabs(wv[k]));
    std::vector<float> scale(static_cast<size_t>(channels));
    for (size_t c = 0; c < scale.size(); ++c) scale[c] = std::max(amax[c], 1e-12f) / 127.f;
    std::vector<int8_t> wq(static_cast<size_t>(count));
    double err = 0, norm = 0;
    for (int64_t k = 0; k < count; ++k) {
      const float s = scale[static_cast<size_t>(channel_of(k))];
      const float v = std::min(127.f, std::max(-127.f, std::nearbyint(wv[k] / s)));
      wq[static_cast<size_t>(k)] = static_cast<int8_t>(v);
      err += (v * s - wv[k]) * (v * s - wv[k]);
      norm += static_cast<double>(wv[k]) * wv[k];
    }
    const double rel = norm > 0 ? std::sqrt(err / norm) : 0;
    ++layers;
    const bool keep = rel > o.max_weight_error;
    kept_float += keep;
    std::printf("%-40.40s %10lld %13.4f%%%s\n", op.name.c_str(), static_cast<long long>(channels), 100 * rel,
                keep ? "  kept float" : "");
    if (keep) continue;
    const std::string name = wt.name;
    const int wqt = b.addConstant(name + "_quantized", fb::DataType::I8, shape, wq.data(), wq.size());
    const std::vector<int64_t> sshape = channels == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{channels};
    const int st = b.addConstant(name + "_scale", sshape, scale);
    const std::vector<int8_t> zeros(static_cast<size_t>(channels), 0);
    const int zt = b.addConstant(name + "_zero_point", fb::DataType::I8, sshape, zeros.data(), zeros.size());
    const int wd = b.addTensor(name + "_dq", fb::DataType::F32);
    auto dq = MakeOp(fb::OpType::DequantizeLinear, name + "_DQ", {wqt, st, zt}, wd);
    fb::AxisParamsT ap;
    ap.axis = axis;
    dq->params.Set(ap);
    weight_dq[i] = std::move(dq);
    q.ops[i]->inputs[1] = wd;
  }
  // Readers read the dequantized activations; the ops in order.
  std::vector<std::unique_ptr<fb::OpT>> ops;
  for (auto& op : after[-1]) ops.push_back(std::move(op));
  for (size_t i = 0; i < q.ops.size(); ++i) {
    for (int& t : q.ops[i]->inputs)
      if (replaced.count(t)) t = replaced[t];
    if (weight_dq[i]) ops.push_back(std::move(weight_dq[i]));
    ops.push_back(std::move(q.ops[i]));
    for (auto& op : after[static_cast<int>(i)]) ops.push_back(std::move(op));
  }
  q.ops = std::move(ops);
  PassReport report;
  Status st = OptimizeNet(q, &report);
  if (!st.ok()) return std::fprintf(stderr, "kiln-quantize: %s\n", st.ToString().c_str()), 1;
  st = b.writeFile(o.out);
  if (!st.ok()) return std::fprintf(stderr, "kiln-quantize: %s\n", st.ToString().c_str()), 1;
  int qconv = 0, qmm = 0, qadd = 0;
  for (const auto& op : q.ops)
    qconv += op->type == fb::OpType::QLinearConv, qmm += op->type == fb::OpType::QLinearMatMul,
        qadd += op->type == fb::OpType::QLinearAdd;
  const double quant_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // 5. The quantized outputs against the float model's.
  auto want_out = RunAll(float_net, *calib, o.threads, nullptr, "float model");
  auto got_out = RunAll(q, *calib, o.threads, nullptr, "quantized model");
  if (!want_out.ok() || !got_out.ok())
    return std::fprintf(stderr, "kiln-quantize: evaluation: %s\n",
                        (!want_out.ok() ? want_out.status() : got_out.status()).ToString().c_str()), 1;
  double e2 = 0, n2 = 0;
  int same_top1 = 0;
  for (size_t i = 0; i < want_out->size(); ++i) {
    const auto& w = (*want_out)[i];
    const auto& g = (*got_out)[i];
    for (size_t k = 0; k < w.size() && k < g.size(); ++k) e2 += (g[k] - w[k]) * (g[k] - w[k]), n2 += w[k] * w[k];
    same_top1 += std::max_element(w.begin(), w.end()) - w.begin() == std::max_element(g.begin(), g.end()) - g.begin();
  }
  std::printf("\n%s: %zu activations and %d of %d weight layers quantized (%d kept float); QLinearConv %d, "
              "QLinearMatMul %d, QLinearAdd %d; passes: %s\n",
              o.out.c_str(), acts.size(), layers - kept_float, layers, kept_float, qconv, qmm, qadd,
              report.toString().c_str());
  std::printf("calibration: %zu inputs; quantizing took %.1f s\n", calib->size(), quant_s);
  std::printf("on the calibration set: output relative RMS error %.4f; top-1 equal to the float model's on %d of %zu "
              "(%.1f%%)\n",
              n2 > 0 ? std::sqrt(e2 / n2) : 0.0, same_top1, want_out->size(),
              100.0 * same_top1 / static_cast<double>(want_out->size()));
  return 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  kiln::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--calib" && (v = next())) o.calib = v;
    else if (a == "-o" && (v = next())) o.out = v;
    else if (a == "--count" && (v = next())) o.count = std::atoi(v);
    else if (a == "--threads" && (v = next())) o.threads = std::atoi(v);
    else if (a == "--activations" && (v = next())) o.activations = v;
    else if (a == "--calibration" && (v = next())) o.calibration = v;
    else if (a == "--max-weight-error" && (v = next())) o.max_weight_error = std::atof(v);
    else if (a == "--per-tensor-weights") o.per_tensor_weights = true;
    else if (!a.empty() && a[0] != '-' && o.model.empty()) o.model = a;
    else return kiln::Usage();
  }
  if (o.model.empty() || o.calib.empty() || o.out.empty() || o.count < 1 || o.threads < 1 ||
      (o.activations != "uint8" && o.activations != "int8") ||
      (o.calibration != "minmax" && o.calibration != "entropy"))
    return kiln::Usage();
  return kiln::Run(o);
}
