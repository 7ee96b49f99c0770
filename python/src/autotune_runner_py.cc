// Python binding of the local runner (kiln._kiln.autotune.LocalRunnerCore, wrapped by
// kiln.autotune.LocalRunner in kiln/autotune/runner.py). Long calls release the GIL and let
// Python's signal handlers run while they wait, so that Ctrl-C stops a batch: the exception the
// handler raised comes back next to the results measured before it.
#include <pybind11/stl.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "autotune_runner_py.h"
#include "bindings.h"
#include "convert.h"
#include "kiln/autotune/runner.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

using autotune::Runner;

// A kiln.autotune.RunnerConfig (the wrapper's dataclass), read field by field.
autotune::RunnerConfig to_config(py::handle obj) {
  const char* api = "kiln.autotune.RunnerConfig";
  auto as_int = [&](const char* name) {
    return static_cast<int>(to_int(obj.attr(name), api, name, INT32_MIN, INT32_MAX));
  };
  autotune::RunnerConfig c;
  c.warmup = as_int("warmup");
  c.number = as_int("number");
  c.repeat = as_int("repeat");
  c.min_repeat_ms = to_float(obj.attr("min_repeat_ms"), api, "min_repeat_ms");
  c.flush_cache = to_bool(obj.attr("flush_cache"), api, "flush_cache");
  c.vary_placement = to_bool(obj.attr("vary_placement"), api, "vary_placement");
  c.timeout_s = to_float(obj.attr("timeout_s"), api, "timeout_s");
  c.build_timeout_s = to_float(obj.attr("build_timeout_s"), api, "build_timeout_s");
  c.reference_timeout_s = to_float(obj.attr("reference_timeout_s"), api, "reference_timeout_s");
  c.check_correctness = to_bool(obj.attr("check_correctness"), api, "check_correctness");
  c.rtol = to_float(obj.attr("rtol"), api, "rtol");
  c.atol = to_float(obj.attr("atol"), api, "atol");
  c.num_threads = as_int("num_threads");
  c.build_workers = as_int("build_workers");
  c.seed = static_cast<uint64_t>(to_int(obj.attr("seed"), api, "seed", 0, INT64_MAX));
  std::optional<std::string> worker = to_optional_path(obj.attr("worker"), api, "worker");
  c.worker = worker.value_or("");
  c.object_cache_dir =
      to_optional_path(obj.attr("object_cache_dir"), api, "object_cache_dir").value_or("");
  py::handle plan = obj.attr("fault_plan");
  if (!plan.is_none()) {
    if (!py::isinstance<py::dict>(plan)) raise_type_error(api, "fault_plan", "a dict", plan);
    for (auto [index, fault] : py::reinterpret_borrow<py::dict>(plan)) {
      c.fault_plan[to_int(index, api, "fault_plan's index", 0, INT64_MAX)] =
          to_str(fault, api, "fault_plan's fault");
    }
  }
  return c;
}

// A module to measure: an IRModule, a tir.Schedule (its module) or a PrimFunc (as "main").
ir::Ref<ir::IRModule> to_candidate_module(py::handle obj, const char* api,
                                          const std::string& param) {
  FuncOrModule given = to_func_or_module(obj, api, param.c_str());
  if (given.mod) return given.mod;
  auto mod = ir::make<ir::IRModule>();
  mod->functions["main"] = given.func;
  return mod;
}

// (module, fault) pairs from the wrapper.
std::vector<autotune::MeasureInput> to_batch(py::handle candidates, const char* api) {
  std::vector<autotune::MeasureInput> batch;
  size_t index = 0;
  for (py::handle pair : candidates) {
    py::tuple fields = pair.cast<py::tuple>();
    std::string param = "candidates[" + std::to_string(index++) + "]";
    std::string fault = to_str(fields[1], api, (param + ".fault").c_str());
    const std::vector<std::string>& faults = autotune::measure_faults();
    user_check(std::find(faults.begin(), faults.end(), fault) != faults.end())
        << api << ": " << param << ".fault must be one of '', 'crash', 'abort', 'hang', "
        << "'wrong_result' (a test hook), found '" << fault << "'";
    batch.emplace_back(to_candidate_module(fields[0], api, param), fault);
  }
  return batch;
}

py::list list_of(const std::vector<autotune::MeasureResult>& results) {
  py::list list;
  for (const autotune::MeasureResult& r : results) {
    py::dict d;
    d["status"] = autotune::status_name(r.status);
    d["run_secs"] = py::tuple(py::cast(r.run_secs));
    d["error"] = r.error;
    d["build_ms"] = r.build_ms;
    d["build_from_cache"] = r.build_from_cache;
    d["number"] = r.number;
    list.append(d);
  }
  return list;
}

// What Python holds: the runner, until close().
struct RunnerHandle {
  std::unique_ptr<Runner> runner;
};

Runner& live(RunnerHandle& handle, const char* api) {
  user_check(handle.runner != nullptr) << api << ": the runner was closed";
  return *handle.runner;
}

}  // namespace

autotune::Runner& runner_of(py::handle core, const char* api) {
  if (!py::isinstance<RunnerHandle>(core)) raise_type_error(api, "runner", "a LocalRunner", core);
  return live(core.cast<RunnerHandle&>(), api);
}

void bind_autotune_runner(py::module_& m) {
  py::class_<RunnerHandle>(m, "LocalRunnerCore", "A local runner (see kiln.autotune.LocalRunner).")
      .def(py::init([](py::handle config) {
             return RunnerHandle{autotune::make_local_runner(to_config(config))};
           }),
           "Creates a local runner from a kiln.autotune.RunnerConfig.")
      .def(
          "set_task",
          [](RunnerHandle& self, py::handle func, py::handle target, py::handle name,
             py::handle reference) {
            const char* api = "kiln.autotune.LocalRunner.set_task";
            Runner& runner = live(self, api);
            ir::Ref<ir::IRModule> mod = to_candidate_module(func, api, "func");
            user_check(mod->functions.size() == 1 || mod->functions.count("main") != 0)
                << api << ": func must be a PrimFunc or a module with one function (or 'main'), "
                << "found a module of " << mod->functions.size() << " functions";
            ir::Ref<ir::PrimFunc> f = mod->functions.count("main") != 0
                                          ? mod->functions.at("main")
                                          : mod->functions.begin()->second;
            autotune::TuneTask task = autotune::make_task(f, to_str(target, api, "target"),
                                                          to_str(name, api, "name"), 1.0, api);
            if (!reference.is_none()) {
              // (name, candidate) from LocalRunner.set_task: a schedule of func.
              py::tuple pair = reference.cast<py::tuple>();
              ir::Ref<ir::IRModule> scheduled = to_candidate_module(pair[1], api, "reference");
              user_check(scheduled->functions.size() == 1)
                  << api << ": reference must hold one function, found a module of "
                  << scheduled->functions.size();
              task.reference = autotune::ReferenceSchedule{to_str(pair[0], api, "reference's name"),
                                                           scheduled->functions.begin()->second};
            }
            py::object interrupted = run_interruptible(runner, [&] { runner.set_task(task); });
            if (!interrupted.is_none()) {
              PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(interrupted.ptr())),
                              interrupted.ptr());
              throw py::error_already_set();
            }
          },
          "Sets the task: computes the reference results of the untuned function, or of the "
          "(name, schedule) reference.")
      .def(
          "run",
          [](RunnerHandle& self, py::handle candidates, py::handle repeat) {
            const char* api = "kiln.autotune.LocalRunner.run";
            Runner& runner = live(self, api);
            std::vector<autotune::MeasureInput> batch = to_batch(candidates, api);
            int repeats = static_cast<int>(to_int(repeat, api, "repeat", INT32_MIN, INT32_MAX));
            std::vector<autotune::MeasureResult> results;
            py::object interrupted =
                run_interruptible(runner, [&] { results = runner.run(batch, repeats); });
            return py::make_tuple(list_of(results), interrupted);
          },
          "Measures (module, fault) pairs; returns (result dicts, the interrupting exception).")
      .def(
          "run_interleaved",
          [](RunnerHandle& self, py::handle candidates, py::handle rounds) {
            const char* api = "kiln.autotune.LocalRunner.run_interleaved";
            Runner& runner = live(self, api);
            std::vector<autotune::MeasureInput> batch = to_batch(candidates, api);
            int count = static_cast<int>(to_int(rounds, api, "rounds", INT32_MIN, INT32_MAX));
            std::vector<autotune::MeasureResult> results;
            py::object interrupted =
                run_interruptible(runner, [&] { results = runner.run_interleaved(batch, count); });
            return py::make_tuple(list_of(results), interrupted);
          },
          "Times (module, fault) pairs in interleaved rounds; returns (result dicts, exception).")
      .def(
          "target_key",
          [](RunnerHandle& self) {
            autotune::TargetKey key =
                live(self, "kiln.autotune.LocalRunner.target_key").target_key();
            return py::make_tuple(key.target, key.device_model, key.device_features,
                                  key.num_threads);
          },
          "(target, device model, device features, thread count) of the measurements.")
      .def(
          "close", [](RunnerHandle& self) { self.runner.reset(); },
          "Stops the worker process; the runner cannot be used afterwards.");
  m.def("cpu_model_name", &autotune::cpu_model_name, "This machine's CPU model name.");
}

}  // namespace kiln::python
