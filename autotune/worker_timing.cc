// Timing and cache flushing in the tune worker (see worker_timing.h).
#include "autotune/worker_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "kiln/codegen/target.h"
#include "kiln/runtime/c_runtime_api.h"
#include "kiln/support/error.h"

namespace kiln::autotune::detail {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxNumber = 1 << 30;
// A short repeat is redone with the number scaled to reach 110% of min_repeat_ms, by at most
// this factor at once (a first repeat of a few microseconds is mostly clock noise).
constexpr double kMaxGrowth = 100.0;
// The probe that picks the number lasts this share of min_repeat_ms; the number it picks aims
// this factor past min_repeat_ms.
constexpr double kProbeShare = 0.1;
constexpr double kMargin = 1.05;
constexpr size_t kDefaultFlushBytes = size_t{64} << 20;
constexpr size_t kMaxFlushBytes = size_t{1} << 30;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Waits for the device's work, if the hooks have a device.
void synchronize(const TimingHooks& hooks) {
  if (!hooks.synchronize) return;
  if (int status = hooks.synchronize(); status != 0) throw CallFailed{status};
}

// The time of `n` calls in seconds: one span when the arguments need no restoring, else the
// sum of the calls' own times, each after a restore. A span ends when the device is done.
double run_batch(const TimingPlan& plan, const TimingHooks& hooks, int n) {
  if (!plan.restore_each_call) {
    Clock::time_point start = Clock::now();
    for (int i = 0; i < n; ++i) {
      if (int status = hooks.call(); status != 0) throw CallFailed{status};
    }
    synchronize(hooks);
    return seconds(Clock::now() - start);
  }
  double total = 0;
  for (int i = 0; i < n; ++i) {
    hooks.restore();
    synchronize(hooks);  // the restore's copies are not timed
    Clock::time_point start = Clock::now();
    int status = hooks.call();
    if (status == 0) synchronize(hooks);
    Clock::time_point end = Clock::now();
    if (status != 0) throw CallFailed{status};
    total += seconds(end - start);
  }
  return total;
}

// One thread's share of the flush: a contiguous chunk of the buffer.
struct FlushJob {
  char* buffer;
  size_t bytes;
  unsigned char value;
};

int32_t flush_chunk(int32_t task, int32_t num_tasks, void* closure) {
  const FlushJob& job = *static_cast<const FlushJob*>(closure);
  size_t chunk = (job.bytes / num_tasks + 63) & ~size_t{63};
  size_t begin = std::min(job.bytes, chunk * task), end = std::min(job.bytes, begin + chunk);
  std::memset(job.buffer + begin, job.value, end - begin);
  return 0;
}

}  // namespace

std::vector<double> time_calls(const TimingPlan& plan, const TimingHooks& hooks, int* number) {
  // Step 1. Warm up; the last warm-up call is a first estimate of a call's time.
  double estimate = 0;
  for (int i = 0; i < plan.warmup; ++i) estimate = run_batch(plan, hooks, 1);

  // Step 2. The number: the config's, the one settled earlier, or enough calls to fill
  // min_repeat_ms. A lone warm-up call is often slower than calls in a row, so a probe of
  // growing batches measures calls in a row until one batch lasts kProbeShare of
  // min_repeat_ms; picking from it rarely leaves the first repeat short (a short repeat is
  // redone, which costs a whole repeat). With a flush only a repeat's first call is cold, so
  // the number is one.
  bool automatic = plan.number == 0;
  int n = plan.number;
  if (automatic) {
    n = *number;
    if (plan.flush_cache) {
      n = 1;
    } else if (n <= 0 && plan.min_repeat_ms > 0) {
      double probe_s = plan.min_repeat_ms * 1e-3 * kProbeShare;
      double calls = estimate > 0 ? std::floor(probe_s / estimate) : 1.0;
      int probe = static_cast<int>(std::clamp(calls, 1.0, static_cast<double>(kMaxNumber)));
      double elapsed = run_batch(plan, hooks, probe);
      // A batch of half the probe's length already times calls in a row well enough; asking
      // for the whole length would mostly add a second batch (the first is sized by the
      // warm-up call and falls just short).
      while (elapsed < probe_s / 2 && probe < kMaxNumber) {
        double factor = elapsed > 0 ? probe_s * 1.2 / elapsed : kMaxGrowth;
        double grown = std::ceil(probe * std::clamp(factor, 2.0, kMaxGrowth));
        probe = static_cast<int>(std::min(grown, static_cast<double>(kMaxNumber)));
        elapsed = run_batch(plan, hooks, probe);
      }
      double per_call = elapsed / probe;
      calls = per_call > 0 ? std::ceil(plan.min_repeat_ms * 1e-3 * kMargin / per_call) : 1.0;
      n = static_cast<int>(std::clamp(calls, 1.0, static_cast<double>(kMaxNumber)));
    } else if (n <= 0) {
      n = 1;
    }
  }

  // Step 3. The repeats. While picking, a repeat shorter than min_repeat_ms is redone with more
  // calls, so that every reported repeat lasts at least that long.
  bool may_grow = automatic && plan.grow && !plan.flush_cache && plan.min_repeat_ms > 0;
  std::vector<double> times;
  for (int r = 0; r < plan.repeat; ++r) {
    if (plan.first_placement >= 0 && hooks.place) {
      hooks.place(static_cast<uint64_t>(plan.first_placement + r));
    }
    for (;;) {
      if (plan.flush_cache) hooks.flush();
      double elapsed = run_batch(plan, hooks, n);
      if (!may_grow || elapsed * 1e3 >= plan.min_repeat_ms || n >= kMaxNumber) {
        times.push_back(elapsed / n);
        break;
      }
      double factor = elapsed > 0 ? plan.min_repeat_ms * 1e-3 * 1.1 / elapsed : kMaxGrowth;
      double grown = std::ceil(n * std::min(factor, kMaxGrowth));
      n = static_cast<int>(std::clamp(grown, n + 1.0, static_cast<double>(kMaxNumber)));
    }
  }
  *number = n;
  return times;
}

size_t last_level_cache_bytes() {
  // The host target reads the cache sizes from the operating system once.
  const codegen::Target& host = codegen::host_target();
  for (const std::optional<int64_t>& bytes :
       {host.l3_cache_bytes, host.l2_cache_bytes, host.l1d_cache_bytes}) {
    if (bytes && *bytes > 0) return static_cast<size_t>(*bytes);
  }
  return 0;
}

CacheFlusher::CacheFlusher() {
  size_t cache = last_level_cache_bytes();
  bytes_ = cache > 0 ? std::min(2 * cache, kMaxFlushBytes) : kDefaultFlushBytes;
  buffer_ = static_cast<char*>(KilnAllocAligned(bytes_, 64));
  runtime_check(buffer_ != nullptr)
      << "tune worker: cannot allocate the " << bytes_ << " bytes of the cache flush buffer";
}

CacheFlusher::~CacheFlusher() {
  KilnFreeAligned(buffer_);
}

void CacheFlusher::flush() {
  FlushJob job{buffer_, bytes_, ++pass_};
  if (KilnBackendParallelLaunch(&flush_chunk, &job, 0) != 0) {
    std::memset(buffer_, job.value, bytes_);  // the pool refused: one thread writes it all
  }
  // The buffer is never read: tell the compiler that the writes matter.
  asm volatile("" : : "r"(buffer_) : "memory");
}

}  // namespace kiln::autotune::detail
