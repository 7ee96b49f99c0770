// Moving records between tuning databases: export_jsonl writes a JSON-lines file, merge adds the
// workloads and records of another database file or export, skipping what is already present and
// what this kiln cannot use.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "autotune/database_impl.h"
#include "autotune/database_record.h"
#include "kiln/autotune/database.h"
#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

// What a merge reads from its source: every readable workload and record, of every version, with
// the source's own ids.
struct Source {
  std::vector<Workload> workloads;
  std::vector<Record> records;
  int64_t unreadable = 0;
};

std::string dump_line(const detail::Json& json) {
  // Invalid UTF-8 in a caller's text becomes U+FFFD rather than an exception halfway through.
  return json.dump(-1, ' ', false, detail::Json::error_handler_t::replace) + "\n";
}

// Whether the file starts with SQLite's header string; raises when it cannot be read.
bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  runtime_check(in.good()) << "kiln.autotune.Database.merge: cannot read '" << path
                           << "'; check that the file exists and is readable";
  char header[16] = {};
  in.read(header, sizeof(header));
  return in.gcount() == sizeof(header) && std::memcmp(header, "SQLite format 3", 16) == 0;
}

void skip(Database::Impl& impl, Source& source, const std::string& what,
          const std::string& problem) {
  ++source.unreadable;
  impl.warn("kiln.autotune.Database.merge: " + what + " is skipped: " + problem);
}

// Step 1 for a database file: a snapshot copied into memory and brought to this schema version
// there, so that the source file is never changed.
Source read_database(Database::Impl& impl, const std::string& path) {
  double timeout = impl.options.busy_timeout_s;
  sqlite::Connection file(path, true, timeout);
  sqlite::Connection copy(":memory:", false, timeout, path);
  sqlite::copy_database(file, copy);
  sql::prepare_schema(copy);
  sql::Queries queries(copy);
  Source source;
  for (const sql::WorkloadRow& row : queries.select_workloads(std::nullopt)) {
    std::string problem;
    if (std::optional<Workload> workload = detail::workload_of_row(row, &problem)) {
      source.workloads.push_back(std::move(*workload));
    } else {
      skip(impl, source, "workload " + std::to_string(row.id.value_or(0)) + " of '" + path + "'",
           problem);
    }
  }
  queries.select_records({}, [&](const sql::RecordRow& row) {
    std::string problem;
    if (std::optional<Record> record = detail::record_of_row(row, &problem)) {
      source.records.push_back(std::move(*record));
    } else {
      skip(impl, source, "record " + std::to_string(row.id.value_or(0)) + " of '" + path + "'",
           problem);
    }
    return true;
  });
  return source;
}

// Step 1 for a JSON-lines export: every line read on its own, so that one bad line costs only
// itself.
Source read_jsonl(Database::Impl& impl, const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  std::string problem;
  bool is_export = detail::is_export_header(detail::Json::parse(text, nullptr, false), &problem);
  runtime_check(is_export) << "kiln.autotune.Database.merge: '" << path
                           << "' is neither a kiln tuning database nor a JSON-lines export of "
                           << "one: " << problem;
  Source source;
  for (int64_t number = 2; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = "line " + std::to_string(number) + " of '" + path + "'";
    detail::Json line = detail::Json::parse(text, nullptr, false);
    if (line.is_object() && line.contains("workload")) {
      if (std::optional<Workload> workload = detail::workload_of_json(line, &problem)) {
        source.workloads.push_back(std::move(*workload));
        continue;
      }
    } else if (line.is_object() && line.contains("record")) {
      if (std::optional<Record> record = detail::record_of_json(line, &problem)) {
        source.records.push_back(std::move(*record));
        continue;
      }
    } else {
      problem = line.is_discarded() ? "it is not JSON" : "it is neither a workload nor a record";
    }
    skip(impl, source, where, problem);
  }
  return source;
}

}  // namespace

int64_t Database::export_jsonl(const std::string& path) {
  const char* api = "kiln.autotune.Database.export_jsonl";
  impl_->check_open(api);
  // The export is written beside its path and renamed into place when complete, so that a
  // failure never leaves a truncated export under the name.
  std::string partial = path + ".partial";
  std::ofstream out(partial, std::ios::trunc);
  runtime_check(out.good()) << api << ": cannot write '" << partial
                            << "'; check that its directory exists and is writable";
  struct RemovePartial {
    const std::string& file;
    bool done = false;
    ~RemovePartial() {
      if (!done) std::remove(file.c_str());
    }
  } remove_partial{partial};
  // One read transaction: the export is one consistent snapshot even while others write.
  sqlite::Transaction snapshot(*impl_->connection, "exporting", sqlite::Transaction::kRead);
  out << dump_line(detail::export_header());
  std::set<int64_t> exported;
  for (const sql::WorkloadRow& row : impl_->queries->select_workloads(std::nullopt)) {
    std::string problem;
    if (std::optional<Workload> workload = detail::workload_of_row(row, &problem)) {
      out << dump_line(detail::json_of_workload(*workload));
      exported.insert(workload->id);
    } else {
      impl_->warn_unreadable("workload", row.id, problem);
    }
  }
  int64_t written = 0;
  for (const Record& record : impl_->read_records({})) {
    if (!exported.count(record.workload_id)) continue;  // its workload was warned about
    out << dump_line(detail::json_of_record(record));
    ++written;
  }
  snapshot.commit();
  out.close();
  runtime_check(!out.fail()) << api << ": writing '" << partial << "' failed (is the disk full?)";
  runtime_check(std::rename(partial.c_str(), path.c_str()) == 0)
      << api << ": cannot rename '" << partial << "' to '" << path << "'";
  remove_partial.done = true;
  return written;
}

MergeSummary Database::merge(const std::string& path, const WorkloadEqual& equal) {
  Impl& impl = *impl_;
  impl.check_open("kiln.autotune.Database.merge");
  WorkloadEqual same =
      equal ? equal : [](const std::string& a, const std::string& b) { return a == b; };
  // Step 1. Read the source completely before writing, so that a source that cannot be read
  // leaves this database untouched.
  Source source = is_sqlite_file(path) ? read_database(impl, path) : read_jsonl(impl, path);
  MergeSummary summary;
  summary.unreadable = source.unreadable;
  // Step 2. Map the source's workloads of this key version to ours, adding the missing ones.
  sqlite::Transaction transaction(*impl.connection, "merging into");
  std::map<int64_t, int64_t> workload_ids;
  std::set<int64_t> other_versions;
  for (const Workload& workload : source.workloads) {
    if (workload.key_version != impl.options.key_version) {
      other_versions.insert(workload.id);
      continue;
    }
    auto matches = [&](const std::string& stored) { return same(stored, workload.func_json); };
    std::optional<Workload> found = impl.find_workload(workload.structural_hash, matches);
    if (!found) {
      found = impl.add_workload(workload.structural_hash, workload.func_json, workload.created);
      ++summary.workloads_added;
    }
    workload_ids[workload.id] = found->id;
  }
  // Step 3. Add the records that are new here; keep their measurement times.
  for (Record record : source.records) {
    if (other_versions.count(record.workload_id) ||
        record.ir_format_version != impl.options.ir_format_version) {
      ++summary.incompatible;
      continue;
    }
    auto workload = workload_ids.find(record.workload_id);
    if (workload == workload_ids.end()) {
      skip(impl, source, "record " + std::to_string(record.id) + " of '" + path + "'",
           "its workload " + std::to_string(record.workload_id) + " is not in the file");
      ++summary.unreadable;
      continue;
    }
    record.workload_id = workload->second;
    // A candidate measured again (the search's final rounds) is another record: the
    // duplicates are the same measurement, by candidate and time.
    if (impl.queries->select_same_measurement(
            record.workload_id, detail::target_columns(record.target), record.ir_format_version,
            detail::hash_text(record.candidate_hash), record.created)) {
      ++summary.duplicates;
      continue;
    }
    impl.queries->insert_record(detail::row_of_record(record));
    ++summary.records_added;
  }
  transaction.commit();
  if (summary.incompatible > 0) {
    impl.warn("kiln.autotune.Database.merge: " + std::to_string(summary.incompatible) +
              " record(s) of '" + path + "' have another workload key version or IR format " +
              "version than this kiln's (key version " + std::to_string(impl.options.key_version) +
              ", IR format version " + std::to_string(impl.options.ir_format_version) +
              ") and were not merged");
  }
  return summary;
}

}  // namespace kiln::autotune
