// Python binding of program features and the cost model (kiln._kiln.autotune, wrapped by
// kiln/autotune/cost_model.py): features as NumPy arrays, the analytical prior, top-k recall,
// and CostModelCore, the XGBoost ranker, taking rows as 2-D float32 arrays.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "kiln/autotune/cost_model.h"
#include "kiln/autotune/features.h"
#include "kiln/codegen/target.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

using autotune::CostModel;
using autotune::CostModelOptions;
using FloatRows = py::array_t<float, py::array::c_style | py::array::forcecast>;

// A target string (parsed once per process) or a kiln._kiln.target.Target.
const codegen::Target& to_target(py::handle obj, const char* api) {
  if (py::isinstance<codegen::Target>(obj)) return obj.cast<const codegen::Target&>();
  std::string text = to_str(obj, api, "target");
  static std::map<std::string, codegen::Target> parsed;
  auto it = parsed.find(text);
  if (it == parsed.end()) it = parsed.emplace(text, codegen::parse_target(text)).first;
  return it->second;
}

ir::Ref<ir::PrimFunc> to_lowered(py::handle obj, const char* api) {
  return to_node<ir::PrimFunc>(obj, api, "lowered", "a lowered PrimFunc (kiln.tir.lower)");
}

autotune::MachineOptions to_machine(py::handle num_cores, const char* api) {
  autotune::MachineOptions options;
  if (!num_cores.is_none()) {
    options.num_cores = static_cast<int>(to_int(num_cores, api, "num_cores", 1, 1 << 20));
  }
  return options;
}

// A 2-D array of rows (a 1-D array is one row) as C++ rows.
std::vector<std::vector<float>> to_rows(py::handle obj, const char* api) {
  FloatRows array = FloatRows::ensure(obj);
  if (!array) {
    PyErr_Clear();
    raise_type_error(api, "features", "a 2-D array of feature rows", obj);
  }
  if (array.ndim() == 1) array = array.reshape({py::ssize_t(1), array.shape(0)});
  if (array.ndim() != 2) {
    user_error(ErrorKind::kValue) << api << ": features must be a 2-D array (one row per "
                                  << "candidate), found " << array.ndim() << " dimensions";
  }
  std::vector<std::vector<float>> rows(array.shape(0));
  auto view = array.unchecked<2>();
  for (py::ssize_t i = 0; i < array.shape(0); ++i) {
    rows[i].assign(view.data(i, 0), view.data(i, 0) + array.shape(1));
  }
  return rows;
}

py::array_t<double> to_array(const std::vector<double>& values) {
  py::array_t<double> out(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

py::dict dict_of(const autotune::PriorEstimate& e) {
  py::dict d;
  d["cycles"] = e.cycles;
  d["operations"] = e.operations;
  d["throughput"] = e.throughput;
  d["compute_cycles"] = e.compute_cycles;
  d["memory_cycles"] = e.memory_cycles;
  d["latency_cycles"] = e.latency_cycles;
  d["parallel_efficiency"] = e.parallel_efficiency;
  d["accumulator_registers"] = e.accumulator_registers;
  d["spilled_registers"] = e.spilled_registers;
  return d;
}

CostModelOptions to_options(const py::dict& kwargs, const char* api) {
  CostModelOptions o;
  for (const auto& [key, value] : kwargs) {
    std::string name = to_str(key, api, "option name");
    const char* param = name.c_str();
    if (name == "num_rounds") {
      o.num_rounds = static_cast<int>(to_int(value, api, param, 1, 100000));
    } else if (name == "max_depth") {
      o.max_depth = static_cast<int>(to_int(value, api, param, 1, 64));
    } else if (name == "learning_rate") {
      o.learning_rate = to_float(value, api, param);
    } else if (name == "num_threads") {
      o.num_threads = static_cast<int>(to_int(value, api, param, 0, 1 << 16));
    } else if (name == "seed") {
      o.seed = static_cast<int>(to_int(value, api, param, 0, INT32_MAX));
    } else if (name == "objective") {
      o.objective = to_str(value, api, param);
    } else if (name == "half_weight_rows") {
      o.half_weight_rows = to_float(value, api, param);
    } else if (name == "min_group_rows") {
      o.min_group_rows = static_cast<int>(to_int(value, api, param, 1, INT32_MAX));
    } else if (name == "recall_k") {
      o.recall_k = static_cast<int>(to_int(value, api, param, 1, INT32_MAX));
    } else {
      user_error(ErrorKind::kType) << api << ": unknown option '" << name << "'; the options "
                                   << "are num_rounds, max_depth, learning_rate, num_threads, "
                                   << "seed, objective, half_weight_rows, min_group_rows, "
                                   << "recall_k";
    }
  }
  return o;
}

py::dict dict_of(const CostModelOptions& o) {
  py::dict d;
  d["num_rounds"] = o.num_rounds;
  d["max_depth"] = o.max_depth;
  d["learning_rate"] = o.learning_rate;
  d["num_threads"] = o.num_threads;
  d["seed"] = o.seed;
  d["objective"] = o.objective;
  d["half_weight_rows"] = o.half_weight_rows;
  d["min_group_rows"] = o.min_group_rows;
  d["recall_k"] = o.recall_k;
  return d;
}

std::optional<int64_t> to_group(py::handle obj, const char* api) {
  if (obj.is_none()) return std::nullopt;
  return to_int(obj, api, "group");
}

}  // namespace

void bind_autotune_cost_model(py::module_& m) {
  m.def(
      "feature_names", [] { return autotune::feature_names(); },
      "The names of the features, in the order extract_features writes them.");
  m.def(
      "extract_features",
      [](py::handle lowered, py::handle target, py::handle num_cores) {
        const char* api = "kiln.autotune.extract_features";
        auto func = to_lowered(lowered, api);
        const codegen::Target& t = to_target(target, api);
        std::vector<float> features =
            autotune::extract_features(func, t, to_machine(num_cores, api), api);
        py::array_t<float> out(static_cast<py::ssize_t>(features.size()));
        std::copy(features.begin(), features.end(), out.mutable_data());
        return out;
      },
      py::arg("lowered"), py::arg("target"), py::arg("num_cores") = py::none(),
      "The feature vector of a lowered function for a target.");
  m.def(
      "estimate_prior",
      [](py::handle lowered, py::handle target, py::handle num_cores) {
        const char* api = "kiln.autotune.estimate_prior";
        auto func = to_lowered(lowered, api);
        const codegen::Target& t = to_target(target, api);
        return dict_of(autotune::estimate_prior(func, t, to_machine(num_cores, api), api));
      },
      py::arg("lowered"), py::arg("target"), py::arg("num_cores") = py::none(),
      "The analytical prior's estimate of a lowered function, as a dict.");
  m.def(
      "top_k_recall",
      [](py::handle scores, py::handle seconds, py::handle k) {
        const char* api = "kiln.autotune.top_k_recall";
        return autotune::top_k_recall(to_float_list(scores, api, "scores"),
                                      to_float_list(seconds, api, "seconds"),
                                      static_cast<int>(to_int(k, api, "k", 1, INT32_MAX)), api);
      },
      py::arg("scores"), py::arg("seconds"), py::arg("k"), "|top-k by score ∩ top-k by time| / k.");

  py::class_<CostModel>(m, "CostModelCore", "The XGBoost ranker (see kiln.autotune.CostModel).")
      .def(py::init([](const py::kwargs& kwargs) {
             return CostModel(to_options(kwargs, "kiln.autotune.CostModel"));
           }),
           "Creates an empty model with the given options.")
      .def(
          "update",
          [](CostModel& model, py::handle rows, py::handle seconds, py::handle group) {
            const char* api = "CostModel.update";
            auto result = model.update(to_rows(rows, api), to_float_list(seconds, api, "seconds"),
                                       to_int(group, api, "group"));
            py::dict d;
            d["rows"] = result.rows;
            d["holdout_recall"] = result.holdout_recall;
            d["trained"] = result.trained;
            d["train_seconds"] = result.train_seconds;
            return d;
          },
          py::arg("features"), py::arg("seconds"), py::arg("group"),
          "Adds measured rows of a group and retrains.")
      .def(
          "predict",
          [](const CostModel& model, py::handle rows, py::handle priors, py::handle group) {
            const char* api = "CostModel.predict";
            std::vector<double> prior_values;
            if (!priors.is_none()) prior_values = to_float_list(priors, api, "priors");
            return to_array(model.predict(to_rows(rows, api), prior_values, to_group(group, api)));
          },
          py::arg("features"), py::arg("priors"), py::arg("group"),
          "Blended scores, higher = faster.")
      .def(
          "predict_model",
          [](const CostModel& model, py::handle rows) {
            return to_array(model.predict_model(to_rows(rows, "CostModel.predict_model")));
          },
          py::arg("features"), "XGBoost's raw scores (empty when untrained).")
      .def(
          "xgboost_weight",
          [](const CostModel& model, py::handle group) {
            return model.xgboost_weight(to_group(group, "CostModel.xgboost_weight"));
          },
          py::arg("group"), "The weight of XGBoost in the blend.")
      .def(
          "save",
          [](const CostModel& model, py::handle dir) {
            auto path = to_optional_path(dir, "CostModel.save", "dir");
            user_check(path.has_value()) << "CostModel.save: dir must be a path, found None";
            model.save(*path);
          },
          py::arg("dir"), "Writes the model and its rows to a directory.")
      .def(
          "load",
          [](CostModel& model, py::handle dir) {
            auto path = to_optional_path(dir, "CostModel.load", "dir");
            user_check(path.has_value()) << "CostModel.load: dir must be a path, found None";
            model.load(*path);
          },
          py::arg("dir"), "Replaces the model by the one saved in a directory.")
      .def("num_rows", py::overload_cast<>(&CostModel::num_rows, py::const_),
           "Measured rows, all groups.")
      .def(
          "num_group_rows",
          [](const CostModel& model, py::handle group) {
            return model.num_rows(to_int(group, "CostModel.num_rows", "group"));
          },
          py::arg("group"), "Measured rows of one group.")
      .def("trained", &CostModel::trained, "Whether an XGBoost model is trained.")
      .def(
          "options", [](const CostModel& model) { return dict_of(model.options()); },
          "The options, as a dict.");
}

}  // namespace kiln::python
