// Tests of export_jsonl and merge: a round trip keeps every field, duplicates are skipped, and
// records of other versions, unreadable lines and files of other kinds are reported.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "database_test_util.h"

namespace kiln::autotune::testing {
namespace {

// Fills a database with two workloads and records of two targets, two thread counts and several
// statuses.
void fill(Database& db) {
  int64_t gemm = add_workload(db, 1, R"({"func": "gemm"})").id;
  int64_t conv = add_workload(db, 2, R"({"func": "conv"})").id;
  TargetKey zen4 = {"llvm -mcpu=znver4", "AMD EPYC 9654", "avx512f", 8};
  Measurement crashed = measurement(conv, 12, {});
  crashed.status = RecordStatus::kCrash;
  crashed.error = "SIGILL";
  Measurement searched = measurement(gemm, 10, {1e-3, 1.5e-3});
  searched.search_json = R"({"generation": 3, "predicted_score": 0.75})";
  db.commit_records({searched, measurement(gemm, 11, {2e-3}, zen4), crashed});
}

// A record's content without the ids that differ between files.
std::string content(const Record& r) {
  std::ostringstream out;
  out << r.target.target << "|" << r.target.device_model << "|" << r.target.device_features << "|"
      << r.target.num_threads << "|" << r.target_kind << "|" << r.trace_json << "|"
      << r.candidate_hash << "|";
  for (double t : r.run_secs) out << t << ",";
  out << "|" << r.median.value_or(-1) << "|" << r.spread.value_or(-1) << "|"
      << status_name(r.status) << "|" << r.error << "|" << r.kiln_version << "|"
      << r.ir_format_version << "|" << r.created << "|" << r.search_json;
  return out.str();
}

std::vector<std::string> contents(Database& db) {
  std::vector<std::string> all;
  for (const Record& r : db.records()) all.push_back(content(r));
  return all;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(DatabaseTest, ExportAndMergeRoundTripEveryField) {
  auto source = Database::open(path("a.db"));
  fill(*source);
  EXPECT_EQ(source->export_jsonl(path("a.jsonl")), 3);
  std::vector<std::string> lines = lines_of(path("a.jsonl"));
  ASSERT_EQ(lines.size(), 6u);  // header, two workloads, three records
  EXPECT_EQ(lines[0].rfind(R"({"format":"kiln.autotune.tuning_records","format_version":1,)", 0),
            0u);
  EXPECT_NE(lines[4].find(R"("num_threads":8)"), std::string::npos) << lines[4];
  auto copy = Database::open(path("b.db"));
  MergeSummary summary = copy->merge(path("a.jsonl"));
  EXPECT_EQ(summary.workloads_added, 2);
  EXPECT_EQ(summary.records_added, 3);
  EXPECT_EQ(summary.duplicates + summary.incompatible + summary.unreadable, 0);
  EXPECT_EQ(contents(*copy), contents(*source));
  ASSERT_EQ(copy->workloads().size(), 2u);
  EXPECT_EQ(copy->workloads()[1].func_json, R"({"func": "conv"})");
  EXPECT_EQ(copy->workloads()[1].created, source->workloads()[1].created);
}

TEST_F(DatabaseTest, ExportIsRenamedIntoPlaceWhenComplete) {
  auto db = Database::open(path());
  fill(*db);
  db->export_jsonl(path("a.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(path("a.jsonl")));
  EXPECT_FALSE(std::filesystem::exists(path("a.jsonl.partial")));
  std::string missing = path("no-such-dir/a.jsonl");
  CaughtError error = error_of([&] { db->export_jsonl(missing); });
  EXPECT_EQ(error.kind, ErrorKind::kRuntime);
  EXPECT_EQ(error.message, "kiln.autotune.Database.export_jsonl: cannot write '" + missing +
                               ".partial'; check that its directory exists and is writable");
}

TEST_F(DatabaseTest, MergeFromADatabaseFile) {
  auto source = Database::open(path("a.db"));
  fill(*source);
  auto target = Database::open(path("b.db"));
  add_workload(*target, 1, R"({"func": "gemm"})");
  MergeSummary summary = target->merge(path("a.db"));
  EXPECT_EQ(summary.workloads_added, 1);  // gemm was there already
  EXPECT_EQ(summary.records_added, 3);
  EXPECT_EQ(contents(*target), contents(*source));
}

TEST_F(DatabaseTest, MergeSkipsRecordsAlreadyPresent) {
  auto source = Database::open(path("a.db"));
  fill(*source);
  auto target = Database::open(path("b.db"));
  target->merge(path("a.db"));
  MergeSummary again = target->merge(path("a.db"));
  EXPECT_EQ(again.workloads_added, 0);
  EXPECT_EQ(again.records_added, 0);
  EXPECT_EQ(again.duplicates, 3);
  EXPECT_EQ(target->size(), 3);
}

TEST_F(DatabaseTest, MergeKeepsEveryMeasurementOfACandidate) {
  // The search measures its best candidates again at the end: each measurement is a record,
  // and merge keeps them all (the best pools their samples).
  auto source = Database::open(path("a.db"));
  int64_t gemm = add_workload(*source, 1, R"({"func": "gemm"})").id;
  source->commit_records({measurement(gemm, 10, {1e-3})});
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  source->commit_records({measurement(gemm, 10, {2e-3, 3e-3})});
  auto target = Database::open(path("b.db"));
  MergeSummary summary = target->merge(path("a.db"));
  EXPECT_EQ(summary.records_added, 2);
  EXPECT_EQ(contents(*target), contents(*source));
  EXPECT_EQ(target->merge(path("a.db")).duplicates, 2);
}

TEST_F(DatabaseTest, MergeMatchesWorkloadsWithTheGivenEquality) {
  auto source = Database::open(path("a.db"));
  fill(*source);
  auto target = Database::open(path("b.db"));
  add_workload(*target, 1, R"({"func":"gemm"})");  // the same function, written differently
  auto ignore_spaces = [](const std::string& a, const std::string& b) {
    auto strip = [](std::string s) {
      s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
      return s;
    };
    return strip(a) == strip(b);
  };
  EXPECT_EQ(target->merge(path("a.db"), ignore_spaces).workloads_added, 1);
  EXPECT_EQ(target->workloads().size(), 2u);
}

TEST_F(DatabaseTest, MergeSkipsOtherVersionsAndBadLinesWithWarnings) {
  auto source = Database::open(path("a.db"));
  fill(*source);
  source->export_jsonl(path("a.jsonl"));
  std::vector<std::string> lines = lines_of(path("a.jsonl"));
  {
    std::ofstream out(path("a.jsonl"), std::ios::app);
    out << "{\"record\": {\"workload\": 1, \"target\": \n";  // cut off mid-line
    std::string other = lines[3];
    other.replace(other.find("\"ir_format_version\":1"), 21, "\"ir_format_version\":7");
    out << other << "\n";
  }
  auto target = Database::open(path("b.db"));
  MergeSummary summary = target->merge(path("a.jsonl"));
  EXPECT_EQ(summary.records_added, 3);
  EXPECT_EQ(summary.incompatible, 1);
  EXPECT_EQ(summary.unreadable, 1);
  std::vector<std::string> warnings = target->take_warnings();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "kiln.autotune.Database.merge: line 7 of '" + path("a.jsonl") +
                             "' is skipped: it is not JSON");
  EXPECT_NE(warnings[1].find("1 record(s) of '" + path("a.jsonl") +
                             "' have another workload key version or IR format version"),
            std::string::npos)
      << warnings[1];
}

TEST_F(DatabaseTest, MergeRefusesAFileOfAnotherKind) {
  std::ofstream(path("notes.txt")) << "gemm was fast\n";
  auto target = Database::open(path("b.db"));
  CaughtError error = error_of([&] { target->merge(path("notes.txt")); });
  EXPECT_EQ(error.kind, ErrorKind::kRuntime);
  EXPECT_EQ(error.message, "kiln.autotune.Database.merge: '" + path("notes.txt") +
                               "' is neither a kiln tuning database nor a JSON-lines export of "
                               "one: its first line is not the header of a kiln tuning-record "
                               "export");
  EXPECT_EQ(error_of([&] { target->merge(path("missing.db")); }).message,
            "kiln.autotune.Database.merge: cannot read '" + path("missing.db") +
                "'; check that the file exists and is readable");
}

TEST_F(DatabaseTest, MergeFromAnOlderDatabaseLeavesItsFileAsItWas) {
  make_version_1_database(path("old.db"));
  auto target = Database::open(path("b.db"));
  MergeSummary summary = target->merge(path("old.db"));
  EXPECT_EQ(summary.workloads_added, 1);
  EXPECT_EQ(summary.records_added, 1);
  EXPECT_EQ(target->records()[0].kiln_version, "old");
  EXPECT_EQ(raw_query(path("old.db"), "PRAGMA user_version"), "1");
}

TEST_F(DatabaseTest, ExportLinesWithoutAThreadCountMergeAsUnknown) {
  // An export of a kiln of schema version 2 has no num_threads in its records.
  auto source = Database::open(path("a.db"));
  fill(*source);
  source->export_jsonl(path("a.jsonl"));
  std::vector<std::string> lines = lines_of(path("a.jsonl"));
  {
    std::ofstream out(path("a.jsonl"), std::ios::trunc);
    for (std::string line : lines) {
      size_t at = line.find(R"("num_threads":)");
      if (at != std::string::npos) line.erase(at, line.find(',', at) + 1 - at);
      out << line << "\n";
    }
  }
  auto target = Database::open(path("b.db"));
  EXPECT_EQ(target->merge(path("a.jsonl")).records_added, 3);
  for (const Record& r : target->records()) EXPECT_EQ(r.target.num_threads, 0);
}

TEST_F(DatabaseTest, MergeFromAVersion2DatabaseKeepsItsRecordsWithAnUnknownThreadCount) {
  make_version_2_database(path("old.db"));
  auto target = Database::open(path("b.db"));
  MergeSummary summary = target->merge(path("old.db"));
  EXPECT_EQ(summary.records_added, 1);
  EXPECT_EQ(target->records()[0].target.num_threads, 0);
  EXPECT_EQ(raw_query(path("old.db"), "PRAGMA user_version"), "2");
}

TEST_F(DatabaseTest, MergeFromANewerDatabaseIsRefusedAndChangesNothing) {
  Database::open(path("a.db"));
  raw_sql(path("a.db"), "PRAGMA user_version = 99");
  auto target = Database::open(path("b.db"));
  CaughtError error = error_of([&] { target->merge(path("a.db")); });
  EXPECT_NE(error.message.find("'" + path("a.db") + "' has schema version 99, newer than"),
            std::string::npos)
      << error.message;
  EXPECT_EQ(raw_query(path("a.db"), "PRAGMA user_version"), "99");
  EXPECT_EQ(target->size(), 0);
}

}  // namespace
}  // namespace kiln::autotune::testing
