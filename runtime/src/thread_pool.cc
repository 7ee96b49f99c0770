// The runtime's thread pool behind KilnBackendParallelLaunch. Element-wise kernels launch it on
// every call, so a launch must be cheap: idle workers spin briefly on an atomic "generation"
// word before they block on a condition variable, tasks are claimed from one atomic word, and
// the launching thread runs tasks too and waits only for unfinished tasks, never for a worker
// that has not woken up yet.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "error.h"
#include "kiln/runtime/c_runtime_api.h"

namespace kiln {
namespace runtime {
namespace {

// Iterations a waiting thread spins before it blocks: tens of microseconds, enough to catch the
// next launch of a kernel called in a loop without burning a core when the pool is idle.
constexpr int kSpinIterations = 2048;
// `workers wanted` value of the state word that tells workers to exit.
constexpr uint32_t kShutdown = 0xFFFFFFFFu;
constexpr int32_t kMaxThreads = 1024;

// True on pool workers, and on a launching thread while it runs tasks: launches from such a
// thread run serially.
thread_local bool t_inside_task = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

// Spins, then blocks until `ready()` holds. notify() wakes blocked waiters; it must follow the
// seq_cst store that makes `ready()` true, which is what makes the waiter count check safe.
class Parker {
 public:
  template <class Ready>
  void wait(Ready ready) {
    for (int i = 0; i < kSpinIterations; ++i) {
      if (ready()) return;
      cpu_relax();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    waiters_.fetch_add(1);
    cv_.wait(lock, ready);
    waiters_.fetch_sub(1);
  }

  void notify() {
    if (waiters_.load() == 0) return;
    { std::lock_guard<std::mutex> lock(mutex_); }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<int32_t> waiters_{0};
};

int32_t default_num_threads() {
  const char* env = std::getenv("KILN_NUM_THREADS");
  if (env != nullptr) {
    char* end = nullptr;
    long value = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && value > 0) {
      return static_cast<int32_t>(value < kMaxThreads ? value : kMaxThreads);
    }
  }
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0) {
    return CPU_COUNT(&cpus);
  }
  unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int32_t>(cores) : 1;
}

// Launch protocol. Each launch gets a new generation number g. The launcher publishes the job,
// sets the claim word to (g, num_tasks) and the wake word to (g, workers wanted). Participants
// claim tasks by decrementing the claim word while it still carries g, so a worker that wakes
// late finds another generation there and touches nothing: the launcher waits for tasks, never
// for workers. A successful claim also proves that launch g is still running, which keeps the
// job fields it reads stable.
class ThreadPool {
 public:
  ThreadPool() : num_threads_(default_num_threads()) {}

  int32_t num_threads() const { return num_threads_.load(std::memory_order_relaxed); }

  // Changes the number of threads; workers start again at the next launch.
  void resize(int32_t n) {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    stop_workers();
    num_threads_.store(n > 0 ? (n < kMaxThreads ? n : kMaxThreads) : default_num_threads());
  }

  int32_t launch(KilnParallelTask task, void* closure, int32_t num_tasks) {
    if (num_tasks <= 0) num_tasks = num_threads();
    if (t_inside_task || num_threads() == 1 || num_tasks == 1) {
      return run_serially(task, closure, num_tasks);
    }
    std::lock_guard<std::mutex> lock(launch_mutex_);
    if (workers_.empty()) start_workers();
    int32_t threads = static_cast<int32_t>(workers_.size()) + 1;
    uint32_t wanted = static_cast<uint32_t>((num_tasks < threads ? num_tasks : threads) - 1);

    // Step 1. Publish the job and its tasks, then wake the workers it needs.
    generation_ += 1;
    job_.task = task;
    job_.closure = closure;
    job_.num_tasks = num_tasks;
    job_.failed.store(false, std::memory_order_relaxed);
    done_tasks_.store(0, std::memory_order_relaxed);
    claim_.store(pack(generation_, static_cast<uint32_t>(num_tasks)));
    state_.store(pack(generation_, wanted));
    wake_.notify();

    // Step 2. Take part, then wait until every task has finished.
    t_inside_task = true;
    run_tasks(generation_);
    t_inside_task = false;
    done_.wait([this, num_tasks] { return done_tasks_.load() == num_tasks; });

    if (job_.failed.load(std::memory_order_relaxed)) {
      KilnSetLastError(job_.error.c_str());
      return kKilnErrorRuntime;
    }
    return 0;
  }

 private:
  struct Job {
    KilnParallelTask task = nullptr;
    void* closure = nullptr;
    int32_t num_tasks = 0;
    std::atomic<bool> failed{false};
    std::string error;  // the first failing task's message, written by the thread that failed
  };

  static uint64_t pack(uint32_t generation, uint32_t count) {
    return (static_cast<uint64_t>(generation) << 32) | count;
  }

  static int32_t run_serially(KilnParallelTask task, void* closure, int32_t num_tasks) {
    bool was_inside = t_inside_task;
    t_inside_task = true;
    int32_t status = 0;
    for (int32_t i = 0; i < num_tasks && status == 0; ++i) status = task(i, num_tasks, closure);
    t_inside_task = was_inside;
    return status == 0 ? 0 : kKilnErrorRuntime;
  }

  // Claims and runs tasks of launch `generation` until none is left. After a failure the rest
  // are claimed and counted but not run.
  void run_tasks(uint32_t generation) {
    while (true) {
      uint64_t word = claim_.load();
      do {
        if (static_cast<uint32_t>(word >> 32) != generation || static_cast<uint32_t>(word) == 0) {
          return;
        }
      } while (!claim_.compare_exchange_weak(word, word - 1));
      int32_t num_tasks = job_.num_tasks;
      int32_t task_id = num_tasks - static_cast<int32_t>(static_cast<uint32_t>(word));
      if (!job_.failed.load(std::memory_order_relaxed) &&
          job_.task(task_id, num_tasks, job_.closure) != 0) {
        bool expected = false;
        if (job_.failed.compare_exchange_strong(expected, true)) job_.error = KilnGetLastError();
      }
      if (done_tasks_.fetch_add(1) + 1 == num_tasks) done_.notify();
    }
  }

  // Worker `index` (1-based; the launcher is 0) takes part in a launch when index <= wanted.
  void worker_main(uint32_t index, uint32_t seen_generation) {
    t_inside_task = true;
    while (true) {
      uint64_t state = 0;
      wake_.wait([&] {
        state = state_.load();
        return static_cast<uint32_t>(state >> 32) != seen_generation;
      });
      seen_generation = static_cast<uint32_t>(state >> 32);
      uint32_t wanted = static_cast<uint32_t>(state);
      if (wanted == kShutdown) return;
      if (index <= wanted) run_tasks(seen_generation);
    }
  }

  void start_workers() {
    int32_t n = num_threads();
    for (int32_t i = 1; i < n; ++i) {
      try {
        workers_.emplace_back(&ThreadPool::worker_main, this, static_cast<uint32_t>(i),
                              generation_);
      } catch (...) {
        break;  // the system refused another thread: run with the ones that started
      }
    }
  }

  void stop_workers() {
    if (workers_.empty()) return;
    generation_ += 1;
    state_.store(pack(generation_, kShutdown));
    wake_.notify();
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
  }

  std::atomic<int32_t> num_threads_;
  std::mutex launch_mutex_;  // one launch (or resize) at a time
  std::vector<std::thread> workers_;
  Job job_;
  uint32_t generation_ = 0;         // written under launch_mutex_ only
  std::atomic<uint64_t> state_{0};  // wake word: generation << 32 | workers wanted
  std::atomic<uint64_t> claim_{0};  // claim word: generation << 32 | tasks not yet claimed
  std::atomic<int32_t> done_tasks_{0};
  Parker wake_;  // workers wait here for a new generation
  Parker done_;  // the launcher waits here for done_tasks_ == num_tasks
};

std::atomic<ThreadPool*> g_pool{nullptr};

// A forked child has none of the parent's workers: it starts a fresh pool. The parent's pool
// object is abandoned in the child, since its locks may be held by threads that do not exist.
void reset_pool_in_child() {
  g_pool.store(nullptr);
}

ThreadPool* pool() {
  ThreadPool* current = g_pool.load(std::memory_order_acquire);
  if (current != nullptr) return current;
  static std::once_flag atfork_registered;
  std::call_once(atfork_registered, [] { pthread_atfork(nullptr, nullptr, reset_pool_in_child); });
  ThreadPool* created = new ThreadPool();
  if (g_pool.compare_exchange_strong(current, created)) return created;
  delete created;
  return current;
}

}  // namespace
}  // namespace runtime
}  // namespace kiln

extern "C" {

int32_t KilnBackendParallelLaunch(KilnParallelTask task, void* closure, int32_t num_tasks) {
  using namespace kiln::runtime;
  if (task == nullptr) return fail(kKilnErrorValue, "KilnBackendParallelLaunch: task is NULL");
  return pool()->launch(task, closure, num_tasks);
}

int32_t KilnSetNumThreads(int32_t n) {
  using namespace kiln::runtime;
  if (t_inside_task) {
    return fail(kKilnErrorRuntime,
                "KilnSetNumThreads: cannot change the thread pool from inside a parallel task");
  }
  pool()->resize(n);
  return 0;
}

int32_t KilnGetNumThreads(void) {
  return kiln::runtime::pool()->num_threads();
}

}  // extern "C"
