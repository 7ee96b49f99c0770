// The tune worker's side of the conversation: the task's reference results, then each
// candidate built, checked against them and timed (see worker.h and runner_protocol.h). The
// reference comes from the untuned function, or from a schedule of it the task names (for
// workloads whose plain loops take minutes). For a GPU target it comes from a CPU build (the
// function as written has no thread bindings, so it cannot run on the GPU), and the candidates
// run on the target's device, on arguments in its memory, each call synchronized before it
// counts as done.
#include "autotune/worker.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "autotune/runner_protocol.h"
#include "autotune/worker_check.h"
#include "autotune/worker_timing.h"
#include "kiln/codegen/target.h"
#include "kiln/driver/build.h"
#include "kiln/ir/serialize.h"
#include "kiln/runtime/ndarray.h"
#include "kiln/schedule/tensor_intrin.h"
#include "kiln/support/error.h"

namespace kiln::autotune::detail {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int call(KilnFunctionHandle function, const TaskArguments& args) {
  return KilnFuncCall(function, args.values(), args.type_codes(), args.count());
}

// A call that has finished: for arguments on a GPU, its kernels too (their failure included).
int call_and_wait(KilnFunctionHandle function, const TaskArguments& args) {
  int status = call(function, args);
  DLDevice device = args.device();
  if (status != 0 || device.device_type == kDLCPU) return status;
  return KilnDeviceSynchronize(device.device_type, device.device_id);
}

// The function of a candidate module that is measured: "main", or the only one.
std::string measured_function(const ir::IRModule& mod) {
  if (mod.functions.count("main") != 0 || mod.functions.empty()) return "main";
  if (mod.functions.size() == 1) return mod.functions.begin()->first;
  std::string names;
  for (const auto& [name, func] : mod.functions) names += (names.empty() ? "" : ", ") + name;
  user_error(ErrorKind::kValue) << "the candidate module has no function 'main' and several "
                                << "others (" << names << "): which one to measure is unclear";
}

// The test hooks that make the worker fail where a kernel would (see MeasureInput::fault).
void misbehave_before_call(const std::string& fault) {
  if (fault == "crash") {
    ::signal(SIGSEGV, SIG_DFL);  // as a faulting kernel: whatever handler was installed
    ::raise(SIGSEGV);
  } else if (fault == "abort") {
    std::abort();
  } else if (fault == "hang") {
    for (;;) ::pause();
  }
}

struct Task {
  std::string target;
  std::unique_ptr<TaskArguments> args;
  bool restore_each_call = false;
  bool check_correctness = true;
  Tolerance tolerance;
  bool flush_cache = false;
  bool vary_placement = false;
  driver::BuildOptions build_options;     // the object cache
  std::unique_ptr<CacheFlusher> flusher;  // made at the first flush
};

// A candidate staged (built and checked) for `time` requests: its first timing, then, when
// kept, more rounds.
struct Kept {
  std::unique_ptr<driver::BuiltModule> module;
  KilnFunctionHandle function = nullptr;
  TimingPlan plan;  // after the first timing: warmup 0, repeat 1, no growing
  int number = 0;   // the calls per repeat the first timing picked
};

class Worker {
 public:
  explicit Worker(int fd) : fd_(fd) {}

  int serve() {
    write_message(fd_, hello_message());
    while (std::optional<Message> message = read_message(fd_)) {
      std::string type = type_of(*message);
      if (type == "task") {
        write_message(fd_, prepare_task(task_request_of(*message)));
      } else if (type == "candidate") {
        write_message(fd_, to_message(measure_candidate(candidate_request_of(*message))));
      } else if (type == "time") {
        int slot = message->header.at("slot").get<int>();
        std::optional<TimingRequest> timing = timing_of(*message);
        write_message(fd_, to_message(timing ? time_staged(slot, *timing, keeps_candidate(*message))
                                             : time_kept(slot, placement_of(*message))));
      } else if (type == "release") {
        kept_.clear();
      } else {
        internal_error << "tune worker: unknown request " << message->header.dump();
      }
    }
    return 0;
  }

 private:
  void phase(const char* name, double build_ms = -1) {
    write_message(fd_, phase_message(name, build_ms));
  }

  // Builds the untuned function and computes (or takes) the reference results.
  Message prepare_task(const TaskRequest& request) {
    kept_.clear();
    task_.reset();
    auto task = std::make_unique<Task>();
    task->target = request.target;
    task->check_correctness = request.check_correctness;
    task->tolerance = Tolerance{request.rtol, request.atol};
    task->flush_cache = request.flush_cache;
    task->vary_placement = request.vary_placement;
    task->build_options.object_cache_dir = request.object_cache_dir;
    KilnSetNumThreads(request.num_threads);
    codegen::Target target;
    try {
      target = codegen::parse_target(request.target);
    } catch (const std::exception& e) {
      return task_error_message(std::string("its target does not parse: ") + e.what());
    }
    try {
      for (const TaskRequest::Intrinsic& intrin : request.intrinsics) {
        schedule::register_tensor_intrin(intrin.name, ir::load_prim_func(intrin.desc_json),
                                         ir::load_prim_func(intrin.impl_json), /*override=*/true,
                                         intrin.required_features);
      }
    } catch (const std::exception& e) {
      return task_error_message(std::string("its tensor intrinsics do not load: ") + e.what());
    }
    for (const std::string& library : request.libraries) {
      if (KilnLoadLibrary(library.c_str()) != 0) return task_error_message(KilnGetLastError());
    }
    // Step 1. Build the untuned function; its spec shapes the arguments. A GPU function as
    // written binds no loop to threads: its reference is its build for this CPU. A reference
    // schedule, when given, computes the results instead (the untuned build is cheap; its
    // plain loops may not be).
    std::string cpu_target = target.is_gpu() ? "llvm" : request.target;
    std::unique_ptr<driver::BuiltModule> untuned, scheduled;
    KilnFunctionHandle function = nullptr;
    try {
      untuned = driver::build(ir::load_prim_func(request.func_json), cpu_target, "main",
                              task->build_options);
      runtime::check_call(KilnModuleGetFunction(untuned->runtime_module(), "main", &function));
      const KilnFuncSpec* spec = nullptr;
      runtime::check_call(KilnFuncGetSpec(function, &spec));
      task->args = std::make_unique<TaskArguments>(*spec, request.seed);
    } catch (const std::exception& e) {
      return task_error_message(std::string("it does not build: ") + e.what());
    }
    if (!request.reference_func_json.empty() && !request.reference) {
      try {
        scheduled = driver::build(ir::load_prim_func(request.reference_func_json), cpu_target,
                                  "main", task->build_options);
        runtime::check_call(KilnModuleGetFunction(scheduled->runtime_module(), "main", &function));
      } catch (const std::exception& e) {
        return task_error_message(std::string("it does not build: ") + e.what());
      }
    }
    // Step 2. The reference: the results of one call on the random arguments, and whether a
    // second call on them changes them (then every timed call starts from fresh arguments).
    TaskReady ready;
    if (request.reference) {
      task->args->set_reference(*request.reference);
      ready.restore_each_call = request.restore_each_call;
    } else {
      task->args->restore_all();
      if (int status = call(function, *task->args); status != 0) {
        // The runtime refuses a reference schedule of another signature before it runs.
        bool refused = status == kKilnErrorType || status == kKilnErrorValue;
        return task_error_message(std::string(scheduled && refused
                                                  ? "it does not take the function's arguments: "
                                                  : "it fails: ") +
                                  KilnGetLastError());
      }
      std::string results = task->args->snapshot_written();
      if (call(function, *task->args) != 0) {
        return task_error_message(std::string("it fails: ") + KilnGetLastError());
      }
      ready.restore_each_call = !task->args->written_equal(results);
      task->args->set_reference(results);
      ready.reference = std::move(results);
    }
    task->restore_each_call = ready.restore_each_call;
    // Step 3. For a GPU target, the arguments move to the device the target stands for; its
    // caches are not the CPU's, which the flush would evict.
    if (target.is_gpu()) {
      std::string why;
      int32_t id = request.device_name.empty()
                       ? codegen::find_gpu_device(target, &why)
                       : codegen::find_named_gpu_device(target, request.device_name, &why);
      if (id < 0) {
        std::string named = request.device_name.empty() ? ""
                                                        : ", where the records name the device '" +
                                                              request.device_name + "'";
        return task_error_message("there is no device for the target '" + request.target +
                                  "' in the worker process" + named + ": " + why);
      }
      try {
        task->args->place_on_device(DLDevice{static_cast<DLDeviceType>(target.device_type()), id});
      } catch (const std::exception& e) {
        return task_error_message(std::string("its arguments cannot be placed on the device: ") +
                                  e.what());
      }
      task->flush_cache = false;
      task->vary_placement = false;  // device memory: its placement is the driver's
    }
    ready.num_threads = KilnGetNumThreads();
    task_ = std::move(task);
    return to_message(ready);
  }

  TimingHooks hooks(KilnFunctionHandle function) {
    TimingHooks h;
    TaskArguments* args = task_->args.get();
    h.call = [function, args] { return call(function, *args); };
    h.restore = [args] { args->restore_written(); };
    h.place = [args](uint64_t index) { args->place(index); };
    h.flush = [this] {
      if (!task_->flusher) task_->flusher = std::make_unique<CacheFlusher>();
      task_->flusher->flush();
    };
    DLDevice device = args->device();
    if (device.device_type != kDLCPU) {
      h.synchronize = [device] {
        return KilnDeviceSynchronize(device.device_type, device.device_id);
      };
    }
    return h;
  }

  // The plan of a timing request, with the task's cache flush and argument restoring.
  TimingPlan plan_for(const TimingRequest& timing) const {
    TimingPlan plan;
    plan.warmup = timing.warmup;
    plan.number = timing.number;
    plan.repeat = timing.repeat;
    plan.min_repeat_ms = timing.min_repeat_ms;
    plan.flush_cache = task_->flush_cache;
    plan.first_placement = task_->vary_placement ? timing.placement : -1;
    plan.restore_each_call = task_->restore_each_call;
    return plan;
  }

  // Times with `plan`, then checks the results of the last call. Fills `result`.
  void time_and_recheck(KilnFunctionHandle function, const TimingPlan& plan, int* number,
                        MeasureResult* result) {
    phase("measure");
    try {
      result->run_secs = time_calls(plan, hooks(function), number);
    } catch (const CallFailed&) {
      result->status = RecordStatus::kRunError;
      result->error = std::string("the kernel failed while being timed: ") + KilnGetLastError();
      result->run_secs.clear();
      return;
    } catch (const Error& e) {  // arguments that a device could not copy
      result->status = RecordStatus::kRunError;
      result->error = std::string("while timing the kernel: ") + e.what();
      result->run_secs.clear();
      return;
    }
    result->number = *number;
    if (task_->check_correctness && plan.repeat > 0) {
      std::optional<std::string> wrong;
      try {
        wrong = task_->args->compare(task_->tolerance, true);
      } catch (const Error& e) {
        result->status = RecordStatus::kRunError;
        result->error = std::string("after the timed calls: ") + e.what();
        result->run_secs.clear();
        return;
      }
      if (wrong) {
        result->status = RecordStatus::kWrongResult;
        result->error = "after the timed calls, " + *wrong;
        result->run_secs.clear();
      }
    }
  }

  MeasureResult measure_candidate(const CandidateRequest& request) {
    internal_check(task_ != nullptr) << "tune worker: a candidate before the task";
    MeasureResult result;
    // Step 1. Build.
    phase("build");
    Clock::time_point start = Clock::now();
    std::unique_ptr<driver::BuiltModule> built;
    std::string name;
    try {
      ir::Ref<ir::IRModule> mod = ir::load_module(request.module_json);
      name = measured_function(*mod);
      built = driver::build(mod, task_->target, task_->build_options);
    } catch (const std::exception& e) {
      result.status = RecordStatus::kBuildError;
      result.error = e.what();
      result.build_ms = ms_since(start);
      return result;
    }
    result.build_ms = ms_since(start);
    result.build_from_cache = built->timings().jit.from_cache;
    KilnFunctionHandle function = nullptr;
    try {
      runtime::check_call(KilnModuleGetFunction(built->runtime_module(), name.c_str(), &function));
    } catch (const std::exception& e) {
      result.status = RecordStatus::kRunError;
      result.error = e.what();
      return result;
    }

    // Step 2. Check: fresh arguments, one call, its results against the reference. (Copies
    // to and from a device may fail: the candidate's launch can leave the device unusable.)
    phase("check", result.build_ms);
    try {
      task_->args->restore_all();
      misbehave_before_call(request.fault);
      if (int status = call_and_wait(function, *task_->args); status != 0) {
        // The runtime checks the arguments before the kernel runs: a candidate of another
        // signature is refused there, a kernel that fails returns kKilnErrorRuntime.
        bool refused = status == kKilnErrorType || status == kKilnErrorValue;
        result.status = RecordStatus::kRunError;
        result.error = std::string(refused ? "the candidate does not take the task's arguments: "
                                           : "the kernel failed: ") +
                       KilnGetLastError();
        return result;
      }
      if (request.fault == "wrong_result") task_->args->perturb_one_written();
      if (task_->check_correctness) {
        if (std::optional<std::string> wrong = task_->args->compare(task_->tolerance, false)) {
          result.status = RecordStatus::kWrongResult;
          result.error = *wrong;
          return result;
        }
      }
    } catch (const Error& e) {
      result.status = RecordStatus::kRunError;
      result.error = std::string("while checking the kernel: ") + e.what();
      return result;
    }

    // Step 3. Time, or keep a staged candidate for its `time` requests.
    if (request.timing.repeat < 0) {
      internal_check(request.slot >= 0) << "tune worker: a staged candidate without a slot";
      Kept& kept = kept_[request.slot];
      kept.module = std::move(built);
      kept.function = function;
      return result;
    }
    int number = 0;
    time_and_recheck(function, plan_for(request.timing), &number, &result);
    return result;
  }

  // The timing of a staged candidate, which is then dropped, or kept for more rounds.
  MeasureResult time_staged(int slot, const TimingRequest& timing, bool keep) {
    auto it = kept_.find(slot);
    internal_check(it != kept_.end()) << "tune worker: no candidate staged in slot " << slot;
    // Other candidates ran on the arguments since this one's check: fresh ones, so that the
    // check after the timed calls sees only what this candidate wrote.
    int number = 0;
    MeasureResult result;
    try {
      task_->args->restore_all();
    } catch (const Error& e) {
      result.status = RecordStatus::kRunError;
      result.error = std::string("before timing the kernel: ") + e.what();
      kept_.erase(it);
      return result;
    }
    Kept& kept = it->second;
    kept.plan = plan_for(timing);
    time_and_recheck(kept.function, kept.plan, &number, &result);
    if (!keep || result.status != RecordStatus::kOk) {
      kept_.erase(it);
      return result;
    }
    // More rounds follow: one repeat each, no warm-up, the number picked here.
    kept.plan.warmup = 0;
    kept.plan.repeat = 1;
    kept.plan.grow = false;
    kept.number = number;
    return result;
  }

  // One more round of a kept candidate: one repeat, its number settled by the first round, its
  // arguments at `placement` (when the task varies placements).
  MeasureResult time_kept(int slot, int64_t placement) {
    auto it = kept_.find(slot);
    internal_check(it != kept_.end()) << "tune worker: no candidate kept in slot " << slot;
    Kept& kept = it->second;
    kept.plan.first_placement = task_->vary_placement ? placement : -1;
    MeasureResult result;
    time_and_recheck(kept.function, kept.plan, &kept.number, &result);
    return result;
  }

  int fd_;
  std::unique_ptr<Task> task_;
  std::map<int, Kept> kept_;
};

}  // namespace

int run_worker(int fd) {
  return Worker(fd).serve();
}

}  // namespace kiln::autotune::detail
