// Timing in the tune worker: warm-up, repeats of `number` calls on a monotonic clock (number
// picked to fill min_repeat_ms when 0), arguments restored before every call for functions that
// update them in place, the cache flush between repeats, and for GPU code the device
// synchronized at the end of each timed span (see kiln/autotune/runner.h, "Timing" and "Cache
// flush").
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln::autotune::detail {

struct TimingPlan {
  int warmup = 1;
  int number = 0;  // 0: picked (see RunnerConfig::number)
  int repeat = 1;  // 0: warm up and pick the number only
  double min_repeat_ms = 20;
  bool flush_cache = false;
  // The placement of the arguments for the first repeat (TimingHooks::place), the next one for
  // each repeat after it; -1: the arguments stay where they are.
  int64_t first_placement = -1;
  // Restore the arguments before every call, timing each call alone.
  bool restore_each_call = false;
  // Whether a repeat shorter than min_repeat_ms may grow the number and be redone (false once
  // a kept candidate's number is settled, so that its rounds stay comparable).
  bool grow = true;
};

// What the timing calls.
struct TimingHooks {
  // One call of the kernel; a nonzero return stops the timing with a CallFailed.
  std::function<int()> call;
  std::function<void()> restore;  // used with restore_each_call
  std::function<void()> flush;    // used with flush_cache
  // Moves the arguments to the given placement (and restores their values): used with
  // first_placement, before each repeat (before its flush).
  std::function<void(uint64_t)> place;
  // Waits until the work the calls issued has finished (a GPU's launches return before their
  // kernels end); a nonzero return is a failure of that work, as for `call`. Empty for CPU
  // code. Inside the timed span, after each repeat's calls (and each call with
  // restore_each_call, whose restore is waited for before the clock starts).
  std::function<int()> synchronize;
};

// A call returned `status` (nonzero) during the timing.
struct CallFailed {
  int status;
};

// Times per `plan` and returns seconds per call for each repeat. `number` is the number to use
// (0: pick one) and is set to the number used, for later rounds.
std::vector<double> time_calls(const TimingPlan& plan, const TimingHooks& hooks, int* number);

// The size in bytes of this CPU's last-level data cache (L3, else L2, else L1d, as the host
// target reads them from the system), 0 when unknown.
size_t last_level_cache_bytes();

// Evicts data from the caches by writing a buffer twice the size of the last-level cache
// (64 MiB when unknown), spread over the runtime's thread pool so that the private caches of the
// kernel's threads are written too.
class CacheFlusher {
 public:
  CacheFlusher();
  ~CacheFlusher();
  CacheFlusher(const CacheFlusher&) = delete;
  CacheFlusher& operator=(const CacheFlusher&) = delete;
  void flush();
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
  char* buffer_ = nullptr;
  unsigned char pass_ = 0;  // the byte written, different each time
};

}  // namespace kiln::autotune::detail
