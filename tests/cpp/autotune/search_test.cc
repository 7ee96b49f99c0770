// The search end to end with a fake runner whose times are a deterministic function of each
// candidate (no measurement noise): it spends its budget, never measures a schedule twice, puts
// every batch in the database, resumes where it stopped (per thread count), stops when asked,
// shares trials among tasks, finds better schedules than random sampling does, measures the same
// candidates with any number of search threads, measures a task's baseline schedule once, as a
// record of its first round, and judges the final rounds round by round, after a pool of the top
// candidates that finds the ones screened while the machine was slow.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "kiln/autotune/cost_model.h"
#include "kiln/autotune/runner.h"
#include "kiln/autotune/search.h"
#include "kiln/ir/op.h"
#include "kiln/ir/structural.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/te/create_prim_func.h"
#include "kiln/te/reduction.h"
#include "kiln/te/tensor.h"
#include "kiln/tir/pipeline.h"
#include "lowered_workloads.h"

namespace kiln::autotune {
namespace {

using namespace ir;

using testing::matmul;
using testing::module_of;
using testing::sum_rows;

// Times from the analytical prior of each candidate (a deterministic, learnable cost), and a
// record of everything measured.
class FakeRunner : public Runner {
 public:
  void set_task(const TuneTask& task) override { task_ = task; }

  std::vector<MeasureResult> run(const std::vector<MeasureInput>& batch, int repeat) override {
    if (batch_seconds_ > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(batch_seconds_));
    }
    std::vector<MeasureResult> results;
    for (const MeasureInput& input : batch) {
      Ref<PrimFunc> f = input.mod->lookup("main");
      uint64_t hash = structural_hash(f);
      bool again = ++measured_[hash] > 1 && batch.size() == 1;  // the drift check
      Ref<PrimFunc> lowered = tir::lower(f);
      if (!interleaving_ && !again) ++codes_[structural_hash(lowered)];
      double seconds = scale_ * task_.flops / (1e9 * analytical_prior(lowered, task_.target));
      // Candidates the prior rates alike differ by a few parts per billion: no two tie.
      seconds *= 1 + 1e-9 * static_cast<double>(hash % 1000);
      if (hash == fast_hash_) seconds *= 0.01;
      if (again) seconds *= again_;
      if (!interleaving_ && hash % 2 == slow_parity_) seconds *= slow_screens_;
      MeasureResult r;
      r.status = RecordStatus::kOk;
      r.run_secs.assign(static_cast<size_t>(std::max(repeat, 1)), seconds);
      times_.push_back(seconds);
      results.push_back(r);
    }
    return results;
  }

  std::vector<MeasureResult> run_interleaved(const std::vector<MeasureInput>& batch,
                                             int rounds) override {
    interleaving_ = true;
    std::vector<MeasureResult> results = run(batch, rounds);
    interleaving_ = false;
    for (const MeasureInput& input : batch) --measured_[structural_hash(input.mod->lookup("main"))];
    if (!fastest_rounds_.empty()) {
      // The members in the order of their hashes run at 1, 1.1, 1.2 ... times the time of the
      // first, and the machine's speed in each round is given: the fastest member's factors
      // and the others'.
      std::vector<size_t> order(batch.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      auto hash_of = [&](size_t i) { return structural_hash(batch[i].mod->lookup("main")); };
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return hash_of(a) < hash_of(b); });
      for (size_t rank = 0; rank < order.size(); ++rank) {
        MeasureResult& r = results[order[rank]];
        const std::vector<double>& factors = rank == 0 ? fastest_rounds_ : other_rounds_;
        for (size_t k = 0; k < r.run_secs.size(); ++k) {
          r.run_secs[k] = 1e-3 * (1 + 0.1 * static_cast<double>(rank)) * factors.at(k);
        }
      }
      interleaved_fastest_ = hash_of(order[0]);
    }
    if (tie_hash_ != 0) {
      // The candidate tie_hash_ takes tie_factor_ times the fastest other member's time.
      for (size_t k = 0; k < static_cast<size_t>(rounds); ++k) {
        double fastest = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < batch.size(); ++i) {
          if (structural_hash(batch[i].mod->lookup("main")) == tie_hash_) continue;
          if (!results[i].run_secs.empty()) fastest = std::min(fastest, results[i].run_secs[k]);
        }
        for (size_t i = 0; i < batch.size(); ++i) {
          if (structural_hash(batch[i].mod->lookup("main")) == tie_hash_ &&
              !results[i].run_secs.empty()) {
            results[i].run_secs[k] = tie_factor_ * fastest;
          }
        }
      }
    }
    interleaved_ = results;
    return results;
  }

  TargetKey target_key() const override {
    return TargetKey{task_.target.str(), "fake cpu", "avx2", num_threads_};
  }

  std::map<uint64_t, int> measured_;
  std::vector<double> times_;
  std::map<uint64_t, int> codes_;  // the lowered functions run() measured (not the drift check)
  double scale_ = 1;               // the machine's speed: every time is multiplied by it
  int num_threads_ = 2;            // the threads the candidates "run" on
  uint64_t fast_hash_ = 0;         // the candidate with this hash runs 100 times faster
  double batch_seconds_ = 0;       // the wall time each run() takes
  double again_ = 1;  // a candidate timed again alone (the drift check) takes this much longer
  // The candidates whose hash has the parity slow_parity_ take this much longer when run() times
  // them (screened while the machine was slower), not in interleaved rounds.
  double slow_screens_ = 1;
  uint64_t slow_parity_ = 1;
  // The final rounds' times are multiplied by these, per round, when they are set.
  std::vector<double> fastest_rounds_, other_rounds_;
  uint64_t interleaved_fastest_ = 0;  // the fastest member of the final rounds
  // In interleaved rounds the candidate with this hash takes tie_factor_ times the fastest
  // other member's time, round by round (0: none).
  uint64_t tie_hash_ = 0;
  double tie_factor_ = 1;
  std::vector<MeasureResult> interleaved_;

 private:
  TuneTask task_;
  bool interleaving_ = false;
};

class SearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("kiln_search_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = Database::open((dir_ / "tuning.db").string());
  }
  void TearDown() override {
    db_.reset();
    std::filesystem::remove_all(dir_);
  }

  SearchConfig config(int64_t trials) const {
    SearchConfig c;
    c.max_trials_per_task = trials;
    c.num_trials_per_iter = 8;
    c.population = 32;
    c.random_per_round = 8;
    c.children_per_round = 24;
    c.final_top_k = 2;
    c.final_rounds = 2;
    c.local_search_trials = 4;
    c.drift_check_every = 0;
    c.space.num_threads = 2;
    return c;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Database> db_;
};

// A schedule written without the search, as a baseline: the rows of C split by 8 and parallel,
// its columns vectorized. The trace JSON text and the hash of the scheduled function.
std::pair<std::string, uint64_t> hand_schedule(const Ref<PrimFunc>& func) {
  schedule::Schedule sch(module_of(func), 0);
  std::vector<schedule::RV> loops = schedule::get_loops(sch, schedule::get_block(sch, "C"));
  std::vector<schedule::RV> rows = schedule::split(sch, loops[0], {std::monostate{}, int64_t{8}});
  schedule::parallel(sch, rows[0]);
  schedule::vectorize(sch, loops[1]);
  return {sch.trace().as_json().dump(), structural_hash(sch.mod()->lookup("main"))};
}

// The records of the task's workload whose search_json has `text`.
std::vector<Record> records_with(Database& db, const TuneTask& task, const std::string& text) {
  RecordQuery query;
  query.workload_id = commit_task_workload(db, task).id;
  std::vector<Record> found;
  for (Record& r : db.records(query)) {
    if (r.search_json.find(text) != std::string::npos) found.push_back(r);
  }
  return found;
}

// The record of the lowest median among `records` (not empty).
const Record& fastest_of(const std::vector<Record>& records) {
  return *std::min_element(records.begin(), records.end(),
                           [](const Record& a, const Record& b) { return *a.median < *b.median; });
}

TEST_F(SearchTest, SpendsItsBudgetWithoutMeasuringTwiceAndCommitsEveryBatch) {
  // Without measuring a schedule twice, nor two schedules of the same code.
  TuneTask task = make_task(matmul(64, 64, 64), "llvm", "mm");
  FakeRunner runner;
  CostModel model;
  std::vector<TaskResult> results = tune_tasks({task}, *db_, runner, model, config(40));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].trials, 40);
  EXPECT_EQ(results[0].trials_this_run, 40);
  for (const auto& [hash, count] : runner.measured_) EXPECT_EQ(count, 1) << hash;
  // Nor two schedules that lower to the same code.
  for (const auto& [hash, count] : runner.codes_) EXPECT_EQ(count, 1) << hash;
  EXPECT_EQ(runner.codes_.size(), 40u);
  Workload w = commit_task_workload(*db_, task);
  TargetKey key = runner.target_key();
  // The trials, the pool's 16 re-measurements and the two final ones.
  EXPECT_EQ(db_->count(w.id, key), 40 + 16 + 2);
  EXPECT_EQ(db_->measured_hashes(w.id, key).size(), 40u);
  EXPECT_GT(results[0].best_seconds, 0);
  EXPECT_DOUBLE_EQ(results[0].best_seconds,
                   *std::min_element(runner.times_.begin(), runner.times_.end()));
  EXPECT_TRUE(best_record(*db_, task, key).has_value());
  // The final round's verdict: one of its two records is the winner, and it is the best.
  RecordQuery final_round;
  std::vector<Record> finals;
  for (Record& r : db_->records(final_round)) {
    if (r.search_json.find("\"final\"") != std::string::npos) finals.push_back(r);
  }
  ASSERT_EQ(finals.size(), 2u);
  int winners = 0;
  for (const Record& r : finals) {
    if (r.search_json.find("\"winner\":true") == std::string::npos) continue;
    ++winners;
    EXPECT_EQ(db_->best(w.id, key, 1)[0].candidate_hash, r.candidate_hash);
  }
  EXPECT_EQ(winners, 1);
}

TEST_F(SearchTest, AnyNumberOfSearchThreadsMeasuresTheSameCandidatesInTheSameOrder) {
  // The replays and analyses run on the threads; the draws, the deduplication and the order
  // stay on the search's own, so one thread and three measure alike (the local search too).
  TuneTask task = make_task(matmul(64, 64, 64), "llvm", "mm");
  std::vector<std::vector<double>> times;
  std::vector<std::map<uint64_t, int>> measured;
  for (int threads : {1, 3}) {
    std::unique_ptr<Database> db =
        Database::open((dir_ / ("threads" + std::to_string(threads) + ".db")).string());
    FakeRunner runner;
    CostModel model;
    SearchConfig c = config(40);
    c.search_threads = threads;
    std::vector<TaskResult> results = tune_tasks({task}, *db, runner, model, c);
    EXPECT_EQ(results[0].trials_this_run, 40);
    times.push_back(runner.times_);
    measured.push_back(runner.measured_);
  }
  EXPECT_EQ(times[0], times[1]);
  EXPECT_EQ(measured[0], measured[1]);
}

TEST_F(SearchTest, TheLastTrialsGoToTheNeighboursOfTheBest) {
  // Rounds of 8 would spend all 40 trials; they stop 4 short, and the local search around the
  // best measures its neighbours not measured yet (the rounds take what it leaves).
  // The design space depends on the target's vector registers: a fixed CPU keeps the draws
  // the same on every host.
  TuneTask task =
      make_task(matmul(128, 128, 128), "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell", "mm");
  FakeRunner runner;
  CostModel model;
  std::ostringstream log;
  SearchConfig c = config(40);
  // Draws whose best still has neighbours to measure after 36 trials (with others the rounds
  // have measured them all, and the local search has nothing to do).
  c.seed = 1;
  std::vector<TaskResult> results = tune_tasks({task}, *db_, runner, model, c, &log);
  EXPECT_EQ(results[0].trials_this_run, 40);
  size_t local = records_with(*db_, task, "\"stage\":\"local\"").size();
  EXPECT_GE(local, 1u);
  EXPECT_LE(local, 4u);
  EXPECT_NE(log.str().find("[mm] trials 36/40"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("[mm] local search: " + std::to_string(local) + " neighbours"),
            std::string::npos)
      << log.str();
}

TEST_F(SearchTest, TheFinalVerdictComparesTheMembersRoundByRound) {
  // The members of the final rounds run at 1, 1.1, 1.2 ... times the first one's time on a
  // machine whose speed moves from round to round (1x, 3x, 2x slower), and the first is slowed
  // down alone once more in the third round: it wins two rounds of three, though the median of
  // its raw times is above the others'.
  TuneTask task = make_task(matmul(64, 64, 64), "llvm", "mm");
  FakeRunner runner;
  runner.fastest_rounds_ = {1, 3, 6};
  runner.other_rounds_ = {1, 3, 2};
  CostModel model;
  SearchConfig c = config(24);
  c.final_rounds = 3;
  tune_tasks({task}, *db_, runner, model, c);
  ASSERT_GE(runner.interleaved_.size(), 2u);
  // The raw medians would pick another member.
  double fastest_raw = 0, others_raw = std::numeric_limits<double>::infinity();
  for (const MeasureResult& r : runner.interleaved_) {
    std::vector<double> sorted = r.run_secs;
    std::sort(sorted.begin(), sorted.end());
    double raw = sorted.at(1);
    if (sorted.back() > 5 * sorted.front()) {
      fastest_raw = raw;
    } else {
      others_raw = std::min(others_raw, raw);
    }
  }
  ASSERT_GT(fastest_raw, others_raw);
  std::vector<Record> winners = records_with(*db_, task, "\"winner\":true");
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_EQ(winners[0].candidate_hash, runner.interleaved_fastest_);
  std::vector<Record> best = db_->best(commit_task_workload(*db_, task).id, runner.target_key(), 1);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].candidate_hash, runner.interleaved_fastest_);
}

TEST_F(SearchTest, TheFastestMeasurementIsTimedAgainInTheFinalRounds) {
  // After the one round, the drift check times the best candidate again while the machine is
  // 1000 times slower: its pooled samples fall out of the top two, and the pool and the final
  // rounds time it all the same.
  TuneTask task = make_task(matmul(64, 64, 64), "llvm", "mm");
  FakeRunner runner;
  runner.again_ = 1000;
  CostModel model;
  SearchConfig c = config(8);
  c.local_search_trials = 0;
  c.drift_check_every = 1;
  tune_tasks({task}, *db_, runner, model, c);
  std::vector<Record> screened = records_with(*db_, task, "\"stage\":\"screen\"");
  ASSERT_FALSE(screened.empty());
  const Record* fastest = &fastest_of(screened);
  std::vector<Record> drift = records_with(*db_, task, "\"stage\":\"drift\"");
  ASSERT_FALSE(drift.empty());
  std::vector<Record> pool = records_with(*db_, task, "\"stage\":\"pool\"");
  EXPECT_EQ(pool.size(), 8u);  // every candidate (the fastest among them)
  std::vector<Record> finals = records_with(*db_, task, "\"stage\":\"final\"");
  ASSERT_EQ(finals.size(), 2u);  // the pool's top two: the fastest first
  const Record* winner = nullptr;
  for (const Record& r : finals) {
    if (r.search_json.find("\"winner\":true") != std::string::npos) winner = &r;
  }
  ASSERT_NE(winner, nullptr);
  EXPECT_EQ(winner->candidate_hash, fastest->candidate_hash);
}

TEST_F(SearchTest, ACandidateScreenedWhileTheMachineWasSlowReachesTheFinalRoundsThroughThePool) {
  // Candidates of even hashes are screened 100 times slower than they run in interleaved rounds
  // (the pool of the top 16 by their screens holds the best of them): the fastest of the
  // pool ranks below the top two by its screen, and wins the final rounds.
  TuneTask task = make_task(matmul(64, 64, 64), "llvm", "mm");
  FakeRunner runner;
  runner.slow_screens_ = 100;
  runner.slow_parity_ = 0;
  CostModel model;
  SearchConfig c = config(24);
  c.local_search_trials = 0;
  c.drift_check_every = 0;
  c.final_pool_k = 16;
  c.seed = 5;  // draws that make the case (checked below: the fastest screened below the top 2)
  tune_tasks({task}, *db_, runner, model, c);
  std::vector<Record> pool = records_with(*db_, task, "\"stage\":\"pool\"");
  ASSERT_GE(pool.size(), 16u);
  const Record* fastest = &fastest_of(pool);
  std::vector<Record> screened = records_with(*db_, task, "\"stage\":\"screen\"");
  double fastest_screen = 0;
  int faster_screens = 0;
  for (const Record& r : screened) {
    if (r.candidate_hash == fastest->candidate_hash) fastest_screen = *r.median;
  }
  for (const Record& r : screened) faster_screens += *r.median < fastest_screen ? 1 : 0;
  ASSERT_GE(faster_screens, c.final_top_k);  // the final rounds alone would not time it
  std::vector<Record> winners = records_with(*db_, task, "\"winner\":true");
  ASSERT_EQ(winners.size(), 1u);
  EXPECT_EQ(winners[0].candidate_hash, fastest->candidate_hash);
  Workload w = commit_task_workload(*db_, task);
  EXPECT_EQ(db_->best(w.id, runner.target_key(), 1)[0].candidate_hash, fastest->candidate_hash);
}

TEST_F(SearchTest, AResumedRunSpendsOnlyWhatIsLeft) {
  TuneTask task = make_task(matmul(32, 64, 32), "llvm", "mm");
  CostModel model;
  SearchConfig c = config(16);
  c.final_top_k = 0;
  FakeRunner first;
  tune_tasks({task}, *db_, first, model, c);
  FakeRunner again;
  std::vector<TaskResult> same = tune_tasks({task}, *db_, again, model, c);
  EXPECT_EQ(same[0].trials_this_run, 0);
  EXPECT_TRUE(again.measured_.empty());
  c.max_trials_per_task = 24;
  FakeRunner more;
  std::vector<TaskResult> rest = tune_tasks({task}, *db_, more, model, c);
  EXPECT_EQ(rest[0].trials_this_run, 8);
  EXPECT_EQ(rest[0].trials, 24);
  // Nor twins of the first run's candidates: their records keep the hash of their code.
  EXPECT_EQ(more.codes_.size(), 8u);
  for (const auto& [code, count] : more.codes_) EXPECT_EQ(first.codes_.count(code), 0u) << code;
}

TEST_F(SearchTest, EachThreadCountIsTunedAndResumedOnItsOwn) {
  TuneTask task = make_task(matmul(32, 64, 32), "llvm", "mm");
  CostModel model;
  SearchConfig c = config(16);
  c.final_top_k = 0;
  FakeRunner one;
  one.num_threads_ = 1;
  EXPECT_EQ(tune_tasks({task}, *db_, one, model, c)[0].trials_this_run, 16);
  // The records of 1 thread neither count toward the budget of 2 threads nor stop their
  // candidates from being measured again.
  FakeRunner two;
  two.num_threads_ = 2;
  std::vector<TaskResult> tuned = tune_tasks({task}, *db_, two, model, c);
  EXPECT_EQ(tuned[0].trials_this_run, 16);
  EXPECT_EQ(tuned[0].trials, 16);
  Workload w = commit_task_workload(*db_, task);
  EXPECT_EQ(db_->count(w.id, one.target_key()), 16);
  EXPECT_EQ(db_->count(w.id, two.target_key()), 16);
  // Each count resumes with its own records.
  FakeRunner again;
  again.num_threads_ = 2;
  EXPECT_EQ(tune_tasks({task}, *db_, again, model, c)[0].trials_this_run, 0);
  EXPECT_TRUE(again.measured_.empty());
  std::optional<Record> best = best_record(*db_, task, again.target_key());
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->target.num_threads, 2);
}

TEST_F(SearchTest, AProgressCallbackStopsTheRunAfterItsBatch) {
  TuneTask task = make_task(matmul(32, 32, 32), "llvm", "mm");
  FakeRunner runner;
  CostModel model;
  int calls = 0;
  std::vector<TaskResult> results =
      tune_tasks({task}, *db_, runner, model, config(64), nullptr, [&](const Progress& p) {
        ++calls;
        EXPECT_EQ(p.task, "mm");
        // The first call is the task's start, the next ones follow its batches.
        if (calls == 1) {
          EXPECT_EQ(p.trials, 0);
        } else {
          EXPECT_GT(p.trials, 0);
        }
        EXPECT_EQ(p.trials_this_run, p.trials);
        return calls < 3;
      });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(results[0].trials, 16);
  // Stopped at the start, a run measures nothing; a run after a stopped one starts from the
  // trials its records hold.
  calls = 0;
  EXPECT_EQ(tune_tasks({task}, *db_, runner, model, config(64), nullptr,
                       [&](const Progress&) { return ++calls > 1; })[0]
                .trials_this_run,
            0);
  EXPECT_EQ(calls, 1);
  tune_tasks({task}, *db_, runner, model, config(64), nullptr, [&](const Progress& p) {
    EXPECT_EQ(p.trials - p.trials_this_run, 16);
    return false;
  });
}

TEST_F(SearchTest, ATimeBudgetEndsTheRoundsAndTheFinalRoundsStillPick) {
  TuneTask task = make_task(matmul(32, 32, 32), "llvm", "mm");
  FakeRunner runner;
  runner.batch_seconds_ = 0.15;
  CostModel model;
  SearchConfig c = config(64);
  c.time_budget_s = 0.2;
  std::ostringstream log;
  std::vector<TaskResult> results = tune_tasks({task}, *db_, runner, model, c, &log);
  // The first round ends past 0.15 s, a second may start before 0.2 s, no third: 8 or 16 of
  // the 64 trials, and no local search.
  EXPECT_TRUE(results[0].out_of_time);
  EXPECT_GE(results[0].trials_this_run, 8);
  EXPECT_LE(results[0].trials_this_run, 16);
  EXPECT_NE(log.str().find("time budget of 0.2 s spent after " +
                           std::to_string(results[0].trials_this_run) + " trials"),
            std::string::npos)
      << log.str();
  EXPECT_TRUE(records_with(*db_, task, "\"stage\":\"local\"").empty());
  EXPECT_GE(records_with(*db_, task, "\"stage\":\"final\"").size(), 2u);
  EXPECT_GT(results[0].best_seconds, 0);
  // Without a budget the same run spends its trials.
  runner.batch_seconds_ = 0;
  c.time_budget_s = 0;
  results = tune_tasks({task}, *db_, runner, model, c);
  EXPECT_FALSE(results[0].out_of_time);
  EXPECT_EQ(results[0].trials, 64);
}

TEST_F(SearchTest, TasksShareTheGlobalBudget) {
  TuneTask a = make_task(matmul(32, 32, 32), "llvm", "small", 1.0);
  TuneTask b = make_task(matmul(64, 64, 64), "llvm", "large", 4.0);
  FakeRunner runner;
  CostModel model;
  SearchConfig c = config(64);
  c.max_trials_global = 48;
  std::vector<TaskResult> results = tune_tasks({a, b}, *db_, runner, model, c);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_GT(results[0].trials_this_run, 0);
  EXPECT_GT(results[1].trials_this_run, 0);
  // The local searches at the end spend from the same budget.
  EXPECT_EQ(results[0].trials_this_run + results[1].trials_this_run, 48);
}

TEST_F(SearchTest, FindsBetterSchedulesThanRandomSampling) {
  // The fake cost is what the prior predicts, so the guided search should land among the best
  // tenth of random samples with the same budget (far from their median).
  TuneTask task = make_task(matmul(128, 128, 128), "llvm", "mm");
  FakeRunner runner;
  CostModel model;
  std::vector<TaskResult> results = tune_tasks({task}, *db_, runner, model, config(48));
  SpaceConfig space;
  space.num_threads = 2;
  SpaceGenerator random(task, space);
  std::vector<double> sampled;
  FakeRunner timer;
  timer.set_task(task);
  for (uint64_t seed = 0; sampled.size() < 48 && seed < 200; ++seed) {
    std::optional<Candidate> c = random.sample(0, seed);
    if (c) sampled.push_back(timer.run({MeasureInput{c->mod, ""}}, 1)[0].run_secs[0]);
  }
  std::sort(sampled.begin(), sampled.end());
  ASSERT_GE(sampled.size(), 40u);
  EXPECT_LE(results[0].best_seconds, sampled[sampled.size() / 10]);
  EXPECT_LT(results[0].best_seconds, 0.8 * sampled[sampled.size() / 2]);
}

TEST_F(SearchTest, AMachineThatSlowsDownIsFlagged) {
  TuneTask task = make_task(matmul(64, 64, 64), "llvm", "mm");
  FakeRunner runner;
  CostModel model;
  SearchConfig c = config(48);
  c.drift_check_every = 2;  // rounds 2 (the first time), 4 and 6
  int calls = 0;
  std::vector<TaskResult> results =
      tune_tasks({task}, *db_, runner, model, c, nullptr, [&](const Progress&) {
        if (++calls == 3) runner.scale_ = 1.1;  // after the first check (the start is call 1)
        return true;
      });
  ASSERT_EQ(results[0].drift.size(), 2u);
  EXPECT_NEAR(results[0].drift[0].second, 1.1, 1e-9);
  EXPECT_EQ(results[0].drift[0].first, 32);
  EXPECT_EQ(results[0].drift_flags, 2);
  EXPECT_EQ(results[0].trials, 48);  // the checks cost no trials

  // A steady machine: the reference keeps its time, nothing is flagged.
  std::filesystem::remove(dir_ / "steady.db");
  std::unique_ptr<Database> steady = Database::open((dir_ / "steady.db").string());
  FakeRunner same;
  CostModel fresh;
  std::vector<TaskResult> quiet = tune_tasks({task}, *steady, same, fresh, c);
  ASSERT_EQ(quiet[0].drift.size(), 2u);
  EXPECT_DOUBLE_EQ(quiet[0].drift[1].second, 1.0);
  EXPECT_EQ(quiet[0].drift_flags, 0);
}

TEST_F(SearchTest, TheBaselineIsMeasuredOnceAsATrialOfTheFirstRound) {
  TuneTask task = make_task(matmul(64, 64, 64), "llvm", "mm");
  auto [trace, hash] = hand_schedule(task.func);
  task.baseline = BaselineSchedule{"hand", trace};
  CostModel model;
  SearchConfig c = config(16);
  FakeRunner runner;
  std::ostringstream log;
  std::vector<TaskResult> results = tune_tasks({task}, *db_, runner, model, c, &log);
  EXPECT_EQ(results[0].trials, 16);  // the baseline is one of them
  EXPECT_EQ(runner.measured_[hash], 1);
  std::vector<Record> baseline = records_with(*db_, task, "\"stage\":\"baseline\"");
  ASSERT_EQ(baseline.size(), 1u);
  EXPECT_EQ(baseline[0].candidate_hash, hash);
  EXPECT_EQ(baseline[0].status, RecordStatus::kOk);
  EXPECT_NE(baseline[0].search_json.find("\"baseline\":\"hand\""), std::string::npos);
  EXPECT_NE(log.str().find("[mm] baseline (hand): "), std::string::npos) << log.str();
  // The best is never slower than the baseline.
  EXPECT_LE(results[0].best_seconds, *baseline[0].median);
  // A resumed run with more budget does not measure it again.
  c.max_trials_per_task = 24;
  FakeRunner more;
  std::ostringstream again;
  std::vector<TaskResult> rest = tune_tasks({task}, *db_, more, model, c, &again);
  EXPECT_EQ(rest[0].trials_this_run, 8);
  EXPECT_EQ(more.measured_[hash], 0);
  EXPECT_EQ(records_with(*db_, task, "\"stage\":\"baseline\"").size(), 1u);
  EXPECT_NE(again.str().find("[mm] baseline (hand): in the database already"), std::string::npos)
      << again.str();
}

TEST_F(SearchTest, ABaselineFasterThanEveryCandidateIsTheBestRecord) {
  TuneTask task = make_task(matmul(64, 64, 64), "llvm", "mm");
  auto [trace, hash] = hand_schedule(task.func);
  task.baseline = BaselineSchedule{"hand", trace};
  FakeRunner runner;
  runner.fast_hash_ = hash;
  CostModel model;
  std::vector<TaskResult> results = tune_tasks({task}, *db_, runner, model, config(24));
  // The search goes on around its own best (children, local search) and spends its budget.
  EXPECT_EQ(results[0].trials, 24);
  std::optional<Record> best = best_record(*db_, task, runner.target_key());
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->candidate_hash, hash);
  EXPECT_DOUBLE_EQ(results[0].best_seconds, *best->median);
  // Its final record still says it is the baseline.
  std::vector<Record> finals = records_with(*db_, task, "\"stage\":\"final\"");
  ASSERT_FALSE(finals.empty());
  bool marked = false;
  for (const Record& r : finals) {
    if (r.candidate_hash == hash)
      marked = r.search_json.find("\"baseline\":\"hand\"") != std::string::npos;
  }
  EXPECT_TRUE(marked);
}

TEST_F(SearchTest, ABaselineWithinThreePercentOfTheFastestIsKeptByTheFinalRounds) {
  // The final rounds' winner: the baseline when it is within 3% of the fastest candidate, else
  // the fastest.
  for (double factor : {1.02, 1.05}) {
    TuneTask task = make_task(matmul(64, 64, 64), "llvm", factor < 1.03 ? "tie" : "slower");
    auto [trace, hash] = hand_schedule(task.func);
    task.baseline = BaselineSchedule{"hand", trace};
    FakeRunner runner;
    runner.fastest_rounds_ = {1, 1, 1};
    runner.other_rounds_ = {1, 1, 1};
    runner.tie_hash_ = hash;
    runner.tie_factor_ = factor;
    CostModel model;
    SearchConfig c = config(24);
    c.final_rounds = 3;
    std::ostringstream log;
    std::unique_ptr<Database> db = Database::open((dir_ / (task.name + ".db")).string());
    tune_tasks({task}, *db, runner, model, c, &log);
    std::vector<Record> winners = records_with(*db, task, "\"winner\":true");
    ASSERT_EQ(winners.size(), 1u) << factor;
    bool kept = log.str().find("[" + task.name +
                               "] final: the baseline (hand) is within 3% of "
                               "the fastest candidate and is kept") != std::string::npos;
    if (factor < 1.03) {
      EXPECT_EQ(winners[0].candidate_hash, hash);
      EXPECT_TRUE(kept) << log.str();
      EXPECT_EQ(best_record(*db, task, runner.target_key())->candidate_hash, hash);
    } else {
      EXPECT_NE(winners[0].candidate_hash, hash);
      EXPECT_FALSE(kept) << log.str();
    }
  }
}

TEST_F(SearchTest, ABaselineThatDoesNotReplayIsSkippedWithTheReason) {
  TuneTask task = make_task(matmul(32, 32, 32), "llvm", "mm");
  // A schedule of another function: its block "B" is not the matmul's.
  schedule::Schedule other(module_of(sum_rows(32, 32)), 0);
  schedule::get_loops(other, schedule::get_block(other, "B"));
  task.baseline = BaselineSchedule{"other", other.trace().as_json().dump()};
  FakeRunner runner;
  CostModel model;
  std::ostringstream log;
  std::vector<TaskResult> results = tune_tasks({task}, *db_, runner, model, config(8), &log);
  EXPECT_EQ(results[0].trials, 8);
  EXPECT_TRUE(records_with(*db_, task, "baseline").empty());
  EXPECT_NE(log.str().find("[mm] baseline (other) skipped: its trace does not replay on the "
                           "function: "),
            std::string::npos)
      << log.str();
  task.baseline = BaselineSchedule{"text", "not json"};
  std::ostringstream text_log;
  tune_tasks({task}, *db_, runner, model, config(16), &text_log);
  EXPECT_NE(text_log.str().find("[mm] baseline (text) skipped: its trace is not a JSON object"),
            std::string::npos)
      << text_log.str();
}

}  // namespace
}  // namespace kiln::autotune
