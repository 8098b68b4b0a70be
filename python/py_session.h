// kiln.Session (pybind11): a kiln::Session of a PyInterpreter, inputs and
// outputs as NumPy arrays; the GIL released while it resizes, copies and
// runs, the Interpreter's mutex held meanwhile (kiln_module.cpp).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kiln/session.h"
#include "py_common.h"

namespace kiln_py {

class PySession {
 public:
  PySession(std::shared_ptr<PyInterpreter> owner, kiln::Session* session);
  ~PySession();
  PySession(const PySession&) = delete;
  PySession& operator=(const PySession&) = delete;
  std::set<std::string> state_inputs_;  // bind_state's inputs: run() needs no array for them

  std::vector<std::string> Names(bool inputs);

  // An input's shape as the model declares it (-1 for a symbolic dim), for
  // an input the session has not been resized to yet (its tensor has no
  // shape then); empty for a scalar or a name the model lacks.
  std::vector<int64_t> DeclaredShape(const std::string& name) const;

  // name -> (shape, dtype) of the inputs or outputs as the session has them
  // now (-1 for a dimension not yet known).
  py::dict Info(bool inputs);

  std::string Placement();

  // Times `loops` calls of kiln::Session::run() after `warmup`, in C++ on
  // whatever the inputs hold now (bench/python_overhead.py: the C++ side).
  std::vector<double> TimeRuns(int loops, int warmup);

  std::vector<PyOpInfo> Ops();

  std::map<std::string, std::string> Devices();

  void Resize(const std::map<std::string, std::vector<int64_t>>& shapes);

  py::dict Run(const py::dict& feeds, const py::object& outputs);

  void BindState(const std::string& output, const std::string& input);

  void ResetState();

  // kiln::Session::getWeight: a copy of the weight's current value.
  py::array GetWeight(const std::string& name);

  // kiln::Session::setWeight: the array must have the weight's dtype and shape.
  void SetWeight(const std::string& name, const py::array& value);

  kiln::Session* raw() const { return session_; }
  const std::shared_ptr<PyInterpreter>& owner() const { return owner_; }

  py::dict RunWithCallback(const py::dict& feeds, const py::object& before, const py::object& after,
                           const py::object& outputs);

 private:
  // An array the caller gave for an output (run(outputs=...)).
  struct GivenOutput {
    std::string name;
    py::array array;
    std::vector<int64_t> shape;
    void* data;
  };

  py::dict RunImpl(const py::dict& feeds, const py::object& outputs, const py::object& before,
                   const py::object& after);

  template <typename Feeds>
  kiln::Status Execute(const Feeds& in, const std::vector<GivenOutput>& given, const kiln::TensorCallBack* before,
                       const kiln::TensorCallBack* after, std::vector<std::string>* out_names,
                       std::vector<py::array>* out_arrays);

  std::shared_ptr<PyInterpreter> owner_;
  kiln::Session* session_;
};

}  // namespace kiln_py
