// Tests of workloads and records: workload keys confirmed by the stored function, batches
// committed whole or not at all, target-aware lookups, thread counts (matched by the tuner's
// lookups, preferred by best), dedupe and resume counts, and rows of other versions or damaged
// by hand skipped with a warning.
#include "database_test_util.h"

namespace kiln::autotune::testing {
namespace {

TEST_F(DatabaseTest, WorkloadIsFoundByHashAndConfirmedByTheStoredFunction) {
  auto db = Database::open(path());
  Workload gemm = add_workload(*db, 7, R"({"func": "gemm"})");
  // Same hash, another function: a second workload.
  Workload conv = add_workload(*db, 7, R"({"func": "conv"})");
  EXPECT_NE(gemm.id, conv.id);
  EXPECT_EQ(add_workload(*db, 7, R"({"func": "gemm"})").id, gemm.id);
  std::vector<std::string> seen;
  std::optional<Workload> found = db->find_workload(7, [&](const std::string& stored) {
    seen.push_back(stored);
    return stored == R"({"func": "conv"})";
  });
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->id, conv.id);
  EXPECT_EQ(seen, (std::vector<std::string>{R"({"func": "gemm"})", R"({"func": "conv"})"}));
  EXPECT_FALSE(db->find_workload(8, same_text(R"({"func": "gemm"})")).has_value());
  EXPECT_EQ(db->workloads().size(), 2u);
  EXPECT_EQ(found->structural_hash, 7u);
  EXPECT_EQ(found->created.size(), std::string("2024-05-01T12:00:00.000Z").size());
}

TEST_F(DatabaseTest, CommittedRecordCarriesWhatTheDatabaseDerives) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  Measurement m = measurement(workload_id, 0xfedcba9876543210, {4e-3, 1e-3, 2e-3, 3e-3});
  m.trace_json = "{ \"version\" : 1,\n \"instructions\" : [ ] }";
  std::vector<int64_t> ids = db->commit_records({m});
  std::vector<Record> records = db->records();
  ASSERT_EQ(records.size(), 1u);
  const Record& r = records[0];
  EXPECT_EQ(r.id, ids[0]);
  EXPECT_EQ(r.candidate_hash, 0xfedcba9876543210u);
  EXPECT_EQ(r.target.target, zen3().target);
  EXPECT_EQ(r.target_kind, "llvm");
  EXPECT_EQ(r.trace_json, R"({"version":1,"instructions":[]})");
  EXPECT_DOUBLE_EQ(*r.median, 2.5e-3);
  EXPECT_DOUBLE_EQ(*r.spread, 3e-3 / 2.5e-3);
  EXPECT_EQ(r.status, RecordStatus::kOk);
  EXPECT_EQ(r.kiln_version, "test");
  EXPECT_EQ(r.ir_format_version, kIrFormatVersion);
  EXPECT_FALSE(r.created.empty());
  EXPECT_EQ(r.search_json, "{}");
}

TEST_F(DatabaseTest, SearchMetadataIsKeptAsACompactJsonObject) {
  auto db = Database::open(path());
  Measurement m = measurement(add_workload(*db).id, 1, {1e-3});
  m.search_json = R"({ "generation" : 3, "predicted_score" : 0.5 })";
  db->commit_records({m});
  EXPECT_EQ(db->records()[0].search_json, R"({"generation":3,"predicted_score":0.5})");
  m.search_json = "[3]";
  EXPECT_EQ(error_of([&] { db->commit_records({m}); }).message,
            "kiln.autotune.Database.commit_records: measurement 1 of 1 (candidate "
            "0000000000000001): search_json must be a JSON object, found '[3]'");
}

TEST_F(DatabaseTest, FailedCandidateIsStoredWithItsReasonAndNoTimes) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  Measurement m = measurement(workload_id, 5, {});
  m.status = RecordStatus::kCrash;
  m.error = "SIGSEGV in the measuring process";
  db->commit_records({m});
  Record r = db->records()[0];
  EXPECT_EQ(r.status, RecordStatus::kCrash);
  EXPECT_EQ(r.error, "SIGSEGV in the measuring process");
  EXPECT_FALSE(r.median.has_value());
  EXPECT_TRUE(db->best(workload_id, zen3(), 5).empty());
  EXPECT_TRUE(db->is_measured(workload_id, zen3(), 5));
}

TEST_F(DatabaseTest, BatchFailingInTheMiddleLeavesNothingOfIt) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  // Measurement 3 names a workload that does not exist: found only inside the transaction,
  // after measurements 1 and 2 were inserted.
  std::vector<Measurement> batch = {
      measurement(workload_id, 1, {1e-3}), measurement(workload_id, 2, {1e-3}),
      measurement(workload_id + 41, 3, {1e-3}), measurement(workload_id, 4, {1e-3})};
  CaughtError error = error_of([&] { db->commit_records(batch); });
  EXPECT_EQ(error.kind, ErrorKind::kValue);
  EXPECT_EQ(error.message,
            "kiln.autotune.Database.commit_records: measurement 3 of 4 names workload " +
                std::to_string(workload_id + 41) + ", which is not in '" + path() +
                "'; add it with commit_workload; nothing of the batch was stored");
  EXPECT_EQ(db->size(), 0);
  // The database is usable afterwards.
  batch.erase(batch.begin() + 2);
  EXPECT_EQ(db->commit_records(batch).size(), 3u);
  EXPECT_EQ(db->size(), 3);
}

TEST_F(DatabaseTest, InvalidMeasurementsAreRefusedBeforeWriting) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  Measurement good = measurement(workload_id, 1, {1e-3});
  Measurement bad_trace = measurement(workload_id, 2, {1e-3});
  bad_trace.trace_json = "[1, 2";
  EXPECT_EQ(error_of([&] {
              db->commit_records({good, bad_trace});
            }).message,
            "kiln.autotune.Database.commit_records: measurement 2 of 2 (candidate "
            "0000000000000002): trace_json must be a JSON object (a schedule trace), found "
            "'[1, 2'");
  Measurement bad_time = measurement(workload_id, 3, {1e-3, -1.0});
  EXPECT_EQ(error_of([&] { db->commit_records({bad_time}); }).message,
            "kiln.autotune.Database.commit_records: measurement 1 of 1 (candidate "
            "0000000000000003): run_secs must be positive finite seconds, found [0.001,-1.0]");
  Measurement no_times = measurement(workload_id, 4, {});
  EXPECT_EQ(error_of([&] { db->commit_records({no_times}); }).message,
            "kiln.autotune.Database.commit_records: measurement 1 of 1 (candidate "
            "0000000000000004): a record with status 'ok' needs its run times, found an empty "
            "run_secs");
  Measurement no_device = measurement(workload_id, 5, {1e-3}, {"llvm", "", ""});
  EXPECT_NE(error_of([&] {
              db->commit_records({no_device});
            }).message.find("device_model must name the device the record is for"),
            std::string::npos);
  Measurement padded = measurement(workload_id, 6, {1e-3}, {" llvm", "cpu", ""});
  EXPECT_NE(error_of([&] { db->commit_records({padded}); })
                .message.find("target must be a canonical target string such as 'llvm "
                              "-mcpu=znver4', found ' llvm'"),
            std::string::npos);
  EXPECT_EQ(db->size(), 0);
}

TEST_F(DatabaseTest, BestOrdersOkRecordsByMedian) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  Measurement wrong = measurement(workload_id, 9, {1e-6});
  wrong.status = RecordStatus::kWrongResult;
  db->commit_records({measurement(workload_id, 1, {3e-3}), measurement(workload_id, 2, {1e-3}),
                      wrong, measurement(workload_id, 3, {2e-3, 9e-3, 2e-3}),
                      measurement(workload_id, 4, {1e-3})});
  std::vector<Record> best = db->best(workload_id, zen3(), 3);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].candidate_hash, 2u);  // ties in median: the older first
  EXPECT_EQ(best[1].candidate_hash, 4u);
  EXPECT_EQ(best[2].candidate_hash, 3u);
  EXPECT_EQ(db->best(workload_id, zen3(), 10).size(), 4u);
  EXPECT_TRUE(db->best(workload_id, zen3(), 0).empty());
  EXPECT_EQ(error_of([&] { db->best(workload_id, zen3(), -1); }).message,
            "kiln.autotune.Database.best: k must be >= 0, found -1");
}

TEST_F(DatabaseTest, TheLatestFinalVerdictComesFirst) {
  // Candidate 1 had a quick screen while the machine was fast; 2 and 3 were timed side by side
  // in a final round while it was slow, 2 winning: 2 comes first, then by median. A later final
  // round that 3 wins overrules it.
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  db->commit_records({measurement(workload_id, 1, {1e-3}), measurement(workload_id, 2, {2e-3}),
                      measurement(workload_id, 3, {2.2e-3})});
  Measurement two = measurement(workload_id, 2, {3e-3, 3e-3, 3e-3});
  two.search_json = R"({"stage": "final", "winner": true})";
  Measurement three = measurement(workload_id, 3, {3.5e-3, 3.5e-3, 3.5e-3});
  three.search_json = R"({"stage": "final"})";
  db->commit_records({two, three});
  std::vector<Record> best = db->best(workload_id, zen3(), 3);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].candidate_hash, 2u);
  EXPECT_EQ(best[1].candidate_hash, 1u);
  EXPECT_EQ(best[2].candidate_hash, 3u);
  three.search_json = R"({"stage": "final", "winner": true})";
  three.run_secs = {2.5e-3, 2.5e-3, 2.5e-3};
  two.search_json = R"({"stage": "final"})";
  two.run_secs = {2.6e-3, 2.6e-3, 2.6e-3};
  db->commit_records({two, three});
  EXPECT_EQ(db->best(workload_id, zen3(), 1)[0].candidate_hash, 3u);
  // Another thread count's verdict does not decide this one's.
  Measurement other = measurement(workload_id, 1, {9e-3}, zen3(2));
  other.search_json = R"({"stage": "final", "winner": true})";
  db->commit_records({other});
  EXPECT_EQ(db->best(workload_id, zen3(), 1)[0].candidate_hash, 3u);
}

TEST_F(DatabaseTest, LookupsMatchTargetStringAndDevice) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  TargetKey other_target = zen3();
  other_target.target = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=znver4 -mattr=+avx512f";
  TargetKey other_model = zen3();
  other_model.device_model = "AMD EPYC 7R13";
  TargetKey other_features = zen3();
  other_features.device_features = "avx2";
  db->commit_records({measurement(workload_id, 1, {1e-3}, other_target),
                      measurement(workload_id, 2, {1e-3}, other_model),
                      measurement(workload_id, 3, {1e-3}, other_features)});
  EXPECT_TRUE(db->best(workload_id, zen3(), 10).empty());
  EXPECT_TRUE(db->records({workload_id, zen3(), std::nullopt}).empty());
  EXPECT_FALSE(db->is_measured(workload_id, zen3(), 1));
  EXPECT_EQ(db->count(workload_id, zen3()), 0);
  EXPECT_TRUE(db->measured_hashes(workload_id, zen3()).empty());
  // Each record is found under its own key only.
  ASSERT_EQ(db->best(workload_id, other_model, 10).size(), 1u);
  EXPECT_EQ(db->best(workload_id, other_model, 10)[0].candidate_hash, 2u);
  EXPECT_EQ(db->records({workload_id, other_features, std::nullopt})[0].candidate_hash, 3u);
  EXPECT_EQ(db->records().size(), 3u);
}

TEST_F(DatabaseTest, TheTunersLookupsMatchTheThreadCount) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  db->commit_records({measurement(workload_id, 1, {1e-3}, zen3(1)),
                      measurement(workload_id, 2, {2e-3}, zen3(1)),
                      measurement(workload_id, 1, {3e-3}, zen3(2))});
  EXPECT_EQ(db->count(workload_id, zen3(1)), 2);
  EXPECT_EQ(db->count(workload_id, zen3(2)), 1);
  EXPECT_EQ(db->count(workload_id, zen3(4)), 0);
  EXPECT_EQ(db->measured_hashes(workload_id, zen3(1)), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(db->measured_hashes(workload_id, zen3(2)), (std::vector<uint64_t>{1}));
  EXPECT_TRUE(db->is_measured(workload_id, zen3(2), 1));
  EXPECT_FALSE(db->is_measured(workload_id, zen3(2), 2));
  std::vector<Record> two = db->records({workload_id, zen3(2), std::nullopt});
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].target.num_threads, 2);
  EXPECT_EQ(two[0].run_secs, (std::vector<double>{3e-3}));
}

TEST_F(DatabaseTest, BestPrefersTheThreadCountOfTheKey) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  // The 2-thread records are faster, and candidate 1 was measured with both counts: its samples
  // are not pooled across them.
  db->commit_records(
      {measurement(workload_id, 1, {4e-3}, zen3(1)), measurement(workload_id, 2, {3e-3}, zen3(1)),
       measurement(workload_id, 1, {1e-3}, zen3(2)), measurement(workload_id, 3, {2e-3}, zen3(2))});
  std::vector<Record> one = db->best(workload_id, zen3(1), 5);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].candidate_hash, 2u);
  EXPECT_EQ(one[1].candidate_hash, 1u);
  EXPECT_EQ(one[1].run_secs, (std::vector<double>{4e-3}));
  for (const Record& r : one) EXPECT_EQ(r.target.num_threads, 1);
  EXPECT_EQ(db->best(workload_id, zen3(1), 5, ThreadMatch::kExact).size(), 2u);
  EXPECT_TRUE(db->take_warnings().empty());
}

TEST_F(DatabaseTest, BestFallsBackToTheFastestOfOtherThreadCounts) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  TargetKey other_model = zen3(4);
  other_model.device_model = "AMD EPYC 7R13";
  Measurement failed = measurement(workload_id, 9, {}, zen3(4));
  failed.status = RecordStatus::kRunError;
  db->commit_records({measurement(workload_id, 1, {4e-3}, zen3(1)),
                      measurement(workload_id, 2, {2e-3}, zen3(2)),
                      measurement(workload_id, 3, {3e-3}, zen3()),
                      measurement(workload_id, 4, {1e-4}, other_model), failed});
  // No ok record of 4 threads: the fastest of the other counts (unknown included), each with
  // its own count; never the record of another device.
  std::vector<Record> best = db->best(workload_id, zen3(4), 5);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].candidate_hash, 2u);
  EXPECT_EQ(best[0].target.num_threads, 2);
  EXPECT_EQ(best[1].candidate_hash, 3u);
  EXPECT_EQ(best[1].target.num_threads, 0);
  EXPECT_EQ(best[2].target.num_threads, 1);
  // The tuner's own lookup takes none of them.
  EXPECT_TRUE(db->best(workload_id, zen3(4), 5, ThreadMatch::kExact).empty());
  EXPECT_EQ(db->best(workload_id, other_model, 5)[0].candidate_hash, 4u);
}

TEST_F(DatabaseTest, NegativeThreadCountIsRefused) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  EXPECT_EQ(error_of([&] {
              db->commit_records({measurement(workload_id, 1, {1e-3}, zen3(-1))});
            }).message,
            "kiln.autotune.Database.commit_records: measurement 1 of 1 (candidate "
            "0000000000000001): num_threads must be the number of threads the kernel ran on (>= "
            "1), or 0 when it is unknown, found -1 for target '" +
                zen3().target + "'");
  EXPECT_NE(error_of([&] {
              db->count(workload_id, zen3(-2));
            }).message.find("kiln.autotune.Database.count: num_threads must be"),
            std::string::npos);
  EXPECT_EQ(db->size(), 0);
}

TEST_F(DatabaseTest, LookupsArePerWorkload) {
  auto db = Database::open(path());
  int64_t gemm = add_workload(*db, 1, R"({"func": "gemm"})").id;
  int64_t conv = add_workload(*db, 2, R"({"func": "conv"})").id;
  db->commit_records({measurement(gemm, 10, {1e-3}), measurement(conv, 20, {1e-3})});
  EXPECT_EQ(db->measured_hashes(gemm, zen3()), (std::vector<uint64_t>{10}));
  EXPECT_EQ(db->best(conv, zen3(), 5)[0].candidate_hash, 20u);
  EXPECT_EQ(db->records({gemm, std::nullopt, std::nullopt}).size(), 1u);
}

TEST_F(DatabaseTest, MeasuredCandidatesAndCountsResumeARun) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  Measurement timeout = measurement(workload_id, 30, {});
  timeout.status = RecordStatus::kTimeout;
  db->commit_records({measurement(workload_id, 20, {1e-3}), timeout});
  db->commit_records({measurement(workload_id, 10, {2e-3}), measurement(workload_id, 20, {3e-3})});
  EXPECT_EQ(db->count(workload_id, zen3()), 4);
  EXPECT_EQ(db->measured_hashes(workload_id, zen3()), (std::vector<uint64_t>{10, 20, 30}));
  EXPECT_TRUE(db->is_measured(workload_id, zen3(), 30));
  EXPECT_FALSE(db->is_measured(workload_id, zen3(), 40));
  std::vector<Record> ok = db->records({workload_id, zen3(), RecordStatus::kOk});
  EXPECT_EQ(ok.size(), 3u);
}

TEST_F(DatabaseTest, RecordsOfAnotherIrFormatVersionAreIgnoredWithAWarning) {
  int64_t workload_id;
  {
    OpenOptions old_kiln;
    old_kiln.ir_format_version = kIrFormatVersion + 1;
    auto db = Database::open(path(), old_kiln);
    workload_id = add_workload(*db).id;
    Measurement m = measurement(workload_id, 1, {1e-3});
    m.ir_format_version = kIrFormatVersion + 1;
    db->commit_records({m, m});
  }
  auto db = Database::open(path());
  std::string version = std::to_string(kIrFormatVersion + 1);
  EXPECT_EQ(db->take_warnings(),
            (std::vector<std::string>{"kiln.autotune.Database: 2 record(s) of '" + path() +
                                      "' have IR format version " + version + ", not version " +
                                      std::to_string(kIrFormatVersion) +
                                      " that this kiln reads; they are ignored"}));
  EXPECT_TRUE(db->records().empty());
  EXPECT_TRUE(db->best(workload_id, zen3(), 1).empty());
  EXPECT_FALSE(db->is_measured(workload_id, zen3(), 1));
  EXPECT_EQ(db->count(workload_id, zen3()), 0);
  EXPECT_EQ(db->size(), 2);
}

TEST_F(DatabaseTest, WorkloadsOfAnotherKeyVersionAreIgnoredWithAWarning) {
  {
    OpenOptions other;
    other.key_version = kWorkloadKeyVersion + 1;
    auto db = Database::open(path(), other);
    db->commit_records({measurement(add_workload(*db).id, 1, {1e-3})});
  }
  auto db = Database::open(path());
  std::vector<std::string> warnings = db->take_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("1 workload(s) of '" + path() + "' have workload key version " +
                             std::to_string(kWorkloadKeyVersion + 1) + ", not version " +
                             std::to_string(kWorkloadKeyVersion) +
                             " that this kiln reads; they and their records are ignored"),
            std::string::npos);
  EXPECT_TRUE(db->workloads().empty());
  EXPECT_TRUE(db->records().empty());
  // The same function under this kiln's key is a new workload.
  EXPECT_EQ(add_workload(*db).key_version, kWorkloadKeyVersion);
  EXPECT_EQ(db->workloads().size(), 1u);
}

TEST_F(DatabaseTest, RowsDamagedByHandAreSkippedWithAWarningEach) {
  auto db = Database::open(path());
  int64_t workload_id = add_workload(*db).id;
  std::vector<int64_t> ids = db->commit_records(
      {measurement(workload_id, 1, {1e-3}), measurement(workload_id, 2, {2e-3}),
       measurement(workload_id, 3, {3e-3}), measurement(workload_id, 4, {4e-3})});
  raw_sql(path(), "UPDATE records SET trace_json = '{\"version\": 1, ' WHERE id = " +
                      std::to_string(ids[0]));
  raw_sql(path(), "UPDATE records SET status = 'fast' WHERE id = " + std::to_string(ids[1]));
  raw_sql(path(), "UPDATE records SET run_secs_json = '[0.003, \"fast\"]' WHERE id = " +
                      std::to_string(ids[2]));
  std::vector<Record> best = db->best(workload_id, zen3(), 1);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].candidate_hash, 4u);
  EXPECT_EQ(db->records().size(), 1u);
  std::string prefix = "kiln.autotune.Database: record ";
  std::string of = " of '" + path() + "' is skipped: ";
  EXPECT_EQ(db->take_warnings(),
            (std::vector<std::string>{
                prefix + std::to_string(ids[0]) + of + "its trace_json is not a JSON object",
                prefix + std::to_string(ids[2]) + of +
                    "its run_secs_json is not a JSON array of positive seconds",
                prefix + std::to_string(ids[1]) + of + "its status 'fast' is not a record status",
            }));
  // Each is reported once, however often it is read.
  db->records();
  EXPECT_TRUE(db->take_warnings().empty());
}

}  // namespace
}  // namespace kiln::autotune::testing
