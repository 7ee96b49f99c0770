// The binding functions of kiln._kiln's submodules, one per file, called by module.cc.
#pragma once

#include <pybind11/pybind11.h>

namespace kiln::python {

void bind_ir(pybind11::module_& m);  // ir_py.cc: node classes, IRModule, dtype helpers
void bind_te(pybind11::module_& m);  // te_py.cc: tensors, compute, reducers, create_prim_func
void bind_interpreter(pybind11::module_& tir);   // interpreter_py.cc: tir.interpret
void bind_tir_passes(pybind11::module_& tir);    // tir_py.cc: tir.lower, tir.transform.*
void bind_schedule(pybind11::module_& m);        // schedule_py.cc: tir.Schedule, handles, traces
void bind_arithmetic(pybind11::module_& m);      // arith_py.cc: Analyzer, IntSet, iter maps
void bind_runtime(pybind11::module_& m);         // runtime_py.cc: modules, calls, kiln.nd arrays
void bind_driver(pybind11::module_& m);          // driver_py.cc: build
void bind_autotune(pybind11::module_& m);        // autotune_py.cc: the tuning database
void bind_autotune_space(pybind11::module_& m);  // autotune_space_py.cc: the design space
void bind_target(pybind11::module_& parent);     // target_py.cc: kiln._kiln.target, Target

// autotune_runner_py.cc: the local runner (kiln.autotune.LocalRunner's core)
void bind_autotune_runner(pybind11::module_& m);
// autotune_cost_model_py.cc: program features, the analytical prior and the cost model
void bind_autotune_cost_model(pybind11::module_& m);
// autotune_search_py.cc: the search and the task scheduler (kiln.autotune.tune_tasks' core)
void bind_autotune_search(pybind11::module_& m);

}  // namespace kiln::python
