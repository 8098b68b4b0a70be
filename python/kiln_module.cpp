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

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/interpreter.h"
#include "kiln/session.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln/types.h"

namespace py = pybind11;

namespace {

// kiln.Error: every failing Kiln call raises it with the Status text
// ("invalid argument: model.kiln: op 3: ...").
class KilnError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void Raise(const kiln::Status& s) { throw KilnError(s.ToString()); }
void Check(const kiln::Status& s) {
  if (!s.ok()) Raise(s);
}

// Kiln dtype <-> NumPy dtype. bf16 has no NumPy type. NumpyName needs no GIL.
const char* NumpyName(kiln::fb::DataType t) {
  using namespace kiln::dtype;
  if (t == kF32) return "float32";
  if (t == kF16) return "float16";
  if (t == kF64) return "float64";
  if (t == kI8) return "int8";
  if (t == kI16) return "int16";
  if (t == kI32) return "int32";
  if (t == kI64) return "int64";
  if (t == kU8) return "uint8";
  if (t == kU16) return "uint16";
  if (t == kU32) return "uint32";
  if (t == kU64) return "uint64";
  if (t == kBool) return "bool";
  return nullptr;
}

bool ToNumpy(kiln::fb::DataType t, py::dtype* out) {
  const char* name = NumpyName(t);
  if (!name) return false;
  *out = py::dtype(name);
  return true;
}

bool FromNumpy(const py::dtype& d, kiln::fb::DataType* out) {
  using namespace kiln::dtype;
  const char kind = d.kind();
  const auto size = d.itemsize();
  if (kind == 'f') {
    if (size == 4) *out = kF32;
    else if (size == 2) *out = kF16;
    else if (size == 8) *out = kF64;
    else return false;
  } else if (kind == 'i') {
    if (size == 1) *out = kI8;
    else if (size == 2) *out = kI16;
    else if (size == 4) *out = kI32;
    else if (size == 8) *out = kI64;
    else return false;
  } else if (kind == 'u') {
    if (size == 1) *out = kU8;
    else if (size == 2) *out = kU16;
    else if (size == 4) *out = kU32;
    else if (size == 8) *out = kU64;
    else return false;
  } else if (kind == 'b' && size == 1) {
    *out = kBool;
  } else {
    return false;
  }
  return true;
}

struct PyInterpreter {
  std::unique_ptr<kiln::Interpreter> interp;
  std::mutex mu;  // held by every session operation (see the file comment)
};

class PySession {
 public:
  PySession(std::shared_ptr<PyInterpreter> owner, kiln::Session* session)
      : owner_(std::move(owner)), session_(session) {}
  ~PySession() {
    // Called with the GIL held: never wait for the mutex with it.
    if (owner_->mu.try_lock()) {
      std::lock_guard<std::mutex> lock(owner_->mu, std::adopt_lock);
      (void)owner_->interp->releaseSession(session_);
    } else {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(owner_->mu);
      (void)owner_->interp->releaseSession(session_);
    }
  }
  PySession(const PySession&) = delete;
  PySession& operator=(const PySession&) = delete;

  std::vector<std::string> Names(bool inputs) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(owner_->mu);
    std::vector<std::string> names;
    for (auto& [name, t] : inputs ? session_->getInputAll() : session_->getOutputAll()) names.push_back(name);
    return names;
  }

  // name -> (shape, dtype) of the inputs or outputs as the session has them
  // now (-1 for a dimension not yet known).
  py::dict Info(bool inputs) {
    std::vector<std::tuple<std::string, std::vector<int64_t>, kiln::fb::DataType>> info;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(owner_->mu);
      for (auto& [name, t] : inputs ? session_->getInputAll() : session_->getOutputAll())
        info.emplace_back(name, t->shape(), t->dtype());
    }
    py::dict d;
    for (auto& [name, shape, dtype] : info) {
      py::dtype np;
      py::object dt = ToNumpy(dtype, &np) ? py::object(np) : py::object(py::str(kiln::DataTypeName(dtype)));
      d[py::str(name)] = py::make_tuple(py::tuple(py::cast(shape)), dt);
    }
    return d;
  }

  std::string Placement() {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(owner_->mu);
    return session_->placement().toString();
  }

  std::map<std::string, std::string> Devices() {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(owner_->mu);
    return session_->devices();
  }

  void Resize(const std::map<std::string, std::vector<int64_t>>& shapes) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(owner_->mu);
    for (auto& [name, shape] : shapes) {
      kiln::Tensor* t = session_->getInput(name);
      if (!t) Raise(kiln::Status(kiln::StatusCode::kNotFound, "no input named '" + name + "'"));
      Check(session_->resizeTensor(t, shape));
    }
    Check(session_->resize());
  }

  py::dict Run(const py::dict& feeds) {
    // 1. With the GIL: each input as a C-contiguous array of its own dtype
    // (no copy when it already is one).
    struct Feed {
      std::string name;
      py::array array;
      std::vector<int64_t> shape;
      kiln::fb::DataType dtype;
      const void* data;
    };
    std::vector<Feed> in;
    std::map<std::string, kiln::fb::DataType> want;  // the session's input dtypes
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(owner_->mu);
      for (auto& [name, t] : session_->getInputAll()) want[name] = t->dtype();
    }
    for (auto& [key, value] : feeds) {
      std::string name = py::cast<std::string>(key);
      auto w = want.find(name);
      if (w == want.end()) {
        std::string names;
        for (auto& [n, d] : want) names += (names.empty() ? "'" : ", '") + n + "'";
        Raise(kiln::Status(kiln::StatusCode::kNotFound,
                           "no input named '" + name + "' (the inputs: " + names + ")"));
      }
      py::array a;
      if (py::isinstance<py::array>(value)) {
        a = py::reinterpret_borrow<py::array>(value);
      } else {
        // A list or a scalar: converted to the input's dtype.
        py::dtype np;
        if (!ToNumpy(w->second, &np))
          Raise(kiln::Unsupported("input '%s': dtype %s has no NumPy type", name.c_str(),
                                  kiln::DataTypeName(w->second)));
        a = py::reinterpret_steal<py::array>(
            py::detail::npy_api::get().PyArray_FromAny_(value.ptr(), np.release().ptr(), 0, 0, 0, nullptr));
        if (!a) throw py::error_already_set();
      }
      kiln::fb::DataType dtype;
      if (!FromNumpy(a.dtype(), &dtype))
        Raise(kiln::InvalidArgument("input '%s': NumPy dtype %s has no Kiln type", name.c_str(),
                                    py::str(a.dtype()).cast<std::string>().c_str()));
      if (dtype != w->second)
        Raise(kiln::InvalidArgument("input '%s': dtype %s given, the model takes %s", name.c_str(),
                                    kiln::DataTypeName(dtype), kiln::DataTypeName(w->second)));
      const bool native = a.dtype().attr("isnative").cast<bool>();
      if (!native || !(a.flags() & py::array::c_style)) {
        // The only copy an input takes: to native byte order, C order.
        py::dtype nd = native ? a.dtype() : py::dtype(a.dtype().attr("newbyteorder")("="));
        a = py::reinterpret_steal<py::array>(py::detail::npy_api::get().PyArray_FromAny_(
            a.ptr(), nd.release().ptr(), 0, 0, py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_, nullptr));
        if (!a) throw py::error_already_set();
      }
      std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
      in.push_back(Feed{name, a, std::move(shape), dtype, a.data()});
    }
    for (auto& [name, d] : want) {
      bool given = false;
      for (auto& f : in) given |= f.name == name;
      if (!given) Raise(kiln::InvalidArgument("input '%s' not given", name.c_str()));
    }

    // 2. Without the GIL: resize when a shape differs, copy in, run, and
    // copy out into arrays allocated with the GIL taken briefly.
    std::vector<std::string> out_names;
    std::vector<py::array> out_arrays;
    kiln::Status status;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(owner_->mu);
      status = Execute(in, &out_names, &out_arrays);
    }
    Check(status);
    py::dict result;
    for (size_t i = 0; i < out_names.size(); ++i) result[py::str(out_names[i])] = out_arrays[i];
    return result;
  }

 private:
  template <typename Feeds>
  kiln::Status Execute(const Feeds& in, std::vector<std::string>* out_names, std::vector<py::array>* out_arrays) {
    bool resize = false;
    for (auto& f : in) {
      kiln::Tensor* t = session_->getInput(f.name);
      if (t->shape() != f.shape) {
        KILN_RETURN_IF_ERROR(session_->resizeTensor(t, f.shape));  // the message names the input
        resize = true;
      }
    }
    if (resize) KILN_RETURN_IF_ERROR(session_->resize());
    for (auto& f : in) {
      kiln::Tensor* t = session_->getInput(f.name);  // valid until the next resize
      // The array's own buffer, read in place (no temporary).
      auto host = kiln::Tensor::wrap(f.shape, f.dtype, const_cast<void*>(f.data));
      KILN_RETURN_IF_ERROR(t->copyFromHostTensor(*host), "input '%s'", f.name.c_str());
    }
    KILN_RETURN_IF_ERROR(session_->run());
    std::vector<kiln::Tensor*> outs;
    for (auto& [name, t] : session_->getOutputAll()) {
      if (!NumpyName(t->dtype()))
        return kiln::Unsupported("output '%s': dtype %s has no NumPy type", name.c_str(),
                                 kiln::DataTypeName(t->dtype()));
      out_names->push_back(name);
      outs.push_back(t);
    }
    {
      py::gil_scoped_acquire gil;
      for (kiln::Tensor* t : outs) {
        out_arrays->push_back(py::array(py::dtype(NumpyName(t->dtype())), t->shape()));
      }
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      void* data = (*out_arrays)[i].mutable_data();  // no refcounting: safe without the GIL
      auto host = kiln::Tensor::wrap(outs[i]->shape(), outs[i]->dtype(), data);
      KILN_RETURN_IF_ERROR(outs[i]->copyToHostTensor(host.get()), "output '%s'", (*out_names)[i].c_str());
    }
    return kiln::Status::Ok();
  }

  std::shared_ptr<PyInterpreter> owner_;
  kiln::Session* session_;
};

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
                                         int threads, const std::string& precision, const py::object& cache_file) {
  kiln::ScheduleConfig config;
  if (!kiln::ParseForwardType(backend, &config.type))
    throw py::value_error("backend must be 'host', 'vulkan', 'opencl' or 'auto', not '" + backend + "'");
  if (!kiln::ParsePrecision(precision, &config.precision))
    throw py::value_error("precision must be 'normal', 'high' or 'low', not '" + precision + "'");
  if (threads < 1 || threads > kiln::kMaxThreads)
    throw py::value_error("threads must be 1 to " + std::to_string(kiln::kMaxThreads));
  config.numThread = threads;
  if (!cache_file.is_none())
    config.cacheFile = py::str(py::module_::import("os").attr("fspath")(cache_file)).cast<std::string>();
  kiln::Session* session = nullptr;
  {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(self->mu);
    auto s = self->interp->createSession(config);
    if (!s.ok()) Raise(s.status());
    session = *s;
  }
  return std::make_unique<PySession>(self, session);
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

  py::class_<PyInterpreter, std::shared_ptr<PyInterpreter>>(m, "Interpreter",
      "One loaded, verified model (kiln::Interpreter). Sessions are created over it.\n\n"
      "Sessions of one Interpreter run one at a time (a lock serializes them);\n"
      "separate Interpreters run in parallel from separate threads.")
      .def(py::init(&Load), py::arg("model"),
           "Loads a model from a path (str or os.PathLike; the file is mapped) or from\n"
           "its bytes (bytes, bytearray, memoryview: copied). Raises kiln.Error when the\n"
           "file is missing or malformed.")
      .def("create_session", &CreateSession, py::arg("backend") = "host", py::arg("threads") = 1,
           py::arg("precision") = "normal", py::arg("cache_file") = py::none(),
           "Creates a Session (kiln::Interpreter::createSession).\n\n"
           "backend: 'host', 'vulkan', 'opencl' or 'auto' (Vulkan, OpenCL, host: the\n"
           "  first that can run each op); ops a GPU backend cannot take run on the host.\n"
           "threads: host threads (1 to 1024).\n"
           "precision: 'normal', 'high' or 'low' (fp16 storage where supported).\n"
           "cache_file: GPU backends: a file keeping compiled pipelines between processes.")
      .def_property_readonly(
          "model_name", [](const PyInterpreter& self) { return self.interp->modelName(); },
          "The model's name: the file path, or '<buffer>'.");

  py::class_<PySession>(m, "Session",
      "A planned, runnable instance of a model on a set of backends (kiln::Session).\n"
      "Created by Interpreter.create_session.")
      .def("run", &PySession::Run, py::arg("inputs"),
           "Runs the model on {input name: array} and returns {output name: ndarray}.\n\n"
           "Every input must be given. An array must have the input's dtype (kiln.Error\n"
           "otherwise); a list or scalar is converted to it. When an array's shape\n"
           "differs from the input's, the session is resized first. C-contiguous arrays\n"
           "are copied straight into the session; others are made contiguous first.\n"
           "The GIL is released while the session runs.")
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
      .def_property_readonly("devices", &PySession::Devices,
                             "{backend: device} of the session's backends, e.g. {'host': ..., 'vulkan': 'llvmpipe ...'}.");
}
