// What the `kiln` Python module's files share (kiln_module.cpp, py_session.cpp):
// the error type, NumPy dtype mapping, and the Interpreter each session
// operation locks (see kiln_module.cpp's comment on threading).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "kiln/interpreter.h"
#include "kiln/status.h"
#include "kiln/types.h"

namespace kiln_py {

namespace py = pybind11;

// kiln.Error: every failing Kiln call raises it with the Status text
// ("invalid argument: model.kiln: op 3: ...").
class KilnError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void Raise(const kiln::Status& s) { throw KilnError(s.ToString()); }
inline void Check(const kiln::Status& s) {
  if (!s.ok()) Raise(s);
}

// Kiln dtype <-> NumPy dtype. bf16 has no NumPy type. NumpyName needs no GIL.
inline const char* NumpyName(kiln::fb::DataType t) {
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

inline bool ToNumpy(kiln::fb::DataType t, py::dtype* out) {
  const char* name = NumpyName(t);
  if (!name) return false;
  *out = py::dtype(name);
  return true;
}

inline bool FromNumpy(const py::dtype& d, kiln::fb::DataType* out) {
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

}  // namespace kiln_py
