// The search loop, in the order a round runs: generate -> evolve -> pick -> measure -> commit ->
// retrain; then, at the end of a task, local search and successive halving; and the task
// scheduler over several tasks. See kiln/autotune/search.h.
#include "kiln/autotune/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "autotune/parallel.h"
#include "autotune/search_scoring.h"
#include "kiln/autotune/runner.h"
#include "kiln/ir/serialize.h"
#include "kiln/ir/structural.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kKilnVersion = "0.2.0";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// For the log: ", k built from the object cache" when some of `results` were, else "".
std::string from_object_cache(const std::vector<MeasureResult>& results) {
  size_t cached = 0;
  for (const MeasureResult& r : results) cached += r.build_from_cache ? 1 : 0;
  if (cached == 0) return "";
  return ", " + std::to_string(cached) + " built from the object cache";
}

// Interleaved median ratios that differ by less than this factor are a tie: on a shared host
// the final rounds' ratios of one kernel move by a few percent from run to run.
constexpr double kTieRatio = 1.03;

// For each ok member of interleaved rounds (index into `results`): (its median ratio, its
// median time). In each round every member's time is divided by the round's median time, so
// that the machine's speed, which moves from round to round on a shared host, cancels. The
// rounds every ok member ran are compared (one that took a member's worker along was run again
// in a fresh worker).
std::map<size_t, std::pair<double, double>> interleaved_keys(
    const std::vector<MeasureResult>& results) {
  std::vector<size_t> ok;
  size_t rounds = std::numeric_limits<size_t>::max();
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].status != RecordStatus::kOk || results[i].run_secs.empty()) continue;
    ok.push_back(i);
    rounds = std::min(rounds, results[i].run_secs.size());
  }
  std::map<size_t, std::vector<double>> ratios;
  for (size_t round = 0; round < rounds && !ok.empty(); ++round) {
    std::vector<double> times;
    for (size_t i : ok) times.push_back(results[i].run_secs[round]);
    double middle = median(times);
    if (middle <= 0) continue;
    for (size_t i : ok) ratios[i].push_back(results[i].run_secs[round] / middle);
  }
  std::map<size_t, std::pair<double, double>> keys;
  for (size_t i : ok) keys[i] = {median(ratios[i]), median(results[i].run_secs)};
  return keys;
}

// The members of interleaved rounds that ran, fastest first (indices into the results `keys`
// come from, interleaved_keys): the lowest median ratio first (on a tie, the lowest median
// time).
std::vector<size_t> interleaved_order(const std::map<size_t, std::pair<double, double>>& keys) {
  std::vector<size_t> ok;
  for (const auto& [i, key] : keys) ok.push_back(i);
  std::stable_sort(ok.begin(), ok.end(),
                   [&](size_t a, size_t b) { return keys.at(a) < keys.at(b); });
  return ok;
}

// A candidate of the population with what the cost model thinks of it.
struct Member {
  Candidate candidate;
  Scored scored;
  int generation = 0;
  // The name of the task's baseline schedule when the member is that schedule (no sketch, no
  // decisions); empty for a candidate of the design space.
  std::string baseline;
};

// A member of the final rounds: a measured candidate replayed from its record, with what the
// record's search JSON says of it that its new records keep (sketch, decisions_length, the
// design space, and a baseline schedule's name).
struct FinalMember {
  Candidate candidate;
  Json search;
};

// The tuning state of one task across rounds.
class TaskSearch {
 public:
  TaskSearch(const TuneTask& task, int group, Database& db, Runner& runner, CostModel& model,
             const SearchConfig& config, std::ostream* log)
      : task_(task),
        group_(group),
        db_(db),
        runner_(runner),
        model_(model),
        config_(config),
        log_(log),
        space_(task, config.space),
        scorer_(task.target,
                config.space.num_threads > 0 ? config.space.num_threads : KilnGetNumThreads()),
        rng_(config.seed + 7919 * static_cast<uint64_t>(group)),
        threads_(config.search_threads > 0 ? config.search_threads : available_cores()) {
    start_ = Clock::now();
    runner_.set_task(task_);
    target_ = runner_.target_key();
    workload_ = commit_task_workload(db_, task_);
    for (uint64_t hash : db_.measured_hashes(workload_.id, target_)) measured_.insert(hash);
    load_measured_codes();
    // Trials are distinct candidates: the final re-measurements add records, not trials.
    trials_before_ = static_cast<int64_t>(measured_.size());
    load_best_from_database();
    prepare_baseline();
    // The trials kept for the local search at the end (local_search_trials, at most a quarter
    // of the task's trials, at most what is left): the rounds stop short of them, so that a run
    // whose budget the rounds would spend still ends with the neighbours of its best.
    reserve_ =
        std::max<int64_t>(0, std::min<int64_t>({int64_t{config_.local_search_trials},
                                                config_.max_trials_per_task / 4, remaining()}));
  }

  // The code of the records measured before (their search JSON's "code_hash"), so that a
  // resumed run does not measure twins of them either.
  void load_measured_codes() {
    RecordQuery query;
    query.workload_id = workload_.id;
    query.target = target_;
    for (const Record& r : db_.records(query)) {
      Json search = Json::parse(r.search_json, nullptr, /*allow_exceptions=*/false);
      if (!search.is_object()) continue;
      auto code = search.find("code_hash");
      if (code != search.end() && code->is_number_unsigned() && code->get<uint64_t>() != 0) {
        codes_.insert(code->get<uint64_t>());
      }
    }
  }

  const TuneTask& task() const { return task_; }
  int64_t trials() const { return trials_before_ + trials_this_run_; }
  int64_t remaining() const { return std::max<int64_t>(0, config_.max_trials_per_task - trials()); }
  bool exhausted() const { return exhausted_; }
  double best_seconds() const { return best_seconds_; }
  const std::vector<std::pair<int64_t, double>>& history() const { return history_; }

  // One round: at most `budget` trials. Returns the trials spent.
  int64_t round(int64_t budget) {
    Clock::time_point start = Clock::now();
    int64_t analyzed_before = analyzed_;
    // Step 1. Generate: random samples (and the database's best on the first round).
    generate();
    double generate_s = seconds_since(start);
    // Step 2. Evolve: children of the best-scored candidates.
    evolve();
    double evolve_s = seconds_since(start) - generate_s;
    // Step 3. Pick: the best-scored candidates never measured, and a few at random; on the first
    // round the baseline schedule takes the first place.
    size_t places = static_cast<size_t>(std::max<int64_t>(budget, 0));
    std::vector<Member> batch;
    if (baseline_ && places > 0) {
      batch.push_back(std::move(*baseline_));
      baseline_.reset();
    }
    for (Member& m : pick(places - batch.size())) batch.push_back(std::move(m));
    if (batch.empty()) {
      exhausted_ = population_.empty() || ++empty_rounds_ >= 3;
      if (exhausted_) log_exhausted();
      return 0;
    }
    empty_rounds_ = 0;
    // Step 4. Measure.
    Clock::time_point measure_start = Clock::now();
    std::vector<MeasureInput> inputs;
    for (const Member& m : batch) inputs.push_back(MeasureInput{m.candidate.mod, ""});
    std::vector<MeasureResult> results = runner_.run(inputs, config_.screen_repeat);
    double measure_s = seconds_since(measure_start);
    // Step 5. Commit the batch in one transaction.
    commit(batch, results, "screen");
    // Step 6. Retrain, after measuring how well the model ranked the batch.
    Clock::time_point train_start = Clock::now();
    recall_ = learn(batch, results);
    double train_s = seconds_since(train_start);
    trials_this_run_ += static_cast<int64_t>(std::min(batch.size(), results.size()));
    history_.emplace_back(trials(), best_seconds_);
    if (log_ != nullptr) {
      // The overhead per candidate: the search's (sampling, replay, lowering, features, scoring)
      // per candidate it looked at, and the worker's build per measured candidate.
      double build_ms = 0;
      for (const MeasureResult& r : results) build_ms += r.build_ms;
      int64_t analyzed = std::max<int64_t>(1, analyzed_ - analyzed_before);
      *log_ << "[" << task_.name << "] trials " << trials() << "/" << config_.max_trials_per_task
            << "  best " << gflops(best_seconds_) << " GFLOP/s  batch best " << gflops(batch_best_)
            << " GFLOP/s  recall@" << recall_k(batch.size()) << " "
            << (recall_ < 0 ? std::string("-") : std::to_string(recall_)) << "  population "
            << population_.size() << " (" << same_code_ << " dropped: the code of another)"
            << "  time generate " << generate_s << " s, evolve " << evolve_s << " s, measure "
            << measure_s << " s, train " << train_s << " s  per candidate: "
            << "search " << 1e3 * (generate_s + evolve_s) / static_cast<double>(analyzed) << " ms ("
            << analyzed << "), build "
            << build_ms / static_cast<double>(std::max<size_t>(1, results.size())) << " ms"
            << from_object_cache(results) << "\n";
    }
    interrupted_ = results.size() < batch.size();
    ++rounds_;
    if (!interrupted_ && config_.drift_check_every > 0 && rounds_ % config_.drift_check_every == 0)
      check_drift();
    return static_cast<int64_t>(std::min(batch.size(), results.size()));
  }

  bool interrupted() const { return interrupted_; }

  // Times the reference candidate again (the best at the first check, fixed for the run) and
  // compares it with its first time. Its samples are stored as a record of stage "drift"; it
  // costs no trial (the candidate is measured already).
  void check_drift() {
    if (!reference_.candidate.mod.defined()) {
      if (!best_.candidate.mod.defined()) return;
      reference_ = best_;
    }
    std::vector<MeasureResult> results =
        runner_.run({MeasureInput{reference_.candidate.mod, ""}}, config_.screen_repeat);
    if (results.empty()) {
      interrupted_ = true;
      return;
    }
    commit({reference_}, results, "drift");
    if (results[0].status != RecordStatus::kOk) return;
    double seconds = median(results[0].run_secs);
    if (reference_seconds_ == 0) {
      reference_seconds_ = seconds;
      return;
    }
    double ratio = seconds / reference_seconds_;
    drift_.emplace_back(trials(), ratio);
    if (std::abs(ratio - 1) <= config_.drift_threshold) return;
    ++drift_flags_;
    if (log_ != nullptr) {
      *log_ << "[" << task_.name << "] drift: the reference candidate takes " << ratio
            << "x its first time (limit " << 1 + config_.drift_threshold
            << "x): the machine's speed changed (another load, clocks); times measured "
               "before and after compare less well\n";
    }
  }

  // The trials reserved for the local search until it runs (set by the constructor).
  int64_t reserved() const { return reserve_; }
  // The trials the rounds may spend before the local search.
  int64_t rounds_left() const { return remaining() - reserve_; }

  // The end of the rounds: neighbours of the best, measured with the trials reserved for them,
  // at most `budget` (the trials left of the global budget). Returns the trials spent.
  int64_t local_search_at_end(int64_t budget) {
    int64_t before = trials_this_run_;
    int64_t local = std::min<int64_t>({reserve_, remaining(), budget});
    if (best_.candidate.mod.defined() && local > 0) local_search(local);
    reserve_ = 0;
    return trials_this_run_ - before;
  }

  // The end of a task: the top candidates measured again with interleaved rounds; the best is
  // what those rounds say.
  void finish() {
    if (config_.final_top_k > 1 && config_.final_rounds > 0) successive_halving();
  }

  TaskResult result() const {
    TaskResult r;
    r.task = task_.name;
    r.workload_hash = task_.workload_hash;
    r.trials = trials();
    r.trials_this_run = trials_this_run_;
    r.best_seconds = best_seconds_;
    r.best_gflops = gflops(best_seconds_);
    r.best_trace_json = best_trace_json_;
    r.best_so_far = history_;
    r.rejections = space_.rejections();
    r.failures = failures_;
    r.seconds_to_90_percent = seconds_to_90_;
    r.drift = drift_;
    r.drift_flags = drift_flags_;
    return r;
  }

  Progress progress() const {
    Progress p;
    p.task = task_.name;
    p.trials = trials();
    p.trials_this_run = trials_this_run_;
    p.max_trials = config_.max_trials_per_task;
    p.best_seconds = best_seconds_;
    p.best_gflops = gflops(best_seconds_);
    p.elapsed_s = seconds_since(start_);
    p.recall = recall_;
    return p;
  }

 private:
  double gflops(double seconds) const {
    return seconds > 0 && task_.flops > 0 ? task_.flops / seconds / 1e9 : 0.0;
  }
  static int recall_k(size_t batch) { return static_cast<int>(std::max<size_t>(1, batch / 4)); }

  void score(std::vector<Member>* members) const {
    std::vector<Scored*> items;
    for (Member& m : *members) items.push_back(&m.scored);
    scorer_.score(model_, group_, items);
  }

  // Adds candidates to the population, in order, unless there already: each new one is lowered
  // and analyzed (on the search's threads) and kept when its code is new.
  void add(std::vector<Candidate> candidates, int generation) {
    std::vector<Candidate> fresh;
    for (Candidate& c : candidates) {
      if (seen_.insert(c.hash).second) fresh.push_back(std::move(c));
    }
    std::vector<Scored> scored = analyze(fresh);
    analyzed_ += static_cast<int64_t>(fresh.size());
    for (size_t i = 0; i < fresh.size(); ++i) {
      if (!scored[i].valid) {
        ++rejected_lowering_;
        continue;
      }
      if (!codes_.insert(scored[i].code_hash).second) {
        ++same_code_;  // another schedule of this code is in the population or measured
        continue;
      }
      Member m;
      m.candidate = std::move(fresh[i]);
      m.scored = std::move(scored[i]);
      m.generation = generation;
      fresh_.push_back(std::move(m));
    }
  }

  // The analyses of `candidates` (lowered, features, prior), on the search's threads.
  std::vector<Scored> analyze(const std::vector<Candidate>& candidates) const {
    std::vector<Scored> scored(candidates.size());
    parallel_for(candidates.size(), threads_,
                 [&](size_t i) { scored[i] = scorer_.analyze(candidates[i].mod); });
    return scored;
  }

  // The candidates of (sketch, decisions) pairs, replayed on the search's threads, in order;
  // those that do not replay are left out.
  std::vector<Candidate> replay(const std::vector<std::pair<int, schedule::Trace>>& items) {
    std::vector<std::optional<Candidate>> replayed(items.size());
    parallel_for(items.size(), threads_,
                 [&](size_t i) { replayed[i] = space_.replay(items[i].first, items[i].second); });
    std::vector<Candidate> out;
    for (std::optional<Candidate>& c : replayed) {
      if (c) out.push_back(std::move(*c));
    }
    return out;
  }

  // random_per_round random samples (drawn in waves of the samples still missing, at most four
  // draws per sample), then the seeds from the database.
  void generate() {
    int sketches = static_cast<int>(space_.sketches().size());
    int missing = config_.random_per_round;
    int draws_left = missing * 4;
    std::vector<Candidate> sampled;
    while (missing > 0 && draws_left > 0) {
      std::vector<std::pair<int, uint64_t>> draws;
      for (int i = 0; i < std::min(missing, draws_left); ++i) {
        uint64_t seed = rng_();
        int sketch = static_cast<int>(rng_() % static_cast<uint64_t>(sketches));
        draws.emplace_back(sketch, seed);
      }
      draws_left -= static_cast<int>(draws.size());
      std::vector<std::optional<Candidate>> drawn(draws.size());
      parallel_for(draws.size(), threads_,
                   [&](size_t i) { drawn[i] = space_.sample(draws[i].first, draws[i].second); });
      for (std::optional<Candidate>& c : drawn) {
        if (!c) continue;
        sampled.push_back(std::move(*c));
        --missing;
      }
    }
    add(std::move(sampled), generation_);
    add(std::move(seeds_), generation_);
    seeds_.clear();
  }

  // Scores the fresh members and merges them into the population, keeping the best.
  void merge_fresh() {
    if (fresh_.empty()) return;
    score(&fresh_);
    for (Member& m : fresh_) population_.push_back(std::move(m));
    fresh_.clear();
    std::sort(population_.begin(), population_.end(),
              [](const Member& a, const Member& b) { return a.scored.score > b.scored.score; });
    // Keep what is still worth measuring, plus the measured best as a parent.
    std::vector<Member> kept;
    for (Member& m : population_) {
      if (kept.size() >= static_cast<size_t>(config_.population)) break;
      kept.push_back(std::move(m));
    }
    population_ = std::move(kept);
  }

  void evolve() {
    merge_fresh();
    ++generation_;
    if (population_.empty()) return;
    // Parents by rank: the i-th best is picked with weight 1 / (i + 1).
    std::vector<double> weights;
    for (size_t i = 0; i < population_.size(); ++i) weights.push_back(1.0 / (i + 1.0));
    std::discrete_distribution<size_t> pick_parent(weights.begin(), weights.end());
    // Each child's parent and the seed of its mutation are drawn here, in order; the mutations
    // (each replays its trace up to the mutated decision) and the children's replays run on
    // the threads.
    std::vector<std::pair<const Candidate*, uint64_t>> draws;
    for (int child = 0; child < config_.children_per_round; ++child) {
      const Candidate* parent = &population_[pick_parent(rng_)].candidate;
      draws.emplace_back(parent, rng_());
    }
    if (best_.candidate.mod.defined()) {
      for (int child = 0; child < config_.children_per_round / 4; ++child) {
        draws.emplace_back(&best_.candidate, rng_());
      }
    }
    std::vector<std::optional<schedule::Trace>> mutated(draws.size());
    parallel_for(draws.size(), threads_, [&](size_t i) {
      std::mt19937_64 rng(draws[i].second);
      mutated[i] = space_.mutate(draws[i].first->decisions, rng);
    });
    std::vector<std::pair<int, schedule::Trace>> children;
    for (size_t i = 0; i < draws.size(); ++i) {
      if (mutated[i]) children.emplace_back(draws[i].first->sketch, std::move(*mutated[i]));
    }
    add(replay(children), generation_);
    merge_fresh();
  }

  std::vector<Member> pick(size_t budget) {
    std::vector<Member> batch;
    std::vector<size_t> rest;
    size_t greedy = budget - static_cast<size_t>(std::floor(config_.epsilon * budget));
    std::vector<Member> kept;
    for (Member& m : population_) {
      if (measured_.count(m.candidate.hash) != 0) continue;
      if (batch.size() < greedy) {
        batch.push_back(m);
      } else {
        rest.push_back(kept.size());
      }
      kept.push_back(m);
    }
    std::shuffle(rest.begin(), rest.end(), rng_);
    for (size_t i = 0; i < rest.size() && batch.size() < budget; ++i)
      batch.push_back(kept[rest[i]]);
    // Measured candidates leave the population; the rest stays for the next round.
    std::set<uint64_t> picked;
    for (const Member& m : batch) picked.insert(m.candidate.hash);
    std::vector<Member> remaining;
    for (Member& m : kept) {
      if (picked.count(m.candidate.hash) == 0) remaining.push_back(std::move(m));
    }
    population_ = std::move(remaining);
    return batch;
  }

  // The database record of measuring `candidate`, with `search` as its search JSON.
  Measurement measurement_of(const Candidate& candidate, const MeasureResult& r,
                             const Json& search) const {
    Measurement record;
    record.workload_id = workload_.id;
    record.target = target_;
    record.trace_json = candidate.trace.as_json().dump();
    record.candidate_hash = candidate.hash;
    record.status = r.status;
    record.error = r.error;
    if (r.status == RecordStatus::kOk) record.run_secs = r.run_secs;
    record.kiln_version = kKilnVersion;
    record.search_json = search.dump();
    return record;
  }

  void commit(const std::vector<Member>& batch, const std::vector<MeasureResult>& results,
              const char* stage) {
    std::vector<Measurement> records;
    batch_best_ = 0;
    // An interrupted batch has fewer results: what was measured is committed.
    for (size_t i = 0; i < batch.size() && i < results.size(); ++i) {
      const Member& m = batch[i];
      const MeasureResult& r = results[i];
      if (m.baseline.empty()) {
        Json search = {{"stage", stage},
                       {"code_hash", m.scored.code_hash},
                       {"sketch", m.candidate.sketch},
                       {"decisions_length", m.candidate.decisions.instructions().size()},
                       {"generation", m.generation},
                       {"predicted_score", m.scored.score}};
        if (!space_.space_id().empty()) search["space"] = space_.space_id();
        records.push_back(measurement_of(m.candidate, r, search));
      } else {
        records.push_back(measurement_of(m.candidate, r,
                                         {{"stage", "baseline"},
                                          {"code_hash", m.scored.code_hash},
                                          {"baseline", m.baseline},
                                          {"predicted_score", m.scored.score}}));
        log_baseline(m.baseline, r);
      }
      measured_.insert(m.candidate.hash);
      if (std::string(stage) == "drift") continue;  // a reference, not a result of the search
      if (r.status != RecordStatus::kOk) {
        ++failures_[status_name(r.status)];
        continue;
      }
      double seconds = median(r.run_secs);
      if (batch_best_ == 0 || seconds < batch_best_) batch_best_ = seconds;
      if (best_seconds_ == 0 || seconds < best_seconds_) {
        best_seconds_ = seconds;
        best_trace_json_ = records.back().trace_json;
      }
      // Children and the local search need decisions: a baseline schedule has none.
      if (m.baseline.empty() && (best_sampled_seconds_ == 0 || seconds < best_sampled_seconds_)) {
        best_sampled_seconds_ = seconds;
        best_ = m;
      }
    }
    db_.commit_records(records);
    note_progress();
  }

  // Trains the model on the batch; returns its top-k recall on the batch before that.
  double learn(const std::vector<Member>& batch, const std::vector<MeasureResult>& results) {
    // Failed candidates teach the model too: as the slowest (+inf). A baseline schedule whose
    // features could not be computed teaches nothing.
    std::vector<const Scored*> rows;
    std::vector<double> seconds, ok_seconds, ok_scores;
    for (size_t i = 0; i < batch.size() && i < results.size(); ++i) {
      if (!batch[i].scored.valid) continue;
      rows.push_back(&batch[i].scored);
      bool ok = results[i].status == RecordStatus::kOk;
      double t = ok ? median(results[i].run_secs) : std::numeric_limits<double>::infinity();
      seconds.push_back(t);
      if (ok) {
        ok_seconds.push_back(t);
        ok_scores.push_back(batch[i].scored.score);
      }
    }
    if (rows.empty()) return -1;
    double recall = ok_seconds.size() >= 4
                        ? Scorer::recall(ok_scores, ok_seconds, recall_k(ok_seconds.size()))
                        : -1;
    scorer_.learn(model_, group_, rows, seconds);
    // The population's scores change with the model.
    score(&population_);
    std::sort(population_.begin(), population_.end(),
              [](const Member& a, const Member& b) { return a.scored.score > b.scored.score; });
    return recall;
  }

  // The log's line for a task whose design space has no candidate left to measure, with the
  // most frequent reasons it refused candidates.
  void log_exhausted() {
    if (log_ == nullptr) return;
    *log_ << "[" << task_.name << "] no candidates left to measure (" << trials_this_run_
          << " measured in this run)";
    std::vector<std::pair<std::string, int64_t>> reasons(space_.rejections().begin(),
                                                         space_.rejections().end());
    std::sort(reasons.begin(), reasons.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    for (size_t i = 0; i < reasons.size() && i < 3; ++i) {
      *log_ << (i == 0 ? "; refused: " : ", ") << reasons[i].first << " x " << reasons[i].second;
    }
    *log_ << "\n";
  }

  void note_progress() {
    if (best_seconds_ <= 0) return;
    // The first time the best is within 10% of the final best is known only at the end; keep
    // the times at which each best was found.
    found_.emplace_back(seconds_since(start_), best_seconds_);
    seconds_to_90_ = 0;
    for (const auto& [when, seconds] : found_) {
      if (best_seconds_ / seconds >= 0.9) {
        seconds_to_90_ = when;
        break;
      }
    }
  }

  // The best records of the database seed the population (their decisions are the first
  // instructions of their traces, as search_json records); a baseline schedule's record has no
  // decisions and sets only the best time. Records of another design space seed nothing, so
  // the best records are read a few times over.
  void load_best_from_database() {
    if (config_.seeds_from_database <= 0) return;
    for (const Record& record :
         db_.best(workload_.id, target_, 4 * config_.seeds_from_database, ThreadMatch::kExact)) {
      if (static_cast<int>(seeds_.size()) >= config_.seeds_from_database) break;
      double seconds = record.median.value_or(0);
      if (seconds > 0 && (best_seconds_ == 0 || seconds < best_seconds_)) {
        best_seconds_ = seconds;
        best_trace_json_ = record.trace_json;
      }
      Json search = Json::parse(record.search_json, nullptr, false);
      Json trace = Json::parse(record.trace_json, nullptr, false);
      if (!search.is_object() || !trace.is_object() || !search.contains("decisions_length")) {
        continue;
      }
      // Decisions of another design space (the rules', another user space) would make that
      // space's candidates here.
      if (search.value("space", "") != space_.space_id()) continue;
      size_t length = search["decisions_length"].get<size_t>();
      int sketch = search.value("sketch", 0);
      if (sketch < 0 || sketch >= static_cast<int>(space_.sketches().size()) ||
          !trace["instructions"].is_array() || trace["instructions"].size() < length) {
        continue;
      }
      trace["instructions"].erase(trace["instructions"].begin() + length,
                                  trace["instructions"].end());
      std::optional<Candidate> c = replay_json(sketch, trace);
      if (!c) continue;
      if (seconds > 0 && (best_sampled_seconds_ == 0 || seconds < best_sampled_seconds_)) {
        best_sampled_seconds_ = seconds;
        best_.candidate = *c;
        best_.scored = scorer_.analyze(c->mod);
      }
      seeds_.push_back(std::move(*c));
    }
  }

  // The task's baseline schedule, replayed on the function: the first member of the first
  // batch, unless the database holds its schedule already (a resumed run: the log says its
  // time) or its trace does not replay (the log says why).
  void prepare_baseline() {
    if (!task_.baseline) return;
    const std::string& name = task_.baseline->name;
    Member m;
    m.baseline = name;
    Json trace = Json::parse(task_.baseline->trace_json, nullptr, false);
    if (!trace.is_object()) {
      log_baseline_skipped(name, "its trace is not a JSON object");
      return;
    }
    try {
      ir::Ref<ir::IRModule> mod = ir::make<ir::IRModule>();
      mod->functions["main"] = task_.func;
      schedule::Schedule sch(mod, 0);
      schedule::Trace::apply_json(trace, &sch);
      m.candidate.trace = sch.trace();
      m.candidate.mod = sch.mod();
      m.candidate.hash = ir::structural_hash(sch.mod()->lookup("main"));
      baseline_hash_ = m.candidate.hash;
    } catch (const Error& e) {
      log_baseline_skipped(name,
                           std::string("its trace does not replay on the function: ") + e.what());
      return;
    }
    if (measured_.count(m.candidate.hash) != 0) {
      if (log_ != nullptr) {
        *log_ << "[" << task_.name << "] baseline (" << name << "): in the database already";
        double seconds = stored_seconds(m.candidate.hash);
        if (seconds > 0) *log_ << ", " << 1e3 * seconds << " ms";
        *log_ << "; not measured again\n";
      }
      return;
    }
    // The space's own copy of the schedule, if it samples one, is not measured besides it.
    seen_.insert(m.candidate.hash);
    m.scored = scorer_.analyze(m.candidate.mod);
    if (m.scored.valid) {
      scorer_.score(model_, group_, {&m.scored});
      codes_.insert(m.scored.code_hash);
    }
    baseline_ = std::move(m);
  }

  // Appends to `top` an ok record of candidate `hash`, when there is one and `top` has none.
  void add_record_of(uint64_t hash, std::vector<Record>* top) {
    for (const Record& record : *top) {
      if (record.candidate_hash == hash) return;
    }
    std::vector<Record> records = ok_records(hash);
    if (!records.empty()) top->push_back(records.front());
  }

  // The ok records of a candidate of this workload on this target.
  std::vector<Record> ok_records(uint64_t hash) {
    RecordQuery query;
    query.workload_id = workload_.id;
    query.target = target_;
    query.status = RecordStatus::kOk;
    std::vector<Record> found;
    for (Record& record : db_.records(query)) {
      if (record.candidate_hash == hash) found.push_back(std::move(record));
    }
    return found;
  }

  // The median of the samples of the ok records of a candidate (0: none).
  double stored_seconds(uint64_t hash) {
    std::vector<double> samples;
    for (const Record& record : ok_records(hash)) {
      samples.insert(samples.end(), record.run_secs.begin(), record.run_secs.end());
    }
    return median(samples);
  }

  void log_baseline(const std::string& name, const MeasureResult& r) {
    if (log_ == nullptr) return;
    *log_ << "[" << task_.name << "] baseline (" << name << "): ";
    if (r.status == RecordStatus::kOk) {
      *log_ << 1e3 * median(r.run_secs) << " ms\n";
    } else {
      *log_ << status_name(r.status) << ": " << r.error << "\n";
    }
  }

  void log_baseline_skipped(const std::string& name, const std::string& reason) {
    if (log_ == nullptr) return;
    *log_ << "[" << task_.name << "] baseline (" << name << ") skipped: " << reason << "\n";
  }

  // The candidate of a stored decisions trace, replayed as the space replays its own.
  std::optional<Candidate> replay_json(int sketch, const Json& trace_json) {
    try {
      ir::Ref<ir::IRModule> mod = ir::make<ir::IRModule>();
      mod->functions["main"] = task_.func;
      schedule::Schedule fresh(mod, 0);
      schedule::Trace::apply_json(trace_json, &fresh);
      return space_.replay(sketch, fresh.trace());
    } catch (const Error&) {
      return std::nullopt;
    }
  }

  void local_search(int64_t budget) {
    std::vector<std::pair<int, schedule::Trace>> neighbours;
    for (schedule::Trace& t : space_.neighbours(best_.candidate.decisions)) {
      neighbours.emplace_back(best_.candidate.sketch, std::move(t));
    }
    std::vector<Candidate> unmeasured;
    for (Candidate& c : replay(neighbours)) {
      if (measured_.count(c.hash) == 0) unmeasured.push_back(std::move(c));
    }
    std::vector<Scored> scored = analyze(unmeasured);
    std::vector<Member> candidates;
    for (size_t i = 0; i < unmeasured.size(); ++i) {
      if (!scored[i].valid || codes_.count(scored[i].code_hash) != 0) continue;
      Member m;
      m.candidate = std::move(unmeasured[i]);
      m.scored = std::move(scored[i]);
      m.generation = generation_;
      candidates.push_back(std::move(m));
    }
    if (candidates.empty()) return;
    score(&candidates);
    std::sort(candidates.begin(), candidates.end(),
              [](const Member& a, const Member& b) { return a.scored.score > b.scored.score; });
    std::set<uint64_t> hashes;
    std::vector<Member> batch;
    for (Member& m : candidates) {
      if (static_cast<int64_t>(batch.size()) >= budget) break;
      if (hashes.insert(m.candidate.hash).second && codes_.insert(m.scored.code_hash).second) {
        batch.push_back(std::move(m));
      }
    }
    std::vector<MeasureInput> inputs;
    for (const Member& m : batch) inputs.push_back(MeasureInput{m.candidate.mod, ""});
    std::vector<MeasureResult> results = runner_.run(inputs, config_.screen_repeat);
    commit(batch, results, "local");
    interrupted_ = results.size() < batch.size();
    learn(batch, results);
    trials_this_run_ += static_cast<int64_t>(std::min(batch.size(), results.size()));
    history_.emplace_back(trials(), best_seconds_);
    if (log_ != nullptr) {
      *log_ << "[" << task_.name << "] local search: " << batch.size()
            << " neighbours of the best, "
            << "best " << gflops(best_seconds_) << " GFLOP/s\n";
    }
  }

  // The top candidates of this run measured again together, round after round, so that a
  // lucky or unlucky first measurement does not decide (see interleaved_order), in two stages:
  // the pool (the top final_pool_k by their pooled samples) for final_pool_rounds, then its
  // top final_top_k for final_rounds. On a shared host a candidate screened while the machine
  // was slow can rank far below where it belongs (30-40% slower than its interleaved time:
  // a 100-trial convolution search's fastest candidates ranked 6th and 11th by their screens);
  // the pool's few rounds find it for the final ones. The baseline schedule and the search's
  // fastest single measurement are in both stages wherever they were measured: their pooled
  // samples may include some taken while the machine was slower (the drift check times the
  // best again), and the tuned build must not lose to them.
  void successive_halving() {
    bool pool = config_.final_pool_rounds > 0 && config_.final_pool_k > config_.final_top_k;
    std::vector<FinalMember> members =
        final_members(pool ? config_.final_pool_k : config_.final_top_k);
    if (pool && static_cast<int>(members.size()) > config_.final_top_k + 2) {
      std::vector<MeasureResult> results = run_final(members, config_.final_pool_rounds, "pool");
      // The pool's best final_top_k go on, with the baseline and the fastest single
      // measurement wherever they ranked (failed members do not).
      std::vector<FinalMember> kept;
      std::vector<size_t> order = interleaved_order(interleaved_keys(results));
      for (size_t rank = 0; rank < order.size(); ++rank) {
        uint64_t hash = members[order[rank]].candidate.hash;
        bool always = (baseline_hash_ && hash == *baseline_hash_) ||
                      (best_.candidate.mod.defined() && hash == best_.candidate.hash);
        if (static_cast<int>(rank) < config_.final_top_k || always) {
          kept.push_back(std::move(members[order[rank]]));
        }
      }
      members = std::move(kept);
    }
    if (members.size() < 2) return;
    std::vector<MeasureResult> results = run_final(members, config_.final_rounds, "final");
    std::vector<Record> best = db_.best(workload_.id, target_, 1, ThreadMatch::kExact);
    if (!best.empty() && best[0].median) {
      best_seconds_ = *best[0].median;
      best_trace_json_ = best[0].trace_json;
    }
    if (log_ != nullptr) {
      *log_ << "[" << task_.name << "] final: " << members.size() << " candidates x "
            << config_.final_rounds << " interleaved rounds, best " << gflops(best_seconds_)
            << " GFLOP/s" << from_object_cache(results) << "\n";
    }
  }

  // The members of the final rounds: the top `k` records by their pooled samples, the
  // baseline schedule and the fastest single measurement, each replayed from its record.
  std::vector<FinalMember> final_members(int k) {
    std::vector<Record> top = db_.best(workload_.id, target_, k, ThreadMatch::kExact);
    if (baseline_hash_) add_record_of(*baseline_hash_, &top);
    if (best_.candidate.mod.defined()) add_record_of(best_.candidate.hash, &top);
    std::vector<FinalMember> members;
    for (const Record& record : top) {
      Json search = Json::parse(record.search_json, nullptr, false);
      Json trace = Json::parse(record.trace_json, nullptr, false);
      if (!trace.is_object()) continue;
      ir::Ref<ir::IRModule> mod = ir::make<ir::IRModule>();
      mod->functions["main"] = task_.func;
      schedule::Schedule sch(mod, 0);
      try {
        schedule::Trace::apply_json(trace, &sch);
      } catch (const Error&) {
        continue;
      }
      FinalMember m;
      m.candidate.mod = sch.mod();
      m.candidate.trace = sch.trace();
      m.candidate.hash = record.candidate_hash;
      m.search = Json::object();
      if (search.is_object()) {
        m.candidate.sketch = search.value("sketch", 0);
        for (const char* key : {"sketch", "decisions_length", "baseline", "space"}) {
          if (search.contains(key)) m.search[key] = search[key];
        }
      }
      members.push_back(std::move(m));
    }
    return members;
  }

  // `members` timed in `rounds` interleaved rounds, their records committed with stage
  // `stage`; the final stage's winner (see interleaved_order) is marked in its record, and the
  // database ranks its candidate first (samples of other times compare less well when the
  // machine's speed moved).
  std::vector<MeasureResult> run_final(const std::vector<FinalMember>& members, int rounds,
                                       const char* stage) {
    std::vector<MeasureInput> inputs;
    for (const FinalMember& m : members) inputs.push_back(MeasureInput{m.candidate.mod, ""});
    std::vector<MeasureResult> results = runner_.run_interleaved(inputs, rounds);
    std::map<size_t, std::pair<double, double>> keys = interleaved_keys(results);
    std::vector<size_t> order = interleaved_order(keys);
    bool final_stage = std::string(stage) == "final";
    if (final_stage) keep_a_tied_baseline(members, keys, &order);
    std::vector<Measurement> records;
    for (size_t i = 0; i < members.size() && i < results.size(); ++i) {
      Json search = members[i].search;
      search["stage"] = stage;
      if (final_stage && !order.empty() && order[0] == i) search["winner"] = true;
      records.push_back(measurement_of(members[i].candidate, results[i], search));
    }
    db_.commit_records(records);
    if (log_ != nullptr && !final_stage) {
      *log_ << "[" << task_.name << "] final " << stage << ": " << members.size()
            << " candidates x " << rounds << " interleaved rounds" << from_object_cache(results)
            << "\n";
    }
    return results;
  }

  // The baseline schedule first in the final `order` when its median ratio is within
  // kTieRatio of the fastest's: a searched candidate has to be clearly faster than the
  // schedule written by hand to replace it (under noise a tie goes either way, and a searched
  // candidate that wins one by 1% may be slower elsewhere: a 2-thread GEMM's pick won the final
  // rounds of a noisy run by 1% and ran 15% slower than the baseline afterwards).
  void keep_a_tied_baseline(const std::vector<FinalMember>& members,
                            const std::map<size_t, std::pair<double, double>>& keys,
                            std::vector<size_t>* order) {
    if (!baseline_hash_ || order->empty()) return;
    for (size_t rank = 1; rank < order->size(); ++rank) {
      size_t i = (*order)[rank];
      if (members[i].candidate.hash != *baseline_hash_) continue;
      if (keys.at(i).first > kTieRatio * keys.at((*order)[0]).first) return;
      order->erase(order->begin() + static_cast<std::ptrdiff_t>(rank));
      order->insert(order->begin(), i);
      if (log_ != nullptr) {
        *log_ << "[" << task_.name << "] final: the baseline ("
              << members[i].search.value("baseline", std::string("baseline")) << ") is within "
              << std::lround((kTieRatio - 1) * 100) << "% of the fastest candidate and is kept\n";
      }
      return;
    }
  }

  TuneTask task_;
  int group_;
  Database& db_;
  Runner& runner_;
  CostModel& model_;
  SearchConfig config_;
  std::ostream* log_;
  SpaceGenerator space_;
  Scorer scorer_;
  std::mt19937_64 rng_;
  int threads_;  // that mutate, replay and analyze candidates
  TargetKey target_;
  Workload workload_;
  Clock::time_point start_;
  std::unordered_set<uint64_t> measured_, seen_;
  std::unordered_set<uint64_t> codes_;  // Scored::code_hash of the population and the measured
  std::vector<Member> population_, fresh_;
  std::vector<Candidate> seeds_;
  std::optional<Member> baseline_;         // measured in the first round
  std::optional<uint64_t> baseline_hash_;  // its candidate hash, measured now or before
  // best_: the best measured candidate of the design space (the parent of extra children and
  // the centre of the local search; best_seconds_ may be a baseline schedule's).
  Member best_, reference_;
  double reference_seconds_ = 0;
  int64_t rounds_ = 0, drift_flags_ = 0, analyzed_ = 0;
  std::vector<std::pair<int64_t, double>> drift_;
  double best_seconds_ = 0, best_sampled_seconds_ = 0, batch_best_ = 0, recall_ = -1;
  double seconds_to_90_ = 0;
  std::string best_trace_json_;
  int64_t trials_before_ = 0, trials_this_run_ = 0, rejected_lowering_ = 0, same_code_ = 0;
  int generation_ = 0, empty_rounds_ = 0;
  bool exhausted_ = false, interrupted_ = false;
  int64_t reserve_ = 0;  // see reserved()
  std::vector<std::pair<int64_t, double>> history_;
  std::vector<std::pair<double, double>> found_;
  std::map<std::string, int64_t> failures_;
};

// The task scheduler's choice: the task whose next round promises the largest drop of the
// weighted total time. A task's promise is its weighted best time times the share by which its
// last rounds improved it (at least a small floor, so that no task starves), and a task
// without a measured candidate comes first.
size_t next_task(const std::vector<std::unique_ptr<TaskSearch>>& searches) {
  size_t best = searches.size();
  double best_gain = -1;
  for (size_t i = 0; i < searches.size(); ++i) {
    const TaskSearch& s = *searches[i];
    if (s.rounds_left() <= 0 || s.exhausted()) continue;
    if (s.best_seconds() <= 0) return i;
    const auto& history = s.history();
    double improvement = 0.05;
    if (history.size() >= 3) {
      double before = history[history.size() - 3].second;
      double now = history.back().second;
      if (before > 0 && now > 0) improvement = std::max(0.01, (before - now) / before);
    }
    double gain = s.task().weight * s.best_seconds() * improvement;
    if (gain > best_gain) {
      best_gain = gain;
      best = i;
    }
  }
  return best;
}

}  // namespace

namespace {

// A stored function is the task's when it is structurally equal (a damaged one is not).
WorkloadMatch same_function(const TuneTask& task) {
  return [&task](const std::string& stored) {
    try {
      return ir::structural_equal(ir::load_prim_func(stored), task.func);
    } catch (const Error&) {
      return false;
    }
  };
}

}  // namespace

Workload commit_task_workload(Database& db, const TuneTask& task) {
  return db.commit_workload(task.workload_hash, ir::save_json(task.func), same_function(task));
}

std::optional<Workload> find_task_workload(Database& db, const TuneTask& task) {
  return db.find_workload(task.workload_hash, same_function(task));
}

std::optional<Record> best_record(Database& db, const TuneTask& task, const TargetKey& target) {
  // A GPU target's key without a device (none here) matches no record: none may be applied.
  if (task.target.is_gpu() && target.device_model.empty()) return std::nullopt;
  std::optional<Workload> workload = find_task_workload(db, task);
  if (!workload) return std::nullopt;
  std::vector<Record> best = db.best(workload->id, target, 1, ThreadMatch::kPreferred);
  if (best.empty()) return std::nullopt;
  return best[0];
}

std::vector<TaskResult> tune_tasks(const std::vector<TuneTask>& tasks, Database& db, Runner& runner,
                                   CostModel& model, const SearchConfig& config, std::ostream* log,
                                   const ProgressCallback& progress) {
  user_check(!tasks.empty()) << "tune_tasks: no tasks to tune";
  user_check(config.num_trials_per_iter > 0 && config.max_trials_per_task >= 0)
      << "tune_tasks: num_trials_per_iter must be positive and max_trials non-negative, found "
      << config.num_trials_per_iter << " and " << config.max_trials_per_task;
  user_check(config.time_budget_s >= 0)
      << "tune_tasks: time_budget_s must not be negative, found " << config.time_budget_s;
  Clock::time_point start = Clock::now();
  std::vector<std::unique_ptr<TaskSearch>> searches;
  for (size_t i = 0; i < tasks.size(); ++i) {
    searches.push_back(std::make_unique<TaskSearch>(tasks[i], static_cast<int>(i), db, runner,
                                                    model, config, log));
  }
  int64_t global = config.max_trials_global > 0
                       ? config.max_trials_global
                       : config.max_trials_per_task * static_cast<int64_t>(tasks.size());
  int64_t spent = 0;
  bool stopped = false;
  bool out_of_time = false;
  // Whether the time budget is spent (logged once).
  auto time_is_up = [&] {
    if (out_of_time) return true;
    if (config.time_budget_s <= 0 || seconds_since(start) < config.time_budget_s) return false;
    out_of_time = true;
    if (log != nullptr) {
      *log << "time budget of " << config.time_budget_s << " s spent after " << spent
           << " trials of this run: no more rounds\n";
    }
    return true;
  };
  // Rounds of the task with the most expected gain, within `limit` trials of all tasks and each
  // task's rounds_left(), until the time budget is spent; false when tuning was stopped
  // (Ctrl-C, the progress callback).
  auto run_rounds = [&](int64_t limit) {
    while (spent < limit && !time_is_up()) {
      size_t i = next_task(searches);
      if (i == searches.size()) break;
      TaskSearch& s = *searches[i];
      int64_t budget =
          std::min<int64_t>({config.num_trials_per_iter, s.rounds_left(), limit - spent});
      runner.set_task(s.task());
      spent += s.round(budget);
      if (s.interrupted() || (progress && !progress(s.progress()))) return false;
    }
    return true;
  };
  // Each task as it starts (the trials its records hold), in order: a progress bar per task
  // from the start.
  for (const std::unique_ptr<TaskSearch>& s : searches) {
    if (progress && !progress(s->progress())) {
      stopped = true;
      break;
    }
  }
  // Step 1. Rounds, short of the trials reserved for the local searches.
  int64_t reserved = 0;
  for (const std::unique_ptr<TaskSearch>& s : searches) reserved += s->reserved();
  if (!stopped) stopped = !run_rounds(std::max<int64_t>(0, global - reserved));
  // Step 2. The local search around each task's best; then rounds again for what it left
  // (too few new neighbours, a task whose rounds ended early).
  if (!stopped) {
    for (std::unique_ptr<TaskSearch>& s : searches) {
      if (time_is_up()) break;
      runner.set_task(s->task());
      spent += s->local_search_at_end(global - spent);
      if (s->interrupted() || (progress && !progress(s->progress()))) {
        stopped = true;
        break;
      }
    }
  }
  if (!stopped) stopped = !run_rounds(global);
  // Step 3. The final re-measurements.
  std::vector<TaskResult> results;
  for (std::unique_ptr<TaskSearch>& s : searches) {
    if (!stopped) {
      runner.set_task(s->task());
      s->finish();
      if (progress) progress(s->progress());
    }
    results.push_back(s->result());
    results.back().out_of_time = out_of_time;
  }
  return results;
}

}  // namespace kiln::autotune
