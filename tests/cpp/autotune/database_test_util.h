// Shared pieces of the tuning database tests: a fresh directory per test, sample workloads and
// measurements, raw SQLite access for making old or damaged files, and error capture.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/autotune/database.h"
#include "kiln/support/error.h"

namespace kiln::autotune::testing {

// A test with its own empty directory, removed afterwards.
class DatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-db-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name = "tuning.db") const { return dir_ + "/" + name; }

  std::string dir_;
};

// The stored function equals `func_json` exactly (the tests' stand-in for structural equality).
inline WorkloadMatch same_text(const std::string& func_json) {
  return [func_json](const std::string& stored) { return stored == func_json; };
}

inline Workload add_workload(Database& db, uint64_t hash = 0x1234abcd5678ef00,
                             const std::string& func_json = R"({"func": "gemm"})") {
  return db.commit_workload(hash, func_json, same_text(func_json));
}

// The key of the sample records; num_threads 0: an unknown thread count.
inline TargetKey zen3(int num_threads = 0) {
  return {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver3 -mattr=+avx2,+fma", "AMD EPYC 7B13",
          "avx2,fma", num_threads};
}

inline Measurement measurement(int64_t workload_id, uint64_t candidate_hash,
                               std::vector<double> run_secs, const TargetKey& target = zen3()) {
  Measurement m;
  m.workload_id = workload_id;
  m.target = target;
  m.trace_json = R"({"version": 1, "instructions": [{"kind": "split", "decision": [4, 8]}]})";
  m.candidate_hash = candidate_hash;
  m.run_secs = std::move(run_secs);
  m.kiln_version = "test";
  return m;
}

// Runs `f` and returns the kiln::Error it raised (message and kind); fails the test otherwise.
struct CaughtError {
  std::string message;
  ErrorKind kind = ErrorKind::kInternal;
};
inline CaughtError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.what(), e.kind()};
  }
  ADD_FAILURE() << "no kiln::Error was raised";
  return {};
}

// Runs SQL on a file directly, as a person with the sqlite3 shell would.
inline void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  std::string text = message != nullptr ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << text;
}

// The first column of the first row of a query on a file, as text.
inline std::string raw_query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* stmt = nullptr;
  std::string value;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

// Writes a tuning database of schema version 1 (records without search metadata), as a kiln of
// that version did, with one workload (id 1) and one ok record (candidate 0x2a, 1 ms and 3 ms).
inline void make_version_1_database(const std::string& path) {
  raw_sql(path, R"sql(
CREATE TABLE workloads (
  id INTEGER PRIMARY KEY, key_version INTEGER NOT NULL, structural_hash TEXT NOT NULL,
  func_json TEXT NOT NULL, created TEXT NOT NULL);
CREATE INDEX workloads_by_key ON workloads (key_version, structural_hash);
CREATE TABLE records (
  id INTEGER PRIMARY KEY, workload_id INTEGER NOT NULL REFERENCES workloads (id),
  target TEXT NOT NULL, target_kind TEXT NOT NULL, device_model TEXT NOT NULL,
  device_features TEXT NOT NULL, trace_json TEXT NOT NULL, candidate_hash TEXT NOT NULL,
  run_secs_json TEXT NOT NULL, median REAL, spread REAL, status TEXT NOT NULL,
  error TEXT NOT NULL, kiln_version TEXT NOT NULL, ir_format_version INTEGER NOT NULL,
  created TEXT NOT NULL);
CREATE INDEX records_by_candidate
  ON records (workload_id, target, device_model, device_features, candidate_hash);
CREATE INDEX records_by_median
  ON records (workload_id, target, device_model, device_features, status, median);
INSERT INTO workloads VALUES (1, 1, '1234abcd5678ef00', '{"func": "gemm"}',
                              '2024-01-02T03:04:05.000Z');
INSERT INTO records VALUES (1, 1, 'llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver3 -mattr=+avx2,+fma',
  'llvm', 'AMD EPYC 7B13', 'avx2,fma', '{"version":1,"instructions":[]}', '000000000000002a',
  '[0.001,0.003]', 0.002, 1.0, 'ok', '', 'old', 1, '2024-01-02T03:04:06.000Z');
PRAGMA application_id = 1802071150;
PRAGMA user_version = 1;
)sql");
}

// Writes a tuning database of schema version 2 (records without their thread count) with the
// schema that kiln created (copied from it), one workload (id 1) and one ok record (candidate
// 0x2a, 1 ms and 3 ms, with search metadata).
inline void make_version_2_database(const std::string& path) {
  raw_sql(path, R"sql(
CREATE TABLE workloads (
  id INTEGER PRIMARY KEY,
  key_version INTEGER NOT NULL,
  structural_hash TEXT NOT NULL,
  func_json TEXT NOT NULL,
  created TEXT NOT NULL
);
CREATE INDEX workloads_by_key ON workloads (key_version, structural_hash);
CREATE TABLE records (
  id INTEGER PRIMARY KEY,
  workload_id INTEGER NOT NULL REFERENCES workloads (id),
  target TEXT NOT NULL,
  target_kind TEXT NOT NULL,
  device_model TEXT NOT NULL,
  device_features TEXT NOT NULL,
  trace_json TEXT NOT NULL,
  candidate_hash TEXT NOT NULL,
  run_secs_json TEXT NOT NULL,
  median REAL,
  spread REAL,
  status TEXT NOT NULL,
  error TEXT NOT NULL,
  kiln_version TEXT NOT NULL,
  ir_format_version INTEGER NOT NULL,
  created TEXT NOT NULL,
  search_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX records_by_candidate
  ON records (workload_id, target, device_model, device_features, candidate_hash);
CREATE INDEX records_by_median
  ON records (workload_id, target, device_model, device_features, status, median);
INSERT INTO workloads VALUES (1, 1, '1234abcd5678ef00', '{"func": "gemm"}',
                              '2024-01-02T03:04:05.000Z');
INSERT INTO records VALUES (1, 1, 'llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver3 -mattr=+avx2,+fma',
  'llvm', 'AMD EPYC 7B13', 'avx2,fma', '{"version":1,"instructions":[]}', '000000000000002a',
  '[0.001,0.003]', 0.002, 1.0, 'ok', '', 'old', 1, '2024-01-02T03:04:06.000Z',
  '{"generation":1}');
PRAGMA application_id = 1802071150;
PRAGMA user_version = 2;
)sql");
}

}  // namespace kiln::autotune::testing
