// Python binding of the tuning database (kiln._kiln.autotune, wrapped by kiln.autotune.Database):
// a handle on an open database whose methods take plain values (ids, target keys, measurement
// fields) and return dicts that kiln/autotune/database.py turns into its record classes.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bindings.h"
#include "convert.h"
#include "kiln/autotune/database.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

using autotune::Database;

std::string api_of(const char* method) {
  return std::string("kiln.autotune.Database.") + method;
}

// A structural hash: a Python int in [0, 2**64).
uint64_t to_hash(py::handle obj, const std::string& api, const std::string& param) {
  if (py::isinstance<py::bool_>(obj) || !py::isinstance<py::int_>(obj)) {
    raise_type_error(api.c_str(), param.c_str(), "an int", obj);
  }
  unsigned long long value = PyLong_AsUnsignedLongLong(obj.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    user_error(ErrorKind::kValue) << api << ": " << param << " must be a 64-bit hash in [0, "
                                  << "2**64), found " << py::str(obj).cast<std::string>();
  }
  return value;
}

// A kiln.autotune.TargetKey (checked by the Python wrapper) as the C++ key.
autotune::TargetKey to_target(py::handle obj, const std::string& api) {
  autotune::TargetKey key;
  key.target = to_str(obj.attr("target"), api.c_str(), "target.target");
  key.device_model = to_str(obj.attr("device_model"), api.c_str(), "target.device_model");
  key.device_features = to_str(obj.attr("device_features"), api.c_str(), "target.device_features");
  key.num_threads = static_cast<int>(
      to_int(obj.attr("num_threads"), api.c_str(), "target.num_threads", INT32_MIN, INT32_MAX));
  return key;
}

autotune::RecordStatus to_status(py::handle obj, const std::string& api, const std::string& param) {
  std::string name = to_str(obj, api.c_str(), param.c_str());
  std::optional<autotune::RecordStatus> status = autotune::parse_status(name);
  user_check(status.has_value()) << api << ": " << param << " must be one of 'ok', "
                                 << "'build_error', 'run_error', 'wrong_result', 'timeout', "
                                 << "'crash', found '" << name << "'";
  return *status;
}

// One measurement as the Python wrapper passes it: a tuple (workload_id, target, trace_json,
// candidate_hash, run_secs, status, error, kiln_version, ir_format_version, search_json).
autotune::Measurement to_measurement(py::handle obj, size_t index, const std::string& api) {
  py::tuple fields = obj.cast<py::tuple>();
  std::string name = "measurements[" + std::to_string(index) + "].";
  auto param = [&](const char* field) { return name + field; };
  autotune::Measurement m;
  m.workload_id = to_int(fields[0], api.c_str(), param("workload").c_str());
  m.target = to_target(fields[1], api);
  m.trace_json = to_str(fields[2], api.c_str(), param("trace").c_str());
  m.candidate_hash = to_hash(fields[3], api, param("candidate_hash"));
  m.run_secs = to_float_list(fields[4], api.c_str(), param("run_secs").c_str());
  m.status = to_status(fields[5], api, param("status"));
  m.error = to_str(fields[6], api.c_str(), param("error").c_str());
  m.kiln_version = to_str(fields[7], api.c_str(), param("kiln_version").c_str());
  m.ir_format_version = static_cast<int>(
      to_int(fields[8], api.c_str(), param("ir_format_version").c_str(), INT32_MIN, INT32_MAX));
  m.search_json = to_str(fields[9], api.c_str(), param("search").c_str());
  return m;
}

py::dict dict_of(const autotune::Workload& w) {
  py::dict d;
  d["id"] = w.id;
  d["key_version"] = w.key_version;
  d["structural_hash"] = w.structural_hash;
  d["func_json"] = w.func_json;
  d["created"] = w.created;
  return d;
}

py::dict dict_of(const autotune::Record& r) {
  py::dict d;
  d["id"] = r.id;
  d["workload_id"] = r.workload_id;
  d["target"] = r.target.target;
  d["target_kind"] = r.target_kind;
  d["device_model"] = r.target.device_model;
  d["device_features"] = r.target.device_features;
  d["num_threads"] = r.target.num_threads;
  d["trace"] = r.trace_json;
  d["candidate_hash"] = r.candidate_hash;
  d["run_secs"] = py::tuple(py::cast(r.run_secs));
  d["median"] = r.median ? py::cast(*r.median) : py::none();
  d["spread"] = r.spread ? py::cast(*r.spread) : py::none();
  d["status"] = autotune::status_name(r.status);
  d["error"] = r.error;
  d["kiln_version"] = r.kiln_version;
  d["ir_format_version"] = r.ir_format_version;
  d["search"] = r.search_json;
  d["created"] = r.created;
  return d;
}

py::list list_of(const std::vector<autotune::Record>& records) {
  py::list list;
  for (const autotune::Record& r : records) list.append(dict_of(r));
  return list;
}

// `equal(stored_json, func_json)` from Python, with its result checked to be a bool.
autotune::WorkloadEqual to_equal(py::handle obj, const std::string& api) {
  if (obj.is_none()) return nullptr;
  if (!PyCallable_Check(obj.ptr())) {
    raise_type_error(api.c_str(), "equal", "a function (stored_json, func_json) -> bool", obj);
  }
  py::function equal = py::reinterpret_borrow<py::function>(obj);
  return [equal, api](const std::string& a, const std::string& b) {
    py::object result = equal(a, b);
    if (!py::isinstance<py::bool_>(result)) {
      raise_type_error(api.c_str(), "equal's result", "a bool", result);
    }
    return result.cast<bool>();
  };
}

autotune::WorkloadMatch to_match(py::handle equal, const std::string& func_json,
                                 const std::string& api) {
  autotune::WorkloadEqual same = to_equal(equal, api);
  if (!same) return [func_json](const std::string& stored) { return stored == func_json; };
  return [same, func_json](const std::string& stored) { return same(stored, func_json); };
}

}  // namespace

void bind_autotune(py::module_& m) {
  m.attr("WORKLOAD_KEY_VERSION") = autotune::kWorkloadKeyVersion;
  m.attr("IR_FORMAT_VERSION") = autotune::kIrFormatVersion;
  m.attr("SCHEMA_VERSION") = autotune::schema_version();

  py::class_<Database>(m, "DatabaseCore", "An open tuning database (see kiln.autotune.Database).")
      .def_static(
          "open",
          [](py::handle path, py::handle key_version, py::handle ir_format_version,
             py::handle busy_timeout) {
            const char* api = "kiln.autotune.Database";
            autotune::OpenOptions options;
            options.key_version =
                static_cast<int>(to_int(key_version, api, "key_version", INT32_MIN, INT32_MAX));
            options.ir_format_version = static_cast<int>(
                to_int(ir_format_version, api, "ir_format_version", INT32_MIN, INT32_MAX));
            options.busy_timeout_s = to_float(busy_timeout, api, "busy_timeout");
            std::optional<std::string> file = to_optional_path(path, api, "path");
            if (!file) raise_type_error(api, "path", "a path (str or os.PathLike)", path);
            return Database::open(*file, options);
          },
          "Opens (creating or migrating) the tuning database at a path.")
      .def_property_readonly("path", &Database::path, "The database file's path.")
      .def("close", &Database::close, "Closes the file.")
      .def(
          "commit_workload",
          [](Database& db, py::handle hash, py::handle func_json, py::handle equal) {
            std::string api = api_of("commit_workload");
            std::string func = to_str(func_json, api.c_str(), "func_json");
            return dict_of(db.commit_workload(to_hash(hash, api, "structural_hash"), func,
                                              to_match(equal, func, api)));
          },
          "Finds or adds a workload; returns it as a dict.")
      .def(
          "find_workload",
          [](Database& db, py::handle hash, py::handle func_json, py::handle equal) -> py::object {
            std::string api = api_of("find_workload");
            std::string func = to_str(func_json, api.c_str(), "func_json");
            auto found =
                db.find_workload(to_hash(hash, api, "structural_hash"), to_match(equal, func, api));
            return found ? py::object(dict_of(*found)) : py::none();
          },
          "Finds a workload; returns it as a dict, or None.")
      .def(
          "workloads",
          [](Database& db) {
            py::list list;
            for (const autotune::Workload& w : db.workloads()) list.append(dict_of(w));
            return list;
          },
          "Every workload of this key version, as dicts.")
      .def(
          "commit_records",
          [](Database& db, py::list measurements) {
            std::string api = api_of("commit_records");
            std::vector<autotune::Measurement> batch;
            for (size_t i = 0; i < measurements.size(); ++i) {
              batch.push_back(to_measurement(measurements[i], i, api));
            }
            return db.commit_records(batch);
          },
          "Stores a batch of measurement tuples in one transaction; returns the record ids.")
      .def(
          "records",
          [](Database& db, py::handle workload_id, py::handle target, py::handle status) {
            std::string api = api_of("records");
            autotune::RecordQuery query;
            query.workload_id = to_optional_int(workload_id, api.c_str(), "workload");
            if (!target.is_none()) query.target = to_target(target, api);
            if (!status.is_none()) query.status = to_status(status, api, "status");
            return list_of(db.records(query));
          },
          "The records that match, as dicts.")
      .def(
          "best",
          [](Database& db, py::handle workload_id, py::handle target, py::handle k) {
            std::string api = api_of("best");
            return list_of(db.best(to_int(workload_id, api.c_str(), "workload"),
                                   to_target(target, api), to_int(k, api.c_str(), "k")));
          },
          "The k fastest ok records, as dicts.")
      .def(
          "is_measured",
          [](Database& db, py::handle workload_id, py::handle target, py::handle hash) {
            std::string api = api_of("is_measured");
            return db.is_measured(to_int(workload_id, api.c_str(), "workload"),
                                  to_target(target, api), to_hash(hash, api, "candidate_hash"));
          },
          "Whether a candidate was measured.")
      .def(
          "measured_hashes",
          [](Database& db, py::handle workload_id, py::handle target) {
            std::string api = api_of("measured_hashes");
            return db.measured_hashes(to_int(workload_id, api.c_str(), "workload"),
                                      to_target(target, api));
          },
          "The measured candidate hashes.")
      .def(
          "count",
          [](Database& db, py::handle workload_id, py::handle target) {
            std::string api = api_of("count");
            return db.count(to_int(workload_id, api.c_str(), "workload"), to_target(target, api));
          },
          "The number of trials spent.")
      .def("size", &Database::size, "The number of records in the file.")
      .def(
          "export_jsonl",
          [](Database& db, py::handle path) {
            const char* api = "kiln.autotune.Database.export_jsonl";
            std::optional<std::string> file = to_optional_path(path, api, "path");
            if (!file) raise_type_error(api, "path", "a path (str or os.PathLike)", path);
            return db.export_jsonl(*file);
          },
          "Writes a JSON-lines export; returns the number of records.")
      .def(
          "merge",
          [](Database& db, py::handle path, py::handle equal) {
            std::string api = api_of("merge");
            std::optional<std::string> file = to_optional_path(path, api.c_str(), "path");
            if (!file) raise_type_error(api.c_str(), "path", "a path (str or os.PathLike)", path);
            autotune::MergeSummary s = db.merge(*file, to_equal(equal, api));
            py::dict d;
            d["workloads_added"] = s.workloads_added;
            d["records_added"] = s.records_added;
            d["duplicates"] = s.duplicates;
            d["incompatible"] = s.incompatible;
            d["unreadable"] = s.unreadable;
            return d;
          },
          "Merges another database file or export; returns the summary as a dict.")
      .def("take_warnings", &Database::take_warnings,
           "The warnings collected since the last call.");
}

}  // namespace kiln::python
