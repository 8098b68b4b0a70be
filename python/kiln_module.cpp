// The `kiln` Python module (pybind11): Interpreter and Session over the C++
// API (kiln/interpreter.h), inputs and outputs as NumPy arrays.
//
// Threading: the GIL is released while a model loads, while a session
// resizes, copies and runs. The C++ contract is that sessions of one
// Interpreter run on one thread at a time, so every Interpreter carries a
// mutex that each session operation holds (two sessions of one Interpreter
// from two Python threads are serialized; two Interpreters run at once).
// Lock order: the GIL is never held while waiting for that mutex; the mutex
// holder may take the GIL briefly (to allocate output arrays).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if KILN_PYTHON_CONVERT
#include "kiln/convert.h"  // tools/convert: the converter library behind kiln-convert
#endif
#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "kiln/session.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln/types.h"
#include "log.h"    // engine/src: SetLogSink (kiln_internal)
#include "model.h"  // engine/src: Model::constant (weight bytes)
#include "py_session.h"

using namespace kiln_py;

namespace {

std::shared_ptr<PyInterpreter> Load(const py::object& source) {
  auto result = std::make_shared<PyInterpreter>();
  if (py::isinstance<py::str>(source) || py::hasattr(source, "__fspath__")) {
    std::string path = py::str(py::module_::import("os").attr("fspath")(source)).cast<std::string>();
    py::gil_scoped_release release;
    auto interp = kiln::Interpreter::createFromFile(path);
    if (!interp.ok()) Raise(interp.status());
    result->interp = std::move(interp).value();
    return result;
  }
  // bytes, bytearray, memoryview, a NumPy uint8 array: any buffer.
  if (!PyObject_CheckBuffer(source.ptr()))
    throw py::type_error("kiln.Interpreter takes a path (str, os.PathLike) or the model's bytes");
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(source).request();
  const size_t size = static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize);
  py::bytes contiguous;
  const void* data = info.ptr;
  if (info.ndim > 1 || (info.ndim == 1 && info.strides[0] != info.itemsize)) {
    contiguous = py::bytes(py::module_::import("builtins").attr("bytes")(py::memoryview(source)));
    data = PyBytes_AsString(contiguous.ptr());
  }
  py::gil_scoped_release release;
  auto interp = kiln::Interpreter::createFromBuffer(data, size, kiln::BufferOwnership::kCopy);
  if (!interp.ok()) Raise(interp.status());
  result->interp = std::move(interp).value();
  return result;
}

std::unique_ptr<PySession> CreateSession(const std::shared_ptr<PyInterpreter>& self, const std::string& backend,
                                         int threads, const std::string& precision, const py::object& cache_file,
                                         int device_index) {
  kiln::ScheduleConfig config;
  if (!kiln::ParseForwardType(backend, &config.type))
    throw py::value_error("backend must be 'host', 'vulkan', 'opencl' or 'auto', not '" + backend + "'");
  if (!kiln::ParsePrecision(precision, &config.precision))
    throw py::value_error("precision must be 'normal', 'high' or 'low', not '" + precision + "'");
  if (threads < 1 || threads > kiln::kMaxThreads)
    throw py::value_error("threads must be 1 to " + std::to_string(kiln::kMaxThreads));
  config.numThread = threads;
  if (device_index < -1) throw py::value_error("device_index must be -1 (the fastest kind) or a device index");
  config.deviceIndex = device_index;
  if (!cache_file.is_none())
    config.cacheFile = py::str(py::module_::import("os").attr("fspath")(cache_file)).cast<std::string>();
  kiln::Session* session = nullptr;
  {
    py::gil_scoped_release release;
    InterpLock lock(*self);
    auto s = self->interp->createSession(config);
    if (!s.ok()) Raise(s.status());
    session = *s;
  }
  return std::make_unique<PySession>(self, session);
}

// (backend, device index or -1 for the host, device description) of every
// device a session can start on: a one-op model, a session per backend and
// device index until one does not start.
std::vector<std::tuple<std::string, int, std::string>> Devices() {
  kiln::NetBuilder b("kiln-devices");
  int x = b.addInput("x", kiln::fb::DataType::F32, {1});
  b.addOutput(b.addOp(kiln::fb::OpType::Relu, "relu", {x}, {"y"})[0]);
  auto bytes = b.finish();
  if (!bytes.ok()) Raise(bytes.status());
  std::vector<std::tuple<std::string, int, std::string>> found;
  py::gil_scoped_release release;
  // The probe past the last device falls back to the host, which Kiln would
  // print as a placement note: the probe's messages are dropped (and those of
  // other threads meanwhile; the default sink is back afterwards).
  struct QuietLog {
    QuietLog() { kiln::SetLogSink([](const std::string&) {}); }
    ~QuietLog() { kiln::SetLogSink(nullptr); }
  } quiet;
  auto interp = kiln::Interpreter::createFromBuffer(bytes->data(), bytes->size(), kiln::BufferOwnership::kCopy);
  if (!interp.ok()) Raise(interp.status());
  for (kiln::ForwardType type : {kiln::ForwardType::kHost, kiln::ForwardType::kVulkan, kiln::ForwardType::kOpenCL}) {
    const std::string name = kiln::ForwardTypeName(type);
    for (int index = 0; index < 64; ++index) {
      kiln::ScheduleConfig config;
      config.type = type;
      config.deviceIndex = type == kiln::ForwardType::kHost ? -1 : index;
      auto s = (*interp)->createSession(config);
      if (!s.ok()) break;
      auto devices = (*s)->devices();
      (void)(*interp)->releaseSession(*s);
      auto d = devices.find(name);
      if (d == devices.end()) break;  // no such device: the session fell back to the host
      found.emplace_back(name, config.deviceIndex, d->second);
      if (type == kiln::ForwardType::kHost) break;
    }
  }
  return found;
}

// kiln.convert: kiln::ConvertFile as kiln-convert calls it (the same options),
// then the written model is loaded, as kiln-convert does: a conversion is only
// done when the model verifies. Returns the ConvertReport as a dict.
py::dict Convert(const std::string& in, const std::string& out, bool optimize, bool external_weights,
                 bool allow_unsupported, bool fp16, const std::map<std::string, std::vector<int64_t>>& input_shapes) {
#if !KILN_PYTHON_CONVERT
  (void)in, (void)out, (void)optimize, (void)external_weights, (void)allow_unsupported, (void)fp16, (void)input_shapes;
  Raise(kiln::Status(kiln::StatusCode::kUnsupported, "kiln.convert: this build has no converter (a host-only build)"));
#else
  kiln::ConvertOptions opt;
  opt.optimize = optimize;
  opt.external_weights = external_weights;
  opt.allow_unsupported = allow_unsupported;
  opt.fp16 = fp16;
  opt.input_shapes = input_shapes;
  for (const auto& [name, shape] : input_shapes)
    for (int64_t d : shape)
      if (d < 0) throw py::value_error("input_shapes['" + name + "']: dimensions must be >= 0");
  kiln::ConvertReport report;
  std::vector<std::string> progress;
  opt.progress = [&progress](const std::string& line) { progress.push_back(line); };
  {
    py::gil_scoped_release release;
    Check(kiln::ConvertFile(in, out, opt, &report));
    auto check = kiln::Interpreter::createFromFile(out);
    if (!check.ok())
      Raise(kiln::Status(check.status().code(), "the written model does not load: " + check.status().message()));
  }
  py::dict r;
  r["source_format"] = report.source_format;
  r["opset"] = report.opset;
  r["ops_in"] = report.ops_in;
  r["ops_out"] = report.ops_out;
  r["weight_bytes"] = report.weight_bytes;
  r["fp16_weights"] = report.fp16_weights;
  r["unsupported"] = report.unsupported;
  py::list passes;
  for (const auto& [name, n] : report.passes) passes.append(py::make_tuple(name, n));
  r["passes"] = passes;
  r["progress"] = progress;
  return r;
#endif
}

// (parameters, inline weight bytes, external weight bytes) of a model, as
// kiln-inspect's summary counts them.
py::tuple Weights(const PyInterpreter& self) {
  const kiln::fb::Net& net = self.interp->net();
  const kiln::Model& model = self.interp->model();
  uint64_t params = 0, inline_bytes = 0, external_bytes = 0;
  size_t num_tensors = net.tensors() ? net.tensors()->size() : 0;
  for (size_t i = 0; i < num_tensors; ++i) {
    const kiln::fb::Tensor& t = *net.tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
    kiln::ConstantView c = model.constant(static_cast<int>(i));
    if (!c.data) continue;
    size_t esize = kiln::DataTypeSize(t.dtype());
    params += esize ? c.size / esize : 0;
    (t.external() ? external_bytes : inline_bytes) += c.size;
  }
  return py::make_tuple(params, inline_bytes, external_bytes);
}

void UpdateSessionToModel(PyInterpreter& self, const PySession& session) {
  if (session.owner().get() != &self) throw KilnError("invalid argument: the session belongs to another Interpreter");
  py::gil_scoped_release release;
  InterpLock lock(self);
  Check(self.interp->updateSessionToModel(session.raw()));
}

void SaveBundle(PyInterpreter& self, const PySession& session, const py::object& path) {
  if (session.owner().get() != &self) throw KilnError("invalid argument: the session belongs to another Interpreter");
  const std::string p = py::str(py::module_::import("os").attr("fspath")(path));
  py::gil_scoped_release release;
  InterpLock lock(self);
  Check(self.interp->saveBundle(session.raw(), p));
}

void SaveModel(PyInterpreter& self, const py::object& path) {
  const std::string p = py::str(py::module_::import("os").attr("fspath")(path));
  py::gil_scoped_release release;
  InterpLock lock(self);
  Check(self.interp->saveModel(p));
}

}  // namespace

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "Kiln: run .kiln models on the host, Vulkan or OpenCL from Python, with NumPy arrays.";
  static py::exception<KilnError> error(m, "Error", PyExc_RuntimeError);
  error.doc() = "A failed Kiln call; the message is Kiln's status (\"invalid argument: ...\").";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const KilnError& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });

  m.def("_convert", &Convert, py::arg("src"), py::arg("out"), py::arg("optimize"), py::arg("external_weights"),
        py::arg("allow_unsupported"), py::arg("fp16"), py::arg("input_shapes"),
        "kiln::ConvertFile + a load check: see kiln.convert().");
  m.def("_devices", &Devices, "[(backend, device index or -1, description)]: see kiln.devices().");

  py::class_<PyInterpreter, std::shared_ptr<PyInterpreter>>(m, "Interpreter",
      "One loaded, verified model (kiln::Interpreter). Sessions are created over it.\n\n"
      "Sessions of one Interpreter run one at a time (a lock serializes them);\n"
      "separate Interpreters run in parallel from separate threads.")
      .def(py::init(&Load), py::arg("model"),
           "Loads a model from a path (str or os.PathLike; the file is mapped) or from\n"
           "its bytes (bytes, bytearray, memoryview: copied). Raises kiln.Error when the\n"
           "file is missing or malformed.")
      .def("create_session", &CreateSession, py::arg("backend") = "host", py::arg("threads") = 1,
           py::arg("precision") = "normal", py::arg("cache_file") = py::none(), py::arg("device_index") = -1,
           "Creates a Session (kiln::Interpreter::createSession).\n\n"
           "backend: 'host', 'vulkan', 'opencl' or 'auto' (Vulkan, OpenCL, host: the\n"
           "  first that can run each op); ops a GPU backend cannot take run on the host.\n"
           "threads: host threads (1 to 1024).\n"
           "precision: 'normal', 'high' or 'low' (fp16 storage where supported).\n"
           "cache_file: GPU backends: a file keeping compiled pipelines between processes.\n"
           "device_index: GPU backends: the device (kiln.devices()' index); -1 picks the\n"
           "  fastest kind (discrete, integrated, virtual, CPU).")
      .def("_weights", &Weights, "(parameters, inline weight bytes, external weight bytes), as kiln-inspect counts them.")
      .def("update_session_to_model", &UpdateSessionToModel, py::arg("session"),
           "Writes the weights the session changed (Session.set_weight) into this\n"
           "Interpreter's model (kiln::Interpreter::updateSessionToModel): sessions\n"
           "created from now on, and save_model(), see them.")
      .def("save_bundle", &SaveBundle, py::arg("session"), py::arg("path"),
           "Writes an ahead-of-time bundle (kiln::Interpreter::saveBundle): the model\n"
           "with its inputs fixed at the session's shapes and the weights its host ops\n"
           "packed, which a session of the bundle uses in place; of a Vulkan or OpenCL\n"
           "session, also the driver's pipeline cache or program binaries for this\n"
           "device. The session must have run (GPU: to catch the driver's lazy\n"
           "compiles) or been resized.")
      .def("save_model", &SaveModel, py::arg("path"),
           "Writes the model (with what update_session_to_model wrote) to a\n"
           "self-contained .kiln file (external weights inline).")
      .def_property_readonly(
          "model_name", [](const PyInterpreter& self) { return self.interp->modelName(); },
          "The model's name: the file path, or '<buffer>'.");

  py::class_<PyOpInfo>(m, "OpInfo", "An op as run_with_callback's callbacks see it (kiln::OpInfo).")
      .def_readonly("index", &PyOpInfo::index, "The op's index in the graph.")
      .def_readonly("name", &PyOpInfo::name)
      .def_readonly("type", &PyOpInfo::type, "'Conv', 'Relu', ...")
      .def_readonly("backend", &PyOpInfo::backend, "Where it runs: 'host', 'vulkan', 'opencl'.")
      .def("__repr__", [](const PyOpInfo& o) {
        return "OpInfo(index=" + std::to_string(o.index) + ", name='" + o.name + "', type='" + o.type +
               "', backend='" + o.backend + "')";
      });

  py::class_<PySession>(m, "Session",
      "A planned, runnable instance of a model on a set of backends (kiln::Session).\n"
      "Created by Interpreter.create_session.")
      .def("run", &PySession::Run, py::arg("inputs"), py::arg("outputs") = py::none(),
           "Runs the model on {input name: array} and returns {output name: ndarray}.\n\n"
           "Every input must be given but those bound by bind_state. An array must have\n"
           "the input's dtype (kiln.Error\n"
           "otherwise); a list or scalar is converted to it. When an array's shape\n"
           "differs from the input's, the session is resized first. C-contiguous arrays\n"
           "are copied straight into the session; others are made contiguous first.\n"
           "outputs: {output name: ndarray} to write outputs into the caller's arrays\n"
           "  (the output's dtype and shape, C-contiguous, writeable; kiln.Error\n"
           "  otherwise); those very arrays are returned. Outputs not named get new arrays.\n"
           "The GIL is released while the session runs.")
      .def("run_with_callback", &PySession::RunWithCallback, py::arg("inputs"), py::arg("before") = py::none(),
           py::arg("after") = py::none(), py::arg("outputs") = py::none(),
           "run() calling before(op, tensors) ahead of each op with its inputs and\n"
           "after(op, tensors) once it ran with its outputs (kiln::Session::runWithCallBack).\n"
           "op: kiln.OpInfo (index, name, type, backend); tensors: {tensor name: ndarray},\n"
           "copies (None for a dtype NumPy lacks, bf16). A callback returning False\n"
           "(exactly False; None continues) stops the run: kiln.Error 'aborted: stopped by\n"
           "the before-callback at op N ...' is raised, no outputs are returned. An\n"
           "exception in a callback stops the run and is raised as is. Callbacks run on\n"
           "the calling thread with the Interpreter locked: they must not use sessions of\n"
           "the same Interpreter (kiln.Error).")
      .def("bind_state", &PySession::BindState, py::arg("output"), py::arg("input"),
           "Streaming state (kiln::Session::bindState): after each run, output `output`\n"
           "becomes input `input` of the next run, kept on the session's device; run()\n"
           "then needs no array for `input`. Call reset_state() to start a stream.")
      .def("reset_state", &PySession::ResetState, "Zeros every bound state input (a new stream).")
      .def("get_weight", &PySession::GetWeight, py::arg("name"),
           "A copy of weight (constant) `name` as this session has it (kiln::Session::getWeight).")
      .def("set_weight", &PySession::SetWeight, py::arg("name"), py::arg("value"),
           "Replaces weight `name` for this session, on every backend holding it\n"
           "(kiln::Session::setWeight); `value` must have its dtype and shape.")
      .def("resize", &PySession::Resize, py::arg("shapes"),
           "Sets input shapes ({name: shape}) and resizes the session (shape inference,\n"
           "memory plan). run() does this by itself when given arrays of other shapes.")
      .def_property_readonly("input_names", [](PySession& s) { return s.Names(true); },
                             "The model's input names (sorted).")
      .def_property_readonly("output_names", [](PySession& s) { return s.Names(false); },
                             "The model's output names (sorted).")
      .def_property_readonly("inputs", [](PySession& s) { return s.Info(true); },
                             "{name: (shape, dtype)} of the inputs as the session has them now\n"
                             "(-1 for a dimension not yet known).")
      .def_property_readonly("outputs", [](PySession& s) { return s.Info(false); },
                             "{name: (shape, dtype)} of the outputs after the last resize.")
      .def_property_readonly("placement", &PySession::Placement,
                             "Where the ops run: kiln::Placement::toString() (ops per backend,\n"
                             "backend switches, and why any op is not on the preferred backend).")
      .def("_time_runs", &PySession::TimeRuns, py::arg("loops"), py::arg("warmup") = 0,
           "Milliseconds of each of `loops` kiln::Session::run() calls timed in C++ after\n"
           "`warmup` runs, on the inputs as the last run() left them (no copies in or out).")
      .def_property_readonly("ops", &PySession::Ops,
                             "The ops in run order, as kiln.OpInfo (index, name, type, backend).")
      .def_property_readonly("devices", &PySession::Devices,
                             "{backend: device} of the session's backends, e.g. {'host': ..., 'vulkan': 'llvmpipe ...'}.");
}
