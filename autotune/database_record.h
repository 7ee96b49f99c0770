// Conversions of the tuning database's values: measurements checked and turned into stored rows,
// stored rows read back (or found unreadable, with the reason), and the JSON-lines form of
// workloads and records that export_jsonl writes and merge reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "autotune/database_sql.h"
#include "kiln/autotune/database.h"

namespace kiln::autotune::detail {

using Json = nlohmann::ordered_json;

// A hash as stored: 16 lowercase hex digits.
std::string hash_text(uint64_t hash);
// The hash of stored text, or nothing when it is not 16 hex digits.
std::optional<uint64_t> parse_hash_text(const std::string& text);

// Raises a kValue error naming `api` unless the target key has a canonical target string (no
// surrounding spaces) and a device model.
void check_target_key(const std::string& api, const TargetKey& target);
sql::TargetColumns target_columns(const TargetKey& target);

// Checks measurement `index` (of `count`) of a commit_records batch and returns it as a record to
// store: trace in compact JSON, target kind, median and spread derived. Raises a kValue error
// naming the measurement and the field. The workload's existence is checked by the caller.
Record checked_record(const Measurement& measurement, size_t index, size_t count);

sql::RecordRow row_of_record(const Record& record);
sql::WorkloadRow row_of_workload(const Workload& workload);

// A stored row read back, or nothing with `problem` saying which column cannot be read.
std::optional<Record> record_of_row(const sql::RecordRow& row, std::string* problem);
std::optional<Workload> workload_of_row(const sql::WorkloadRow& row, std::string* problem);

// JSON-lines export. The first line is the header; then {"workload": {...}} lines, whose "id"
// the {"record": {..., "workload": id}} lines refer to.
constexpr const char* kExportFormat = "kiln.autotune.tuning_records";
constexpr int kExportFormatVersion = 1;
Json export_header();
// Whether `line` is an export header this kiln reads; otherwise `problem` says why not.
bool is_export_header(const Json& line, std::string* problem);
Json json_of_workload(const Workload& workload);
Json json_of_record(const Record& record);
// A workload or record line read back (ids as in the file), or nothing with `problem` set.
std::optional<Workload> workload_of_json(const Json& line, std::string* problem);
std::optional<Record> record_of_json(const Json& line, std::string* problem);

}  // namespace kiln::autotune::detail
