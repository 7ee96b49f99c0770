// The local runner: candidates built and checked in worker processes (several share a batch),
// then timed one at a time, each in the worker that built it; a worker is replaced whenever a
// candidate kills it or hangs (see kiln/autotune/runner.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <exception>
#include <iomanip>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "autotune/parallel.h"
#include "autotune/runner_process.h"
#include "autotune/runner_protocol.h"
#include "kiln/autotune/runner.h"
#include "kiln/autotune/task.h"
#include "kiln/codegen/target.h"
#include "kiln/ir/op.h"
#include "kiln/ir/serialize.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/schedule/tensor_intrin.h"
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
  user_check(std::isfinite(c.build_timeout_s) && c.build_timeout_s > 0)
      << api << "build_timeout_s must be a finite number > 0, found " << c.build_timeout_s;
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
  user_check(c.build_workers >= 0)
      << api << "build_workers must be >= 0 (0: picked from the cores), found " << c.build_workers;
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

// The worker processes to keep: RunnerConfig::build_workers, or the cores this process may
// use, at most 4 (each worker holds its own LLVM).
size_t worker_count(int configured) {
  if (configured > 0) return static_cast<size_t>(configured);
  return static_cast<size_t>(std::clamp(available_cores(), 1, 4));
}

std::string gib_text(double bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << bytes / (1024.0 * 1024 * 1024) << " GiB";
  return out.str();
}

// What a worker holding a task keeps, in multiples of its arguments' bytes: a working and a
// pristine copy, and the reference results (at most as large again).
constexpr double kWorkerCopies = 3;

// The workers that may stage a batch of a task with `bytes` of arguments side by side: a task
// whose copies would not fit in 80% of the memory `available` has fewer, at least one (on a
// 24 GiB machine, two workers staging a uint8 addition of 2^31 elements, 6 GiB of arguments,
// ran out of memory and the kernel killed one).
size_t staging_workers(double bytes, double available, size_t workers) {
  return count_that_fits(kWorkerCopies * bytes, 0.8 * available, workers);
}

class LocalRunner final : public Runner {
 public:
  LocalRunner(const RunnerConfig& config, std::string worker_path)
      : config_(config),
        worker_path_(std::move(worker_path)),
        lanes_(worker_count(config.build_workers)) {}

  // The workers' destructors kill and reap them.
  ~LocalRunner() override = default;

  void set_task(const TuneTask& task) override {
    if (task.target.is_gpu()) {
      // A GPU target is measured on its device here; without one, nothing can be measured.
      std::string why;
      runtime_check(codegen::find_gpu_device(task.target, &why) >= 0)
          << "Runner.set_task: the target '" << task.target.str() << "' needs a "
          << (task.target.kind == "cuda" ? "CUDA" : "OpenCL")
          << " device to measure on, and this machine has none that matches: " << why;
    }
    // The same task again (the search sets it before each of its rounds): the workers keep it,
    // with its arguments and reference results, instead of building and filling them anew.
    std::string key = task.target.str() + "\n" + ir::save_json(task.func);
    std::string reference_json = task.reference ? ir::save_json(task.reference->func) : "";
    bool same = task_.has_value() && key == task_key_ && reference_json == reference_json_;
    double bytes = same ? task_bytes_ : argument_bytes(*task.func);
    double available = 0;
    if (!same) {
      // A worker needs at least a working and a pristine copy of the arguments; what the
      // workers hold for the task before is freed before they take this one.
      available = available_memory_bytes();
      for (const Lane& lane : lanes_) available += lane.has_task ? kWorkerCopies * task_bytes_ : 0;
      user_check(available <= 0 || 2 * bytes <= available)
          << "Runner.set_task: the arguments of task '" << task.name << "' take " << gib_text(bytes)
          << ", and a worker holds them twice (a working and a pristine "
          << "copy), but this machine has " << gib_text(available)
          << " of memory available: tune a smaller instance of the function";
    }
    task_ = task;
    // The workers measure on the device this process keys the records by
    // (codegen::find_named_gpu_device).
    device_name_ = task.target.is_gpu() ? local_target_key(task.target).device_model : "";
    task_key_ = std::move(key);
    reference_json_ = std::move(reference_json);
    task_bytes_ = bytes;
    if (!same) {
      staging_lanes_ = staging_workers(bytes, available, lanes_.size());
      for (Lane& lane : lanes_) {
        lane.has_task = false;
        lane.loaded.clear();
      }
      // The workers this task does not use would keep the arguments of the one before.
      for (size_t l = staging_lanes_; l < lanes_.size(); ++l) drop_worker(lanes_[l]);
    }
    try {
      runtime_check(ensure_worker("set_task", lanes_[0], interrupt_check()))
          << "set_task: interrupted";
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
    std::vector<MeasureInput> inputs = batch;
    for (MeasureInput& input : inputs) {
      auto planned = config_.fault_plan.find(measured_++);
      if (input.fault.empty() && planned != config_.fault_plan.end()) input.fault = planned->second;
    }
    bool stopped = false;  // the results so far are returned
    if (inputs.size() > 1) return run_staged("Runner.run", inputs, repeats, &stopped);
    // Step 2. One candidate: built, checked and timed in one go; nothing when interrupted.
    std::vector<MeasureResult> results;
    if (inputs.empty()) return results;
    std::string json;
    std::optional<MeasureResult> result = serialize(inputs[0], &json);
    if (!result) {
      result = measure_json("Runner.run", lanes_[0], inputs[0].fault, json, -1, repeats,
                            interrupt_check());
    }
    if (result) results.push_back(std::move(*result));
    return results;
  }

  std::vector<MeasureResult> run_interleaved(const std::vector<MeasureInput>& batch,
                                             int rounds) override {
    // Step 1. Check everything before measuring anything.
    check_batch("Runner.run_interleaved", batch);
    user_check(rounds >= 1) << "Runner.run_interleaved: rounds must be >= 1, found " << rounds;
    // Step 2. Staged and timed in rounds like a batch of run(); an interruption returns nothing.
    bool stopped = false;
    std::vector<MeasureResult> results =
        run_staged("Runner.run_interleaved", batch, rounds, &stopped);
    if (stopped) return {};
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

  // One worker process and what it holds.
  struct Lane {
    std::unique_ptr<WorkerProcess> worker;
    bool has_task = false;
    std::set<int> loaded;  // the candidates the worker keeps staged (run_staged)
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

  // run() of several candidates, and run_interleaved(): every candidate is built and checked
  // first, the workers sharing the batch (nothing is timed while they build), then they are
  // timed alone, in `repeats` rounds. An interruption sets *was_interrupted and returns the
  // candidates timed until then.
  std::vector<MeasureResult> run_staged(const char* api, const std::vector<MeasureInput>& inputs,
                                        int repeats, bool* was_interrupted) {
    // Step 1. Stage: lane 0 on this thread (it asks the interrupt check), the others on their
    // own threads, each taking the next candidate until none is left.
    size_t n = inputs.size();
    std::vector<std::optional<MeasureResult>> staged(n);
    std::vector<std::string> modules(n);  // serialized here: the threads only send them
    for (size_t k = 0; k < n; ++k) {
      std::optional<MeasureResult> unusable = serialize(inputs[k], &modules[k]);
      if (unusable) staged[k] = std::move(unusable);
    }
    std::vector<int> owner(n, -1);
    std::atomic<size_t> next{0};
    std::atomic<bool> stop{false};
    std::atomic<size_t> running{staging_lanes_ - 1};
    std::vector<std::exception_ptr> errors(staging_lanes_);
    auto stage = [&](size_t l, const InterruptCheck& check) {
      try {
        for (size_t k = next++; k < n && !stop; k = next++) {
          if (staged[k]) continue;  // it did not serialize
          std::optional<MeasureResult> result = measure_json(
              api, lanes_[l], inputs[k].fault, modules[k], static_cast<int>(k), -1, check);
          if (!result) {
            stop = true;
            break;
          }
          if (result->status == RecordStatus::kOk) owner[k] = static_cast<int>(l);
          staged[k] = std::move(result);
        }
      } catch (...) {
        errors[l] = std::current_exception();
        stop = true;
      }
    };
    InterruptCheck stopped = [&stop] { return stop.load(); };
    InterruptCheck main_check = [&] {
      if (!stop && interrupted()) stop = true;
      return stop.load();
    };
    std::vector<std::thread> threads;
    for (size_t l = 1; l < staging_lanes_; ++l) {
      threads.emplace_back([&, l] {
        stage(l, stopped);
        --running;
      });
    }
    stage(0, main_check);
    while (running > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      main_check();
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::exception_ptr& error : errors) {
      if (error) std::rethrow_exception(error);
    }
    // Step 2. Time the staged candidates in rounds, one repeat of each in turn, `repeats`
    // times: a moment when the machine is slower (a neighbour's load, clocks) then falls on one
    // repeat of several candidates rather than on every repeat of one, whose median it would
    // decide (on a shared 2-core host, screens 30-40% slower than the same candidates timed
    // later, with repeats within 5% of each other). The first round warms each candidate up and
    // picks its calls per repeat, which the later rounds keep. A candidate whose worker died
    // since is staged again in the first worker and goes on with the rounds left.
    // Every candidate's arguments lie at the same placement in a round, the next one in the
    // next round, and the next batch goes on from there (RunnerConfig::vary_placement).
    int64_t placement = placements_;
    placements_ += repeats;
    detail::TimingRequest first{config_.warmup, config_.number, 1, config_.min_repeat_ms};
    std::vector<std::optional<MeasureResult>> timed(n);
    size_t staged_n = 0;  // staging stops at an interruption
    while (staged_n < n && staged[staged_n]) ++staged_n;
    bool stopped_early = stop.load();
    for (int round = 0; round < repeats && !stopped_early; ++round) {
      for (size_t k = 0; k < staged_n; ++k) {
        if (staged[k]->status != RecordStatus::kOk) {
          if (round == 0) timed[k] = std::move(staged[k]);
          continue;
        }
        if (round > 0 && timed[k]->status != RecordStatus::kOk) continue;
        first.placement = placement + round;
        std::optional<MeasureResult> result = time_staged_round(
            api, &owner[k], static_cast<int>(k), round, repeats, first, inputs[k], modules[k]);
        if (!result) {
          stopped_early = true;  // interrupted
          break;
        }
        if (round == 0 || result->status != RecordStatus::kOk) {
          result->build_ms = staged[k]->build_ms;
          result->build_from_cache = staged[k]->build_from_cache;
          timed[k] = std::move(result);
        } else {
          timed[k]->run_secs.insert(timed[k]->run_secs.end(), result->run_secs.begin(),
                                    result->run_secs.end());
          timed[k]->number = result->number;
        }
      }
    }
    // The candidates timed at least once, in order (an interruption in the first round ends
    // the batch at the candidate in flight).
    std::vector<MeasureResult> results;
    for (size_t k = 0; k < n && timed[k]; ++k) results.push_back(std::move(*timed[k]));
    // An interruption stops every worker, as it stops the one it caught.
    for (Lane& lane : lanes_) {
      if (stopped_early) {
        drop_worker(lane);
      } else {
        release(lane);
      }
    }
    *was_interrupted = stopped_early;
    return results;
  }

  // One round of staged candidate k: its first timing (kept for the rounds after it when there
  // are any), or one more repeat. A candidate whose worker died since it was staged (another
  // candidate crashed it, or it was killed) is staged again in lane 0 (*owner) and timed as in
  // a first round. Nothing when interrupted.
  std::optional<MeasureResult> time_staged_round(const char* api, int* owner, int k, int round,
                                                 int repeats, const detail::TimingRequest& first,
                                                 const MeasureInput& input,
                                                 const std::string& module_json) {
    bool last = round == repeats - 1;
    std::optional<MeasureResult> result;
    for (int attempt = 0; attempt < 2; ++attempt) {
      bool fresh = round == 0;
      if (lanes_[*owner].loaded.count(k) == 0) {
        result = measure_json(api, lanes_[0], input.fault, module_json, k, -1, interrupt_check());
        if (!result || result->status != RecordStatus::kOk) return result;
        *owner = 0;
        fresh = true;
      }
      Lane& lane = lanes_[*owner];
      Message request =
          fresh ? detail::time_request(k, first, !last) : detail::time_request(k, first.placement);
      bool started = false;
      result = exchange(lane, request, &started, interrupt_check());
      if (!result) return std::nullopt;
      if (last || result->status != RecordStatus::kOk) lane.loaded.erase(k);
      if (started) break;
      // The worker died before it began: not this candidate's doing.
    }
    return result;
  }

  // Lets the worker drop the candidates it keeps.
  void release(Lane& lane) {
    if (lane.worker) {
      lane.worker->send(detail::release_request(), detail::deadline_after(1), nullptr);
    }
    lane.loaded.clear();
  }

  // Drops the worker (it died, hung or was interrupted): the next request starts another.
  static void drop_worker(Lane& lane) {
    lane.worker.reset();
    lane.has_task = false;
    lane.loaded.clear();
  }

  // Makes sure a worker runs and holds the task: false when interrupted. Raises the errors
  // of set_task (see runner.h).
  bool ensure_worker(const char* api, Lane& lane, const InterruptCheck& check) {
    // Step 1. A live worker.
    bool fresh = lane.worker == nullptr;
    if (fresh) {
      drop_worker(lane);
      lane.worker = WorkerProcess::start(worker_path_, kStartupSeconds, check);
      if (!lane.worker) return false;
    }
    if (lane.has_task) return true;
    // Step 2. The task, with its reference results when an earlier worker computed them. A
    // worker given a task drops the candidates it kept.
    lane.loaded.clear();
    detail::TaskRequest request;
    request.func_json = task_key_.substr(task_key_.find('\n') + 1);
    request.reference_func_json = reference_json_;
    request.target = task_->target.str();
    request.device_name = device_name_;
    request.seed = config_.seed;
    request.num_threads = config_.num_threads;
    request.flush_cache = config_.flush_cache;
    request.vary_placement = config_.vary_placement;
    request.object_cache_dir = config_.object_cache_dir;
    request.check_correctness = config_.check_correctness;
    request.rtol = config_.rtol;
    request.atol = config_.atol;
    for (int32_t i = 0; KilnLoadedLibrary(i) != nullptr; ++i) {
      request.libraries.emplace_back(KilnLoadedLibrary(i));
    }
    for (const std::string& name : schedule::tensor_intrin_names()) {
      schedule::TensorIntrin intrin = schedule::get_tensor_intrin(name);
      request.intrinsics.push_back(
          {name, ir::save_json(intrin.desc), ir::save_json(intrin.impl), intrin.required_features});
    }
    {
      std::lock_guard<std::mutex> lock(references_mutex_);
      for (const Reference& reference : references_) {
        if (reference.key != task_key_) continue;
        request.reference = reference.results;
        request.restore_each_call = reference.restore_each_call;
      }
    }
    Clock::time_point deadline = detail::deadline_after(config_.reference_timeout_s);
    Message reply;
    Outcome outcome = lane.worker->send(detail::to_message(request), deadline, check);
    if (outcome == Outcome::kDone) outcome = lane.worker->receive(&reply, deadline, check);
    // Step 3. What came of it.
    std::string about = "the reference results of task '" + task_->name + "'";
    if (outcome == Outcome::kTimeout) {
      drop_worker(lane);
      user_error(ErrorKind::kRuntime)
          << api << ": the tune worker did not compute " << about << " within "
          << "RunnerConfig.reference_timeout_s = " << seconds_text(config_.reference_timeout_s);
    }
    if (outcome == Outcome::kDied && !fresh) {
      // An idle worker that died (killed from outside, or late after the last candidate):
      // a fresh one takes the task.
      drop_worker(lane);
      return ensure_worker(api, lane, check);
    }
    if (outcome == Outcome::kDied) {
      std::string death = lane.worker->death(), output = lane.worker->output_tail();
      drop_worker(lane);
      user_error(ErrorKind::kRuntime)
          << api << ": the tune worker " << death << " computing " << about
          << (output.empty() ? "" : "; its output: ") << output;
    }
    if (outcome == Outcome::kInterrupted) {
      drop_worker(lane);
      return false;
    }
    if (detail::type_of(reply) == "task_error") {
      user_error(ErrorKind::kValue)
          << api << ": the "
          << (!task_->reference ? std::string("untuned function")
              : task_->reference->name.empty()
                  ? std::string("reference schedule")
                  : "reference schedule (" + task_->reference->name + ")")
          << " of task '" << task_->name << "' cannot give reference results on target '"
          << request.target << "': " << reply.header.value("error", std::string());
    }
    detail::TaskReady ready = detail::task_ready_of(reply);
    num_threads_ = ready.num_threads;
    if (ready.reference) {
      std::lock_guard<std::mutex> lock(references_mutex_);
      if (references_.size() == kKeptReferences) references_.pop_front();
      references_.push_back({task_key_, std::move(*ready.reference), ready.restore_each_call});
    }
    lane.has_task = true;
    return true;
  }

  // Sends a request about one candidate and waits for its result: nothing when interrupted.
  // A worker that dies or passes its limit (build_timeout_s from the start of the build,
  // timeout_s from its end or for anything else) is replaced, and the candidate gets kCrash or
  // kTimeout with where it was. `started` says whether the worker began the request.
  std::optional<MeasureResult> exchange(Lane& lane, const Message& request, bool* started,
                                        const InterruptCheck& check) {
    Clock::time_point deadline = detail::deadline_after(config_.timeout_s);
    std::string phase;
    Message reply;
    MeasureResult failed;
    // The build's limit holds for the time the worker measured: a reply read late (this
    // process was not scheduled while the worker built) still says how long the build took.
    auto built_too_long = [&](double build_ms) {
      return phase == "build" && build_ms > config_.build_timeout_s * 1e3;
    };
    Outcome outcome = lane.worker->send(request, deadline, check);
    while (outcome == Outcome::kDone) {
      outcome = lane.worker->receive(&reply, deadline, check);
      if (outcome != Outcome::kDone) break;
      *started = true;
      if (detail::type_of(reply) != "phase") {
        MeasureResult result = detail::measure_result_of(reply);
        if (!built_too_long(result.build_ms)) return result;
        outcome = Outcome::kTimeout;
        break;
      }
      if (built_too_long(reply.header.value("build_ms", -1.0))) {
        outcome = Outcome::kTimeout;
        break;
      }
      phase = reply.header.value("phase", std::string());
      failed.build_ms = reply.header.value("build_ms", failed.build_ms);
      deadline =
          detail::deadline_after(phase == "build" ? config_.build_timeout_s : config_.timeout_s);
    }
    if (outcome == Outcome::kTimeout) {
      failed.status = RecordStatus::kTimeout;
      failed.error =
          phase == "build"
              ? "the candidate did not build within " + seconds_text(config_.build_timeout_s) +
                    " (RunnerConfig.build_timeout_s): the worker was stopped"
              : "the candidate did not finish within " + seconds_text(config_.timeout_s) +
                    ": the worker was stopped " + phase_text(phase);
    } else if (outcome == Outcome::kDied) {
      failed.status = RecordStatus::kCrash;
      std::string output = lane.worker->output_tail();
      failed.error = "the worker " + lane.worker->death() + " " + phase_text(phase);
      if (!output.empty()) failed.error += "; its output: " + output;
    }
    drop_worker(lane);
    if (outcome == Outcome::kInterrupted) return std::nullopt;
    return failed;
  }

  // exchange() in a live worker that holds the task, tried once more in a fresh worker when
  // the worker died or hung before it began the request: that failure belongs to what ran
  // before (a candidate whose code crashed as it was freed, a worker killed from outside), not
  // to this candidate. Nothing when interrupted.
  std::optional<MeasureResult> exchange_once_started(const char* api, Lane& lane,
                                                     const Message& request,
                                                     const InterruptCheck& check) {
    std::optional<MeasureResult> result;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!ensure_worker(api, lane, check)) return std::nullopt;
      bool started = false;
      result = exchange(lane, request, &started, check);
      if (!result || started) break;
    }
    return result;
  }

  // The candidate's module as JSON into `json`; a kBuildError result when it cannot be.
  static std::optional<MeasureResult> serialize(const MeasureInput& input, std::string* json) {
    try {
      *json = ir::save_json(input.mod);
    } catch (const Error& e) {
      MeasureResult unusable;
      unusable.status = RecordStatus::kBuildError;
      unusable.error = e.what();
      return unusable;
    }
    return std::nullopt;
  }

  // Builds, checks and times one candidate with `repeat` repeats, or with `repeat` -1 stages it
  // (built and checked, kept under `slot`, not timed): nothing when interrupted.
  std::optional<MeasureResult> measure_json(const char* api, Lane& lane, const std::string& fault,
                                            const std::string& module_json, int slot, int repeat,
                                            const InterruptCheck& check) {
    detail::CandidateRequest request;
    request.slot = slot;
    request.fault = fault;
    request.timing = {config_.warmup, config_.number, repeat, config_.min_repeat_ms, placements_};
    if (repeat > 0) placements_ += repeat;
    request.module_json = module_json;
    std::optional<MeasureResult> result =
        exchange_once_started(api, lane, detail::to_message(request), check);
    if (result && result->status == RecordStatus::kOk && slot >= 0) lane.loaded.insert(slot);
    return result;
  }

  RunnerConfig config_;
  std::string worker_path_;
  std::optional<TuneTask> task_;
  std::string task_key_;         // the target string, a newline, the function's JSON
  std::string device_name_;      // a GPU target's device, as target_key names it; "" for a CPU
  std::string reference_json_;   // the reference schedule's function, or empty
  double task_bytes_ = 0;        // of the task's arguments
  std::vector<Lane> lanes_;      // lane 0 measures alone
  size_t staging_lanes_ = 1;     // the first ones stage a batch (run_staged): staging_workers
  std::mutex references_mutex_;  // the stagers' threads start workers
  // The kernel threads in effect in the workers (set_task learns it).
  std::atomic<int> num_threads_{0};
  std::deque<Reference> references_;
  int64_t measured_ = 0;    // candidates run() measured, for RunnerConfig::fault_plan
  int64_t placements_ = 0;  // the placement of the next timed repeat's arguments
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
