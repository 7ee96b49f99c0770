// The extension module kiln._kiln: translates kiln's C++ errors to the Python classes of
// kiln.error and calls the binding function of each submodule.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "kiln/support/error.h"

namespace py = pybind11;

namespace {

const char* python_class_of(kiln::ErrorKind kind) {
  switch (kind) {
    case kiln::ErrorKind::kValue:
      return "KilnValueError";
    case kiln::ErrorKind::kType:
      return "KilnTypeError";
    case kiln::ErrorKind::kIndex:
      return "KilnIndexError";
    case kiln::ErrorKind::kSchedule:
      return "ScheduleError";
    case kiln::ErrorKind::kRuntime:
      return "KilnRuntimeError";
    case kiln::ErrorKind::kInternal:
      return "InternalError";
  }
  return "KilnError";
}

}  // namespace

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln's C++ core; use the kiln package rather than this module.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const kiln::Error& e) {
      py::object cls = py::module_::import("kiln.error").attr(python_class_of(e.kind()));
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
  auto ir = m.def_submodule("ir", "IR nodes, modules, structural comparison");
  kiln::python::bind_ir(ir);
  auto te = m.def_submodule("te", "Tensor expressions: placeholder, compute, reducers");
  kiln::python::bind_te(te);
  auto tir = m.def_submodule("tir", "TensorIR tools: the reference interpreter");
  kiln::python::bind_interpreter(tir);
  kiln::python::bind_tir_passes(tir);
  auto schedule = m.def_submodule("schedule", "tir.Schedule, its handles and traces");
  kiln::python::bind_schedule(schedule);
  auto arith = m.def_submodule("arith", "Arithmetic analysis: Analyzer, IntSet, iterator maps");
  kiln::python::bind_arithmetic(arith);
  auto runtime = m.def_submodule("runtime", "Compiled modules, their functions and kiln.nd arrays");
  kiln::python::bind_runtime(runtime);
  auto driver = m.def_submodule("driver", "The build driver: kiln.build");
  kiln::python::bind_driver(driver);
  auto autotune = m.def_submodule("autotune", "The auto-tuner: its tuning database");
  kiln::python::bind_autotune(autotune);
  kiln::python::bind_autotune_space(autotune);
  kiln::python::bind_autotune_runner(autotune);
  kiln::python::bind_autotune_cost_model(autotune);
  kiln::python::bind_autotune_search(autotune);
  kiln::python::bind_target(m);
}
