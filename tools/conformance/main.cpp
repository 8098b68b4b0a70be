// kiln-conformance --backend host|vulkan|opencl [--data DIR] [--filter REGEX]
//                  [--json] [--expected FILE] [--list-passing FILE]
//
// Runs Debian's ONNX backend test cases (libonnx-testdata: model.onnx and
// test_data_set_*/{input,output}_*.pb under data/{node,pytorch-converted,
// pytorch-operator,simple}): convert, run, compare with the expected outputs
// at ONNX's own tolerances (rtol 1e-3, atol 1e-7). The cases run in a forked
// worker process, so a crash is a failed case, not a dead runner: a new
// worker goes on from the case after it.
//
// With --expected, every case listed there must pass (exit 1 otherwise). An
// expected file may also name what stays on the host by design (a GPU
// backend's list), one line each: "host-only OpType: reason" for an op type,
// "host-only-dtype DTYPE: reason" for the ops that read or write a tensor of
// that dtype (fb::DataType's name, F64). A case whose only host ops are
// those counts as passed with host-only ops ("host-only" in the counts), and
// may be listed.
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "elements.h"
#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "onnx_util.h"

namespace {

using namespace kiln;

const char* kDefaultData = "/usr/include/onnx/backend/test/data";
const char* kSuites[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};

// kFallback: correct, but some op ran on the host instead of the GPU
// backend asked for (so it says nothing about that backend's kernels).
// kHostOnly: the same, where every such op is host-only by design (the
// expected file's "host-only" lines).
enum class Outcome { kPassed = 0, kFailed = 1, kUnsupported = 2, kFallback = 3, kHostOnly = 4 };


std::vector<std::string> ListDir(const std::string& dir, const std::string& prefix = "") {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && n.rfind(prefix, 0) == 0) out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

StatusOr<onnx::TensorProto> ReadProto(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  onnx::TensorProto t;
  if (!f || !t.ParseFromIstream(&f)) return InvalidArgument("%s: not a TensorProto", path.c_str());
  return t;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The length-delimited fields of a protobuf message, by field number
// (onnx-data.proto's SequenceProto and OptionalProto are not in Debian's
// headers: they are read on the wire).
StatusOr<std::map<int, std::vector<std::string>>> Fields(const std::string& bytes, const char* what) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  std::map<int, std::vector<std::string>> fields;
  while (uint32_t tag = in.ReadTag()) {
    if ((tag & 7u) == 2u) {
      uint32_t len;
      std::string payload;
      if (!in.ReadVarint32(&len) || !in.ReadString(&payload, static_cast<int>(len)))
        return InvalidArgument("truncated %s", what);
      fields[static_cast<int>(tag >> 3)].push_back(std::move(payload));
    } else if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag)) {
      return InvalidArgument("not a %s", what);
    }
  }
  return fields;
}

// SequenceProto: tensor_values = 3.
StatusOr<std::vector<onnx::TensorProto>> ParseSequence(const std::string& bytes) {
  KILN_ASSIGN_OR_RETURN(auto fields, Fields(bytes, "SequenceProto"));
  std::vector<onnx::TensorProto> tensors;
  for (const std::string& p : fields[3]) {
    tensors.emplace_back();
    if (!tensors.back().ParseFromString(p)) return InvalidArgument("a bad tensor in a SequenceProto");
  }
  return tensors;
}

StatusOr<std::shared_ptr<Tensor>> MakeTensor(const onnx::TensorProto& tp, const std::string& dir) {
  KILN_ASSIGN_OR_RETURN(onnx_import::TensorData d, onnx_import::ReadTensor(tp, dir));
  std::shared_ptr<Tensor> t = Tensor::create(d.shape, d.dtype);
  if (!d.bytes.empty()) std::memcpy(t->hostData(), d.bytes.data(), d.bytes.size());
  return t;
}

StatusOr<std::vector<onnx::TensorProto>> ReadSequenceProto(const std::string& path) {
  auto r = ParseSequence(ReadFile(path));
  if (!r.ok()) return r.status().WithContext(path);
  return r;
}

// The elements of a sequence file as host tensors.
StatusOr<std::vector<std::shared_ptr<const Tensor>>> ReadSequence(const std::string& path, const std::string& dir) {
  KILN_ASSIGN_OR_RETURN(std::vector<onnx::TensorProto> protos, ReadSequenceProto(path));
  std::vector<std::shared_ptr<const Tensor>> items;
  for (const auto& tp : protos) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<Tensor> t, MakeTensor(tp, dir));
    items.push_back(std::move(t));
  }
  return items;
}

// An OptionalProto file (tensor_value = 3, sequence_value = 5) as an
// optional tensor of `dtype` holding it (or nothing).
StatusOr<std::unique_ptr<Tensor>> ReadOptional(const std::string& path, const std::string& dir, fb::DataType dtype) {
  KILN_ASSIGN_OR_RETURN(auto fields, Fields(ReadFile(path), "OptionalProto"), "%s", path.c_str());
  auto opt = Tensor::create({}, dtype);
  opt->setOptional(nullptr);
  if (!fields[3].empty()) {
    onnx::TensorProto tp;
    if (!tp.ParseFromString(fields[3][0])) return InvalidArgument("%s: a bad tensor_value", path.c_str());
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<Tensor> t, MakeTensor(tp, dir));
    opt->setOptional(t);
  } else if (!fields[5].empty()) {
    KILN_ASSIGN_OR_RETURN(auto protos, ParseSequence(fields[5][0]), "%s", path.c_str());
    std::vector<std::shared_ptr<const Tensor>> items;
    for (const auto& tp : protos) {
      KILN_ASSIGN_OR_RETURN(std::shared_ptr<Tensor> t, MakeTensor(tp, dir));
      items.push_back(t);
    }
    std::shared_ptr<Tensor> seq = Tensor::create({}, dtype);
    seq->setSequence(std::move(items));
    opt->setOptional(seq);
  }
  return opt;
}

std::string ShapeString(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

double Value(const std::vector<uint8_t>& bytes, fb::DataType dt, size_t i) {
  return LoadDouble(bytes.data(), dt, static_cast<int64_t>(i));
}

// Runs one case; returns the outcome and a message.
// The host-only lists of a GPU backend's expected file: op types, and dtypes
// ("host-only-dtype F64: reason") whose ops stay on the host by design.
struct HostOnly {
  std::map<std::string, std::string> ops, dtypes;
};

// True when op `name` reads or writes a tensor of a host-only dtype.
bool TouchesHostOnlyDtype(const fb::Net& net, const std::string& name, const HostOnly& host_only) {
  if (host_only.dtypes.empty() || !net.ops()) return false;
  for (const fb::Op* op : *net.ops()) {
    if (!op->name() || op->name()->str() != name) continue;
    for (const auto* list : {op->inputs(), op->outputs()}) {
      if (!list) continue;
      for (int32_t t : *list) {
        if (t < 0 || static_cast<uint32_t>(t) >= net.tensors()->size()) continue;
        const fb::Tensor* tensor = net.tensors()->Get(static_cast<uint32_t>(t));
        // "SEQUENCE": ONNX sequences (lists of tensors), whatever their elements' dtype.
        if (host_only.dtypes.count(fb::EnumNameDataType(tensor->dtype())) ||
            ((tensor->sequence() || tensor->optional()) && host_only.dtypes.count("SEQUENCE")))
          return true;
      }
    }
  }
  return false;
}

// ONNX's test data stores bfloat16 tensors as UINT16 (numpy has no
// bfloat16; its generator writes the bit patterns): such data for a bf16
// tensor is read as the bf16 values it spells.
void BFloat16FromBits(fb::DataType model_dtype, fb::DataType* data_dtype) {
  if (model_dtype == fb::DataType::BF16 && *data_dtype == fb::DataType::U16) *data_dtype = fb::DataType::BF16;
}

// "" when `out` matches the expected shape, dtype and values (rtol 1e-3,
// atol 1e-7), else what differs.
std::string Compare(const Tensor& out, const std::vector<int64_t>& shape, fb::DataType dtype,
                    const std::vector<uint8_t>& want, const std::string& what, const std::string& set) {
  if (out.shape() != shape || out.dtype() != dtype)
    return StrFormat("%s: got %s %s, want %s %s", what.c_str(), DataTypeName(out.dtype()),
                     ShapeString(out.shape()).c_str(), DataTypeName(dtype), ShapeString(shape).c_str());
  std::vector<uint8_t> got(out.byteSize());
  auto host = Tensor::wrap(out.shape(), out.dtype(), got.data());
  Status st = out.copyToHostTensor(host.get());
  if (!st.ok()) return st.message();
  size_t n = static_cast<size_t>(out.elementCount());
  for (size_t i = 0; i < n; ++i) {
    double g = Value(got, out.dtype(), i), w = Value(want, dtype, i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w)))
      return StrFormat("%s [%zu]: got %g, want %g (%s)", what.c_str(), i, g, w, set.c_str());
  }
  return "";
}

std::pair<Outcome, std::string> RunCase(const std::string& dir, ForwardType backend, const HostOnly& host_only) {
  ConvertReport report;
  auto built = ImportOnnx(dir + "/model.onnx", ConvertOptions{}, &report);
  if (!built.ok()) {
    bool unsup = built.status().code() == StatusCode::kUnsupported;
    return {unsup ? Outcome::kUnsupported : Outcome::kFailed, "convert: " + built.status().message()};
  }
  auto bytes = built->finish();
  if (!bytes.ok()) return {Outcome::kFailed, bytes.status().message()};
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  if (!interp.ok()) return {Outcome::kFailed, "load: " + interp.status().message()};
  const fb::Net& net = (*interp)->net();
  std::vector<std::string> input_names, output_names;
  if (net.inputs())
    for (int32_t t : *net.inputs()) input_names.push_back(net.tensors()->Get(t)->name()->str());
  for (int32_t t : *net.outputs()) output_names.push_back(net.tensors()->Get(t)->name()->str());

  ScheduleConfig config;
  config.type = backend;
  auto session = (*interp)->createSession(config);
  if (!session.ok()) {
    bool unsup = session.status().code() == StatusCode::kUnsupported;
    return {unsup ? Outcome::kUnsupported : Outcome::kFailed, "session: " + session.status().message()};
  }
  Session* s = *session;
  std::string fallback;
  bool all_host_only = true;
  for (const OpPlacement& p : s->placement().ops)
    if (!p.reason.empty()) {
      fallback += (fallback.empty() ? "on the host: " : "; ") + p.type + " (" + p.reason + ")";
      if (!host_only.ops.count(p.type) && !TouchesHostOnlyDtype(net, p.name, host_only)) all_host_only = false;
    }
  std::vector<std::string> sets = ListDir(dir, "test_data_set_");
  if (sets.empty()) return {Outcome::kFailed, "no test_data_set_*"};
  for (const std::string& set : sets) {
    std::string sd = dir + "/" + set;
    std::vector<onnx_import::TensorData> inputs;
    std::map<size_t, std::vector<std::shared_ptr<const Tensor>>> sequences;  // sequence inputs
    std::map<size_t, std::unique_ptr<Tensor>> optionals;                       // optional inputs
    for (size_t k = 0; k < input_names.size(); ++k) {
      Tensor* seq_in = s->getInput(input_names[k]);
      if (seq_in->isOptional()) {
        auto opt = ReadOptional(sd + "/input_" + std::to_string(k) + ".pb", sd, seq_in->dtype());
        if (!opt.ok()) return {Outcome::kUnsupported, "input: " + opt.status().message()};
        Status st = s->resizeTensor(seq_in, {});
        if (!st.ok()) return {Outcome::kFailed, "resize: " + st.message()};
        (void)seq_in->copyFromHostTensor(**opt);
        optionals[k] = std::move(opt).value();
        inputs.emplace_back();
        continue;
      }
      if (seq_in->isSequence()) {
        auto items = ReadSequence(sd + "/input_" + std::to_string(k) + ".pb", sd);
        if (!items.ok()) return {Outcome::kUnsupported, "input: " + items.status().message()};
        Status st = s->resizeTensor(seq_in, {});
        if (!st.ok()) return {Outcome::kFailed, "resize: " + st.message()};
        seq_in->setSequence(*items);
        sequences[k] = std::move(items).value();
        inputs.emplace_back();
        continue;
      }
      auto proto = ReadProto(sd + "/input_" + std::to_string(k) + ".pb");
      if (!proto.ok()) return {Outcome::kFailed, proto.status().message()};
      auto data = onnx_import::ReadTensor(*proto, sd);
      if (!data.ok()) return {Outcome::kUnsupported, "input: " + data.status().message()};
      Tensor* in = s->getInput(input_names[k]);
      BFloat16FromBits(in->dtype(), &data->dtype);
      Status st = s->resizeTensor(in, data->shape);
      if (!st.ok()) return {Outcome::kFailed, "resize: " + st.message()};
      inputs.push_back(std::move(data).value());
    }
    // Shape inputs (values that decide shapes) have memory before resize.
    for (size_t k = 0; k < input_names.size(); ++k) {
      Tensor* in = s->getInput(input_names[k]);
      if (sequences.count(k) || optionals.count(k) || !in->hostData() || inputs[k].bytes.empty()) continue;
      auto host = Tensor::wrap(inputs[k].shape, inputs[k].dtype, inputs[k].bytes.data());
      Status cs = in->copyFromHostTensor(*host);
      if (!cs.ok()) return {Outcome::kFailed, "input: " + cs.message()};
    }
    Status st = s->resize();
    if (!st.ok())
      return {st.code() == StatusCode::kUnsupported ? Outcome::kUnsupported : Outcome::kFailed, "resize: " + st.message()};
    for (size_t k = 0; k < input_names.size(); ++k) {
      if (sequences.count(k)) {
        s->getInput(input_names[k])->setSequence(sequences[k]);
        continue;
      }
      if (optionals.count(k)) {
        (void)s->getInput(input_names[k])->copyFromHostTensor(*optionals[k]);
        continue;
      }
      auto host = Tensor::wrap(inputs[k].shape, inputs[k].dtype, inputs[k].bytes.data());
      st = s->getInput(input_names[k])->copyFromHostTensor(*host);
      if (!st.ok()) return {Outcome::kFailed, "input: " + st.message()};
    }
    st = s->run();
    if (!st.ok())
      return {st.code() == StatusCode::kUnsupported ? Outcome::kUnsupported : Outcome::kFailed, "run: " + st.message()};
    for (size_t k = 0; k < output_names.size(); ++k) {
      Tensor* out = s->getOutput(output_names[k]);
      const std::string file = sd + "/output_" + std::to_string(k) + ".pb";
      if (out->isOptional()) {
        auto want = ReadOptional(file, sd, out->dtype());
        if (!want.ok()) return {Outcome::kUnsupported, "expected output: " + want.status().message()};
        const auto got = out->optionalValue(), w = (*want)->optionalValue();
        const std::string what = StrFormat("output %zu '%s'", k, output_names[k].c_str());
        if (!got != !w) return {Outcome::kFailed, what + (got ? ": has a value, want none" : ": empty, want a value")};
        if (!w) continue;
        if (got->isSequence() != w->isSequence()) return {Outcome::kFailed, what + ": a sequence against a tensor"};
        const auto gots = got->isSequence() ? got->sequence() : std::vector<std::shared_ptr<const Tensor>>{got};
        const auto wants = w->isSequence() ? w->sequence() : std::vector<std::shared_ptr<const Tensor>>{w};
        if (gots.size() != wants.size())
          return {Outcome::kFailed, StrFormat("%s: %zu elements, want %zu", what.c_str(), gots.size(), wants.size())};
        for (size_t e = 0; e < gots.size(); ++e) {
          const Tensor& wt = *wants[e];
          std::vector<uint8_t> wb(static_cast<const uint8_t*>(wt.hostData()),
                                  static_cast<const uint8_t*>(wt.hostData()) + wt.byteSize());
          auto r = Compare(*gots[e], wt.shape(), wt.dtype(), wb, what, set);
          if (!r.empty()) return {Outcome::kFailed, r};
        }
        continue;
      }
      if (out->isSequence()) {
        auto want = ReadSequence(file, sd);
        if (!want.ok()) return {Outcome::kUnsupported, "expected output: " + want.status().message()};
        const auto& got = out->sequence();
        if (got.size() != want->size())
          return {Outcome::kFailed, StrFormat("output %zu '%s': a sequence of %zu, want %zu", k, output_names[k].c_str(),
                                              got.size(), want->size())};
        for (size_t e = 0; e < got.size(); ++e) {
          const Tensor& w = *(*want)[e];
          std::vector<uint8_t> wb(static_cast<const uint8_t*>(w.hostData()),
                                  static_cast<const uint8_t*>(w.hostData()) + w.byteSize());
          auto r = Compare(*got[e], w.shape(), w.dtype(), wb, StrFormat("output %zu '%s' element %zu", k,
                                                                         output_names[k].c_str(), e), set);
          if (!r.empty()) return {Outcome::kFailed, r};
        }
        continue;
      }
      auto proto = ReadProto(file);
      if (!proto.ok()) return {Outcome::kFailed, proto.status().message()};
      auto want = onnx_import::ReadTensor(*proto, sd);
      if (!want.ok()) return {Outcome::kUnsupported, "expected output: " + want.status().message()};
      BFloat16FromBits(out->dtype(), &want->dtype);
      auto r = Compare(*out, want->shape, want->dtype, want->bytes,
                       StrFormat("output %zu '%s'", k, output_names[k].c_str()), set);
      if (!r.empty()) return {Outcome::kFailed, r};
    }
  }
  if (!fallback.empty()) return {all_host_only ? Outcome::kHostOnly : Outcome::kFallback, fallback};
  return {Outcome::kPassed, ""};
}

std::string JsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (c == '\n') o += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o;
}

int Usage() {
  std::fprintf(stderr,
               "usage: kiln-conformance --backend host|vulkan|opencl [--data DIR] [--filter REGEX] [--json]\n"
               "                        [--expected FILE] [--list-passing FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend_name = "host", data = kDefaultData, filter, expected_file, list_file;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) backend_name = argv[++i];
    else if (a == "--data" && i + 1 < argc) data = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--expected" && i + 1 < argc) expected_file = argv[++i];
    else if (a == "--list-passing" && i + 1 < argc) list_file = argv[++i];
    else if (a == "--json") json = true;
    else return Usage();
  }
  std::map<std::string, ForwardType> backends = {
      {"host", ForwardType::kHost}, {"vulkan", ForwardType::kVulkan}, {"opencl", ForwardType::kOpenCL}};
  if (!backends.count(backend_name)) return Usage();
  ForwardType backend = backends[backend_name];
  std::regex re(filter.empty() ? ".*" : filter);
  setenv("KILN_QUIET", "1", 1);

  // The expected file: cases that must pass, and the host-only ops.
  std::vector<std::string> expected;
  HostOnly host_only;
  if (!expected_file.empty()) {
    std::ifstream f(expected_file);
    if (!f) {
      std::fprintf(stderr, "kiln-conformance: cannot read %s\n", expected_file.c_str());
      return 1;
    }
    std::string line;
    while (std::getline(f, line)) {
      if (line.empty() || line[0] == '#') continue;
      const bool by_dtype = line.rfind("host-only-dtype ", 0) == 0;
      if (by_dtype || line.rfind("host-only ", 0) == 0) {
        const size_t colon = line.find(':'), name = by_dtype ? 16 : 10;
        if (colon == std::string::npos) {
          std::fprintf(stderr, "kiln-conformance: %s: '%s' needs 'host-only OpType: reason' or 'host-only-dtype DTYPE: reason'\n",
                       expected_file.c_str(), line.c_str());
          return 1;
        }
        (by_dtype ? host_only.dtypes : host_only.ops)[line.substr(name, colon - name)] = line.substr(colon + 1);
        continue;
      }
      expected.push_back(line);
    }
  }

  struct Result {
    std::string suite, name, message;
    Outcome outcome;
  };
  std::vector<Result> results;
  for (const char* suite : kSuites)
    for (const std::string& name : ListDir(data + "/" + suite))
      if (std::regex_search(std::string(suite) + "/" + name, re)) results.push_back({suite, name, "", Outcome::kFailed});
  // A worker process runs the cases in turn and reports each as it ends
  // ("<index> <outcome><message>\0"); a case that kills its worker is failed
  // as crashed, and a new worker goes on from the next. One process for many
  // cases keeps what its sessions share (the GPU backends' compiled kernels)
  // and spares a process start a case.
  size_t next = 0;
  while (next < results.size()) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      close(fds[0]);
      for (size_t i = next; i < results.size(); ++i) {
        auto [outcome, msg] = RunCase(data + "/" + results[i].suite + "/" + results[i].name, backend, host_only);
        std::string record = std::to_string(i) + " " + std::to_string(static_cast<int>(outcome)) + msg;
        record.push_back('\0');
        for (size_t off = 0; off < record.size();) {
          const ssize_t w = write(fds[1], record.data() + off, record.size() - off);
          if (w <= 0) _exit(3);
          off += static_cast<size_t>(w);
        }
      }
      _exit(0);
    }
    close(fds[1]);
    std::string buf;
    char chunk[4096];
    ssize_t r;
    while ((r = read(fds[0], chunk, sizeof chunk)) > 0) buf.append(chunk, static_cast<size_t>(r));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    size_t done = next;  // the first case without a report
    for (size_t pos = 0; pos < buf.size();) {
      const size_t end = buf.find('\0', pos);
      if (end == std::string::npos) break;  // a report cut short
      const std::string record = buf.substr(pos, end - pos);
      pos = end + 1;
      const size_t space = record.find(' ');
      if (space == std::string::npos || space + 1 >= record.size()) continue;
      const size_t i = std::stoul(record.substr(0, space));
      if (i >= results.size()) continue;
      results[i].outcome = static_cast<Outcome>(record[space + 1] - '0');
      results[i].message = record.substr(space + 2);
      done = i + 1;
    }
    if (done < results.size()) {  // the worker ended before reporting this case
      results[done].outcome = Outcome::kFailed;
      results[done].message = WIFSIGNALED(status) ? StrFormat("crashed (signal %d)", WTERMSIG(status))
                                                  : StrFormat("no result (worker exit %d)", WEXITSTATUS(status));
      ++done;
    }
    next = done;
  }

  std::map<std::string, std::array<int, 5>> per_suite;
  std::set<std::string> passing;
  for (Result& r : results) {
    per_suite[r.suite][static_cast<int>(r.outcome)]++;
    if (r.outcome == Outcome::kPassed || r.outcome == Outcome::kHostOnly) passing.insert(r.suite + "/" + r.name);
  }
  if (json) {
    std::printf("{\"backend\": \"%s\", \"cases\": [\n", backend_name.c_str());
    for (size_t i = 0; i < results.size(); ++i) {
      static const char* kNames[] = {"passed", "failed", "unsupported", "fallback", "host-only"};
      std::printf("  {\"case\": \"%s/%s\", \"result\": \"%s\", \"error\": \"%s\"}%s\n", results[i].suite.c_str(),
                  results[i].name.c_str(), kNames[static_cast<int>(results[i].outcome)],
                  JsonEscape(results[i].message).c_str(), i + 1 < results.size() ? "," : "");
    }
    std::printf("]}\n");
  }
  std::array<int, 5> total{};
  for (auto& [suite, c] : per_suite) {
    std::fprintf(json ? stderr : stdout,
                 "%-18s %-7s passed %4d, failed %4d, unsupported %4d, fallback %4d, host-only %4d\n", suite.c_str(),
                 backend_name.c_str(), c[0], c[1], c[2], c[3], c[4]);
    for (int k = 0; k < 5; ++k) total[k] += c[k];
  }
  std::fprintf(json ? stderr : stdout, "%-18s %-7s passed %4d, failed %4d, unsupported %4d, fallback %4d, host-only %4d\n",
               "total", backend_name.c_str(), total[0], total[1], total[2], total[3], total[4]);

  if (!list_file.empty()) {
    std::ofstream f(list_file);
    for (const std::string& p : passing) f << p << "\n";
  }
  int rc = 0;
  if (!expected_file.empty()) {
    int regressions = 0;
    std::map<std::string, std::string> why;
    for (const Result& r : results) why[r.suite + "/" + r.name] = r.message;
    for (const std::string& line : expected) {
      if (!std::regex_search(line, re)) continue;
      if (!passing.count(line)) {
        std::fprintf(stderr, "REGRESSION %s: %s\n", line.c_str(), why.count(line) ? why[line].c_str() : "not found");
        ++regressions;
      }
    }
    if (regressions) rc = 1;
  }
  return rc;
}
