// Python binding of the search (kiln._kiln.autotune.tune_tasks, best_record), wrapped by
// kiln/autotune/tune.py: tuning runs without the GIL; the progress callback and Ctrl-C are
// served between batches and while the runner waits.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <fstream>
#include <memory>
#include <optional>

#include "autotune_runner_py.h"
#include "bindings.h"
#include "convert.h"
#include "kiln/autotune/cost_model.h"
#include "kiln/autotune/search.h"
#include "kiln/codegen/target.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

// The search's settings from the dict of a kiln.autotune.TuneConfig.
autotune::SearchConfig to_search_config(const py::dict& d, const char* api) {
  autotune::SearchConfig c;
  auto get = [&](const char* key, int64_t low) { return to_int(d[key], api, key, low, INT32_MAX); };
  c.max_trials_global = get("max_trials_global", 0);
  c.max_trials_per_task =
      d["max_trials_per_task"].is_none() ? c.max_trials_global : get("max_trials_per_task", 0);
  c.num_trials_per_iter = static_cast<int>(get("num_trials_per_iter", 1));
  c.population = static_cast<int>(get("population", 1));
  c.random_per_round = static_cast<int>(get("random_per_round", 0));
  c.children_per_round = static_cast<int>(get("children_per_round", 0));
  c.seeds_from_database = static_cast<int>(get("seeds_from_database", 0));
  c.epsilon = to_float(d["epsilon"], api, "epsilon");
  user_check(c.epsilon >= 0 && c.epsilon <= 1)
      << api << ": epsilon must be in [0, 1], found " << c.epsilon;
  c.screen_repeat = static_cast<int>(get("screen_repeat", 1));
  c.final_pool_k = static_cast<int>(get("final_pool_k", 0));
  c.final_pool_rounds = static_cast<int>(get("final_pool_rounds", 0));
  c.final_top_k = static_cast<int>(get("final_top_k", 0));
  c.final_rounds = static_cast<int>(get("final_rounds", 0));
  c.local_search_trials = static_cast<int>(get("local_search_trials", 0));
  c.drift_check_every = static_cast<int>(get("drift_check_every", 0));
  c.drift_threshold = to_float(d["drift_threshold"], api, "drift_threshold");
  user_check(c.drift_threshold >= 0 && c.drift_threshold < 1)
      << api << ": drift_threshold must be in [0, 1), found " << c.drift_threshold;
  c.seed = static_cast<uint64_t>(get("seed", 0));
  c.search_threads = static_cast<int>(get("search_threads", 0));
  if (!d["time_budget_s"].is_none()) {
    c.time_budget_s = to_float(d["time_budget_s"], api, "time_budget_s");
    user_check(c.time_budget_s > 0)
        << api << ": time_budget_s must be a positive number of seconds or None, found "
        << c.time_budget_s;
  }
  c.space.num_threads = static_cast<int>(get("num_threads", 0));
  py::handle intrinsics = d["tensor_intrinsics"];
  if (!intrinsics.is_none()) {
    if (!py::isinstance<py::list>(intrinsics) && !py::isinstance<py::tuple>(intrinsics)) {
      raise_type_error(api, "tensor_intrinsics", "a list of str", intrinsics);
    }
    c.space.tensor_intrinsics.clear();
    for (py::handle name : intrinsics) {
      c.space.tensor_intrinsics.push_back(to_str(name, api, "tensor_intrinsics[i]"));
    }
  }
  return c;
}

py::dict dict_of(const autotune::TaskResult& r) {
  py::dict d;
  d["task"] = r.task;
  d["trials"] = r.trials;
  d["trials_this_run"] = r.trials_this_run;
  d["best_seconds"] = r.best_seconds;
  d["best_gflops"] = r.best_gflops;
  d["best_trace_json"] = r.best_trace_json;
  d["best_so_far"] = r.best_so_far;
  d["seconds_to_90_percent"] = r.seconds_to_90_percent;
  d["rejections"] = r.rejections;
  d["failures"] = r.failures;
  d["drift"] = r.drift;
  d["drift_flags"] = r.drift_flags;
  d["out_of_time"] = r.out_of_time;
  return d;
}

}  // namespace

void bind_autotune_search(py::module_& m) {
  m.def(
      "tune_tasks",
      [](py::handle funcs, py::handle names, py::handle weights, py::handle baselines,
         py::handle references, py::handle spaces, py::handle target, py::handle database,
         py::handle runner, py::handle cost_model, py::handle config, py::handle log_path,
         py::object progress) {
        const char* api = "kiln.autotune.tune_tasks";
        std::vector<autotune::TuneTask> tasks;
        std::string target_text = to_str(target, api, "target");
        py::list func_list = py::reinterpret_borrow<py::list>(funcs);
        py::list name_list = py::reinterpret_borrow<py::list>(names);
        py::list weight_list = py::reinterpret_borrow<py::list>(weights);
        py::list baseline_list = py::reinterpret_borrow<py::list>(baselines);
        py::list reference_list = py::reinterpret_borrow<py::list>(references);
        py::list space_list = py::reinterpret_borrow<py::list>(spaces);
        for (size_t i = 0; i < func_list.size(); ++i) {
          tasks.push_back(autotune::make_task(
              to_node<ir::PrimFunc>(func_list[i], api, "a task's function", "a PrimFunc"),
              target_text, to_str(name_list[i], api, "a task's name"),
              to_float(weight_list[i], api, "a task's weight"), api));
          // (name, trace JSON text) of the task's baseline schedule, or None.
          py::handle baseline = baseline_list[i];
          if (!baseline.is_none()) {
            py::tuple pair = baseline.cast<py::tuple>();
            tasks.back().baseline =
                autotune::BaselineSchedule{to_str(pair[0], api, "a baseline's name"),
                                           to_str(pair[1], api, "a baseline's trace")};
          }
          // (name, scheduled PrimFunc) that computes the task's reference results, or None.
          py::handle reference = reference_list[i];
          if (!reference.is_none()) {
            py::tuple pair = reference.cast<py::tuple>();
            tasks.back().reference = autotune::ReferenceSchedule{
                to_str(pair[0], api, "a reference schedule's name"),
                to_node<ir::PrimFunc>(pair[1], api, "a reference schedule", "a PrimFunc")};
          }
          // (name, [trace JSON text]) of the task's user design space, or None (the rules).
          py::handle space = space_list[i];
          if (!space.is_none()) {
            py::tuple pair = space.cast<py::tuple>();
            autotune::UserSpace user{to_str(pair[0], api, "a design space's name"), {}};
            for (py::handle sketch : pair[1]) {
              user.sketches.push_back(to_str(sketch, api, "a design space's sketch"));
            }
            tasks.back().space = std::move(user);
          }
        }
        if (!py::isinstance<autotune::Database>(database)) {
          raise_type_error(api, "database", "a kiln.autotune.Database", database);
        }
        if (!py::isinstance<autotune::CostModel>(cost_model)) {
          raise_type_error(api, "cost_model", "a kiln.autotune.CostModel", cost_model);
        }
        autotune::Database& db = database.cast<autotune::Database&>();
        autotune::Runner& run = runner_of(runner, api);
        autotune::CostModel& model = cost_model.cast<autotune::CostModel&>();
        autotune::SearchConfig search = to_search_config(config.cast<py::dict>(), api);
        std::string path = to_str(log_path, api, "log_path");
        std::unique_ptr<std::ofstream> log;
        if (!path.empty()) {
          log = std::make_unique<std::ofstream>(path, std::ios::app);
          log->setf(std::ios::unitbuf);  // each line on disk at once: `tail -f` follows a run
        }
        // The callback runs with the GIL; an exception in it (Ctrl-C raised there) stops the
        // run after the batch, and is raised once the tuning returns.
        py::object pending = py::none();
        autotune::ProgressCallback callback = [&](const autotune::Progress& p) {
          py::gil_scoped_acquire gil;
          try {
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            if (!progress.is_none()) {
              // A plain object with the fields of autotune::Progress.
              progress(py::module_::import("types").attr("SimpleNamespace")(
                  py::arg("task") = p.task, py::arg("trials") = p.trials,
                  py::arg("trials_this_run") = p.trials_this_run,
                  py::arg("max_trials") = p.max_trials, py::arg("best_seconds") = p.best_seconds,
                  py::arg("best_gflops") = p.best_gflops, py::arg("elapsed_s") = p.elapsed_s,
                  py::arg("recall") = p.recall));
            }
            return true;
          } catch (py::error_already_set& e) {
            pending = e.value();
            return false;
          }
        };
        std::vector<autotune::TaskResult> results;
        py::object interrupted = run_interruptible(run, [&] {
          results = autotune::tune_tasks(tasks, db, run, model, search, log.get(), callback);
        });
        if (interrupted.is_none()) interrupted = pending;
        if (!interrupted.is_none()) {
          PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(interrupted.ptr())),
                          interrupted.ptr());
          throw py::error_already_set();
        }
        py::list out;
        for (const autotune::TaskResult& r : results) out.append(dict_of(r));
        return out;
      },
      py::arg("funcs"), py::arg("names"), py::arg("weights"), py::arg("baselines"),
      py::arg("references"), py::arg("spaces"), py::arg("target"), py::arg("database"),
      py::arg("runner"), py::arg("cost_model"), py::arg("config"), py::arg("log_path"),
      py::arg("progress"),
      "Tunes functions into a database (see kiln.autotune.tune_tasks); baselines holds, per "
      "function, None or the (name, trace JSON text) of its baseline schedule; references, None "
      "or the (name, scheduled PrimFunc) that computes its reference results; spaces, None (the "
      "rules) or the (name, [trace JSON text]) of its user design space's sketches. Returns "
      "result dicts.");
  m.def(
      "count_flops",
      [](py::handle func) {
        return autotune::count_flops(
            *to_node<ir::PrimFunc>(func, "kiln.autotune.count_flops", "func", "a PrimFunc"));
      },
      py::arg("func"),
      "The arithmetic operations of one call of a PrimFunc (a multiply-add counts 2; loops of "
      "symbolic extent count once).");
  m.def(
      "best_record",
      [](py::handle database, py::handle func, py::handle target, py::handle num_threads,
         const char* api) -> py::object {
        if (!py::isinstance<autotune::Database>(database)) {
          raise_type_error(api, "database", "a kiln.autotune.Database", database);
        }
        autotune::TuneTask task =
            autotune::make_task(to_node<ir::PrimFunc>(func, api, "func", "a PrimFunc"),
                                to_str(target, api, "target"), "", 1.0, api);
        int threads = static_cast<int>(to_int(num_threads, api, "num_threads", 0, INT32_MAX));
        autotune::TargetKey key = autotune::local_target_key(task.target, threads);
        std::optional<autotune::Record> best =
            autotune::best_record(database.cast<autotune::Database&>(), task, key);
        if (!best) return py::none();
        return py::make_tuple(best->trace_json, best->target.num_threads, key.num_threads);
      },
      py::arg("database"), py::arg("func"), py::arg("target"), py::arg("num_threads"),
      py::arg("api"),
      "(trace JSON text, thread count it was measured with, thread count looked up) of the best "
      "record of func on target on this machine's device for num_threads threads (else another "
      "count), or None. The count looked up is 1 for a GPU target.");
  m.def(
      "local_target_key",
      [](py::handle target, py::handle num_threads, const char* api) {
        int threads = static_cast<int>(to_int(num_threads, api, "num_threads", 0, INT32_MAX));
        autotune::TargetKey key = autotune::local_target_key(
            codegen::parse_target(to_str(target, api, "target")), threads);
        return py::make_tuple(key.target, key.device_model, key.device_features, key.num_threads);
      },
      py::arg("target"), py::arg("num_threads"), py::arg("api"),
      "(target, device model, device features, thread count): where records of target are "
      "measured here with num_threads threads (a GPU target: its device, 1 thread).");
  m.def(
      "task_key",
      [](py::handle database, py::handle func, py::handle target, py::handle num_threads,
         const char* api) {
        if (!py::isinstance<autotune::Database>(database)) {
          raise_type_error(api, "database", "a kiln.autotune.Database", database);
        }
        autotune::TuneTask task =
            autotune::make_task(to_node<ir::PrimFunc>(func, api, "workload", "a PrimFunc"),
                                to_str(target, api, "target"), "", 1.0, api);
        int threads = static_cast<int>(to_int(num_threads, api, "num_threads", 0, INT32_MAX));
        autotune::TargetKey key = autotune::local_target_key(task.target, threads);
        std::optional<autotune::Workload> workload =
            autotune::find_task_workload(database.cast<autotune::Database&>(), task);
        py::object id = workload ? py::object(py::int_(workload->id)) : py::none();
        return py::make_tuple(id, key.target, key.device_model, key.device_features,
                              key.num_threads);
      },
      py::arg("database"), py::arg("func"), py::arg("target"), py::arg("num_threads"),
      py::arg("api"),
      "(workload id or None, target, device model, device features, thread count) of func on "
      "target here.");
}

}  // namespace kiln::python
