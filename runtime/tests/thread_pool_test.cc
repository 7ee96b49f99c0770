// The thread pool behind KilnBackendParallelLaunch: every task runs exactly once, failures reach
// the caller with their message, nested launches run serially, a forked child can launch, and
// the pool size follows KilnSetNumThreads and KILN_NUM_THREADS.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {
namespace testing {
namespace {

struct CountClosure {
  std::vector<std::atomic<int>>* hits;
  std::atomic<int> seen_num_tasks{0};
};

int32_t count_task(int32_t task_id, int32_t num_tasks, void* closure) {
  auto* state = static_cast<CountClosure*>(closure);
  (*state->hits)[task_id].fetch_add(1);
  state->seen_num_tasks.store(num_tasks);
  return 0;
}

// Launches num_tasks tasks and returns how often each ran.
std::vector<int> run_counting(int32_t num_tasks, int32_t expected_tasks) {
  std::vector<std::atomic<int>> hits(expected_tasks);
  CountClosure closure{&hits};
  EXPECT_EQ(KilnBackendParallelLaunch(count_task, &closure, num_tasks), 0) << KilnGetLastError();
  EXPECT_EQ(closure.seen_num_tasks.load(), expected_tasks);
  std::vector<int> result;
  for (auto& hit : hits) result.push_back(hit.load());
  return result;
}

class ThreadPool : public ::testing::Test {
 protected:
  void TearDown() override { KilnSetNumThreads(0); }
};

TEST_F(ThreadPool, EveryTaskRunsOnce) {
  ASSERT_EQ(KilnSetNumThreads(4), 0);
  for (int32_t num_tasks : {1, 2, 3, 4, 7, 64, 1000}) {
    EXPECT_EQ(run_counting(num_tasks, num_tasks), std::vector<int>(num_tasks, 1))
        << "num_tasks " << num_tasks;
  }
}

TEST_F(ThreadPool, ManyLaunchesInARow) {
  ASSERT_EQ(KilnSetNumThreads(3), 0);
  for (int round = 0; round < 2000; ++round) {
    std::vector<int> hits = run_counting(3, 3);
    ASSERT_EQ(hits, std::vector<int>(3, 1)) << "round " << round;
  }
}

TEST_F(ThreadPool, NonPositiveNumTasksMeansOnePerThread) {
  ASSERT_EQ(KilnSetNumThreads(3), 0);
  EXPECT_EQ(run_counting(0, 3), std::vector<int>(3, 1));
  EXPECT_EQ(run_counting(-1, 3), std::vector<int>(3, 1));
}

TEST_F(ThreadPool, SingleThreadRunsInCaller) {
  ASSERT_EQ(KilnSetNumThreads(1), 0);
  EXPECT_EQ(KilnGetNumThreads(), 1);
  std::thread::id caller = std::this_thread::get_id();
  std::vector<std::thread::id> ids(5);
  auto task = [](int32_t task_id, int32_t, void* closure) -> int32_t {
    (*static_cast<std::vector<std::thread::id>*>(closure))[task_id] = std::this_thread::get_id();
    return 0;
  };
  ASSERT_EQ(KilnBackendParallelLaunch(task, &ids, 5), 0);
  for (const std::thread::id& id : ids) EXPECT_EQ(id, caller);
}

TEST_F(ThreadPool, UsesSeveralThreads) {
  ASSERT_EQ(KilnSetNumThreads(4), 0);
  struct Closure {
    std::mutex mutex;
    std::set<std::thread::id> ids;
    std::atomic<int> arrived{0};
  } closure;
  // Every task waits until all four have started, so four threads must be running them.
  auto task = [](int32_t, int32_t num_tasks, void* raw) -> int32_t {
    auto* c = static_cast<Closure*>(raw);
    {
      std::lock_guard<std::mutex> lock(c->mutex);
      c->ids.insert(std::this_thread::get_id());
    }
    c->arrived.fetch_add(1);
    while (c->arrived.load() < num_tasks) std::this_thread::yield();
    return 0;
  };
  ASSERT_EQ(KilnBackendParallelLaunch(task, &closure, 4), 0);
  EXPECT_EQ(closure.ids.size(), 4u);
}

TEST_F(ThreadPool, NestedLaunchRunsSeriallyInTheTask) {
  ASSERT_EQ(KilnSetNumThreads(3), 0);
  struct Closure {
    std::atomic<int> inner_runs{0};
    std::atomic<int> inner_on_other_thread{0};
  } closure;
  auto inner = [](int32_t, int32_t, void* raw) -> int32_t {
    auto* pair = static_cast<std::pair<Closure*, std::thread::id>*>(raw);
    pair->first->inner_runs.fetch_add(1);
    if (std::this_thread::get_id() != pair->second) pair->first->inner_on_other_thread.fetch_add(1);
    return 0;
  };
  struct Outer {
    Closure* closure;
    KilnParallelTask inner;
  } outer{&closure, inner};
  auto outer_task = [](int32_t, int32_t, void* raw) -> int32_t {
    auto* o = static_cast<Outer*>(raw);
    std::pair<Closure*, std::thread::id> pair{o->closure, std::this_thread::get_id()};
    return KilnBackendParallelLaunch(o->inner, &pair, 5);
  };
  ASSERT_EQ(KilnBackendParallelLaunch(outer_task, &outer, 6), 0) << KilnGetLastError();
  EXPECT_EQ(closure.inner_runs.load(), 30);
  EXPECT_EQ(closure.inner_on_other_thread.load(), 0);
}

TEST_F(ThreadPool, FailingTaskReportsItsMessage) {
  ASSERT_EQ(KilnSetNumThreads(4), 0);
  auto task = [](int32_t task_id, int32_t, void*) -> int32_t {
    if (task_id != 5) return 0;
    KilnSetLastError("task 5 failed");
    return 1;
  };
  KilnSetLastError(nullptr);
  EXPECT_NE(KilnBackendParallelLaunch(task, nullptr, 16), 0);
  EXPECT_STREQ(KilnGetLastError(), "task 5 failed");
  // The pool is still usable afterwards.
  EXPECT_EQ(run_counting(8, 8), std::vector<int>(8, 1));
}

TEST_F(ThreadPool, FailingTaskInSerialLaunch) {
  ASSERT_EQ(KilnSetNumThreads(1), 0);
  auto task = [](int32_t task_id, int32_t, void*) -> int32_t {
    if (task_id != 1) return 0;
    KilnSetLastError("serial task failed");
    return 3;
  };
  EXPECT_NE(KilnBackendParallelLaunch(task, nullptr, 4), 0);
  EXPECT_STREQ(KilnGetLastError(), "serial task failed");
}

TEST_F(ThreadPool, ConcurrentLaunchesFromSeveralThreads) {
  ASSERT_EQ(KilnSetNumThreads(3), 0);
  std::atomic<int> failures{0};
  std::vector<std::thread> hosts;
  for (int h = 0; h < 3; ++h) {
    hosts.emplace_back([&failures] {
      for (int round = 0; round < 200; ++round) {
        std::vector<int> hits = run_counting(5, 5);
        if (hits != std::vector<int>(5, 1)) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& host : hosts) host.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ThreadPool, SetNumThreads) {
  ASSERT_EQ(KilnSetNumThreads(5), 0);
  EXPECT_EQ(KilnGetNumThreads(), 5);
  EXPECT_EQ(run_counting(-1, 5), std::vector<int>(5, 1));
  ASSERT_EQ(KilnSetNumThreads(2), 0);
  EXPECT_EQ(KilnGetNumThreads(), 2);
}

TEST_F(ThreadPool, KilnNumThreadsIsTheDefault) {
  const char* saved = std::getenv("KILN_NUM_THREADS");
  std::string saved_value = saved != nullptr ? saved : "";
  setenv("KILN_NUM_THREADS", "3", 1);
  ASSERT_EQ(KilnSetNumThreads(0), 0);
  EXPECT_EQ(KilnGetNumThreads(), 3);
  setenv("KILN_NUM_THREADS", "not a number", 1);
  ASSERT_EQ(KilnSetNumThreads(0), 0);
  EXPECT_GE(KilnGetNumThreads(), 1);
  if (saved != nullptr) {
    setenv("KILN_NUM_THREADS", saved_value.c_str(), 1);
  } else {
    unsetenv("KILN_NUM_THREADS");
  }
}

TEST_F(ThreadPool, CannotResizeFromInsideATask) {
  ASSERT_EQ(KilnSetNumThreads(2), 0);
  auto task = [](int32_t, int32_t, void* raw) -> int32_t {
    if (KilnSetNumThreads(4) == 0) return 0;
    *static_cast<std::string*>(raw) = KilnGetLastError();
    return 0;
  };
  std::string message;
  ASSERT_EQ(KilnBackendParallelLaunch(task, &message, 1), 0);
  EXPECT_EQ(message,
            "KilnSetNumThreads: cannot change the thread pool from inside a parallel task");
}

TEST_F(ThreadPool, ForkedChildCanLaunch) {
  ASSERT_EQ(KilnSetNumThreads(3), 0);
  EXPECT_EQ(run_counting(6, 6), std::vector<int>(6, 1));  // the parent's workers are running
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a hang in the child fails the test instead of stalling it
    std::vector<std::atomic<int>> hits(6);
    CountClosure closure{&hits};
    bool ok = KilnBackendParallelLaunch(count_task, &closure, 6) == 0;
    for (auto& hit : hits) ok = ok && hit.load() == 1;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

TEST_F(ThreadPool, NullTask) {
  EXPECT_NE(KilnBackendParallelLaunch(nullptr, nullptr, 2), 0);
  EXPECT_STREQ(KilnGetLastError(), "KilnBackendParallelLaunch: task is NULL");
}

// Run by ctest with KILN_NUM_THREADS=3 in the environment (runtime_test_num_threads_env): the
// pool created at first use takes its size from it.
TEST(ThreadPoolStartup, SizeFromEnvironment) {
  const char* expected = std::getenv("KILN_TEST_EXPECTED_THREADS");
  if (expected == nullptr) GTEST_SKIP() << "run by ctest with KILN_NUM_THREADS set";
  EXPECT_EQ(KilnGetNumThreads(), std::atoi(expected));
  EXPECT_EQ(run_counting(-1, std::atoi(expected)), std::vector<int>(std::atoi(expected), 1));
}

}  // namespace
}  // namespace testing
}  // namespace runtime
}  // namespace kiln
