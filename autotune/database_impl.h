// The state behind kiln::autotune::Database, shared by database.cc (workloads, records, lookups)
// and database_exchange.cc (export and merge).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autotune/database_sql.h"
#include "autotune/database_sqlite.h"
#include "kiln/autotune/database.h"

namespace kiln::autotune {

struct Database::Impl {
  std::string path;
  OpenOptions options;
  std::unique_ptr<sqlite::Connection> connection;  // empty once closed
  std::unique_ptr<sql::Queries> queries;
  std::vector<std::string> warnings;  // not yet taken
  std::set<std::string> warned;       // every warning given, so that each is given once

  // Raises a kValue error naming `api` when the database was closed.
  void check_open(const char* api) const;
  // Adds a warning unless it was given before.
  void warn(const std::string& message);
  // The warning for a row that cannot be read.
  void warn_unreadable(const char* what, std::optional<int64_t> id, const std::string& problem);

  // The workload of this key version with `hash` that `matches` confirms, or nothing. Rows that
  // cannot be read are skipped with a warning.
  std::optional<Workload> find_workload(uint64_t hash, const WorkloadMatch& matches);
  // Adds a workload of this key version (inside the caller's transaction) and returns it.
  Workload add_workload(uint64_t hash, const std::string& func_json, const std::string& created);
  // Records read back in order; unreadable rows are skipped with a warning.
  std::vector<Record> read_records(const sql::RecordSelection& selection);
};

}  // namespace kiln::autotune
