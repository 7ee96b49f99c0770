// All of the tuning database's SQL, in one place: the schema, its migrations, and one named
// function per query over prepared statements that are reused. Rows travel as raw column values
// (WorkloadRow, RecordRow); database_record.h turns them into Workload and Record and decides
// what an unreadable row is.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotune/database_sqlite.h"

namespace kiln::autotune::sql {

// The schema version this kiln creates (PRAGMA user_version of the file).
int current_schema_version();

// Turns on foreign keys for this connection (SQLite's default is off, per connection).
void enable_foreign_keys(sqlite::Connection& connection);

// Puts the file in WAL mode, in which readers and one writer work at once, with synchronous FULL,
// so that a commit is on disk when it returns. Returns the journal mode in effect: "wal", or
// another where the file system cannot share memory between processes (a network file system).
std::string enable_wal(sqlite::Connection& connection);

// Step 1 of opening: checks that the file is empty or a kiln tuning database of this or an older
// schema version, then creates the schema or migrates it in one transaction. Raises a kRuntime
// error naming the path otherwise.
void prepare_schema(sqlite::Connection& connection);

// A workload row as stored; a column of the wrong storage type reads as empty.
struct WorkloadRow {
  std::optional<int64_t> id;
  std::optional<int64_t> key_version;
  std::optional<std::string> structural_hash;  // 16 lowercase hex digits
  std::optional<std::string> func_json;
  std::optional<std::string> created;  // empty on insert: the database's clock
};

// A record row as stored; a column of the wrong storage type reads as empty.
struct RecordRow {
  std::optional<int64_t> id;
  std::optional<int64_t> workload_id;
  std::optional<std::string> target;
  std::optional<std::string> target_kind;
  std::optional<std::string> device_model;
  std::optional<std::string> device_features;
  std::optional<std::string> trace_json;
  std::optional<std::string> candidate_hash;  // 16 lowercase hex digits
  std::optional<std::string> run_secs_json;   // a JSON array of seconds
  std::optional<double> median;
  std::optional<double> spread;
  std::optional<std::string> status;
  std::optional<std::string> error;
  std::optional<std::string> kiln_version;
  std::optional<int64_t> ir_format_version;
  std::optional<std::string> created;  // empty on insert: the database's clock
  std::optional<std::string> search_json;
  std::optional<int64_t> num_threads;  // 0: unknown
};

// The columns of a target key: the tuner's lookups match all four, best the first three.
struct TargetColumns {
  std::string target;
  std::string device_model;
  std::string device_features;
  int64_t num_threads = 0;
};

// Which records select_records visits; an empty field matches every row.
struct RecordSelection {
  std::optional<int64_t> workload_id;
  std::optional<TargetColumns> target;
  std::optional<std::string> status;
  std::optional<int64_t> ir_format_version;
  std::optional<int64_t> key_version;  // of the record's workload
};

// Called for each row in order; returns false to stop.
using RecordVisitor = std::function<bool(const RecordRow&)>;

class Queries {
 public:
  explicit Queries(sqlite::Connection& connection);
  ~Queries();
  Queries(const Queries&) = delete;
  Queries& operator=(const Queries&) = delete;

  // --- workloads
  std::vector<WorkloadRow> select_workloads_with_key(int64_t key_version, const std::string& hash);
  // Every workload of `key_version`, or of every version when it is empty; oldest first.
  std::vector<WorkloadRow> select_workloads(std::optional<int64_t> key_version);
  int64_t insert_workload(const WorkloadRow& row);
  bool workload_exists(int64_t id);
  // Number of workloads per key version, for the versions other than `key_version`.
  std::map<int64_t, int64_t> count_workloads_of_other_versions(int64_t key_version);

  // --- records
  int64_t insert_record(const RecordRow& row);
  void select_records(const RecordSelection& selection, const RecordVisitor& visit);
  // Ok records of the workload on the target and device (of every thread count) and IR format
  // version, fastest median first.
  void select_best(int64_t workload_id, const TargetColumns& target, int64_t ir_format_version,
                   const RecordVisitor& visit);
  bool select_is_measured(int64_t workload_id, const TargetColumns& target,
                          int64_t ir_format_version, const std::string& candidate_hash);
  // Whether the record of this candidate measured at `created` is here (merge's duplicates).
  bool select_same_measurement(int64_t workload_id, const TargetColumns& target,
                               int64_t ir_format_version, const std::string& candidate_hash,
                               const std::string& created);
  // Distinct candidate hash column values (empty for a value of the wrong storage type).
  std::vector<std::optional<std::string>> select_measured_hashes(int64_t workload_id,
                                                                 const TargetColumns& target,
                                                                 int64_t ir_format_version);
  int64_t count_records(int64_t workload_id, const TargetColumns& target,
                        int64_t ir_format_version);
  int64_t count_all_records();
  // Number of records per IR format version, for the versions other than `ir_format_version`.
  std::map<int64_t, int64_t> count_records_of_other_versions(int64_t ir_format_version);

 private:
  // The statement of `slot`, prepared from `sql` on first use.
  sqlite::Statement& prepared(int slot, const char* sql);
  sqlite::Connection& connection_;
  std::vector<std::unique_ptr<sqlite::Statement>> statements_;
};

}  // namespace kiln::autotune::sql
