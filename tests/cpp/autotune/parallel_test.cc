// parallel_for, the search's loop over threads: every index runs once whatever the thread count,
// and an exception in a body reaches the caller. count_that_fits, the runner's workers by memory.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "autotune/parallel.h"

namespace kiln::autotune {
namespace {

TEST(ParallelFor, RunsEveryIndexOnceOnAnyNumberOfThreads) {
  for (int threads : {0, 1, 2, 3, 64}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{1000}}) {
      std::vector<std::atomic<int>> runs(count);
      parallel_for(count, threads, [&](size_t i) { ++runs[i]; });
      for (size_t i = 0; i < count; ++i) {
        EXPECT_EQ(runs[i].load(), 1) << "index " << i << " of " << count << ", " << threads;
      }
    }
  }
  EXPECT_GE(available_cores(), 1);
}

TEST(ParallelFor, AnExceptionInABodyReachesTheCaller) {
  std::atomic<int> ran{0};
  EXPECT_THROW(parallel_for(100, 3,
                            [&](size_t i) {
                              ++ran;
                              if (i == 7) throw std::runtime_error("index 7");
                            }),
               std::runtime_error);
  EXPECT_GE(ran.load(), 1);
  EXPECT_LE(ran.load(), 100);
}

TEST(CountThatFits, AsManyAsFitAtLeastOneAtMostTheLimit) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  EXPECT_EQ(count_that_fits(18 * kGiB, 0.8 * 23 * kGiB, 2), 1u);  // 6 GiB of arguments, x3
  EXPECT_EQ(count_that_fits(1 * kGiB, 10 * kGiB, 4), 4u);
  EXPECT_EQ(count_that_fits(3 * kGiB, 10 * kGiB, 4), 3u);
  EXPECT_EQ(count_that_fits(100 * kGiB, 1 * kGiB, 4), 1u);  // one tries, whatever it takes
  EXPECT_EQ(count_that_fits(0, 1 * kGiB, 4), 4u);           // sizes unknown: the limit
  EXPECT_EQ(count_that_fits(1 * kGiB, 0, 4), 4u);
  EXPECT_EQ(count_that_fits(1e300, 1e-300, 2), 1u);
  EXPECT_EQ(count_that_fits(1, 1e300, 3), 3u);
#ifdef __linux__
  EXPECT_GT(available_memory_bytes(), 0);
#endif
}

}  // namespace
}  // namespace kiln::autotune
