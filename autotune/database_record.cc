// The tuning database's value conversions (see database_record.h): checking measurements,
// reading rows back with a reason for each unreadable one, and the JSON-lines form.
#include "autotune/database_record.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "kiln/support/error.h"

namespace kiln::autotune {

const char* status_name(RecordStatus status) {
  switch (status) {
    case RecordStatus::kOk:
      return "ok";
    case RecordStatus::kBuildError:
      return "build_error";
    case RecordStatus::kRunError:
      return "run_error";
    case RecordStatus::kWrongResult:
      return "wrong_result";
    case RecordStatus::kTimeout:
      return "timeout";
    case RecordStatus::kCrash:
      return "crash";
  }
  return "unknown";
}

std::optional<RecordStatus> parse_status(const std::string& name) {
  for (RecordStatus status :
       {RecordStatus::kOk, RecordStatus::kBuildError, RecordStatus::kRunError,
        RecordStatus::kWrongResult, RecordStatus::kTimeout, RecordStatus::kCrash}) {
    if (name == status_name(status)) return status;
  }
  return std::nullopt;
}

namespace detail {
namespace {

// A JSON text parsed, or a discarded value when it is not JSON.
Json parse_json(const std::string& text) {
  return Json::parse(text, nullptr, false);
}

// Whether every run time is a positive finite number of seconds.
bool are_run_times(const std::vector<double>& run_secs) {
  return std::all_of(run_secs.begin(), run_secs.end(),
                     [](double t) { return std::isfinite(t) && t > 0; });
}

// Median and relative spread of the run times, both empty when there are none.
void summarize(const std::vector<double>& run_secs, Record* record) {
  record->median.reset();
  record->spread.reset();
  if (run_secs.empty()) return;
  std::vector<double> sorted = run_secs;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  record->median = median;
  record->spread = (sorted.back() - sorted.front()) / median;
}

std::string target_kind_of(const std::string& target) {
  return target.substr(0, target.find(' '));
}

// Run times from their stored JSON array, or nothing when it is not an array of positive finite
// numbers.
std::optional<std::vector<double>> parse_run_secs(const std::string& text) {
  Json json = parse_json(text);
  if (!json.is_array()) return std::nullopt;
  std::vector<double> run_secs;
  for (const Json& value : json) {
    if (!value.is_number()) return std::nullopt;
    run_secs.push_back(value.get<double>());
  }
  if (!are_run_times(run_secs)) return std::nullopt;
  return run_secs;
}

// The value of `key` in a JSON object as text (a string) or an integer, or nothing.
std::optional<std::string> text_field(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}
std::optional<int64_t> int_field(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}
// A nested JSON value of the export as compact text, or nothing when it is absent.
std::optional<std::string> json_field(const Json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  return it->dump();
}

}  // namespace

std::string hash_text(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016" PRIx64, hash);
  return text;
}

std::optional<uint64_t> parse_hash_text(const std::string& text) {
  if (text.size() != 16) return std::nullopt;
  uint64_t hash = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    hash = hash * 16 + static_cast<uint64_t>(digit);
  }
  return hash;
}

void check_target_key(const std::string& api, const TargetKey& target) {
  bool trimmed = !target.target.empty() &&
                 !std::isspace(static_cast<unsigned char>(target.target.front())) &&
                 !std::isspace(static_cast<unsigned char>(target.target.back()));
  user_check(trimmed) << api
                      << ": target must be a canonical target string such as 'llvm -mcpu=znver4', "
                         "found '"
                      << target.target << "'";
  user_check(!target.device_model.empty())
      << api << ": device_model must name the device the record is for (a CPU model name or a "
      << "GPU's name), found an empty string for target '" << target.target << "'";
  user_check(target.num_threads >= 0)
      << api << ": num_threads must be the number of threads the kernel ran on (>= 1), or 0 when "
      << "it is unknown, found " << target.num_threads << " for target '" << target.target << "'";
}

sql::TargetColumns target_columns(const TargetKey& target) {
  return {target.target, target.device_model, target.device_features, target.num_threads};
}

Record checked_record(const Measurement& measurement, size_t index, size_t count) {
  std::string api = "kiln.autotune.Database.commit_records: measurement " + std::to_string(index) +
                    " of " + std::to_string(count) + " (candidate " +
                    hash_text(measurement.candidate_hash) + ")";
  // Step 1. The target key and the trace.
  check_target_key(api, measurement.target);
  Json trace = parse_json(measurement.trace_json);
  user_check(trace.is_object()) << api << ": trace_json must be a JSON object (a schedule trace), "
                                << "found '" << measurement.trace_json.substr(0, 80) << "'";
  Json search = parse_json(measurement.search_json);
  user_check(search.is_object()) << api << ": search_json must be a JSON object, found '"
                                 << measurement.search_json.substr(0, 80) << "'";
  // Step 2. The run times: positive and finite, and present when the candidate ran correctly.
  user_check(are_run_times(measurement.run_secs))
      << api << ": run_secs must be positive finite seconds, found "
      << Json(measurement.run_secs).dump();
  user_check(measurement.status != RecordStatus::kOk || !measurement.run_secs.empty())
      << api << ": a record with status 'ok' needs its run times, found an empty run_secs";
  // Step 3. Derive what the database stores besides the measurement.
  Record record;
  static_cast<Measurement&>(record) = measurement;
  record.trace_json = trace.dump();
  record.search_json = search.dump();
  record.target_kind = target_kind_of(measurement.target.target);
  summarize(measurement.run_secs, &record);
  return record;
}

sql::RecordRow row_of_record(const Record& record) {
  sql::RecordRow row;
  row.workload_id = record.workload_id;
  row.target = record.target.target;
  row.target_kind = record.target_kind;
  row.device_model = record.target.device_model;
  row.device_features = record.target.device_features;
  row.trace_json = record.trace_json;
  row.candidate_hash = hash_text(record.candidate_hash);
  row.run_secs_json = Json(record.run_secs).dump();
  row.median = record.median;
  row.spread = record.spread;
  row.status = status_name(record.status);
  row.error = record.error;
  row.kiln_version = record.kiln_version;
  row.ir_format_version = record.ir_format_version;
  if (!record.created.empty()) row.created = record.created;
  row.search_json = record.search_json;
  row.num_threads = record.target.num_threads;
  return row;
}

sql::WorkloadRow row_of_workload(const Workload& workload) {
  sql::WorkloadRow row;
  row.key_version = workload.key_version;
  row.structural_hash = hash_text(workload.structural_hash);
  row.func_json = workload.func_json;
  if (!workload.created.empty()) row.created = workload.created;
  return row;
}

std::optional<Record> record_of_row(const sql::RecordRow& row, std::string* problem) {
  // Step 1. Every column has its storage type.
  auto missing = [&](const char* column) {
    *problem = "its " + std::string(column) + " column is missing or of the wrong type";
    return std::nullopt;
  };
  if (!row.workload_id) return missing("workload_id");
  if (!row.target || !row.target_kind || !row.device_model || !row.device_features) {
    return missing("target");
  }
  if (!row.trace_json) return missing("trace_json");
  if (!row.run_secs_json) return missing("run_secs_json");
  if (!row.status) return missing("status");
  if (!row.error || !row.kiln_version) return missing("error or kiln_version");
  if (!row.ir_format_version) return missing("ir_format_version");
  if (!row.search_json) return missing("search_json");
  if (!row.num_threads) return missing("num_threads");
  if (row.target->empty() || row.device_model->empty()) {
    *problem = "its target or device_model is empty";
    return std::nullopt;
  }
  if (*row.num_threads < 0 || *row.num_threads > INT32_MAX) {
    *problem = "its num_threads " + std::to_string(*row.num_threads) + " is not a thread count";
    return std::nullopt;
  }
  // Step 2. Every encoded column decodes.
  std::optional<uint64_t> hash = parse_hash_text(row.candidate_hash.value_or(""));
  if (!hash) {
    *problem = "its candidate_hash '" + row.candidate_hash.value_or("") + "' is not 16 hex digits";
    return std::nullopt;
  }
  std::optional<RecordStatus> status = parse_status(*row.status);
  if (!status) {
    *problem = "its status '" + *row.status + "' is not a record status";
    return std::nullopt;
  }
  if (!parse_json(*row.trace_json).is_object()) {
    *problem = "its trace_json is not a JSON object";
    return std::nullopt;
  }
  if (!parse_json(*row.search_json).is_object()) {
    *problem = "its search_json is not a JSON object";
    return std::nullopt;
  }
  std::optional<std::vector<double>> run_secs = parse_run_secs(*row.run_secs_json);
  if (!run_secs) {
    *problem = "its run_secs_json is not a JSON array of positive seconds";
    return std::nullopt;
  }
  // Step 3. Assemble.
  Record record;
  record.id = row.id.value_or(0);
  record.workload_id = *row.workload_id;
  record.target = {*row.target, *row.device_model, *row.device_features,
                   static_cast<int>(*row.num_threads)};
  record.target_kind = *row.target_kind;
  record.trace_json = *row.trace_json;
  record.candidate_hash = *hash;
  record.run_secs = *run_secs;
  record.median = row.median;
  record.spread = row.spread;
  record.status = *status;
  record.error = *row.error;
  record.kiln_version = *row.kiln_version;
  record.ir_format_version = static_cast<int>(*row.ir_format_version);
  record.created = row.created.value_or("");
  record.search_json = *row.search_json;
  return record;
}

std::optional<Workload> workload_of_row(const sql::WorkloadRow& row, std::string* problem) {
  std::optional<uint64_t> hash = parse_hash_text(row.structural_hash.value_or(""));
  if (!row.key_version || !hash || !row.func_json) {
    *problem = "its key_version, structural_hash or func_json column cannot be read";
    return std::nullopt;
  }
  Workload workload;
  workload.id = row.id.value_or(0);
  workload.key_version = static_cast<int>(*row.key_version);
  workload.structural_hash = *hash;
  workload.func_json = *row.func_json;
  workload.created = row.created.value_or("");
  return workload;
}

Json export_header() {
  return Json{{"format", kExportFormat},
              {"format_version", kExportFormatVersion},
              {"schema_version", sql::current_schema_version()}};
}

bool is_export_header(const Json& line, std::string* problem) {
  if (!line.is_object() || text_field(line, "format") != std::string(kExportFormat)) {
    *problem = "its first line is not the header of a kiln tuning-record export";
    return false;
  }
  std::optional<int64_t> version = int_field(line, "format_version");
  if (!version || *version > kExportFormatVersion) {
    *problem = "it is an export of format version " +
               (version ? std::to_string(*version) : std::string("(missing)")) +
               ", which this kiln (format version " + std::to_string(kExportFormatVersion) +
               ") cannot read";
    return false;
  }
  return true;
}

Json json_of_workload(const Workload& workload) {
  return Json{{"workload",
               {{"id", workload.id},
                {"key_version", workload.key_version},
                {"structural_hash", hash_text(workload.structural_hash)},
                {"func_json", workload.func_json},
                {"created", workload.created}}}};
}

Json json_of_record(const Record& record) {
  Json trace = parse_json(record.trace_json);
  Json search = parse_json(record.search_json);
  Json median = record.median ? Json(*record.median) : Json(nullptr);
  Json spread = record.spread ? Json(*record.spread) : Json(nullptr);
  return Json{{"record",
               {{"id", record.id},
                {"workload", record.workload_id},
                {"target", record.target.target},
                {"target_kind", record.target_kind},
                {"device_model", record.target.device_model},
                {"device_features", record.target.device_features},
                {"num_threads", record.target.num_threads},
                {"trace", trace},
                {"candidate_hash", hash_text(record.candidate_hash)},
                {"run_secs", record.run_secs},
                {"median", median},
                {"spread", spread},
                {"status", status_name(record.status)},
                {"error", record.error},
                {"kiln_version", record.kiln_version},
                {"ir_format_version", record.ir_format_version},
                {"created", record.created},
                {"search", search}}}};
}

std::optional<Workload> workload_of_json(const Json& line, std::string* problem) {
  if (!line.is_object() || !line.contains("workload") || !line["workload"].is_object()) {
    *problem = "it is not a {\"workload\": {...}} line";
    return std::nullopt;
  }
  const Json& object = line["workload"];
  sql::WorkloadRow row;
  row.id = int_field(object, "id");
  row.key_version = int_field(object, "key_version");
  row.structural_hash = text_field(object, "structural_hash");
  row.func_json = text_field(object, "func_json");
  row.created = text_field(object, "created");
  if (!row.id) {
    *problem = "its id is missing";
    return std::nullopt;
  }
  return workload_of_row(row, problem);
}

std::optional<Record> record_of_json(const Json& line, std::string* problem) {
  // The line is read as a stored row would be, so that both have the same checks.
  if (!line.is_object() || !line.contains("record") || !line["record"].is_object()) {
    *problem = "it is not a {\"record\": {...}} line";
    return std::nullopt;
  }
  const Json& object = line["record"];
  sql::RecordRow row;
  row.id = int_field(object, "id");
  row.workload_id = int_field(object, "workload");
  row.target = text_field(object, "target");
  row.target_kind = text_field(object, "target_kind");
  row.device_model = text_field(object, "device_model");
  row.device_features = text_field(object, "device_features");
  row.trace_json = json_field(object, "trace");
  row.candidate_hash = text_field(object, "candidate_hash");
  row.run_secs_json = json_field(object, "run_secs");
  row.status = text_field(object, "status");
  row.error = text_field(object, "error");
  row.kiln_version = text_field(object, "kiln_version");
  row.ir_format_version = int_field(object, "ir_format_version");
  row.created = text_field(object, "created");
  // A line without search metadata has none; one without a thread count (written by a kiln of
  // schema version 2 or older) has an unknown one.
  row.search_json = json_field(object, "search").value_or("{}");
  row.num_threads =
      object.contains("num_threads") ? int_field(object, "num_threads") : std::optional<int64_t>(0);
  std::optional<Record> record = record_of_row(row, problem);
  // The median and spread are derived again rather than trusted from the file.
  if (record) summarize(record->run_secs, &*record);
  return record;
}

}  // namespace detail
}  // namespace kiln::autotune
