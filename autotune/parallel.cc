// available_cores, available_memory_bytes, count_that_fits and parallel_for (see parallel.h).
#include "autotune/parallel.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fstream>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace kiln::autotune {

int available_cores() {
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0) {
    return CPU_COUNT(&cpus);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  long pages = sysconf(_SC_AVPHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<double>(pages) * static_cast<double>(page_size);
}

size_t count_that_fits(double bytes_each, double available_bytes, size_t at_most) {
  if (!(bytes_each > 0) || !(available_bytes > 0)) return at_most;
  double fit = std::floor(available_bytes / bytes_each);
  return static_cast<size_t>(
      std::clamp(fit, 1.0, static_cast<double>(std::max<size_t>(at_most, 1))));
}

void parallel_for(size_t count, int threads, const std::function<void(size_t)>& body) {
  size_t helpers = std::min(count, static_cast<size_t>(std::max(threads, 1))) - (count > 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&] {
    for (size_t i = next++; i < count && !failed.load(); i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running do the rest
    }
  }
  work();
  for (std::thread& thread : pool) thread.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace kiln::autotune
