// kiln.Session's methods (py_session.h).
#include "py_session.h"

#include <pybind11/stl.h>

#include <chrono>
#include <cstring>

#include "kiln/format.h"  // the schema: the net's declared input shapes
#include "kiln/tensor.h"

namespace kiln_py {
namespace {

// kiln.Error for a feed or an output array naming no `kind` ("input",
// "output") of the session; `known` are the ones it has.
[[noreturn]] void RaiseNoSuch(const char* kind, const std::string& name,
                              const std::map<std::string, kiln::fb::DataType>& known) {
  std::string names;
  for (auto& [n, d] : known) names += (names.empty() ? "'" : ", '") + n + "'";
  Raise(kiln::Status(kiln::StatusCode::kNotFound,
                     std::string("no ") + kind + " named '" + name + "' (the " + kind + "s: " + names + ")"));
}

}  // namespace

PySession::PySession(std::shared_ptr<PyInterpreter> owner, kiln::Session* session)
    : owner_(std::move(owner)), session_(session) {}

PySession::~PySession() {
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

std::vector<std::string> PySession::Names(bool inputs) {
  py::gil_scoped_release release;
  InterpLock lock(*owner_);
  std::vector<std::string> names;
  for (auto& [name, t] : inputs ? session_->getInputAll() : session_->getOutputAll()) names.push_back(name);
  return names;
}

std::vector<int64_t> PySession::DeclaredShape(const std::string& name) const {
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

py::dict PySession::Info(bool inputs) {
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

std::string PySession::Placement() {
  py::gil_scoped_release release;
  InterpLock lock(*owner_);
  return session_->placement().toString();
}

std::vector<double> PySession::TimeRuns(int loops, int warmup) {
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

std::vector<PyOpInfo> PySession::Ops() {
  py::gil_scoped_release release;
  InterpLock lock(*owner_);
  std::vector<PyOpInfo> ops;
  for (const kiln::OpPlacement& op : session_->placement().ops)
    ops.push_back(PyOpInfo{static_cast<int>(ops.size()), op.name, op.type, op.backend});
  return ops;
}

std::map<std::string, std::string> PySession::Devices() {
  py::gil_scoped_release release;
  InterpLock lock(*owner_);
  return session_->devices();
}

void PySession::Resize(const std::map<std::string, std::vector<int64_t>>& shapes) {
  py::gil_scoped_release release;
  InterpLock lock(*owner_);
  for (auto& [name, shape] : shapes) {
    kiln::Tensor* t = session_->getInput(name);
    if (!t) Raise(kiln::Status(kiln::StatusCode::kNotFound, "no input named '" + name + "'"));
    Check(session_->resizeTensor(t, shape));
  }
  Check(session_->resize());
}

py::dict PySession::Run(const py::dict& feeds, const py::object& outputs) {
  return RunImpl(feeds, outputs, py::none(), py::none());
}

void PySession::BindState(const std::string& output, const std::string& input) {
  py::gil_scoped_release release;
  InterpLock lock(*owner_);
  Check(session_->bindState(output, input));
  state_inputs_.insert(input);
}

void PySession::ResetState() {
  py::gil_scoped_release release;
  InterpLock lock(*owner_);
  Check(session_->resetState());
}

py::array PySession::GetWeight(const std::string& name) {
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

void PySession::SetWeight(const std::string& name, const py::array& value) {
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

py::dict PySession::RunWithCallback(const py::dict& feeds, const py::object& before, const py::object& after,
                                    const py::object& outputs) {
  for (const py::object* f : {&before, &after})
    if (!f->is_none() && !PyCallable_Check(f->ptr())) throw py::type_error("before and after must be callables or None");
  return RunImpl(feeds, outputs, before, after);
}

py::dict PySession::RunImpl(const py::dict& feeds, const py::object& outputs, const py::object& before,
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
    if (w == want.end()) RaiseNoSuch("input", name, want);
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
      if (p == produced.end()) RaiseNoSuch("output", name, produced);
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
kiln::Status PySession::Execute(const Feeds& in, const std::vector<GivenOutput>& given, const kiln::TensorCallBack* before,
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

}  // namespace kiln_py
