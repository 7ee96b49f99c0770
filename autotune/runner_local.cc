// The local runner: candidates measured one at a time in a worker process, which is replaced
// whenever a candidate kills it or hangs (see kiln/autotune/runner.h).
#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "autotune/runner_process.h"
#include "autotune/runner_protocol.h"
#include "kiln/autotune/runner.h"
#include "kiln/ir/serialize.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

using detail::Clock;
using detail::Message;
using detail::WorkerProcess;
using Outcome = WorkerProcess::Outcome;

namespace {

// How long a fresh worker may take to say hello (it loads LLVM).
constexpr double kStartupSeconds = 30;
// Reference results kept for tasks set earlier, so that returning to one costs nothing.
constexpr size_t kKeptReferences = 8;

void check_config(const RunnerConfig& c) {
  const char* api = "make_local_runner: RunnerConfig.";
  user_check(c.warmup >= 0) << api << "warmup must be >= 0, found " << c.warmup;
  user_check(c.number >= 0) << api << "number must be >= 0 (0: picked), found " << c.number;
  user_check(c.repeat >= 1) << api << "repeat must be >= 1, found " << c.repeat;
  user_check(std::isfinite(c.min_repeat_ms) && c.min_repeat_ms >= 0)
      << api << "min_repeat_ms must be a finite number >= 0, found " << c.min_repeat_ms;
  user_check(std::isfinite(c.timeout_s) && c.timeout_s > 0)
      << api << "timeout_s must be a finite number > 0, found " << c.timeout_s;
  user_check(std::isfinite(c.reference_timeout_s) && c.reference_timeout_s > 0)
      << api << "reference_timeout_s must be a finite number > 0, found " << c.reference_timeout_s;
  user_check(std::isfinite(c.rtol) && c.rtol >= 0)
      << api << "rtol must be a finite number >= 0, found " << c.rtol;
  user_check(std::isfinite(c.atol) && c.atol >= 0)
      << api << "atol must be a finite number >= 0, found " << c.atol;
  for (const auto& [index, fault] : c.fault_plan) {
    const std::vector<std::string>& faults = measure_faults();
    user_check(index >= 0 && std::find(faults.begin(), faults.end(), fault) != faults.end())
        << api << "fault_plan maps candidate indices >= 0 to one of 'crash', 'abort', 'hang', "
        << "'wrong_result' (a test hook), found " << index << ": '" << fault << "'";
  }
  user_check(c.num_threads >= 0) << api
                                 << "num_threads must be >= 0 (0: the runtime's default), found "
                                 << c.num_threads;
}

// Where a candidate was when its worker died or was stopped, for the message.
std::string phase_text(const std::string& phase) {
  if (phase == "build") return "while building it";
  if (phase == "check") return "while running it for the correctness check";
  if (phase == "measure") return "while timing it";
  return "before it started";
}

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << seconds << " s";
  return out.str();
}

class LocalRunner final : public Runner {
 public:
  LocalRunner(const RunnerConfig& config, std::string worker_path)
      : config_(config), worker_path_(std::move(worker_path)) {}

  // The worker's destructor kills and reaps it.
  ~LocalRunner() override = default;

  void set_task(const TuneTask& task) override {
    task_ = task;
    task_key_ = task.target.str() + "\n" + ir::save_json(task.func);
    worker_has_task_ = false;
    loaded_.clear();
    try {
      runtime_check(ensure_worker("set_task")) << "set_task: interrupted";
    } catch (...) {
      task_.reset();
      throw;
    }
  }

  std::vector<MeasureResult> run(const std::vector<MeasureInput>& batch, int repeat) override {
    // Step 1. Check everything before measuring anything.
    check_batch("Runner.run", batch);
    user_check(repeat >= 0) << "Runner.run: repeat must be >= 0 (0: RunnerConfig.repeat), found "
                            << repeat;
    int repeats = repeat == 0 ? config_.repeat : repeat;
    // Step 2. One candidate after another; an interruption returns what was measured.
    std::vector<MeasureResult> results;
    for (const MeasureInput& given : batch) {
      MeasureInput input = given;
      auto planned = config_.fault_plan.find(measured_++);
      if (input.fault.empty() && planned != config_.fault_plan.end()) input.fault = planned->second;
      std::optional<MeasureResult> result = measure("Runner.run", input, -1, repeats);
      if (!result) break;
      results.push_back(std::move(*result));
    }
    return results;
  }

  std::vector<MeasureResult> run_interleaved(const std::vector<MeasureInput>& batch,
                                             int rounds) override {
    // Step 1. Check everything before measuring anything.
    check_batch("Runner.run_interleaved", batch);
    user_check(rounds >= 1) << "Runner.run_interleaved: rounds must be >= 1, found " << rounds;
    // Step 2. Load each candidate (build, check, warm up); the ones that pass stay in the
    // worker under their index.
    std::vector<MeasureResult> results(batch.size());
    std::vector<int> alive;
    for (size_t k = 0; k < batch.size(); ++k) {
      std::optional<MeasureResult> loaded =
          measure("Runner.run_interleaved", batch[k], static_cast<int>(k), 0);
      if (!loaded) return {};
      results[k] = std::move(*loaded);
      if (results[k].status == RecordStatus::kOk) alive.push_back(static_cast<int>(k));
    }
    // Step 3. The rounds: one repeat of each live candidate in turn. A worker that died took its
    // kept candidates along: they are loaded again in the next one.
    for (int round = 0; round < rounds; ++round) {
      for (int k : std::vector<int>(alive)) {
        std::optional<MeasureResult> timed = time_round(batch[k], k);
        if (!timed) return {};
        if (timed->status == RecordStatus::kOk) {
          results[k].run_secs.push_back(timed->run_secs.at(0));
          results[k].number = timed->number;
          continue;
        }
        double build_ms = results[k].build_ms;
        results[k] = std::move(*timed);
        results[k].build_ms = build_ms;
        alive.erase(std::find(alive.begin(), alive.end(), k));
      }
    }
    // Step 4. Let the worker drop the kept candidates.
    if (worker_) worker_->send(detail::release_request(), detail::deadline_after(1), nullptr);
    loaded_.clear();
    return results;
  }

  TargetKey target_key() const override {
    user_check(task_.has_value()) << "Runner.target_key: no task was set; call set_task first";
    return local_target_key(task_->target, num_threads_);
  }

 private:
  struct Reference {
    std::string key;  // target and function
    std::string results;
    bool restore_each_call = false;
  };

  void check_batch(const char* api, const std::vector<MeasureInput>& batch) const {
    user_check(task_.has_value()) << api << ": no task was set; call set_task first";
    const std::vector<std::string>& faults = measure_faults();
    for (size_t i = 0; i < batch.size(); ++i) {
      user_check(batch[i].mod.get() != nullptr)
          << api << ": batch[" << i << "].mod must be an IRModule, found null";
      user_check(std::find(faults.begin(), faults.end(), batch[i].fault) != faults.end())
          << api << ": batch[" << i << "].fault must be one of '', 'crash', 'abort', 'hang', "
          << "'wrong_result' (a test hook), found '" << batch[i].fault << "'";
    }
  }

  // Drops the worker (it died, hung or was interrupted): the next request starts another.
  void drop_worker() {
    worker_.reset();
    worker_has_task_ = false;
    loaded_.clear();
  }

  // Makes sure a worker runs and holds the task: false when interrupted. Raises the errors
  // of set_task (see runner.h).
  bool ensure_worker(const char* api) {
    // Step 1. A live worker.
    bool fresh = worker_ == nullptr;
    if (fresh) {
      drop_worker();
      worker_ = WorkerProcess::start(worker_path_, kStartupSeconds, interrupt_check());
      if (!worker_) return false;
    }
    if (worker_has_task_) return true;
    // Step 2. The task, with its reference results when an earlier worker computed them. A
    // worker given a task drops the candidates it kept.
    loaded_.clear();
    detail::TaskRequest request;
    request.func_json = task_key_.substr(task_key_.find('\n') + 1);
    request.target = task_->target.str();
    request.seed = config_.seed;
    request.num_threads = config_.num_threads;
    request.flush_cache = config_.flush_cache;
    request.check_correctness = config_.check_correctness;
    request.rtol = config_.rtol;
    request.atol = config_.atol;
    for (int32_t i = 0; KilnLoadedLibrary(i) != nullptr; ++i) {
      request.libraries.emplace_back(KilnLoadedLibrary(i));
    }
    for (const Reference& reference : references_) {
      if (reference.key != task_key_) continue;
      request.reference = reference.results;
      request.restore_each_call = reference.restore_each_call;
    }
    Clock::time_point deadline = detail::deadline_after(config_.reference_timeout_s);
    Message reply;
    Outcome outcome = worker_->send(detail::to_message(request), deadline, interrupt_check());
    if (outcome == Outcome::kDone) outcome = worker_->receive(&reply, deadline, interrupt_check());
    // Step 3. What came of it.
    std::string about = "the reference results of task '" + task_->name + "'";
    if (outcome == Outcome::kTimeout) {
      drop_worker();
      user_error(ErrorKind::kRuntime)
          << api << ": the tune worker did not compute " << about << " within "
          << "RunnerConfig.reference_timeout_s = " << seconds_text(config_.reference_timeout_s);
    }
    if (outcome == Outcome::kDied && !fresh) {
      // An idle worker that died (killed from outside, or late after the last candidate):
      // a fresh one takes the task.
      drop_worker();
      return ensure_worker(api);
    }
    if (outcome == Outcome::kDied) {
      std::string death = worker_->death(), output = worker_->output_tail();
      drop_worker();
      user_error(ErrorKind::kRuntime)
          << api << ": the tune worker " << death << " computing " << about
          << (output.empty() ? "" : "; its output: ") << output;
    }
    if (outcome == Outcome::kInterrupted) {
      drop_worker();
      return false;
    }
    if (detail::type_of(reply) == "task_error") {
      user_error(ErrorKind::kValue)
          << api << ": the untuned function of task '" << task_->name << "' cannot give "
          << "reference results on target '" << request.target
          << "': " << reply.header.value("error", std::string());
    }
    detail::TaskReady ready = detail::task_ready_of(reply);
    num_threads_ = ready.num_threads;
    if (ready.reference) {
      if (references_.size() == kKeptReferences) references_.pop_front();
      references_.push_back({task_key_, std::move(*ready.reference), ready.restore_each_call});
    }
    worker_has_task_ = true;
    return true;
  }

  // Sends a request about one candidate and waits for its result: nothing when interrupted.
  // A worker that dies or passes timeout_s is replaced, and the candidate gets kCrash or
  // kTimeout with where it was. `started` says whether the worker began the request.
  std::optional<MeasureResult> exchange(const Message& request, bool* started) {
    Clock::time_point deadline = detail::deadline_after(config_.timeout_s);
    std::string phase;
    Message reply;
    MeasureResult failed;
    Outcome outcome = worker_->send(request, deadline, interrupt_check());
    while (outcome == Outcome::kDone) {
      outcome = worker_->receive(&reply, deadline, interrupt_check());
      if (outcome != Outcome::kDone) break;
      *started = true;
      if (detail::type_of(reply) != "phase") return detail::measure_result_of(reply);
      phase = reply.header.value("phase", std::string());
      failed.build_ms = reply.header.value("build_ms", failed.build_ms);
    }
    if (outcome == Outcome::kTimeout) {
      failed.status = RecordStatus::kTimeout;
      failed.error = "the candidate did not finish within " + seconds_text(config_.timeout_s) +
                     ": the worker was stopped " + phase_text(phase);
    } else if (outcome == Outcome::kDied) {
      failed.status = RecordStatus::kCrash;
      std::string output = worker_->output_tail();
      failed.error = "the worker " + worker_->death() + " " + phase_text(phase);
      if (!output.empty()) failed.error += "; its output: " + output;
    }
    drop_worker();
    if (outcome == Outcome::kInterrupted) return std::nullopt;
    return failed;
  }

  // exchange() in a live worker that holds the task, tried once more in a fresh worker when
  // the worker died or hung before it began the request: that failure belongs to what ran
  // before (a candidate whose code crashed as it was freed, a worker killed from outside), not
  // to this candidate. Nothing when interrupted.
  std::optional<MeasureResult> exchange_once_started(const char* api, const Message& request) {
    std::optional<MeasureResult> result;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!ensure_worker(api)) return std::nullopt;
      bool started = false;
      result = exchange(request, &started);
      if (!result || started) break;
    }
    return result;
  }

  // Builds, checks and times one candidate (`repeat` 0: a load for run_interleaved, kept under
  // `slot`): nothing when interrupted.
  std::optional<MeasureResult> measure(const char* api, const MeasureInput& input, int slot,
                                       int repeat) {
    detail::CandidateRequest request;
    request.slot = slot;
    request.fault = input.fault;
    request.warmup = config_.warmup;
    request.number = config_.number;
    request.repeat = repeat;
    request.min_repeat_ms = config_.min_repeat_ms;
    try {
      request.module_json = ir::save_json(input.mod);
    } catch (const Error& e) {
      MeasureResult unusable;
      unusable.status = RecordStatus::kBuildError;
      unusable.error = e.what();
      return unusable;
    }
    std::optional<MeasureResult> result = exchange_once_started(api, detail::to_message(request));
    if (result && result->status == RecordStatus::kOk && slot >= 0) loaded_.insert(slot);
    return result;
  }

  // One round of kept candidate k: loaded first when the worker does not hold it (a worker
  // that died took its kept candidates along), with the retry of exchange_once_started.
  std::optional<MeasureResult> time_round(const MeasureInput& input, int k) {
    const char* api = "Runner.run_interleaved";
    std::optional<MeasureResult> result;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (loaded_.count(k) == 0) {
        result = measure(api, input, k, 0);
        if (!result || result->status != RecordStatus::kOk) return result;
      }
      bool started = false;
      result = exchange(detail::time_request(k), &started);
      if (!result || started) break;
    }
    return result;
  }

  RunnerConfig config_;
  std::string worker_path_;
  std::optional<TuneTask> task_;
  std::string task_key_;  // the target string, a newline, the function's JSON
  std::unique_ptr<WorkerProcess> worker_;
  bool worker_has_task_ = false;
  int num_threads_ = 0;   // the kernel threads in effect in the worker (set_task learns it)
  std::set<int> loaded_;  // the candidates the worker keeps (run_interleaved)
  std::deque<Reference> references_;
  int64_t measured_ = 0;  // candidates run() measured, for RunnerConfig::fault_plan
};

}  // namespace

Runner::~Runner() = default;

const std::vector<std::string>& measure_faults() {
  static const std::vector<std::string> faults = {"", "crash", "abort", "hang", "wrong_result"};
  return faults;
}

std::unique_ptr<Runner> make_local_runner(const RunnerConfig& config) {
  check_config(config);
  return std::make_unique<LocalRunner>(config, detail::locate_worker(config.worker));
}

}  // namespace kiln::autotune
