// The tuning database's SQL (see database_sql.h). Three sections: the schema, the migrations
// from older schema versions, and the queries, one function each.
#include "autotune/database_sql.h"

#include <string>
#include <vector>

#include "kiln/support/error.h"

namespace kiln::autotune::sql {

// ===== Schema ====================================================================================
//
// The file identifies itself with PRAGMA application_id (kApplicationId, "kiln" in ASCII) and
// gives its schema version in PRAGMA user_version. A new file gets kCreateSchema; an older one
// runs the migrations below, which must leave it exactly as kCreateSchema would (a test compares
// the two). Times are ISO 8601 UTC text; hashes are 16 lowercase hex digits (SQLite integers are
// signed, and text reads the same in the sqlite3 shell and in an export).
namespace {

constexpr int64_t kApplicationId = 0x6b696c6e;
constexpr int kSchemaVersion = 3;

constexpr const char* kCreateSchema = R"sql(
CREATE TABLE workloads (
  id INTEGER PRIMARY KEY,
  key_version INTEGER NOT NULL,      -- how structural_hash was computed (kWorkloadKeyVersion)
  structural_hash TEXT NOT NULL,     -- of the function: the lookup key
  func_json TEXT NOT NULL,           -- the serialized function: confirms a hash match
  created TEXT NOT NULL
);
CREATE INDEX workloads_by_key ON workloads (key_version, structural_hash);

CREATE TABLE records (
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads (id),
  target TEXT NOT NULL,              -- the full canonical target string, as given
  target_kind TEXT NOT NULL,         -- its first word: llvm, cuda …
  device_model TEXT NOT NULL,        -- CPU model name, or GPU name and compute capability
  device_features TEXT NOT NULL,
  trace_json TEXT NOT NULL,          -- the candidate's schedule trace
  candidate_hash TEXT NOT NULL,      -- structural hash of the scheduled function: the dedupe key
  run_secs_json TEXT NOT NULL,       -- every repeat, in seconds: a JSON array
  median REAL,                       -- of run_secs; NULL when there are none
  spread REAL,                       -- (max - min) / median of run_secs
  status TEXT NOT NULL,              -- ok, build_error, run_error, wrong_result, timeout, crash
  error TEXT NOT NULL,
  kiln_version TEXT NOT NULL,
  ir_format_version INTEGER NOT NULL,
  created TEXT NOT NULL,
  search_json TEXT NOT NULL DEFAULT '{}', -- the search's metadata (generation, predicted score)
  num_threads INTEGER NOT NULL DEFAULT 0  -- threads the kernel ran on; 0: unknown
);
-- is_measured, measured_hashes, count and merge's duplicate check.
CREATE INDEX records_by_candidate
  ON records (workload_id, target, device_model, device_features, num_threads, candidate_hash);
-- best: the fastest ok records of a workload on a target (of every thread count).
CREATE INDEX records_by_median
  ON records (workload_id, target, device_model, device_features, status, median);
)sql";

// ===== Migrations ================================================================================
//
// Each migration takes a file from schema version `from` to `from + 1`. They run in the open
// transaction of prepare_schema, so a failed migration leaves the file as it was.
struct Migration {
  int from;
  const char* sql;
};
const std::vector<Migration> kMigrations = {
    // Version 2: records keep the search's metadata of their candidate.
    {1, "ALTER TABLE records ADD COLUMN search_json TEXT NOT NULL DEFAULT '{}'"},
    // Version 3: records keep the thread count they were measured with (0: unknown for the
    // records already there), and the tuner's lookups match it.
    {2, R"sql(
ALTER TABLE records ADD COLUMN num_threads INTEGER NOT NULL DEFAULT 0;
DROP INDEX records_by_candidate;
CREATE INDEX records_by_candidate
  ON records (workload_id, target, device_model, device_features, num_threads, candidate_hash);
)sql"},
};

std::string quoted_path(const sqlite::Connection& connection) {
  return "'" + connection.path() + "'";
}

void migrate(sqlite::Connection& connection, int64_t from) {
  for (int64_t version = from; version < kSchemaVersion; ++version) {
    const Migration* step = nullptr;
    for (const Migration& migration : kMigrations) {
      if (migration.from == version) step = &migration;
    }
    internal_check(step != nullptr) << "kiln.autotune.Database: no migration from schema version "
                                    << version << " (a bug in kiln)";
    connection.execute(step->sql, "migrating the schema of");
  }
}

// What the file's header says about it.
struct FileState {
  int64_t application_id;
  int64_t version;
  int64_t tables;
};

FileState read_file_state(sqlite::Connection& connection) {
  FileState state;
  state.application_id = connection.query_int("PRAGMA application_id", "reading");
  state.version = connection.query_int("PRAGMA user_version", "reading");
  state.tables = connection.query_int(
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
      "reading the schema of");
  return state;
}

// Whether the file is new (create), current (nothing to do) or older (migrate); raises for a file
// of another program or of a newer version.
bool needs_schema_change(sqlite::Connection& connection, const FileState& state) {
  bool is_new = state.application_id == 0 && state.version == 0 && state.tables == 0;
  if (is_new) return true;
  runtime_check(state.application_id == kApplicationId)
      << "kiln.autotune.Database: " << quoted_path(connection)
      << " is a SQLite database but not a kiln tuning database (application id "
      << state.application_id << ", expected " << kApplicationId << ", and " << state.tables
      << " tables); give the path of a tuning database or of a new file";
  runtime_check(state.version >= 1)
      << "kiln.autotune.Database: " << quoted_path(connection)
      << " carries kiln's application id but no schema version, so kiln did not write it; give "
         "the path of a tuning database or of a new file";
  runtime_check(state.version <= kSchemaVersion)
      << "kiln.autotune.Database: " << quoted_path(connection) << " has schema version "
      << state.version << ", newer than version " << kSchemaVersion
      << " that this kiln reads; open it with a newer kiln or export it there (export_jsonl)";
  return state.version < kSchemaVersion;
}

}  // namespace

int current_schema_version() {
  return kSchemaVersion;
}

void enable_foreign_keys(sqlite::Connection& connection) {
  connection.execute("PRAGMA foreign_keys = ON", "configuring");
}

std::string enable_wal(sqlite::Connection& connection) {
  std::string mode = connection.query_text("PRAGMA journal_mode = WAL", "configuring");
  connection.execute("PRAGMA synchronous = FULL", "configuring");
  return mode;
}

void prepare_schema(sqlite::Connection& connection) {
  // Step 1. Read the header in a read transaction (one snapshot: another process may be creating
  // the schema right now), so that a current file needs no write lock.
  FileState first;
  {
    sqlite::Transaction snapshot(connection, "reading", sqlite::Transaction::kRead);
    first = read_file_state(connection);
    snapshot.commit();
  }
  if (!needs_schema_change(connection, first)) return;
  // Step 2. Take the write lock and read again: another process may have created or migrated the
  // file in between.
  sqlite::Transaction transaction(connection, "creating the schema of");
  FileState state = read_file_state(connection);
  if (!needs_schema_change(connection, state)) return;
  // Step 3. Create or migrate, then stamp the file.
  if (state.version == 0) {
    connection.execute(kCreateSchema, "creating the schema of");
  } else {
    migrate(connection, state.version);
  }
  connection.execute(("PRAGMA application_id = " + std::to_string(kApplicationId)).c_str(),
                     "creating the schema of");
  connection.execute(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str(),
                     "creating the schema of");
  transaction.commit();
}

// ===== Queries ===================================================================================
//
// Each function prepares its statement once (in its slot) and reuses it. Record queries select
// KILN_RECORD_COLUMNS, read by read_record_row. A target key is always ?2, ?3, ?4 and its thread
// count ?5 (best matches the first three only).
namespace {

enum Slot {
  kSelectWorkloadsWithKey,
  kSelectWorkloads,
  kInsertWorkload,
  kWorkloadExists,
  kCountWorkloadsOfOtherVersions,
  kInsertRecord,
  kSelectRecords,
  kSelectBest,
  kSelectIsMeasured,
  kSelectSameMeasurement,
  kSelectMeasuredHashes,
  kCountRecords,
  kCountAllRecords,
  kCountRecordsOfOtherVersions,
  kSlotCount,
};

#define KILN_RECORD_COLUMNS                                                           \
  " id, workload_id, target, target_kind, device_model, device_features, trace_json," \
  " candidate_hash, run_secs_json, median, spread, status, error, kiln_version,"      \
  " ir_format_version, created, search_json, num_threads "
#define KILN_WORKLOAD_COLUMNS " id, key_version, structural_hash, func_json, created "
#define KILN_SAME_DEVICE " target = ?2 AND device_model = ?3 AND device_features = ?4 "
#define KILN_SAME_TARGET KILN_SAME_DEVICE "AND num_threads = ?5 "
#define KILN_NOW " strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "

WorkloadRow read_workload_row(const sqlite::Statement& statement) {
  WorkloadRow row;
  row.id = statement.column_int(0);
  row.key_version = statement.column_int(1);
  row.structural_hash = statement.column_text(2);
  row.func_json = statement.column_text(3);
  row.created = statement.column_text(4);
  return row;
}

RecordRow read_record_row(const sqlite::Statement& statement) {
  RecordRow row;
  row.id = statement.column_int(0);
  row.workload_id = statement.column_int(1);
  row.target = statement.column_text(2);
  row.target_kind = statement.column_text(3);
  row.device_model = statement.column_text(4);
  row.device_features = statement.column_text(5);
  row.trace_json = statement.column_text(6);
  row.candidate_hash = statement.column_text(7);
  row.run_secs_json = statement.column_text(8);
  row.median = statement.column_double(9);
  row.spread = statement.column_double(10);
  row.status = statement.column_text(11);
  row.error = statement.column_text(12);
  row.kiln_version = statement.column_text(13);
  row.ir_format_version = statement.column_int(14);
  row.created = statement.column_text(15);
  row.search_json = statement.column_text(16);
  row.num_threads = statement.column_int(17);
  return row;
}

void bind_target(sqlite::Statement& statement, const TargetColumns& target) {
  statement.bind(2, target.target);
  statement.bind(3, target.device_model);
  statement.bind(4, target.device_features);
  statement.bind(5, target.num_threads);
}

std::map<int64_t, int64_t> read_version_counts(sqlite::Statement& statement, const char* doing) {
  std::map<int64_t, int64_t> counts;
  while (statement.step(doing)) {
    counts[statement.column_int(0).value_or(-1)] = statement.column_int(1).value_or(0);
  }
  return counts;
}

}  // namespace

Queries::Queries(sqlite::Connection& connection)
    : connection_(connection), statements_(kSlotCount) {}

Queries::~Queries() = default;

sqlite::Statement& Queries::prepared(int slot, const char* sql) {
  if (!statements_[slot]) statements_[slot] = std::make_unique<sqlite::Statement>(connection_, sql);
  return *statements_[slot];
}

std::vector<WorkloadRow> Queries::select_workloads_with_key(int64_t key_version,
                                                            const std::string& hash) {
  sqlite::Statement& statement = prepared(
      kSelectWorkloadsWithKey, "SELECT" KILN_WORKLOAD_COLUMNS
                               "FROM workloads WHERE key_version = ?1 AND structural_hash = ?2"
                               " ORDER BY id");
  sqlite::Statement::Use use(statement);
  statement.bind(1, key_version);
  statement.bind(2, hash);
  std::vector<WorkloadRow> rows;
  while (statement.step("looking up a workload in")) rows.push_back(read_workload_row(statement));
  return rows;
}

std::vector<WorkloadRow> Queries::select_workloads(std::optional<int64_t> key_version) {
  sqlite::Statement& statement =
      prepared(kSelectWorkloads, "SELECT" KILN_WORKLOAD_COLUMNS
                                 "FROM workloads WHERE ?1 IS NULL OR key_version = ?1 ORDER BY id");
  sqlite::Statement::Use use(statement);
  if (key_version) statement.bind(1, *key_version);
  std::vector<WorkloadRow> rows;
  while (statement.step("listing the workloads of")) rows.push_back(read_workload_row(statement));
  return rows;
}

int64_t Queries::insert_workload(const WorkloadRow& row) {
  sqlite::Statement& statement =
      prepared(kInsertWorkload,
               "INSERT INTO workloads (key_version, structural_hash, func_json, created)"
               " VALUES (?1, ?2, ?3, coalesce(?4," KILN_NOW "))");
  sqlite::Statement::Use use(statement);
  statement.bind(1, row.key_version.value());
  statement.bind(2, row.structural_hash.value());
  statement.bind(3, row.func_json.value());
  if (row.created) statement.bind(4, *row.created);
  statement.step("adding a workload to");
  return connection_.last_insert_id();
}

bool Queries::workload_exists(int64_t id) {
  sqlite::Statement& statement = prepared(kWorkloadExists, "SELECT 1 FROM workloads WHERE id = ?1");
  sqlite::Statement::Use use(statement);
  statement.bind(1, id);
  return statement.step("looking up a workload in");
}

std::map<int64_t, int64_t> Queries::count_workloads_of_other_versions(int64_t key_version) {
  sqlite::Statement& statement =
      prepared(kCountWorkloadsOfOtherVersions,
               "SELECT key_version, count(*) FROM workloads WHERE key_version IS NOT ?1"
               " GROUP BY key_version");
  sqlite::Statement::Use use(statement);
  statement.bind(1, key_version);
  return read_version_counts(statement, "counting the workloads of");
}

int64_t Queries::insert_record(const RecordRow& row) {
  sqlite::Statement& statement = prepared(
      kInsertRecord, "INSERT INTO records (" KILN_RECORD_COLUMNS
                     ") VALUES (NULL, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
                     " ?14, coalesce(?15," KILN_NOW "), ?16, ?17)");
  sqlite::Statement::Use use(statement);
  statement.bind(1, row.workload_id.value());
  statement.bind(2, row.target.value());
  statement.bind(3, row.target_kind.value());
  statement.bind(4, row.device_model.value());
  statement.bind(5, row.device_features.value());
  statement.bind(6, row.trace_json.value());
  statement.bind(7, row.candidate_hash.value());
  statement.bind(8, row.run_secs_json.value());
  statement.bind(9, row.median);
  statement.bind(10, row.spread);
  statement.bind(11, row.status.value());
  statement.bind(12, row.error.value());
  statement.bind(13, row.kiln_version.value());
  statement.bind(14, row.ir_format_version.value());
  if (row.created) statement.bind(15, *row.created);
  statement.bind(16, row.search_json.value());
  statement.bind(17, row.num_threads.value());
  statement.step("adding records to");
  return connection_.last_insert_id();
}

void Queries::select_records(const RecordSelection& selection, const RecordVisitor& visit) {
  // Listing only: the optional filters keep this one statement but cost a full scan, which
  // the tuning lookups below avoid.
  sqlite::Statement& statement = prepared(
      kSelectRecords, "SELECT" KILN_RECORD_COLUMNS
                      "FROM records WHERE (?1 IS NULL OR workload_id = ?1)"
                      " AND (?2 IS NULL OR (" KILN_SAME_TARGET
                      "))"
                      " AND (?6 IS NULL OR status = ?6) AND (?7 IS NULL OR ir_format_version = ?7)"
                      " AND (?8 IS NULL OR workload_id IN"
                      " (SELECT id FROM workloads WHERE key_version = ?8))"
                      " ORDER BY id");
  sqlite::Statement::Use use(statement);
  if (selection.workload_id) statement.bind(1, *selection.workload_id);
  if (selection.target) bind_target(statement, *selection.target);
  if (selection.status) statement.bind(6, *selection.status);
  if (selection.ir_format_version) statement.bind(7, *selection.ir_format_version);
  if (selection.key_version) statement.bind(8, *selection.key_version);
  while (statement.step("reading the records of")) {
    if (!visit(read_record_row(statement))) break;
  }
}

void Queries::select_best(int64_t workload_id, const TargetColumns& target,
                          int64_t ir_format_version, const RecordVisitor& visit) {
  sqlite::Statement& statement =
      prepared(kSelectBest, "SELECT" KILN_RECORD_COLUMNS
                            "FROM records WHERE workload_id = ?1 AND" KILN_SAME_DEVICE
                            "AND status = 'ok' AND median IS NOT NULL"
                            " AND ir_format_version = ?6 ORDER BY median, id");
  sqlite::Statement::Use use(statement);
  statement.bind(1, workload_id);
  bind_target(statement, target);
  statement.bind(6, ir_format_version);
  while (statement.step("reading the best records of")) {
    if (!visit(read_record_row(statement))) break;
  }
}

bool Queries::select_is_measured(int64_t workload_id, const TargetColumns& target,
                                 int64_t ir_format_version, const std::string& candidate_hash) {
  sqlite::Statement& statement = prepared(
      kSelectIsMeasured, "SELECT 1 FROM records WHERE workload_id = ?1 AND" KILN_SAME_TARGET
                         "AND candidate_hash = ?6 AND ir_format_version = ?7 LIMIT 1");
  sqlite::Statement::Use use(statement);
  statement.bind(1, workload_id);
  bind_target(statement, target);
  statement.bind(6, candidate_hash);
  statement.bind(7, ir_format_version);
  return statement.step("looking up a candidate in");
}

bool Queries::select_same_measurement(int64_t workload_id, const TargetColumns& target,
                                      int64_t ir_format_version, const std::string& candidate_hash,
                                      const std::string& created) {
  sqlite::Statement& statement =
      prepared(kSelectSameMeasurement,
               "SELECT 1 FROM records WHERE workload_id = ?1 AND" KILN_SAME_TARGET
               "AND candidate_hash = ?6 AND ir_format_version = ?7 AND created = ?8 LIMIT 1");
  sqlite::Statement::Use use(statement);
  statement.bind(1, workload_id);
  bind_target(statement, target);
  statement.bind(6, candidate_hash);
  statement.bind(7, ir_format_version);
  statement.bind(8, created);
  return statement.step("looking up a measurement in");
}

std::vector<std::optional<std::string>> Queries::select_measured_hashes(int64_t workload_id,
                                                                        const TargetColumns& target,
                                                                        int64_t ir_format_version) {
  sqlite::Statement& statement = prepared(
      kSelectMeasuredHashes,
      "SELECT DISTINCT candidate_hash FROM records WHERE workload_id = ?1 AND" KILN_SAME_TARGET
      "AND ir_format_version = ?6 ORDER BY candidate_hash");
  sqlite::Statement::Use use(statement);
  statement.bind(1, workload_id);
  bind_target(statement, target);
  statement.bind(6, ir_format_version);
  std::vector<std::optional<std::string>> hashes;
  while (statement.step("reading the measured candidates of")) {
    hashes.push_back(statement.column_text(0));
  }
  return hashes;
}

int64_t Queries::count_records(int64_t workload_id, const TargetColumns& target,
                               int64_t ir_format_version) {
  sqlite::Statement& statement = prepared(
      kCountRecords, "SELECT count(*) FROM records WHERE workload_id = ?1 AND" KILN_SAME_TARGET
                     "AND ir_format_version = ?6");
  sqlite::Statement::Use use(statement);
  statement.bind(1, workload_id);
  bind_target(statement, target);
  statement.bind(6, ir_format_version);
  statement.step("counting the records of");
  return statement.column_int(0).value_or(0);
}

int64_t Queries::count_all_records() {
  sqlite::Statement& statement = prepared(kCountAllRecords, "SELECT count(*) FROM records");
  sqlite::Statement::Use use(statement);
  statement.step("counting the records of");
  return statement.column_int(0).value_or(0);
}

std::map<int64_t, int64_t> Queries::count_records_of_other_versions(int64_t ir_format_version) {
  sqlite::Statement& statement =
      prepared(kCountRecordsOfOtherVersions,
               "SELECT ir_format_version, count(*) FROM records WHERE ir_format_version IS NOT ?1"
               " GROUP BY ir_format_version");
  sqlite::Statement::Use use(statement);
  statement.bind(1, ir_format_version);
  return read_version_counts(statement, "counting the records of");
}

#undef KILN_RECORD_COLUMNS
#undef KILN_WORKLOAD_COLUMNS
#undef KILN_SAME_TARGET
#undef KILN_SAME_DEVICE
#undef KILN_NOW

}  // namespace kiln::autotune::sql
