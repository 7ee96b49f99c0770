// Tests of opening tuning databases: a new file gets the schema, a reopened file keeps its data,
// WAL mode is on, and files that are not (current) tuning databases are refused with an error
// that names them.
#include <fstream>

#include "database_test_util.h"

namespace kiln::autotune::testing {
namespace {

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TEST_F(DatabaseTest, NewFileGetsTheSchemaAndItsVersion) {
  Database::open(path());
  EXPECT_EQ(raw_query(path(), "PRAGMA user_version"), std::to_string(schema_version()));
  EXPECT_EQ(raw_query(path(), "PRAGMA application_id"), std::to_string(0x6b696c6e));
  EXPECT_EQ(raw_query(path(),
                      "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master "
                      "WHERE type = 'table' ORDER BY name)"),
            "records,workloads");
}

TEST_F(DatabaseTest, FileIsInWalMode) {
  Database::open(path());
  EXPECT_EQ(raw_query(path(), "PRAGMA journal_mode"), "wal");
}

TEST_F(DatabaseTest, ReopenedFileKeepsWorkloadsAndRecords) {
  int64_t workload_id;
  {
    auto db = Database::open(path());
    workload_id = add_workload(*db).id;
    db->commit_records({measurement(workload_id, 1, {2e-3, 1e-3, 3e-3})});
  }
  auto db = Database::open(path());
  ASSERT_EQ(db->workloads().size(), 1u);
  EXPECT_EQ(db->workloads()[0].id, workload_id);
  std::vector<Record> records = db->records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].run_secs, (std::vector<double>{2e-3, 1e-3, 3e-3}));
  EXPECT_TRUE(db->take_warnings().empty());
}

TEST_F(DatabaseTest, EmptyFileBecomesANewDatabase) {
  write_file(path(), "");
  auto db = Database::open(path());
  EXPECT_EQ(db->size(), 0);
  EXPECT_EQ(raw_query(path(), "PRAGMA user_version"), std::to_string(schema_version()));
}

// The columns (name, type, not null, default) and indexes of a file's tables.
std::string schema_of(const std::string& path) {
  return raw_query(path,
                   "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\" || ' ' || "
                   "coalesce(dflt_value, ''), ', ') FROM pragma_table_info('records')") +
         " | " +
         raw_query(path,
                   "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\", ', ') FROM "
                   "pragma_table_info('workloads')") +
         " | " +
         raw_query(path,
                   "SELECT group_concat(name || ' ' || tbl_name || ' (' || (SELECT "
                   "group_concat(name, ' ') FROM (SELECT name FROM pragma_index_info(i.name) "
                   "ORDER BY seqno)) || ')', ', ') FROM (SELECT name, tbl_name FROM sqlite_master "
                   "WHERE type = 'index' ORDER BY name) AS i");
}

TEST_F(DatabaseTest, Version1FileIsMigratedKeepingItsRecords) {
  make_version_1_database(path("old.db"));
  auto db = Database::open(path("old.db"));
  EXPECT_EQ(raw_query(path("old.db"), "PRAGMA user_version"), std::to_string(schema_version()));
  std::vector<Record> records = db->records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].candidate_hash, 0x2au);
  EXPECT_EQ(records[0].run_secs, (std::vector<double>{1e-3, 3e-3}));
  EXPECT_EQ(records[0].kiln_version, "old");
  EXPECT_EQ(records[0].created, "2024-01-02T03:04:06.000Z");
  EXPECT_EQ(records[0].search_json, "{}");
  EXPECT_EQ(db->best(1, zen3(), 1).size(), 1u);
  EXPECT_TRUE(db->take_warnings().empty());
}

TEST_F(DatabaseTest, Version2FileIsMigratedWithTheThreadCountOfItsRecordsUnknown) {
  make_version_2_database(path("old.db"));
  auto db = Database::open(path("old.db"));
  EXPECT_EQ(raw_query(path("old.db"), "PRAGMA user_version"), std::to_string(schema_version()));
  std::vector<Record> records = db->records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].target.num_threads, 0);
  EXPECT_EQ(records[0].run_secs, (std::vector<double>{1e-3, 3e-3}));
  EXPECT_EQ(records[0].search_json, R"({"generation":1})");
  // Its record is still applied to a build of any thread count, as another count's.
  std::vector<Record> best = db->best(1, zen3(4), 1);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].candidate_hash, 0x2au);
  EXPECT_EQ(best[0].target.num_threads, 0);
  // A tuning run for 4 threads measures afresh.
  EXPECT_EQ(db->count(1, zen3(4)), 0);
  EXPECT_EQ(db->count(1, zen3()), 1);
  EXPECT_TRUE(db->take_warnings().empty());
}

TEST_F(DatabaseTest, MigratedFileHasTheSchemaOfANewOne) {
  make_version_1_database(path("v1.db"));
  make_version_2_database(path("v2.db"));
  Database::open(path("v1.db"));
  Database::open(path("v2.db"));
  Database::open(path("new.db"));
  std::string schema = schema_of(path("new.db"));
  EXPECT_NE(schema.find("search_json TEXT 1 '{}', num_threads INTEGER 1 0"), std::string::npos)
      << schema;
  EXPECT_NE(schema.find("records_by_candidate records (workload_id target device_model "
                        "device_features num_threads candidate_hash)"),
            std::string::npos)
      << schema;
  EXPECT_EQ(schema_of(path("v1.db")), schema);
  EXPECT_EQ(schema_of(path("v2.db")), schema);
}

TEST_F(DatabaseTest, NewerSchemaVersionIsRefused) {
  Database::open(path());
  raw_sql(path(), "PRAGMA user_version = 99");
  CaughtError error = error_of([&] { Database::open(path()); });
  EXPECT_EQ(error.kind, ErrorKind::kRuntime);
  EXPECT_EQ(error.message, "kiln.autotune.Database: '" + path() +
                               "' has schema version 99, newer than version " +
                               std::to_string(schema_version()) +
                               " that this kiln reads; open it with a newer kiln or export it "
                               "there (export_jsonl)");
}

TEST_F(DatabaseTest, DatabaseOfAnotherProgramIsRefusedUnchanged) {
  raw_sql(path(), "CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT)");
  CaughtError error = error_of([&] { Database::open(path()); });
  EXPECT_EQ(error.kind, ErrorKind::kRuntime);
  EXPECT_NE(error.message.find("'" + path() +
                               "' is a SQLite database but not a kiln tuning "
                               "database (application id 0"),
            std::string::npos)
      << error.message;
  EXPECT_EQ(raw_query(path(), "PRAGMA journal_mode"), "delete");
  EXPECT_EQ(raw_query(path(), "SELECT count(*) FROM sqlite_master"), "1");
}

TEST_F(DatabaseTest, FileWithKilnsIdButNoSchemaVersionIsRefused) {
  raw_sql(path(), "CREATE TABLE records (id INTEGER); PRAGMA application_id = 1802071150");
  CaughtError error = error_of([&] { Database::open(path()); });
  EXPECT_EQ(error.kind, ErrorKind::kRuntime);
  EXPECT_EQ(error.message, "kiln.autotune.Database: '" + path() +
                               "' carries kiln's application id but no schema version, so kiln "
                               "did not write it; give the path of a tuning database or of a new "
                               "file");
}

TEST_F(DatabaseTest, TextFileIsRefused) {
  write_file(path(), "workload,target,seconds\ngemm,llvm,0.001\n" + std::string(2000, 'x'));
  CaughtError error = error_of([&] { Database::open(path()); });
  EXPECT_EQ(error.kind, ErrorKind::kRuntime);
  EXPECT_EQ(error.message, "kiln.autotune.Database: reading '" + path() +
                               "' failed: the file is not a SQLite database (SQLite: file is not "
                               "a database)");
}

TEST_F(DatabaseTest, RandomBytesAreRefused) {
  std::string bytes(8192, '\0');
  uint32_t state = 12345;
  for (char& c : bytes) {
    state = state * 1664525u + 1013904223u;
    c = static_cast<char>(state >> 24);
  }
  write_file(path(), bytes);
  CaughtError error = error_of([&] { Database::open(path()); });
  EXPECT_EQ(error.kind, ErrorKind::kRuntime);
  EXPECT_NE(error.message.find("'" + path() + "' failed: the file is not a SQLite database"),
            std::string::npos)
      << error.message;
}

TEST_F(DatabaseTest, TruncatedFileIsRefused) {
  {
    auto db = Database::open(path());
    int64_t workload_id = add_workload(*db).id;
    std::vector<Measurement> batch;
    for (uint64_t i = 0; i < 200; ++i) batch.push_back(measurement(workload_id, i, {1e-3}));
    db->commit_records(batch);
  }
  // Fold the WAL into the file first, so that the truncation cuts stored pages.
  raw_sql(path(), "PRAGMA wal_checkpoint(TRUNCATE)");
  std::filesystem::resize_file(path(), std::filesystem::file_size(path()) / 2);
  CaughtError error = error_of([&] { Database::open(path())->records(); });
  EXPECT_EQ(error.kind, ErrorKind::kRuntime);
  EXPECT_NE(error.message.find("'" + path() +
                               "' failed: the file is corrupt; restore it from a "
                               "copy or a JSON-lines export (SQLite: database disk image is "
                               "malformed)"),
            std::string::npos)
      << error.message;
}

TEST_F(DatabaseTest, MissingDirectoryIsReported) {
  std::string missing = path("no-such-dir/tuning.db");
  CaughtError error = error_of([&] { Database::open(missing); });
  EXPECT_EQ(error.kind, ErrorKind::kRuntime);
  EXPECT_NE(error.message.find("opening '" + missing +
                               "' failed: the file cannot be opened; "
                               "check that its directory exists"),
            std::string::npos)
      << error.message;
}

TEST_F(DatabaseTest, ClosedDatabaseRefusesCalls) {
  auto db = Database::open(path());
  db->close();
  CaughtError error = error_of([&] { db->workloads(); });
  EXPECT_EQ(error.kind, ErrorKind::kValue);
  EXPECT_EQ(error.message, "kiln.autotune.Database.workloads: the tuning database '" + path() +
                               "' is closed; open it again");
}

}  // namespace
}  // namespace kiln::autotune::testing
