// The measuring side of the tuner: a Runner builds each candidate schedule, checks its output
// against the untuned function's, and times it on the device it stands for. The local runner
// does all three in a separate worker process, so that no candidate can end a tuning run: one
// that crashes, aborts or hangs costs its worker, which is replaced, and is recorded with why.
//
// Example:
//   RunnerConfig config;
//   config.repeat = 3;
//   std::unique_ptr<Runner> runner = make_local_runner(config);
//   runner->set_task(make_task(func, "llvm"));
//   std::vector<MeasureResult> results = runner->run({{scheduled_mod}, {other_mod}}, 0);
//   if (results[0].status == RecordStatus::kOk) use(median(results[0].run_secs));
//   TargetKey key = runner->target_key();  // where the records were measured
//
// What a candidate costs with the local runner: its build (about 10 ms for a small kernel), one
// checked call, the warm-up calls, an untimed probe of about a tenth of min_repeat_ms and
// repeat x min_repeat_ms of timed calls, plus about half a millisecond of messages and
// bookkeeping (benchmarks/bench_runner_overhead.py measures it). A worker starts in about
// 50 ms, so a crash or a hang costs that much more.
//
// Threads: one Runner is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/autotune/database.h"
#include "kiln/autotune/features.h"
#include "kiln/autotune/task.h"
#include "kiln/ir/function.h"

namespace kiln::autotune {

// How the local runner measures.
//
// Timing. Each candidate is called `warmup` times untimed, then timed in `repeat` repeats of
// `number` calls each; every repeat gives one time per call (its duration / number). With
// number 0 the runner picks the calls per repeat so that a repeat lasts at least min_repeat_ms,
// as TVM's time_evaluator does, but from an untimed probe of calls in a row (about a tenth of
// min_repeat_ms) rather than by redoing short repeats; a repeat that still falls short is
// redone with more calls. Times come from a monotonic clock. A batch of several candidates is
// timed in rounds (Runner::run): the first repeat of each in turn (after its warm-up, with its
// number picked), then the second of each with the same number, and so on.
//
// Cache flush. With flush_cache, before each repeat the worker's threads write a buffer twice
// the size of the last-level cache (read from sysfs; 64 MiB when it says nothing), so that the
// repeat starts with the arguments out of the caches. Only a repeat's first call is then cold,
// so number 0 means one call per repeat in this mode: each time is one cold call.
//
// Placement. With vary_placement (the default), the worker moves every tensor argument before
// each timed repeat to another offset of its buffer, a multiple of its alignment (64 bytes at
// least) below 4 KiB, and restores its values there: the arguments' placements relative to each
// other within a page change from repeat to repeat, as those of a caller's arrays do from one
// allocation to the next. A kernel whose speed depends on them (loads and stores 4 KiB apart
// that the CPU takes for overlapping, inputs and outputs on the same cache sets) is then timed
// over several placements, not at one lucky or unlucky one: a 3x3 convolution candidate ran
// between 87 and 119 GFLOP/s on arguments placed differently, others within 3%. In one round
// of a batch (Runner::run, run_interleaved) every candidate runs at the same placement, the
// next round at the next one, and each batch goes on where the last one stopped. Arguments in a
// GPU's memory stay where its driver put them.
//
// Arguments. The worker fills every tensor argument (outputs too) with random values from
// `seed`: floats uniform in [-1, 1) (float16 and bfloat16: multiples of 1/64 in [-1, 1], exact
// in both), signed integers in [-8, 8], unsigned ones in [0, 15], bools 0 or 1; scalar
// arguments are 1 (integers) or 0.5 (floats). Each candidate starts from fresh copies of these
// values, so a kernel that writes its inputs cannot disturb the next one. A function whose
// second call on its own results changes them (an in-place update B[i] = B[i] * 2, an
// accumulation C += A * B: the worker calls the untuned function twice to learn this) gets its
// arguments restored before every timed call, and each of its calls is timed alone, so that
// repeated calls measure the same data rather than values that drift (toward inf or
// subnormals).
//
// GPU targets ("cuda", "opencl"). The candidates run on the device the target stands for
// (codegen::find_gpu_device): the worker keeps a copy of every argument in the device's memory,
// restores it from the random values before each check (and before each call of a function
// that updates its arguments), and copies the results back to compare them. A timed span ends
// when the device has finished (KilnDeviceSynchronize), so asynchronous launches are timed to
// their end. flush_cache has no effect (it evicts the CPU's caches). The untuned function binds
// no loop to GPU threads and cannot run on the device: the reference results come from its
// build for this CPU ("llvm"), which computes the same function (the tolerance below covers
// the rounding of another order of a reduction, or of fused multiply-adds).
//
// Correctness. The untuned function (the task's) is built and run once per task on the random
// arguments: its results are the reference. Each candidate's first call is compared with it,
// element by element over every tensor argument, and so are the arguments it writes after its
// last timed call (a kernel whose results change from call to call, such as one with a data
// race, fails too). Integers
// and bools must be equal. A float element passes when
//     |found - expected| <= atol' * scale + rtol' * |expected|
// where scale = max(1, the largest |expected| of that argument), so that the absolute
// tolerance follows the magnitude of the results (a reduction over many terms has a rounding
// error relative to its largest values, not to a small element), and atol' = max(atol, 4 eps),
// rtol' = max(rtol, 4 eps) with eps the machine epsilon of the element's dtype (float16:
// 2^-10, bfloat16: 2^-7), so that a half-precision result may differ in its last bits. NaN
// matches only NaN and an infinity only the same infinity. A candidate that fails is
// kWrongResult, naming the argument, the element of the largest error (index, expected, found)
// and how many elements differ.
struct RunnerConfig {
  int warmup = 1;              // untimed calls before the first repeat (>= 0)
  int number = 0;              // calls per repeat (>= 0); 0: as many as fill min_repeat_ms
  int repeat = 3;              // timed repeats (>= 1) when run() is given 0
  double min_repeat_ms = 20;   // the shortest repeat when number is 0 (>= 0)
  bool flush_cache = false;    // evict the arguments from the CPU caches before each repeat
  bool vary_placement = true;  // move the arguments before each repeat (see "Placement")
  // The limit per candidate (check and timing, and what comes before its build; for
  // run_interleaved, per load and per round) in seconds; past it the worker is killed and the
  // candidate is kTimeout.
  double timeout_s = 10;
  // The limit for building one candidate, in seconds: a build is slow, not hung, long before a
  // kernel would be (NVRTC takes seconds for an unrolled CUDA tile on a small host), and the
  // candidates that build slowest, the most unrolled, are often the fastest.
  double build_timeout_s = 60;
  // The limit for computing a task's reference results in seconds: the untuned function can be
  // far slower than its tuned candidates.
  double reference_timeout_s = 120;
  bool check_correctness = true;  // compare each candidate's results with the reference
  double rtol = 1e-3;             // see "Correctness" above (>= 0)
  double atol = 1e-3;             // see "Correctness" above (>= 0)
  // Kernel threads in the worker; 0: the runtime's default there (KILN_NUM_THREADS, else the
  // cores the process may use). Records store the count in effect (Runner::target_key).
  int num_threads = 0;
  // Worker processes that build and check a batch of run() side by side before its candidates
  // are timed one at a time (nothing is timed while they build); 0: the cores this process may
  // use, at most 4. With 1, each candidate is built, checked and timed before the next. A task
  // whose arguments are too large for that many workers to hold in 80% of the memory available
  // (each keeps a working and a pristine copy and the reference results: three times the
  // arguments' bytes) is staged by as many as fit, at least one.
  int build_workers = 0;
  // When not empty, a directory of compiled objects the workers share (see
  // driver::BuildOptions::object_cache_dir): a candidate built before, e.g. again for the
  // final rounds or by a resumed run, skips LLVM. tune_tir and tune_tasks use
  // work_dir/object_cache.
  std::string object_cache_dir;
  uint64_t seed = 0;  // of the random arguments
  // The worker executable; empty: $KILN_TUNE_WORKER, else kiln_tune_worker in the directory
  // of the binary that holds kiln's code (the Python extension's directory, python/kiln/).
  std::string worker;
  // A test hook, empty for real tuning: the n-th candidate that run() measures (counting from 0
  // over the runner's life) gets fault_plan[n] (see MeasureInput::fault) when its own fault is
  // empty, so that tests can make candidates of a search crash, hang or compute wrong results.
  std::map<int64_t, std::string> fault_plan;
};

// One candidate to measure.
struct MeasureInput {
  MeasureInput() = default;
  // Not explicit, so that a batch reads {{mod_a}, {mod_b, "crash"}}.
  MeasureInput(ir::Ref<ir::IRModule> mod, std::string fault = "")
      : mod(std::move(mod)), fault(std::move(fault)) {}

  ir::Ref<ir::IRModule> mod;  // the scheduled module; its function "main" (or its only one)
  // A test hook, "" for real candidates: "crash" (the worker raises SIGSEGV where the kernel
  // would run), "abort" (it calls abort()), "hang" (it sleeps forever), "wrong_result" (it
  // changes one element of the candidate's results before the check). It makes the worker
  // misbehave exactly as such a kernel would, so that tests can prove the fault handling.
  std::string fault;
};

// What one candidate came to.
struct MeasureResult {
  RecordStatus status = RecordStatus::kOk;
  // Seconds per call, one entry per repeat (run) or per round (run_interleaved); filled only
  // when status is kOk.
  std::vector<double> run_secs;
  // Why the candidate failed, for the database: the build's message, the kernel's error, the
  // signal that killed the worker ("SIGSEGV"), the limit that was passed, the wrong element.
  std::string error;
  double build_ms = 0;            // lowering and code generation in the worker (0 when never built)
  bool build_from_cache = false;  // the object came from RunnerConfig::object_cache_dir
  int number = 0;                 // calls per timed repeat (0 when never timed)
};

// Asked between waits: true stops the batch (see Runner::set_interrupt_check).
using InterruptCheck = std::function<bool()>;

// Builds, checks and times candidates on one device. The local runner is the one kiln has; a
// remote runner (measuring on another machine through a distributed engine) implements the
// same interface.
class Runner {
 public:
  virtual ~Runner();

  // The function that the next candidates schedule and the target they are built for. The
  // local runner computes the reference results here (or reuses those of an earlier set_task
  // of the same function, target and seed; the workers keep a task set again, as the search
  // does before each round, with its arguments). Raises a kValue error when the untuned function
  // does not build or run, or when its arguments would not fit twice (a working and a pristine
  // copy) in the memory available (the task before stays), a kRuntime error when the worker cannot
  // start or dies or passes reference_timeout_s computing the reference, and for a GPU target
  // without its device here (codegen::find_gpu_device), naming the target and why.
  virtual void set_task(const TuneTask& task) = 0;

  // Builds, checks and times each candidate, with `repeat` repeats (0: the config's). Nothing
  // overlaps a measurement (on a small machine, a build beside it would slow it down); the local
  // runner builds and checks the batch first, then times it in rounds, one repeat of each
  // candidate in turn, so that a moment when the machine is slower does not decide one
  // candidate's median. Results are in the order of the batch. A candidate
  // that fails gets its status and reason and the batch goes on; when the interrupt check
  // answers true, the candidate in flight is dropped and the results so far are returned (fewer
  // than the batch). Raises a kValue error before measuring anything for a null module, an
  // unknown fault or a negative repeat, and when no task was set; a kRuntime error when a
  // replacement worker cannot start (the machine, not a candidate, is at fault).
  virtual std::vector<MeasureResult> run(const std::vector<MeasureInput>& batch, int repeat) = 0;

  // Loads (builds and checks) every candidate, then times them in `rounds` interleaved rounds:
  // candidate 0, 1, ..., k-1, then again, one repeat each, so that a drift of the machine
  // (clock, heat, a neighbour's load) spreads over all of them alike. Each ok result has one
  // time per round. For re-measuring the best candidates of a search. Errors and interruption
  // as run().
  virtual std::vector<MeasureResult> run_interleaved(const std::vector<MeasureInput>& batch,
                                                     int rounds) = 0;

  // Where the measurements are made, for the database: the task target's canonical string,
  // the device model, its features and the threads the kernels run on (the count in effect in
  // the worker, never 0). Raises a kValue error when no task was set.
  virtual TargetKey target_key() const = 0;

  // Sets what is asked, at least every 100 ms while the runner waits for a worker, whether to
  // stop the batch (Python's Ctrl-C). Empty: never.
  void set_interrupt_check(InterruptCheck check) { interrupt_check_ = std::move(check); }

 protected:
  bool interrupted() const { return interrupt_check_ && interrupt_check_(); }
  const InterruptCheck& interrupt_check() const { return interrupt_check_; }

 private:
  InterruptCheck interrupt_check_;
};

// A runner that measures in worker processes on this machine (see RunnerConfig). Raises a
// kValue error naming the field for a config value out of range, and a kRuntime error when the
// worker executable cannot be found (naming where it looked).
std::unique_ptr<Runner> make_local_runner(const RunnerConfig& config = {});

// The fault names MeasureInput::fault accepts: "", "crash", "abort", "hang", "wrong_result".
const std::vector<std::string>& measure_faults();

// This machine's CPU model name: /proc/cpuinfo's "model name" (e.g. "AMD EPYC 7B13"), or
// LLVM's name of the host CPU (e.g. "neoverse-n1") when the file does not say.
const std::string& cpu_model_name();

// The thread count in the target key of a GPU target: one host thread launches the kernels,
// and the CPU's thread count plays no part in their speed.
constexpr int kGpuKeyThreads = 1;

// The target key of measurements of `target` on this machine with `num_threads` kernel threads.
// A CPU target: target.str(), cpu_model_name(), the target's ISA features joined by "," (e.g.
// "avx,avx2,fma") and `num_threads` (0: unknown). A GPU target: target.str(), the name of the
// device it stands for (codegen::find_gpu_device), "sm_XY" (CUDA's compute capability) or
// "driver=<version>" (the OpenCL driver's, KilnDeviceDriverVersion) as features, and
// kGpuKeyThreads; without such a device the model and features are empty, a key that no record
// has (the runner refuses to measure there).
TargetKey local_target_key(const codegen::Target& target, int num_threads = 0);

// For a GPU target whose device this machine has (the one local_target_key names): its
// multiprocessor count and, for CUDA, its compute capability, into `options` (what the GPU prior
// models). Leaves `options` as they are for a CPU target or without the device.
void describe_local_gpu(const codegen::Target& target, MachineOptions* options);

}  // namespace kiln::autotune
