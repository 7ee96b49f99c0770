// The local runner: correct candidates timed, wrong ones caught, every injected fault (crash,
// abort, hang, wrong result) recorded while the rest of the batch still measures, in-place
// functions given fresh arguments, batches timed in rounds, interleaved rounds, the device key,
// and no child process left behind. The worker executable's path comes from CMake
// (KILN_TUNE_WORKER_PATH). No test asserts a time beyond its being positive.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/autotune/runner.h"
#include "kiln/ir/buffer.h"
#include "kiln/ir/op.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/schedule/for_kind.h"
#include "kiln/schedule/getters.h"
#include "kiln/schedule/loop_transformation.h"
#include "kiln/schedule/schedule.h"
#include "kiln/support/error.h"
#include "kiln/te/create_prim_func.h"
#include "kiln/te/tensor.h"

namespace kiln::autotune {
namespace {

using namespace ir;

constexpr int64_t kN = 256;

// B = A * factor over float32[kN]; with `bump`, B[37] gets 1 more.
Ref<PrimFunc> scale(double factor, bool bump = false) {
  te::Tensor a = te::placeholder({int32_const(kN)}, DataType::float32(), "A");
  te::Tensor b = te::compute(
      {int32_const(kN)},
      [&](const std::vector<Ref<Var>>& i) {
        Expr value = a({i[0]}) * factor;
        if (!bump) return value;
        return if_then_else(eq(i[0], int32_const(37)), value + 1.0, value);
      },
      "B");
  return te::create_prim_func({a, b});
}

Ref<IRModule> as_module(const Ref<PrimFunc>& func) {
  auto mod = make<IRModule>();
  mod->functions["main"] = func;
  return mod;
}

// The function split by 16 with the inner loop vectorized: a real schedule.
Ref<IRModule> split_schedule(const Ref<PrimFunc>& func) {
  schedule::Schedule sch(as_module(func), 0);
  std::vector<schedule::RV> loops = schedule::get_loops(sch, schedule::get_block(sch, "B"));
  std::vector<schedule::RV> parts = schedule::split(sch, loops[0], {std::monostate{}, int64_t{16}});
  schedule::vectorize(sch, parts[1]);
  return sch.mod();
}

// The function with its loop bound to a GPU thread index: the CPU build refuses it.
Ref<IRModule> gpu_bound(const Ref<PrimFunc>& func) {
  schedule::Schedule sch(as_module(func), 0);
  std::vector<schedule::RV> loops = schedule::get_loops(sch, schedule::get_block(sch, "B"));
  schedule::bind_loop(sch, loops[0], "threadIdx.x");
  return sch.mod();
}

// B[i] = B[i] * factor on float32[kN]: reads and writes its only argument.
Ref<PrimFunc> in_place(double factor) {
  Ref<Buffer> b = decl_buffer({int32_const(kN)}, DataType::float32(), "B");
  auto block = make<Block>();
  block->name = "B";
  Ref<Var> v = make_var("v");
  block->iter_vars.push_back(IterVar{v, Range{int32_const(0), int32_const(kN)}});
  block->reads.push_back(BufferRegion{b, {Range{v, int32_const(1)}}});
  block->writes.push_back(BufferRegion{b, {Range{v, int32_const(1)}}});
  block->body = buffer_store(b, buffer_load(b, {v}) * factor, {v});
  Ref<Var> i = make_var("i");
  Stmt loop = make<For>(i, int32_const(0), int32_const(kN), ForKind::kSerial,
                        make<BlockRealize>(std::vector<Expr>{i}, bool_const(true), block));
  auto root = make<Block>();
  root->name = "root";
  root->body = loop;
  auto func = make<PrimFunc>();
  Ref<Var> handle = make_var("B_handle", DataType::handle());
  func->params.push_back(handle);
  func->buffer_map.emplace_back(handle, b);
  func->body = make<BlockRealize>(std::vector<Expr>{}, bool_const(true), root);
  return func;
}

RunnerConfig fast_config() {
  RunnerConfig config;
  config.worker = KILN_TUNE_WORKER_PATH;
  config.repeat = 3;
  config.min_repeat_ms = 1;
  config.timeout_s = 20;
  return config;
}

std::unique_ptr<Runner> runner_for(const Ref<PrimFunc>& func, RunnerConfig config = fast_config()) {
  std::unique_ptr<Runner> runner = make_local_runner(config);
  runner->set_task(make_task(func, "llvm", "scale"));
  return runner;
}

// The processes whose parent is this one (live or zombie), from /proc.
std::vector<pid_t> child_processes() {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = readdir(proc)) {
    std::string name = entry->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in("/proc/" + name + "/stat");
    std::string stat;
    std::getline(in, stat);
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    if (parent == getpid()) children.push_back(static_cast<pid_t>(std::stol(name)));
  }
  closedir(proc);
  return children;
}

void expect_ok(const MeasureResult& result, size_t times) {
  EXPECT_EQ(result.status, RecordStatus::kOk) << result.error;
  EXPECT_EQ(result.error, "");
  ASSERT_EQ(result.run_secs.size(), times);
  for (double t : result.run_secs) EXPECT_GT(t, 0.0);
  EXPECT_GE(result.number, 1);
  EXPECT_GT(result.build_ms, 0.0);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Runner, CorrectCandidateIsTimedWithTheRequestedRepeats) {
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  std::vector<MeasureResult> results =
      runner->run({{split_schedule(scale(2.0))}, {as_module(scale(2.0))}}, 0);
  ASSERT_EQ(results.size(), 2u);
  expect_ok(results[0], 3);
  expect_ok(results[1], 3);
  results = runner->run({{split_schedule(scale(2.0))}}, 5);  // run's repeat wins
  ASSERT_EQ(results.size(), 1u);
  expect_ok(results[0], 5);
}

TEST(Runner, FixedNumberIsReported) {
  RunnerConfig config = fast_config();
  config.number = 7;
  config.warmup = 0;
  std::vector<MeasureResult> results =
      runner_for(scale(2.0), config)->run({{split_schedule(scale(2.0))}}, 2);
  expect_ok(results.at(0), 2);
  EXPECT_EQ(results[0].number, 7);
}

TEST(Runner, AWrongScheduleIsAWrongResultNamingTheElement) {
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  std::vector<MeasureResult> results =
      runner->run({{as_module(scale(2.0, /*bump=*/true))}, {as_module(scale(2.0))}}, 0);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, RecordStatus::kWrongResult);
  EXPECT_TRUE(contains(results[0].error,
                       "argument B differs from the untuned function's result at index [37]: "
                       "expected "))
      << results[0].error;
  EXPECT_TRUE(contains(results[0].error, "; 1 of 256 elements differ")) << results[0].error;
  EXPECT_TRUE(results[0].run_secs.empty());
  expect_ok(results[1], 3);
}

TEST(Runner, ChecksCanBeTurnedOff) {
  RunnerConfig config = fast_config();
  config.check_correctness = false;
  std::vector<MeasureResult> results =
      runner_for(scale(2.0), config)->run({{as_module(scale(3.0))}}, 1);
  expect_ok(results.at(0), 1);
}

// A batch whose first candidate misbehaves by `fault`: the second still measures.
std::vector<MeasureResult> run_with_fault(const std::string& fault, RunnerConfig config) {
  std::unique_ptr<Runner> runner = runner_for(scale(2.0), config);
  std::vector<MeasureResult> results =
      runner->run({{split_schedule(scale(2.0)), fault}, {split_schedule(scale(2.0))}}, 0);
  EXPECT_EQ(results.size(), 2u);
  if (results.size() == 2) expect_ok(results[1], 3);
  return results;
}

TEST(Runner, ACrashIsRecordedAndTheWorkerReplaced) {
  std::vector<MeasureResult> results = run_with_fault("crash", fast_config());
  EXPECT_EQ(results.at(0).status, RecordStatus::kCrash);
  EXPECT_EQ(results[0].error,
            "the worker was killed by SIGSEGV (segmentation fault) while running it for the "
            "correctness check");
  EXPECT_TRUE(results[0].run_secs.empty());
  EXPECT_GT(results[0].build_ms, 0.0);  // reported before the crash
}

TEST(Runner, AnAbortIsRecorded) {
  std::vector<MeasureResult> results = run_with_fault("abort", fast_config());
  EXPECT_EQ(results.at(0).status, RecordStatus::kCrash);
  EXPECT_TRUE(contains(results[0].error,
                       "the worker was killed by SIGABRT (abort) while running it for the "
                       "correctness check"))
      << results[0].error;
}

TEST(Runner, AHangTimesOut) {
  RunnerConfig config = fast_config();
  config.timeout_s = 1;
  std::vector<MeasureResult> results = run_with_fault("hang", config);
  EXPECT_EQ(results.at(0).status, RecordStatus::kTimeout);
  EXPECT_EQ(results[0].error,
            "the candidate did not finish within 1 s: the worker was stopped while running it "
            "for the correctness check");
}

TEST(Runner, AnInjectedWrongResultIsCaught) {
  std::vector<MeasureResult> results = run_with_fault("wrong_result", fast_config());
  EXPECT_EQ(results.at(0).status, RecordStatus::kWrongResult);
  EXPECT_TRUE(contains(results[0].error,
                       "argument B differs from the untuned function's result at index [128]"))
      << results[0].error;
  EXPECT_TRUE(contains(results[0].error, "; 1 of 256 elements differ")) << results[0].error;
}

TEST(Runner, ABuildErrorIsRecorded) {
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  std::vector<MeasureResult> results =
      runner->run({{gpu_bound(scale(2.0))}, {split_schedule(scale(2.0))}}, 0);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, RecordStatus::kBuildError);
  EXPECT_TRUE(contains(results[0].error, "is bound to the GPU thread index threadIdx.x"))
      << results[0].error;
  EXPECT_GT(results[0].build_ms, 0.0);
  expect_ok(results[1], 3);
}

TEST(Runner, ACandidateOfAnotherSignatureIsARunError) {
  te::Tensor a = te::placeholder({int32_const(kN + 1)}, DataType::float32(), "A");
  te::Tensor b = te::compute(
      {int32_const(kN + 1)}, [&](const std::vector<Ref<Var>>& i) { return a({i[0]}) * 2.0; }, "B");
  std::vector<MeasureResult> results =
      runner_for(scale(2.0))
          ->run({{as_module(te::create_prim_func({a, b}))}, {split_schedule(scale(2.0))}}, 1);
  EXPECT_EQ(results.at(0).status, RecordStatus::kRunError);
  EXPECT_TRUE(contains(results[0].error, "the candidate does not take the task's arguments: "))
      << results[0].error;
  expect_ok(results.at(1), 1);
}

TEST(Runner, InPlaceFunctionsGetFreshArgumentsForEveryCall) {
  // 50 calls per repeat of B *= 2 would multiply B by 2^150 without restoring: the check after
  // the timed calls would fail, and so would the next candidate's first check.
  RunnerConfig config = fast_config();
  config.number = 50;
  std::unique_ptr<Runner> runner = runner_for(in_place(2.0), config);
  std::vector<MeasureResult> results = runner->run(
      {{as_module(in_place(2.0))}, {as_module(in_place(2.0))}, {as_module(in_place(3.0))}}, 3);
  ASSERT_EQ(results.size(), 3u);
  expect_ok(results[0], 3);
  expect_ok(results[1], 3);
  EXPECT_EQ(results[2].status, RecordStatus::kWrongResult);
  EXPECT_TRUE(contains(results[2].error, "argument B differs from the untuned function's result"))
      << results[2].error;
}

TEST(Runner, InterleavedRunsGiveOneTimePerRound) {
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  std::vector<MeasureResult> results = runner->run_interleaved(
      {{split_schedule(scale(2.0))}, {gpu_bound(scale(2.0))}, {as_module(scale(2.0))}}, 4);
  ASSERT_EQ(results.size(), 3u);
  expect_ok(results[0], 4);
  EXPECT_EQ(results[1].status, RecordStatus::kBuildError);
  expect_ok(results[2], 4);
}

TEST(Runner, InterleavedRunsSurviveACrash) {
  // The crash kills the worker that keeps candidate 0: it is loaded again in the next one.
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  std::vector<MeasureResult> results =
      runner->run_interleaved({{split_schedule(scale(2.0))},
                               {split_schedule(scale(2.0)), "crash"},
                               {as_module(scale(2.0))}},
                              2);
  ASSERT_EQ(results.size(), 3u);
  expect_ok(results[0], 2);
  EXPECT_EQ(results[1].status, RecordStatus::kCrash);
  EXPECT_TRUE(contains(results[1].error, "SIGSEGV")) << results[1].error;
  expect_ok(results[2], 2);
}

TEST(Runner, ABatchIsTimedInRoundsWithTheNumberOfItsFirstRound) {
  RunnerConfig config = fast_config();
  config.build_workers = 1;
  std::unique_ptr<Runner> runner = runner_for(scale(2.0), config);
  std::vector<MeasureResult> results = runner->run(
      {{split_schedule(scale(2.0))}, {gpu_bound(scale(2.0))}, {as_module(scale(2.0))}}, 4);
  ASSERT_EQ(results.size(), 3u);
  expect_ok(results[0], 4);
  EXPECT_EQ(results[1].status, RecordStatus::kBuildError);
  expect_ok(results[2], 4);
  // A fixed number holds in every round.
  config.number = 5;
  results = runner_for(scale(2.0), config)
                ->run({{split_schedule(scale(2.0))}, {as_module(scale(2.0))}}, 3);
  ASSERT_EQ(results.size(), 2u);
  for (const MeasureResult& r : results) {
    expect_ok(r, 3);
    EXPECT_EQ(r.number, 5);
  }
}

TEST(Runner, ACandidateStagedInAWorkerThatCrashedIsTimedInANewOne) {
  // The crash (at its correctness check, while the batch is staged) kills the worker that
  // keeps candidate 0; candidate 0 is measured again from the start, candidate 2 in rounds.
  RunnerConfig config = fast_config();
  config.build_workers = 1;
  std::unique_ptr<Runner> runner = runner_for(scale(2.0), config);
  std::vector<MeasureResult> results = runner->run({{split_schedule(scale(2.0))},
                                                    {split_schedule(scale(2.0)), "crash"},
                                                    {as_module(scale(2.0))}},
                                                   3);
  ASSERT_EQ(results.size(), 3u);
  expect_ok(results[0], 3);
  EXPECT_EQ(results[1].status, RecordStatus::kCrash);
  expect_ok(results[2], 3);
}

TEST(Runner, NoChildProcessOutlivesTheRunner) {
  {
    std::unique_ptr<Runner> runner = runner_for(scale(2.0));
    EXPECT_EQ(child_processes().size(), 1u);  // the worker
    runner->run({{split_schedule(scale(2.0)), "crash"}, {split_schedule(scale(2.0))}}, 1);
    EXPECT_EQ(child_processes().size(), 1u);  // the crashed one reaped, its replacement
  }
  EXPECT_TRUE(child_processes().empty());
  int status;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1);  // no child at all, not even a zombie
  EXPECT_EQ(errno, ECHILD);
}

TEST(Runner, AWorkerKilledBetweenCandidatesIsNotTheNextOnesFault) {
  // The next candidate finds its worker dead before it began: it is measured in a new one.
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  std::vector<pid_t> workers = child_processes();
  ASSERT_EQ(workers.size(), 1u);
  ASSERT_EQ(kill(workers[0], SIGKILL), 0);
  expect_ok(runner->run({{split_schedule(scale(2.0))}}, 1).at(0), 1);
  std::vector<pid_t> now = child_processes();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], workers[0]);
  ASSERT_EQ(kill(now[0], SIGKILL), 0);
  runner->set_task(make_task(scale(2.0), "llvm"));  // the task goes to a new worker too
  ASSERT_EQ(child_processes().size(), 1u);
  ASSERT_EQ(kill(child_processes()[0], SIGKILL), 0);
  std::vector<MeasureResult> results =
      runner->run_interleaved({{split_schedule(scale(2.0))}, {as_module(scale(2.0))}}, 2);
  expect_ok(results.at(0), 2);
  expect_ok(results.at(1), 2);
}

TEST(Runner, AnInterruptStopsTheBatchAndKeepsWhatWasMeasured) {
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  // The check is asked every 100 ms of waiting; the third time it says stop, which happens
  // while the hanging candidate is in flight at the latest.
  int asked = 0;
  runner->set_interrupt_check([&] { return ++asked >= 3; });
  std::vector<MeasureResult> results = runner->run({{split_schedule(scale(2.0))},
                                                    {split_schedule(scale(2.0)), "hang"},
                                                    {split_schedule(scale(2.0))}},
                                                   1);
  EXPECT_GE(asked, 3);
  ASSERT_LE(results.size(), 1u);  // never the hanging candidate or the one after it
  if (results.size() == 1) expect_ok(results[0], 1);
  EXPECT_TRUE(child_processes().empty());  // the worker in flight was stopped and reaped
  runner->set_interrupt_check(nullptr);
  expect_ok(runner->run({{split_schedule(scale(2.0))}}, 1).at(0), 1);  // in a new worker
}

TEST(Runner, TargetKeyNamesTheCpuAndTheTargetFeatures) {
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  TargetKey key = runner->target_key();
  const codegen::Target& host = codegen::host_target();
  EXPECT_EQ(key.target, host.str());
  EXPECT_EQ(key.device_model, cpu_model_name());
  EXPECT_FALSE(key.device_model.empty());
  std::string features;
  for (const std::string& f : host.isa_features()) features += (features.empty() ? "" : ",") + f;
  EXPECT_EQ(key.device_features, features);
}

TEST(Runner, GpuTargetKeyNamesTheDeviceAndItsDriverOrArch) {
  for (const char* text : {"opencl", "cuda"}) {
    codegen::Target target = codegen::parse_target(text);
    TargetKey key = local_target_key(target, 8);
    EXPECT_EQ(key.target, target.str());
    EXPECT_EQ(key.num_threads, kGpuKeyThreads);  // the CPU's thread count plays no part
    int32_t id = codegen::find_gpu_device(target);
    if (id < 0) {
      EXPECT_EQ(key.device_model, "") << text;  // no device here: a key no record has
      EXPECT_EQ(key.device_features, "") << text;
      continue;
    }
    char name[256], version[256];
    ASSERT_EQ(KilnDeviceName(target.device_type(), id, name, sizeof(name)), 0);
    EXPECT_EQ(key.device_model, name);
    if (target.kind == "opencl") {
      ASSERT_EQ(KilnDeviceDriverVersion(target.device_type(), id, version, sizeof(version)), 0);
      EXPECT_EQ(key.device_features, std::string("driver=") + version);
    } else {
      EXPECT_EQ(key.device_features.rfind("sm_", 0), 0u) << key.device_features;
    }
  }
}

TEST(Runner, AGpuTargetWithoutItsDeviceIsRefusedBeforeAWorkerStarts) {
  codegen::Target cuda = codegen::parse_target("cuda");
  if (codegen::find_gpu_device(cuda) >= 0) GTEST_SKIP() << "this machine has a CUDA device";
  std::unique_ptr<Runner> runner = make_local_runner(fast_config());
  try {
    runner->set_task(make_task(scale(2.0), "cuda", "scale"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRuntime);
    EXPECT_NE(std::string(e.what()).find("Runner.set_task: the target '" + cuda.str() +
                                         "' needs a CUDA device to measure on"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(child_processes().empty());
  EXPECT_THROW(runner->target_key(), Error);  // no task was set
}

TEST(Runner, TargetKeyNamesTheThreadsTheWorkerRanWith) {
  RunnerConfig config = fast_config();
  config.num_threads = 3;
  EXPECT_EQ(runner_for(scale(2.0), config)->target_key().num_threads, 3);
  // The runtime's default is resolved to the count in effect in the worker, never 0.
  config.num_threads = 0;
  int threads = runner_for(scale(2.0), config)->target_key().num_threads;
  EXPECT_GE(threads, 1);
  EXPECT_EQ(threads, KilnGetNumThreads());
}

template <class F>
std::string error_of(F f, ErrorKind kind) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

TEST(Runner, BadConfigsAreRefused) {
  RunnerConfig config = fast_config();
  config.repeat = 0;
  EXPECT_EQ(error_of([&] { make_local_runner(config); }, ErrorKind::kValue),
            "make_local_runner: RunnerConfig.repeat must be >= 1, found 0");
  config = fast_config();
  config.timeout_s = -1;
  EXPECT_EQ(error_of([&] { make_local_runner(config); }, ErrorKind::kValue),
            "make_local_runner: RunnerConfig.timeout_s must be a finite number > 0, found -1");
  config = fast_config();
  config.worker = "/nonexistent/kiln_tune_worker";
  EXPECT_EQ(error_of([&] { make_local_runner(config); }, ErrorKind::kRuntime),
            "make_local_runner: the tune worker executable '/nonexistent/kiln_tune_worker' (from "
            "RunnerConfig.worker) is not an executable file; build the CMake target "
            "kiln_tune_worker, or set KILN_TUNE_WORKER or RunnerConfig.worker to its path");
}

TEST(Runner, BadBatchesAreRefusedBeforeMeasuring) {
  std::unique_ptr<Runner> idle = make_local_runner(fast_config());
  EXPECT_EQ(error_of([&] { idle->run({{as_module(scale(2.0))}}, 0); }, ErrorKind::kValue),
            "Runner.run: no task was set; call set_task first");
  EXPECT_EQ(error_of([&] { idle->target_key(); }, ErrorKind::kValue),
            "Runner.target_key: no task was set; call set_task first");
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  EXPECT_EQ(error_of(
                [&] {
                  runner->run({{as_module(scale(2.0))}, {nullptr}}, 0);
                },
                ErrorKind::kValue),
            "Runner.run: batch[1].mod must be an IRModule, found null");
  EXPECT_EQ(error_of(
                [&] {
                  runner->run({{as_module(scale(2.0)), "explode"}}, 0);
                },
                ErrorKind::kValue),
            "Runner.run: batch[0].fault must be one of '', 'crash', 'abort', 'hang', "
            "'wrong_result' (a test hook), found 'explode'");
  EXPECT_EQ(error_of([&] { runner->run({{as_module(scale(2.0))}}, -1); }, ErrorKind::kValue),
            "Runner.run: repeat must be >= 0 (0: RunnerConfig.repeat), found -1");
  EXPECT_EQ(
      error_of([&] { runner->run_interleaved({{as_module(scale(2.0))}}, 0); }, ErrorKind::kValue),
      "Runner.run_interleaved: rounds must be >= 1, found 0");
}

TEST(Runner, AnUntunedFunctionThatDoesNotBuildIsRefusedBySetTask) {
  std::unique_ptr<Runner> runner = make_local_runner(fast_config());
  TuneTask task = make_task(gpu_bound(scale(2.0))->lookup("main"), "llvm", "bound");
  std::string message = error_of([&] { runner->set_task(task); }, ErrorKind::kValue);
  EXPECT_TRUE(contains(message,
                       "set_task: the untuned function of task 'bound' cannot give reference "
                       "results on target '" +
                           task.target.str() + "': it does not build: "))
      << message;
  EXPECT_TRUE(contains(message, "threadIdx.x")) << message;
}

TEST(Runner, ReturningToATaskReusesItsReference) {
  std::unique_ptr<Runner> runner = runner_for(scale(2.0));
  runner->set_task(make_task(scale(3.0), "llvm"));
  expect_ok(runner->run({{as_module(scale(3.0))}}, 1).at(0), 1);
  runner->set_task(make_task(scale(2.0), "llvm"));
  std::vector<MeasureResult> results =
      runner->run({{as_module(scale(3.0))}, {as_module(scale(2.0))}}, 1);
  EXPECT_EQ(results.at(0).status, RecordStatus::kWrongResult);
  expect_ok(results.at(1), 1);
}

TEST(Runner, AReferenceScheduleGivesTheResultsInsteadOfTheUntunedFunction) {
  // The reference computes x3 while the function computes x2: candidates are checked against
  // the reference, so the function's own schedule is now the wrong one.
  TuneTask task = make_task(scale(2.0), "llvm", "scale");
  task.reference = ReferenceSchedule{"split", split_schedule(scale(3.0))->lookup("main")};
  std::unique_ptr<Runner> runner = make_local_runner(fast_config());
  runner->set_task(task);
  std::vector<MeasureResult> results =
      runner->run({{split_schedule(scale(3.0))}, {split_schedule(scale(2.0))}}, 1);
  expect_ok(results.at(0), 1);
  EXPECT_EQ(results.at(1).status, RecordStatus::kWrongResult);
}

TEST(Runner, AReferenceScheduleOfAnotherSignatureIsRefusedBySetTask) {
  // A function of float32[2 * kN]: its argument does not fit the task's.
  te::Tensor a = te::placeholder({int32_const(2 * kN)}, DataType::float32(), "A");
  te::Tensor b = te::compute(
      {int32_const(2 * kN)}, [&](const std::vector<Ref<Var>>& i) { return a({i[0]}) * 2.0; }, "B");
  TuneTask task = make_task(scale(2.0), "llvm", "scale");
  task.reference = ReferenceSchedule{"wide", te::create_prim_func({a, b})};
  std::unique_ptr<Runner> runner = make_local_runner(fast_config());
  std::string message = error_of([&] { runner->set_task(task); }, ErrorKind::kValue);
  EXPECT_TRUE(contains(message,
                       "set_task: the reference schedule (wide) of task 'scale' cannot give "
                       "reference results on target '" +
                           task.target.str() + "': it does not take the function's arguments: "))
      << message;
}

TEST(Runner, AReferenceScheduleThatDoesNotBuildIsRefusedBySetTask) {
  TuneTask task = make_task(scale(2.0), "llvm", "scale");
  task.reference = ReferenceSchedule{"bound", gpu_bound(scale(2.0))->lookup("main")};
  std::unique_ptr<Runner> runner = make_local_runner(fast_config());
  std::string message = error_of([&] { runner->set_task(task); }, ErrorKind::kValue);
  EXPECT_TRUE(contains(message, "the reference schedule (bound) of task 'scale'")) << message;
  EXPECT_TRUE(contains(message, "it does not build: ")) << message;
}

TEST(Runner, AWorkerFindsTheGpuDeviceByTheNameTheRecordsUse) {
  codegen::Target target = codegen::parse_target("opencl");
  int32_t id = codegen::find_gpu_device(target);
  if (id < 0) GTEST_SKIP() << "no OpenCL device here";
  std::string name = local_target_key(target).device_model;
  std::string why;
  EXPECT_EQ(codegen::find_named_gpu_device(target, name, &why), id) << why;
  EXPECT_EQ(codegen::find_named_gpu_device(target, name + " (another)", &why), -1);
  std::string expected = "no OpenCL device named '" + name + " (another)' (the devices: ";
  EXPECT_EQ(why.substr(0, expected.size()), expected) << why;
  EXPECT_TRUE(contains(why, "'" + name + "'")) << why;
}

}  // namespace

}  // namespace kiln::autotune
