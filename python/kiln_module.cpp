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
  // The thread running a callback of run_with_callback (the mutex is held
  // meanwhile): a session call from that callback would wait for the mutex
  // forever, so it raises instead.
  std::atomic<std::thread::id> callback_thread{};
};

// Takes an Interpreter's mutex (the GIL must be released), or fails when the
// caller is that Interpreter's own callback.
class InterpLock {
 public:
  explicit InterpLock(PyInterpreter& p) : p_(p) {
    if (p.callback_thread == std::this_thread::get_id())
      throw KilnError("failed precondition: a run_with_callback callback cannot use a session of the Interpreter that is running it");
    p.mu.lock();
  }
  ~InterpLock() { p_.mu.unlock(); }
  InterpLock(const InterpLock&) = delete;
  InterpLock& operator=(const InterpLock&) = delete;

 private:
  PyInterpreter& p_;
};

// An op as run_with_callback's callbacks see it (kiln::OpInfo).
struct PyOpInfo {
  int index;
  std::string name, type, backend;
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
    } else if (owner_->callback_thread.load() != std::this_thread::get_id()) {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(owner_->mu);
      (void)owner_->interp->releaseSession(session_);
    }
    // Else dropped inside its Interpreter's own callback: the session stays
    // until the Interpreter goes (it releases its sessions then).
  }
  PySession(const PySession&) = delete;
  PySession& operator=(const PySession&) = delete;
  std::set<std::string> state_inputs_;  // bind_state's inputs: run() needs no array for them

  std::vector<std::string> Names(bool inputs) {
    py::gil_scoped_release release;
    InterpLock lock(*owner_);
    std::vector<std::string> names;
    for (auto& [name, t] : inputs ? session_->getInputAll() : session_->getOutputAll()) names.push_back(name);
    return names;
  }

  // name -> (shape, dtype) of the inputs or outputs as the session has them
  // now (-1 for a dimension not yet known).
  // An input's shape as the model declares it (-1 for a symbolic dim), for
  // an input the session has not been resized to yet (its tensor has no
  // shape then); empty for a scalar or a name the model lacks.
  std::vector<int64_t> DeclaredShape(const std::string& name) const {
    const kiln::fb::Net& net = owner_->interp->net();
    std::vector<int64_t> shape;
    if (!net.tensors()) return shape;
    for (const kiln::fb::Tensor* t : *net.tensors()) {
      if (!t->name() || t->name()->str() != name || !t->shape()) continue;
      for (const kiln::fb::Dim* d : *t->shape()) shape.push_back(d->size() >= 0 ? d->size() : -1);
      break;
    }
    return shape;
  }

  py::dict Info(bool inputs) {
    std::vector<std::tuple<std::string, std::vector<int64_t>, kiln::fb::DataType>> info;
    {
      py::gil_scoped_release release;
      InterpLock lock(*owner_);
      for (auto& [name, t] : inputs ? session_->getInputAll() : session_->getOutputAll())
        info.emplace_back(name, t->shape().empty() && inputs ? DeclaredShape(name) : t->shape(), t->dtype());
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
    InterpLock lock(*owner_);
    return session_->placement().toString();
  }

  // Times `loops` calls of kiln::Session::run() after `warmup`, in C++ on
  // whatever the inputs hold now (bench/python_overhead.py: the C++ side).
  std::vector<double> TimeRuns(int loops, int warmup) {
    py::gil_scoped_release release;
    InterpLock lock(*owner_);
    for (int i = 0; i < warmup; ++i) Check(session_->run());
    std::vector<double> ms;
    for (int i = 0; i < loops; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      Check(session_->run());
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return ms;
  }

  std::vector<PyOpInfo> Ops() {
    py::gil_scoped_release release;
    InterpLock lock(*owner_);
    std::vector<PyOpInfo> ops;
    for (const kiln::OpPlacement& op : session_->placement().ops)
      ops.push_back(PyOpInfo{static_cast<int>(ops.size()), op.name, op.type, op.backend});
    return ops;
  }

  std::map<std::string, std::string> Devices() {
    py::gil_scoped_release release;
    InterpLock lock(*owner_);
    return session_->devices();
  }

  void Resize(const std::map<std::string, std::vector<int64_t>>& shapes) {
    py::gil_scoped_release release;
    InterpLock lock(*owner_);
    for (auto& [name, shape] : shapes) {
      kiln::Tensor* t = session_->getInput(name);
      if (!t) Raise(kiln::Status(kiln::StatusCode::kNotFound, "no input named '" + name + "'"));
      Check(session_->resizeTensor(t, shape));
    }
    Check(session_->resize());
  }

  py::dict Run(const py::dict& feeds, const py::object& outputs) {
    return RunImpl(feeds, outputs, py::none(), py::none());
  }

  void BindState(const std::string& output, const std::string& input) {
    py::gil_scoped_release release;
    InterpLock lock(*owner_);
    Check(session_->bindState(output, input));
    state_inputs_.insert(input);
  }

  void ResetState() {
    py::gil_scoped_release release;
    InterpLock lock(*owner_);
    Check(session_->resetState());
  }

  // kiln::Session::getWeight: a copy of the weight's current value.
  py::array GetWeight(const std::string& name) {
    std::unique_ptr<kiln::Tensor> w;
    {
      py::gil_scoped_release release;
      InterpLock lock(*owner_);
      auto r = session_->getWeight(name);
      Check(r.status());
      w = std::move(r).value();
    }
    const char* np = NumpyName(w->dtype());
    if (!np) throw KilnError(std::string("unsupported: weight '") + name + "' is " + kiln::DataTypeName(w->dtype()));
    py::array a(py::dtype(np), w->shape());
    if (w->byteSize()) std::memcpy(a.mutable_data(), w->hostData(), w->byteSize());
    return a;
  }

  // kiln::Session::setWeight: the array must have the weight's dtype and shape.
  void SetWeight(const std::string& name, const py::array& value) {
    kiln::fb::DataType dt;
    if (!FromNumpy(value.dtype(), &dt)) throw py::type_error("set_weight: an array of a dtype Kiln has is needed");
    py::array c = py::array::ensure(value, py::array::c_style);
    if (!c) throw py::type_error("set_weight: the value must be an array");
    std::vector<int64_t> shape(c.shape(), c.shape() + c.ndim());
    auto t = kiln::Tensor::wrap(shape, dt, const_cast<void*>(c.data()));
    py::gil_scoped_release release;
    InterpLock lock(*owner_);
    Check(session_->setWeight(name, *t));
  }

  kiln::Session* raw() const { return session_; }
  const std::shared_ptr<PyInterpreter>& owner() const { return owner_; }

  py::dict RunWithCallback(const py::dict& feeds, const py::object& before, const py::object& after,
                           const py::object& outputs) {
    for (const py::object* f : {&before, &after})
      if (!f->is_none() && !PyCallable_Check(f->ptr())) throw py::type_error("before and after must be callables or None");
    return RunImpl(feeds, outputs, before, after);
  }

 private:
  // An array the caller gave for an output (run(outputs=...)).
  struct GivenOutput {
    std::string name;
    py::array array;
    std::vector<int64_t> shape;
    void* data;
  };

  py::dict RunImpl(const py::dict& feeds, const py::object& outputs, const py::object& before,
                   const py::object& after) {
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
    std::map<std::string, kiln::fb::DataType> want;      // the session's input dtypes
    std::map<std::string, kiln::fb::DataType> produced;  // and output dtypes
    {
      py::gil_scoped_release release;
      InterpLock lock(*owner_);
      for (auto& [name, t] : session_->getInputAll()) want[name] = t->dtype();
      for (auto& [name, t] : session_->getOutputAll()) produced[name] = t->dtype();
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
      bool given = state_inputs_.count(name) > 0;  // bound by bind_state: carried, not fed
      for (auto& f : in) given |= f.name == name;
      if (!given) Raise(kiln::InvalidArgument("input '%s' not given", name.c_str()));
    }

    // Caller arrays for outputs: checked now (dtype, contiguity), their
    // shapes once the run has set the outputs' shapes.
    std::vector<GivenOutput> given;
    if (!outputs.is_none()) {
      if (!py::isinstance<py::dict>(outputs)) throw py::type_error("outputs must be a dict {output name: numpy.ndarray}");
      for (auto& [key, value] : py::reinterpret_borrow<py::dict>(outputs)) {
        std::string name = py::cast<std::string>(key);
        auto p = produced.find(name);
        if (p == produced.end()) {
          std::string names;
          for (auto& [n, d] : produced) names += (names.empty() ? "'" : ", '") + n + "'";
          Raise(kiln::Status(kiln::StatusCode::kNotFound,
                             "no output named '" + name + "' (the outputs: " + names + ")"));
        }
        if (!py::isinstance<py::array>(value))
          throw py::type_error("outputs['" + name + "'] must be a numpy.ndarray");
        auto a = py::reinterpret_borrow<py::array>(value);
        kiln::fb::DataType dtype;
        if (!FromNumpy(a.dtype(), &dtype) || dtype != p->second || !a.dtype().attr("isnative").cast<bool>())
          Raise(kiln::InvalidArgument("output '%s': the array is %s, the output is %s (native byte order)",
                                      name.c_str(), py::str(a.dtype()).cast<std::string>().c_str(),
                                      NumpyName(p->second) ? NumpyName(p->second) : kiln::DataTypeName(p->second)));
        const int need = py::array::c_style | py::detail::npy_api::NPY_ARRAY_WRITEABLE_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
        if ((a.flags() & need) != need)
          Raise(kiln::InvalidArgument("output '%s': the array must be C-contiguous, aligned and writeable",
                                      name.c_str()));
        std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
        void* data = a.mutable_data();
        given.push_back(GivenOutput{name, a, std::move(shape), data});
      }
    }

    // Callbacks run with the GIL taken, on this thread, while the
    // Interpreter's mutex is held. A Python exception in one stops the run
    // and is raised again here.
    std::exception_ptr callback_error;
    auto wrap = [&callback_error](const py::object& fn) -> kiln::TensorCallBack {
      if (fn.is_none()) return nullptr;
      return [&callback_error, &fn](const std::vector<kiln::Tensor*>& tensors, const kiln::OpInfo& op) -> bool {
        py::gil_scoped_acquire gil;
        if (callback_error) return false;
        try {
          py::dict arrays;
          for (kiln::Tensor* t : tensors) {
            if (!t) continue;  // an optional input left out
            const char* np = NumpyName(t->dtype());
            const size_t bytes = static_cast<size_t>(t->elementCount()) * t->elementSize();
            if (!np || !t->hostData() || t->byteSize() < bytes) {
              arrays[py::str(t->name())] = py::none();  // bf16: no NumPy type
              continue;
            }
            py::array a(py::dtype(np), t->shape());  // a copy: the session reuses the memory
            std::memcpy(a.mutable_data(), t->hostData(), bytes);
            arrays[py::str(t->name())] = a;
          }
          py::object r = fn(PyOpInfo{op.index, op.name, op.type, op.backend}, arrays);
          return r.ptr() != Py_False;
        } catch (...) {
          callback_error = std::current_exception();
          return false;
        }
      };
    };
    const kiln::TensorCallBack before_cb = wrap(before), after_cb = wrap(after);
    const bool callbacks = before_cb || after_cb;

    // 2. Without the GIL: resize when a shape differs, copy in, run, and
    // copy out into the caller's arrays or into arrays allocated with the
    // GIL taken briefly.
    std::vector<std::string> out_names;
    std::vector<py::array> out_arrays;
    kiln::Status status;
    {
      py::gil_scoped_release release;
      InterpLock lock(*owner_);
      struct CallbackThread {  // marks this thread as running callbacks, until any exit
        PyInterpreter& p;
        explicit CallbackThread(PyInterpreter& p, bool on) : p(p) {
          if (on) p.callback_thread = std::this_thread::get_id();
        }
        ~CallbackThread() { p.callback_thread = std::thread::id(); }
      } mark(*owner_, callbacks);
      status = Execute(in, given, callbacks ? &before_cb : nullptr, callbacks ? &after_cb : nullptr, &out_names,
                       &out_arrays);
    }
    if (callback_error) std::rethrow_exception(callback_error);
    Check(status);
    py::dict result;
    for (size_t i = 0; i < out_names.size(); ++i) result[py::str(out_names[i])] = out_arrays[i];
    return result;
  }

  template <typename Feeds>
  kiln::Status Execute(const Feeds& in, const std::vector<GivenOutput>& given, const kiln::TensorCallBack* before,
                       const kiln::TensorCallBack* after, std::vector<std::string>* out_names,
                       std::vector<py::array>* out_arrays) {
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
    if (before || after) {
      KILN_RETURN_IF_ERROR(session_->runWithCallBack(before ? *before : nullptr, after ? *after : nullptr));
    } else {
      KILN_RETURN_IF_ERROR(session_->run());
    }
    std::vector<kiln::Tensor*> outs;
    std::vector<void*> targets;  // a caller's array, or null: allocate one
    for (auto& [name, t] : session_->getOutputAll()) {
      if (!NumpyName(t->dtype()))
        return kiln::Unsupported("output '%s': dtype %s has no NumPy type", name.c_str(),
                                 kiln::DataTypeName(t->dtype()));
      void* target = nullptr;
      for (auto& g : given) {
        if (g.name != name) continue;
        if (g.shape != t->shape()) {
          auto str = [](const std::vector<int64_t>& v) {
            std::string r = "(";
            for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
            return r + (v.size() == 1 ? ",)" : ")");
          };
          return kiln::InvalidArgument("output '%s': the array's shape is %s, the output's %s", name.c_str(),
                                       str(g.shape).c_str(), str(t->shape()).c_str());
        }
        target = g.data;
      }
      out_names->push_back(name);
      outs.push_back(t);
      targets.push_back(target);
    }
    {
      py::gil_scoped_acquire gil;
      for (size_t i = 0; i < outs.size(); ++i) {
        if (targets[i]) {
          for (auto& g : given)
            if (g.name == (*out_names)[i]) out_arrays->push_back(g.array);
        } else {
          out_arrays->push_back(py::array(py::dtype(NumpyName(outs[i]->dtype())), outs[i]->shape()));
          targets[i] = (*out_arrays)[i].mutable_data();  // no refcounting afterwards: safe without the GIL
        }
      }
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      auto host = kiln::Tensor::wrap(outs[i]->shape(), outs[i]->dtype(), targets[i]);
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
