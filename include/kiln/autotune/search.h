// The search: evolutionary search over the design space of each task, guided by the cost
// model, measured by a runner, committed to the tuning database batch by batch; and the task
// scheduler that shares one budget of trials among several tasks by their expected gain.
//
// One round of a task (autotune/search.cc tells it in this order):
//   generate  new random samples of the sketches join the population (and, on the first
//             round, the best records of the database of the same thread count, so that a
//             resumed run starts there)
//   evolve    parents picked by predicted score are mutated (tile sizes, categorical
//             choices); children never seen before join; the population keeps the best
//   pick      the best-scored candidates never measured (by structural hash, in this run or
//             in the database), plus an epsilon share picked at random. On the first round,
//             the task's baseline schedule (TuneTask::baseline) takes the first place unless
//             the database holds it already: measured and committed like any candidate (its
//             record's stage is "baseline"), it keeps the best record from being slower than
//             the schedule written without the search
//   measure   the runner builds, checks and times them (failures are recorded, never fatal)
//   commit    one database transaction per batch: a killed run loses at most this batch
//   retrain   the cost model learns the batch; its top-k recall on the batch, measured before
//             it learned it, is logged
//   drift     every few rounds a fixed reference candidate is timed again: a machine whose
//             speed moved by more than 3% is flagged in the log and the result
// The rounds stop short of the task's last trials (local_search_trials, at most a quarter of
// its budget): a local search around the best (tile factors one step up and down) spends them,
// and rounds take what it leaves. Then the top candidates are re-measured with interleaved rounds
// (successive halving): the top final_pool_k by their pooled samples, the baseline schedule and the
// fastest single measurement of the search for final_pool_rounds, then the best final_top_k of
// those (with the baseline and the fastest single measurement again) for final_rounds; in each
// round a member's time is divided by the round's median time, and the lowest median ratio ranks
// first, so that the machine's speed moving between rounds does not decide.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/autotune/database.h"
#include "kiln/autotune/space.h"
#include "kiln/autotune/task.h"

namespace kiln::autotune {

class Runner;
class CostModel;

struct SearchConfig {
  // Trials of each task in total, counting the candidates already in the database for the
  // task's workload, target and thread count, so that rerunning the same command spends only
  // what is left (tuning for another thread count starts afresh).
  int64_t max_trials_per_task = 512;
  // Trials of all tasks together (tune_tasks); 0: the sum of max_trials_per_task.
  int64_t max_trials_global = 0;
  int num_trials_per_iter = 32;  // candidates measured per round (one database batch)
  int population = 128;          // candidates kept between generations
  int random_per_round = 24;     // fresh random samples per round
  int children_per_round = 96;   // mutated candidates per round
  int seeds_from_database = 16;  // best records that seed the first population
  double epsilon = 0.1;          // share of a batch picked at random
  int screen_repeat = 3;         // repeats of a first measurement
  int final_pool_k = 16;         // candidates re-measured first at the end (the pool)
  int final_pool_rounds = 3;     // interleaved rounds of the pool (0: no pool)
  int final_top_k = 4;           // the pool's best, re-measured again
  int final_rounds = 10;         // interleaved rounds of that re-measurement
  int local_search_trials = 16;  // neighbours of the best measured at the end (reserved)
  // Every this many rounds of a task (0: never), its reference candidate (the best when the
  // first check ran, fixed for the run) is measured again; a change above drift_threshold of
  // its first time is logged and reported: the machine's speed moved (another load, clocks).
  int drift_check_every = 4;
  double drift_threshold = 0.03;
  uint64_t seed = 1;
  // Threads that mutate, replay and analyze candidates between measurements (0: the cores this
  // process may use). A run draws and keeps the same candidates with any number of them.
  int search_threads = 0;
  // Wall seconds after which no round and no local search starts (0: no limit): a run spends
  // its trials or this time, whichever ends first, then the final rounds pick the best of
  // what it measured. Counted from the start of tune_tasks, per run (a resumed run gets it
  // again).
  double time_budget_s = 0;
  SpaceConfig space;
};

// A moment of a task's tuning, for progress bars and plots.
struct Progress {
  std::string task;
  int64_t trials = 0;           // measured so far (database records included)
  int64_t trials_this_run = 0;  // of which measured by this run
  int64_t max_trials = 0;
  double best_seconds = 0;  // 0 until something measured right
  double best_gflops = 0;
  double elapsed_s = 0;
  double recall = -1;  // top-k recall of the cost model on the last batch (-1: not yet)
};
// Called for each task when the tuning starts (in the order of the tasks), then after every
// batch; returning false stops the tuning cleanly (what was measured is committed).
using ProgressCallback = std::function<bool(const Progress&)>;

// What tuning a task found.
struct TaskResult {
  std::string task;
  uint64_t workload_hash = 0;
  int64_t trials = 0;  // distinct candidates of the workload measured on the target, all runs
  int64_t trials_this_run = 0;
  double best_seconds = 0;  // 0 when no candidate measured right
  double best_gflops = 0;
  std::string best_trace_json;
  double seconds_to_90_percent = 0;  // wall time of this run until 90% of the final speed
  std::vector<std::pair<int64_t, double>> best_so_far;  // (trial, best seconds) after each batch
  std::map<std::string, int64_t> rejections;            // design space refusals by reason
  std::map<std::string, int64_t> failures;              // measurement statuses other than ok
  // (trial, time of the reference / its first time) of each drift check after the first.
  std::vector<std::pair<int64_t, double>> drift;
  int64_t drift_flags = 0;   // checks past SearchConfig::drift_threshold
  bool out_of_time = false;  // SearchConfig::time_budget_s ended the run's rounds
};

// Tunes `tasks` into `db` with `runner` and `model` (shared by the tasks; each task is one group
// of its training data), spending the trials where the task scheduler expects the most gain for
// the weighted total time. `log` (may be null) receives one line per round and a summary.
std::vector<TaskResult> tune_tasks(const std::vector<TuneTask>& tasks, Database& db, Runner& runner,
                                   CostModel& model, const SearchConfig& config,
                                   std::ostream* log = nullptr,
                                   const ProgressCallback& progress = nullptr);

// The workload record of `task` in `db` (added when absent; its function is stored as JSON and
// confirmed by structural equality).
Workload commit_task_workload(Database& db, const TuneTask& task);

// The workload record of `task` in `db`, or nothing (adds nothing).
std::optional<Workload> find_task_workload(Database& db, const TuneTask& task);

// The best record of the function on the target (the one a build applies): measured with
// target.num_threads threads when there is one, else the best of another thread count (its
// target.num_threads says which); nothing when the function has no ok record on the target, and
// for a GPU target whose key names no device (local_target_key on a machine without one).
std::optional<Record> best_record(Database& db, const TuneTask& task, const TargetKey& target);

}  // namespace kiln::autotune
