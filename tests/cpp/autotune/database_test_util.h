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

inline TargetKey zen3() {
  return {"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver3 -mattr=+avx2,+fma", "AMD EPYC 7B13",
          "avx2,fma"};
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

}  // namespace kiln::autotune::testing
