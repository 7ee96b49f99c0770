// parallel_for, the search's loop over threads: every index runs once whatever the thread count,
// and an exception in a body reaches the caller.
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

}  // namespace
}  // namespace kiln::autotune
