// What other binding files of kiln.autotune share with the runner's (autotune_runner_py.cc):
// the C++ runner behind a kiln.autotune.LocalRunner, and running a long call interruptibly.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

#include "kiln/autotune/runner.h"

namespace kiln::python {

// The runner of a LocalRunner's core (LocalRunner._core); a kType error naming `api` for
// anything else, a kValue error when it was closed.
autotune::Runner& runner_of(pybind11::handle core, const char* api);

// Runs `body` without the GIL. While the runner waits, Python's signal handlers run every
// 100 ms; when one raises (KeyboardInterrupt on Ctrl-C), the runner stops its batch and the
// exception is returned (None otherwise). An error `body` throws after such an interruption
// gives way to the handler's exception, which is raised.
template <class Body>
pybind11::object run_interruptible(autotune::Runner& runner, Body body) {
  namespace py = pybind11;
  py::object pending = py::none();  // touched with the GIL held only
  runner.set_interrupt_check([&pending] {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() == 0) return false;
    py::error_already_set raised;
    pending = raised.value();
    return true;
  });
  std::exception_ptr failure;
  {
    py::gil_scoped_release release;
    try {
      body();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  runner.set_interrupt_check(nullptr);
  if (failure && !pending.is_none()) {
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(pending.ptr())), pending.ptr());
    throw py::error_already_set();
  }
  if (failure) std::rethrow_exception(failure);
  return pending;
}

}  // namespace kiln::python
